"""The nodes' service account: created per cluster with its project roles, or an existing one by email."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout
from ..resources import from_config


@dataclass
class Identity:
    email: pulumi.Input[str]
    scopes: tuple[str, ...]
    account: gcp.serviceaccount.Account | None = None
    grants: list[gcp.projects.IAMMember] = field(default_factory=list)

    def template_args(self) -> gcp.compute.InstanceTemplateServiceAccountArgs:
        return gcp.compute.InstanceTemplateServiceAccountArgs(email=self.email, scopes=list(self.scopes))

    def output(self, layout: GcpLayout) -> dict[str, Any]:
        """Everything the nodes may do, for the plan: the account and the roles it holds."""
        return {"kind": "service-account", "name": self.email, "grants": list(layout.identity.roles)}


def _role_suffix(role: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", role.removeprefix("roles/").lower()).strip("-")


def build_identity(name: str, layout: GcpLayout, child: pulumi.ResourceOptions) -> Identity:
    ident = layout.identity
    spec = layout.spec
    if ident.existing is not None:
        # Nothing is created or granted: the account's roles are its owner's business.
        return Identity(from_config(spec, ident.existing), ident.scopes)
    account = gcp.serviceaccount.Account(
        f"{name}-sa",
        account_id=ident.account_id,
        display_name=f"gpu-cluster {spec.name} nodes",
        description=f"gpu-cluster {spec.name}: GPU and login nodes (stack {spec.stack})",
        project=layout.project or None,
        opts=child,
    )
    grants = [
        gcp.projects.IAMMember(
            f"{name}-sa-{_role_suffix(role)}",
            project=layout.project,
            role=from_config(spec, role) if role in spec.identity.policies else role,
            member=account.member,
            opts=child,
        )
        for role in ident.roles
    ]
    return Identity(account.email, ident.scopes, account, grants)
