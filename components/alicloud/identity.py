"""The nodes' identity: a RAM role ECS may assume, with the RAM system policies the config asks for.

Least privilege: no policy unless `identity.policies` or `identity.readStorage` asks for one (the
default set in catalog/capabilities/alicloud.yaml `nodeIdentity` is empty, and says why). With
`identity.existing` no role is created; the asked policies are attached to that role by this stack
(and detached on destroy). The role reaches instances through `ecs.RamRoleAttachment` and the ESS
scaling configuration through its `role_name` (nodes.py, access.py).

The custom RAM policies other modules grant (the MUNGE key's `kms:Decrypt`, the health hook's
`ess:SetInstanceHealth`, the ACK eRDMA controller's calls) are written and attached by `custom_grant`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from ..spec import ClusterSpec


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


def allow_document(actions: Sequence[str], resources: Sequence[str]) -> str:
    """A RAM policy document allowing `actions` on `resources`, nothing else (keys sorted: the same text every run)."""
    statement = {"Action": list(actions), "Effect": "Allow", "Resource": list(resources)}
    return json.dumps({"Statement": [statement], "Version": "1"}, sort_keys=True)


def ram_policy_name(spec: ClusterSpec, purpose: str) -> str:
    """`<cluster>-<stack>-<purpose>` as a RAM policy name: letters, digits and '-', 1 to 128 (ram/policy.py
    policy_name docstring)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", f"{spec.name}-{spec.stack}-{purpose}")[:128]


@dataclass(frozen=True)
class CustomGrant:
    policy: alicloud.ram.Policy
    attachment: alicloud.ram.RolePolicyAttachment


def custom_grant(
    parent: pulumi.Resource,
    names: tuple[str, str],  # the resource names of the policy and of its attachment
    policy_name: pulumi.Input[str],
    description: str,
    document: pulumi.Input[str],
    role_name: pulumi.Input[str],
    tags: Mapping[str, str] | None = None,
) -> CustomGrant:
    """A custom RAM policy (`ram.Policy`) and its attachment (`ram.RolePolicyAttachment`, policyType Custom) to
    `role_name`."""
    child = pulumi.ResourceOptions(parent=parent)
    policy = alicloud.ram.Policy(
        names[0],
        policy_name=policy_name,
        description=description,
        policy_document=document,
        tags=dict(tags) if tags is not None else None,
        opts=child,
    )
    attachment = alicloud.ram.RolePolicyAttachment(
        names[1],
        policy_name=policy.policy_name,
        policy_type="Custom",
        role_name=role_name,
        opts=child,
    )
    return CustomGrant(policy, attachment)
