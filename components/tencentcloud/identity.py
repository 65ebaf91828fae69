"""The nodes' identity: a CAM role the CVM service may assume, with the CAM policies the config asks for.

Least privilege: no policy unless `identity.policies` or `identity.readStorage` asks for one (the default
set in catalog/capabilities/tencentcloud.yaml `nodeIdentity` is empty, and says why). With
`identity.existing` no role is created; the asked policies are attached to that role by this stack.
Instances take the role by name (`cam_role_name`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..layout.tencentcloud import TencentLayout


@dataclass(frozen=True)
class Identity:
    role: tencentcloud.cam.Role | None  # None: an existing role
    role_name: pulumi.Output[str]
    attachments: list[tencentcloud.cam.RolePolicyAttachmentByName]

    def output(self, layout: TencentLayout) -> dict[str, Any]:
        """The `identity` stack output: everything the role is allowed by this stack."""
        ident = layout.identity
        return {
            "kind": "cam-role",
            "name": self.role_name,
            "grants": list(ident.policies),
            "existing": not ident.create,
        }


def build(parent: pulumi.Resource, name: str, layout: TencentLayout, tags: Mapping[str, str]) -> Identity:
    ident = layout.identity
    child = pulumi.ResourceOptions(parent=parent)
    role: tencentcloud.cam.Role | None = None
    role_name: pulumi.Output[str]
    if ident.create:
        role = tencentcloud.cam.Role(
            f"{name}-role",
            name=ident.role_name,
            document=ident.document,
            description=f"gpu-cluster {layout.spec.name} nodes (CVM role)",
            console_login=False,
            tags=dict(tags),
            opts=child,
        )
        role_name = role.name
    else:
        role_name = pulumi.Output.from_input(ident.role_name)
    attachments = [
        tencentcloud.cam.RolePolicyAttachmentByName(
            f"{name}-role-{policy}", policy_name=policy, role_name=role_name, opts=child
        )
        for policy in ident.policies
    ]
    return Identity(role, role_name, attachments)
