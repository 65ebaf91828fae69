"""The shared filesystem (`storage.shared`): Azure Managed Lustre in its own subnet of the cluster VNet, or an
Azure Files premium NFS share behind a private endpoint.

Lustre: the subnet is the last /24 of the VNet's second half (`layout.shared_subnet_cidr`): no existing
subnet moves. Its NSG admits the Lustre ports (988, 1019-1023) from the node subnet, everything between the
filesystem's own hosts (amlfs-prerequisites), nothing from the internet.

NFS (`kind: nfs`): a FileStorage (premium) account with secure transfer off (NFS does not run over HTTPS),
public network access disabled and network rules denying everything; the share (NFS, its size the quota);
a private endpoint for the account's `file` service in the node subnet; the private DNS zone
`privatelink.file.core.windows.net` linked to the cluster VNet, the endpoint's A record in it (a DNS zone
group), so ACCOUNT.file.core.windows.net resolves to the private address on the nodes. The account name is
global: derived from the cluster name and a hash of project, stack and component (catalog/storage/azure.yaml).

Both are encrypted at rest with Microsoft-managed keys (the services' default). `retain: true` sets
`protect` and `retainOnDelete` on the filesystem (and on the NFS share's account, whose deletion deletes it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native as azure

from .. import resources
from ..layout.shared import Shared
from .context import Context
from .network import Network, private_link


@dataclass(frozen=True)
class SharedFilesystem(resources.SharedFilesystem):
    subnet: azure.network.Subnet | None


def _nsg(ctx: Context, shared: Shared, subnet_cidr: str) -> azure.network.NetworkSecurityGroup:
    node_cidr = ctx.layout.node_subnet_cidr
    rules = [
        azure.network.SecurityRuleArgs(
            name=f"allow-lustre-{low}" if low == high else f"allow-lustre-{low}-{high}",
            priority=100 + 10 * i,
            direction="Inbound",
            access="Allow",
            protocol="Tcp",
            source_address_prefix=node_cidr,
            source_port_range="*",
            destination_address_prefix=subnet_cidr,
            destination_port_range=str(low) if low == high else f"{low}-{high}",
            description="Lustre from the cluster's node subnet",
        )
        for i, (_protocol, low, high) in enumerate(shared.ports)
    ]
    rules += [
        azure.network.SecurityRuleArgs(
            name="allow-within-filesystem",
            priority=200,
            direction="Inbound",
            access="Allow",
            protocol="*",
            source_address_prefix=subnet_cidr,
            source_port_range="*",
            destination_address_prefix=subnet_cidr,
            destination_port_range="*",
            description="between the filesystem's own hosts (amlfs-prerequisites)",
        ),
        azure.network.SecurityRuleArgs(
            name="deny-internet-inbound",
            priority=4096,
            direction="Inbound",
            access="Deny",
            protocol="*",
            source_address_prefix="Internet",
            source_port_range="*",
            destination_address_prefix="*",
            destination_port_range="*",
            description="nothing from the internet",
        ),
    ]
    return azure.network.NetworkSecurityGroup(
        f"{ctx.name}-shared-nsg",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        security_rules=rules,
        tags=ctx.tagged("shared-nsg"),
        opts=ctx.opts,
    )


def build_shared(ctx: Context, net: Network, after: Sequence[pulumi.Resource] = ()) -> SharedFilesystem | None:
    """`after`: what holds the VNet's other subnets (Bastion, the login NIC): the subnet is written last."""
    layout = ctx.layout
    shared = layout.shared
    if shared is None:
        return None
    if shared.existing:
        return SharedFilesystem(None, shared.source_form, None)
    if shared.kind == "nfs":
        return _nfs_share(ctx, net, shared)
    assert layout.shared_subnet_cidr is not None and shared.size_gb is not None
    nsg = _nsg(ctx, shared, layout.shared_subnet_cidr)
    own = [net.subnet] if isinstance(net.subnet, pulumi.Resource) else []  # the node subnet (not a joined one)
    subnet = azure.network.Subnet(
        f"{ctx.name}-shared-subnet",
        resource_group_name=ctx.resource_group_name,
        virtual_network_name=net.vnet.name,
        address_prefix=layout.shared_subnet_cidr,
        network_security_group=azure.network.NetworkSecurityGroupArgs(id=nsg.id),
        # the filesystem reaches Azure services (its own management, blob) through the cluster's NAT
        nat_gateway=azure.network.SubResourceArgs(id=net.nat.id) if net.nat else None,
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=[*own, *after])),
    )
    window = (shared.data or {}).get("maintenance") or {}
    fs = azure.storagecache.AmlFilesystem(
        f"{ctx.name}-shared",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        sku=azure.storagecache.SkuNameArgs(name=f"AMLFS-Durable-Premium-{shared.throughput}"),
        storage_capacity_ti_b=shared.size_gb / 1024,
        filesystem_subnet=subnet.id,
        maintenance_window=azure.storagecache.AmlFilesystemMaintenanceWindowArgs(
            day_of_week=window.get("dayOfWeek", "Sunday"), time_of_day_utc=window.get("timeOfDayUTC", "02:00")
        ),
        zones=ctx.zones[:1] if ctx.zones else None,  # "should only contain a single element"
        **_lustre_key(ctx),
        tags=ctx.tagged("shared"),
        opts=pulumi.ResourceOptions.merge(
            ctx.opts, pulumi.ResourceOptions(protect=shared.retain, retain_on_delete=shared.retain)
        ),
    )
    source = fs.client_info.apply(lambda info: shared.source_form.format(mgsAddress=info.mgs_address))
    return SharedFilesystem(fs, source, subnet)


def _lustre_key(ctx: Context) -> dict[str, Any]:
    """encryption.key not provider: the filesystem's key encryption key and the identity that unwraps it."""
    key = ctx.key
    if key is None:
        return {}
    assert key.vault_id is not None  # the layout refuses a key id with Managed Lustre (no vault resource id)
    sc = azure.storagecache
    return {
        "encryption_settings": sc.AmlFilesystemEncryptionSettingsArgs(
            key_encryption_key=sc.KeyVaultKeyReferenceArgs(
                key_url=key.key_url, source_vault=sc.KeyVaultKeyReferenceSourceVaultArgs(id=key.vault_id)
            )
        ),
        "identity": sc.AmlFilesystemIdentityArgs(type="UserAssigned", user_assigned_identities=[key.identity_id]),
    }


def _account_key(ctx: Context) -> dict[str, Any]:
    """encryption.key not provider: the storage account (its file shares) on the key, without a version so Azure
    Storage follows the key's rotation, unwrapped by the encryption identity."""
    key = ctx.key
    if key is None:
        return {}
    st = azure.storage
    return {
        "identity": st.IdentityArgs(type="UserAssigned", user_assigned_identities=[key.identity_id]),
        "encryption": st.EncryptionArgs(
            key_source="Microsoft.Keyvault",
            key_vault_properties=st.KeyVaultPropertiesArgs(key_vault_uri=key.vault_uri, key_name=key.key_name),
            encryption_identity=st.EncryptionIdentityArgs(encryption_user_assigned_identity=key.identity_id),
            services=st.EncryptionServicesArgs(file=st.EncryptionServiceArgs(enabled=True, key_type="Account")),
        ),
    }


def account_name(cluster: str, project: str, stack: str, component: str) -> str:
    """A storage account name (3-24 lower-case letters and digits, unique across Azure): up to 16 of the
    cluster name's, then 8 hex digits of a hash of project, stack and component, stable across runs."""
    stem = re.sub(r"[^a-z0-9]", "", cluster.lower())[:16] or "gpucluster"
    digest = hashlib.sha256(f"{project}/{stack}/{component}".encode()).hexdigest()[:8]
    return f"{stem}{digest}"


def _nfs_share(ctx: Context, net: Network, shared: Shared) -> SharedFilesystem:
    data = shared.data or {}
    account_data = data.get("account") or {}
    zone_name = str(data.get("privateDnsZone", "privatelink.file.core.windows.net"))
    name = account_name(ctx.layout.spec.name, pulumi.get_project(), pulumi.get_stack(), ctx.name)
    share_name = "shared"
    kept = pulumi.ResourceOptions.merge(
        ctx.opts, pulumi.ResourceOptions(protect=shared.retain, retain_on_delete=shared.retain)
    )
    account = azure.storage.StorageAccount(
        f"{ctx.name}-shared-account",
        account_name=name,
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        kind=str(account_data.get("kind", "FileStorage")),
        sku=azure.storage.SkuArgs(name=str(account_data.get("sku", "Premium_LRS"))),
        enable_https_traffic_only=False,  # NFS does not run over HTTPS: "secure transfer required" must be off
        public_network_access="Disabled",
        network_rule_set=azure.storage.NetworkRuleSetArgs(default_action="Deny", bypass="None"),
        allow_blob_public_access=False,
        minimum_tls_version="TLS1_2",
        **_account_key(ctx),
        tags=ctx.tagged("shared-account"),
        opts=kept,
    )
    share = azure.storage.FileShare(
        f"{ctx.name}-shared",
        account_name=name,  # the literal (the plan shows it); depends_on orders the share after the account
        resource_group_name=ctx.resource_group_name,
        share_name=share_name,
        enabled_protocols="NFS",
        share_quota=shared.size_gb,
        opts=pulumi.ResourceOptions.merge(kept, pulumi.ResourceOptions(depends_on=[account])),
    )
    private_link(
        ctx, net, "shared", target_id=account.id, group_id="file", zone_name=zone_name, connection="shared-file"
    )
    # the source names the account and share; it waits on the share (and so on its account)
    source = share.id.apply(lambda _: shared.source_form.format(accountName=name, shareName=share_name))
    return SharedFilesystem(share, source, None)
