"""The nodes' identity: one user-assigned managed identity (or an existing one) on every VM, and the
role assignments `identity.policies` / `identity.readStorage` ask for, on the cluster's resource group."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..resources import from_config, invoke_options
from .context import Context

KIND = "managed-identity"


@dataclass(frozen=True)
class Identity:
    resource_id: pulumi.Input[str]
    name: pulumi.Input[str]  # the resource's name, or the existing identity's resource id
    grants: list[str]  # role definition ids, as configured (what the plan lists)
    assignments: list[azure.authorization.RoleAssignment] = field(default_factory=list)
    # scheduler kubernetes: what AKS takes for a kubelet identity (identityProfile.kubeletidentity)
    client_id: pulumi.Input[str] | None = None
    principal_id: pulumi.Input[str] | None = None

    def for_vm(self) -> azure.compute.VirtualMachineIdentityArgs:
        """A VM's `identity` (azure-native 3.x takes a list of identity resource ids)."""
        return azure.compute.VirtualMachineIdentityArgs(
            type="UserAssigned", user_assigned_identities=[self.resource_id]
        )

    def for_scale_set(self) -> azure.compute.VirtualMachineScaleSetIdentityArgs:
        return azure.compute.VirtualMachineScaleSetIdentityArgs(
            type="UserAssigned", user_assigned_identities=[self.resource_id]
        )

    def output(self) -> dict[str, Any]:
        return {"kind": KIND, "name": self.name, "grants": list(self.grants)}


def role_assignment(
    ctx: Context,
    suffix: str,
    role: str,
    principal: pulumi.Input[str],
    scope: pulumi.Input[str],
    subscription: pulumi.Input[str],
    why: str,
    principal_type: str | None = "ServicePrincipal",
) -> azure.authorization.RoleAssignment:
    """`principal` holds the built-in `role` (its tenant-relative /providers/... id) on `scope`, f"{ctx.name}-{suffix}".
    The role is assigned in its subscription form, as Azure returns it (no diff on refresh)."""
    return azure.authorization.RoleAssignment(
        f"{ctx.name}-{suffix}",
        principal_id=principal,
        principal_type=principal_type,
        role_definition_id=pulumi.Output.concat("/subscriptions/", subscription, role),
        scope=scope,
        description=f"gpu-cluster {ctx.layout.spec.name}: {why}",
        opts=ctx.opts,
    )


def _existing(ctx: Context, resource_id: str) -> pulumi.Output[Any]:
    # /subscriptions/S/resourceGroups/RG/providers/Microsoft.ManagedIdentity/userAssignedIdentities/NAME
    parts = resource_id.split("/")
    found: pulumi.Output[Any] = azure.managedidentity.get_user_assigned_identity_output(
        resource_group_name=parts[4], resource_name=parts[8], opts=invoke_options(ctx.component)
    )
    return found


def build(ctx: Context) -> Identity:
    plan = ctx.layout.identity
    spec = ctx.layout.spec
    principal: pulumi.Input[str]
    client_id: pulumi.Input[str] | None = None
    if plan.existing_id is not None:
        existing: pulumi.Input[str] = from_config(spec, plan.existing_id)
        resource_id, name = existing, existing
        # looked up only when needed: a role to assign (grants, the Slurm MUNGE key, scaling), or AKS's kubelet identity
        found = (
            _existing(ctx, plan.existing_id)
            if plan.grants or ctx.layout.aks or ctx.layout.slurm or ctx.layout.elastic
            else None
        )
        principal = found.principal_id if found is not None else ""
        client_id = found.client_id if found is not None else None
    else:
        created = azure.managedidentity.UserAssignedIdentity(
            f"{ctx.name}-identity",
            resource_group_name=ctx.resource_group_name,
            location=ctx.location,
            tags=ctx.tagged("identity"),
            opts=ctx.opts,
        )
        resource_id, name, principal = created.id, created.name, created.principal_id
        client_id = created.client_id
    grants = [g.role_definition_id for g in plan.grants]
    assignments = []
    if plan.grants:
        subscription = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component)).subscription_id
        scope = pulumi.Output.concat("/subscriptions/", subscription, "/resourceGroups/", ctx.resource_group_name)
        for grant in plan.grants:
            role = grant.role_definition_id
            # A built-in role given tenant-relative is assigned in its subscription form, which is how
            # Azure returns it (no diff on refresh).
            full: pulumi.Input[str] = (
                pulumi.Output.concat("/subscriptions/", subscription, role) if role.startswith("/providers/") else role
            )
            assignments.append(
                azure.authorization.RoleAssignment(
                    # Named by the role's GUID: adding or removing another role never renames this one.
                    f"{ctx.name}-role-{role.rsplit('/', 1)[-1].lower()[:8]}",
                    principal_id=principal,
                    principal_type="ServicePrincipal",
                    role_definition_id=full,
                    scope=scope,
                    description=f"gpu-cluster {spec.name}: {grant.why}",
                    opts=ctx.opts,
                )
            )
    return Identity(resource_id, name, grants, assignments, client_id, principal)
