"""The cluster's Key Vaults (the customer-managed key's, the Slurm MUNGE key's, the AKS KMS key's): RBAC mode,
purge protection and soft delete as each asks, a firewall, and a name stable per stack."""

from __future__ import annotations

import hashlib
import re

import pulumi
import pulumi_azure_native as azure

from .context import Context


def vault_name(cluster: str, project: str, stack: str, component: str) -> str:
    """A Key Vault name (globally unique, 3-24 letters, digits and hyphens, starting with a letter), stable per
    stack: a deleted vault keeps its name for the soft-delete retention (catalog kms.softDeleteRetentionDays)."""
    stem = re.sub(r"[^a-z0-9]", "", cluster.lower())[:14] or "gpucluster"
    digest = hashlib.sha256(f"{project}/{stack}/{component}".encode()).hexdigest()[:8]
    return f"{stem}kv{digest}"


def rbac_vault(
    ctx: Context,
    suffix: str,
    *,
    name: pulumi.Input[str],
    tenant_id: pulumi.Input[str],
    sku: str,
    purge_protection: bool | None,
    soft_delete_days: int,
    default_action: str,
    bypass: str,
    public_network_access: str | None = None,  # None: Azure's default (Enabled, behind the firewall)
    opts: pulumi.ResourceOptions | None = None,  # None: the context's
) -> azure.keyvault.Vault:
    """A vault in RBAC mode (access by role assignments, no access policies), f"{ctx.name}-{suffix}"."""
    return azure.keyvault.Vault(
        f"{ctx.name}-{suffix}",
        vault_name=name,
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        properties=azure.keyvault.VaultPropertiesArgs(
            tenant_id=tenant_id,
            sku=azure.keyvault.SkuArgs(family="A", name=sku),
            enable_rbac_authorization=True,
            enable_purge_protection=purge_protection,
            soft_delete_retention_in_days=soft_delete_days,
            public_network_access=public_network_access,
            network_acls=azure.keyvault.NetworkRuleSetArgs(default_action=default_action, bypass=bypass),
        ),
        tags=ctx.tagged(suffix),
        opts=opts or ctx.opts,
    )
