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
        # the custom policy the login node's Prometheus needs (monitoring.py) is attached to this role too
        custom = [layout.monitoring.policy_name] if layout.monitoring is not None else []
        custom += [layout.slurm.policy_name] if layout.slurm is not None else []  # the Slurm secrets' read
        return {
            "kind": "cam-role",
            "name": self.role_name,
            "grants": [*ident.policies, *custom],
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


def custom_grant(
    parent: pulumi.Resource,
    names: tuple[str, str],
    policy_name: str,
    description: str,
    document: pulumi.Input[str],
    role_name: pulumi.Output[str],
) -> tencentcloud.cam.RolePolicyAttachmentByName:
    """A custom policy (`names`: its resource name and its attachment's) attached to the nodes' role by name, as the
    asked policies are (an existing role with identity.existing)."""
    child = pulumi.ResourceOptions(parent=parent)
    policy = tencentcloud.cam.Policy(names[0], name=policy_name, document=document, description=description, opts=child)
    return tencentcloud.cam.RolePolicyAttachmentByName(
        names[1], policy_name=policy.name, role_name=role_name, opts=child
    )
