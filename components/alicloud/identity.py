"""The nodes' identity: a RAM role ECS may assume, with the RAM system policies the config asks for.

Least privilege: no policy unless `identity.policies` or `identity.readStorage` asks for one (the
default set in catalog/capabilities/alicloud.yaml `nodeIdentity` is empty, and says why). With
`identity.existing` no role is created; the asked policies are attached to that role by this stack
(and detached on destroy). The role reaches instances through `ecs.RamRoleAttachment` and the ESS
scaling configuration through its `role_name` (nodes.py, access.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout


@dataclass(frozen=True)
class Identity:
    role: alicloud.ram.Role | None  # None: an existing role
    role_name: pulumi.Output[str]
    attachments: list[alicloud.ram.RolePolicyAttachment]

    def output(self, layout: AlicloudLayout) -> dict[str, Any]:
        """The `identity` stack output: everything the role is allowed by this stack."""
        ident = layout.identity
        return {
            "kind": "ram-role",
            "name": self.role_name,
            "grants": list(ident.policies),
            "existing": not ident.create,
        }


def build(parent: pulumi.Resource, name: str, layout: AlicloudLayout, tags: Mapping[str, str]) -> Identity:
    ident = layout.identity
    child = pulumi.ResourceOptions(parent=parent)
    role: alicloud.ram.Role | None = None
    role_name: pulumi.Output[str]
    if ident.create:
        role = alicloud.ram.Role(
            f"{name}-role",
            role_name=ident.role_name,
            assume_role_policy_document=ident.assume_role_policy,
            description=f"gpu-cluster {layout.spec.name} nodes (ECS instance RAM role)",
            tags=dict(tags),
            opts=child,
        )
        role_name = role.role_name
    else:
        role_name = pulumi.Output.from_input(ident.role_name)
    attachments = [
        alicloud.ram.RolePolicyAttachment(
            f"{name}-role-{policy}",
            policy_name=policy,
            policy_type="System",
            role_name=role_name,
            opts=child,
        )
        for policy in ident.policies
    ]
    return Identity(role, role_name, attachments)
