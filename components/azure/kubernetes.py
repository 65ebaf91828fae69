"""`scheduler: kubernetes` on Azure: an AKS cluster in the cluster VNet, its GPU agent pool and the in-cluster
software (`layout.azure.Aks`, data in catalog/kubernetes/azure.yaml).

What is built, in order: the API server's delegated subnet (API Server VNet Integration), the control plane's
user-assigned identity and its role assignments (Network Contributor on the two subnets, Managed Identity Operator
on the kubelet identity, Key Vault Crypto User + Contributor on the KMS vault), a private RBAC-mode Key Vault with
the KMS key, the `ManagedCluster` (private API server, Entra ID + Azure RBAC, no local accounts, KMS, Azure CNI
Overlay, the CPU system pool inline), the GPU `AgentPool`, the deployer's cluster-admin role, then the Helm
releases and custom resources through a provider built from the cluster's own kubeconfig.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native as azure
import yaml

from .. import incluster
from ..layout.azure import Aks, AksPool
from ..resources import Joined, invoke_options
from . import aks_metrics, logs
from .context import Context
from .identity import Identity, role_assignment
from .network import Network
from .nodes import placement_group
from .vault import rbac_vault, vault_name

# The Entra ID server application of every AKS cluster with managed Entra ID: the audience kubelogin asks a
# token for (Azure/kubelogin docs, "convert-kubeconfig": --server-id; the id AKS writes into the exec kubeconfig).
AKS_SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"
_KUBELOGIN = " && kubelogin convert-kubeconfig -l azurecli"


@dataclass(frozen=True)
class Kubernetes:
    cluster: azure.containerservice.ManagedCluster
    gpu_pool: azure.containerservice.AgentPool
    ppg: azure.compute.ProximityPlacementGroup | None
    vault: azure.keyvault.Vault
    key: azure.keyvault.Key
    api_subnet: azure.network.Subnet
    identity: azure.managedidentity.UserAssignedIdentity  # the control plane's
    kubeconfig: pulumi.Output[str]
    software: incluster.InCluster

    def output(self, aks: Aks, rg: pulumi.Input[str]) -> dict[str, Any]:
        """`kubernetes` of the cluster outputs: what to call the cluster and how to reach it."""
        endpoint = self.cluster.private_fqdn if aks.private else self.cluster.fqdn
        return {
            "clusterName": self.cluster.name,
            "endpoint": endpoint,
            "version": aks.version,
            "nodePools": [aks.system.name, aks.gpu.name],
            # local accounts are off: the kubeconfig authenticates through Entra ID (kubelogin + az login)
            "credentials": pulumi.Output.concat(
                "az aks get-credentials --resource-group ", rg, " --name ", self.cluster.name, _KUBELOGIN
            ),
            "releases": [{"name": r.name, "chart": r.chart, "version": r.version} for r in aks.releases],
        }


def azurecli_kubeconfig(encoded: str) -> str:
    """The cluster user kubeconfig (base64, `format exec`) with kubelogin switched to the Azure CLI login, as
    `kubelogin convert-kubeconfig -l azurecli` does: no device-code prompt during `pulumi up`."""
    config = yaml.safe_load(base64.b64decode(encoded).decode())
    for user in config.get("users") or []:
        exec_ = (user.get("user") or {}).get("exec")
        if exec_ is None:
            continue
        args = list(exec_.get("args") or [])
        server = args[args.index("--server-id") + 1] if "--server-id" in args else AKS_SERVER_ID
        exec_["args"] = ["get-token", "--login", "azurecli", "--server-id", server]
    return str(yaml.safe_dump(config, sort_keys=False))


def _profile(pool: AksPool, aks: Aks, subnet: pulumi.Input[str], host_encryption: bool) -> dict[str, Any]:
    """The arguments an agent pool profile and an `AgentPool` share (snake_case, as both SDK classes take them)."""
    args: dict[str, Any] = {
        "mode": pool.mode,
        "vm_size": pool.vm_size,
        "count": pool.count,
        "enable_auto_scaling": pool.min_count is not None,
        "min_count": pool.min_count,
        "max_count": pool.max_count,
        "os_type": "Linux",
        "os_sku": pool.os_sku,
        "os_disk_size_gb": pool.os_disk_gb,
        "os_disk_type": "Managed",
        "type": "VirtualMachineScaleSets",
        "orchestrator_version": aks.version,
        "vnet_subnet_id": subnet,
        "enable_node_public_ip": False,  # private nodes: egress through the cluster's NAT gateway
        "enable_encryption_at_host": host_encryption or None,
        "node_taints": list(pool.taints),
        "node_labels": dict(pool.labels) or None,
        "availability_zones": list(pool.zones) or None,
        "capacity_reservation_group_id": pool.capacity_reservation_group,
    }
    if pool.spot:
        # Delete: an evicted node frees its quota; -1: pay up to the on-demand price (spot-node-pool.md)
        args.update(scale_set_priority="Spot", scale_set_eviction_policy="Delete", spot_max_price=-1)
    return args


def api_subnet(ctx: Context, net: Network, after: list[pulumi.Resource]) -> azure.network.Subnet:
    """The API server's delegated subnet. `after`: what holds the VNet's other subnets (Azure writes one subnet
    of a VNet at a time)."""
    aks = ctx.layout.aks
    assert aks is not None
    assert not isinstance(net.subnet, Joined) and not isinstance(net.vnet, Joined)  # the layout refuses existing
    return azure.network.Subnet(
        f"{ctx.name}-apiserver",
        resource_group_name=ctx.resource_group_name,
        virtual_network_name=net.vnet.name,
        address_prefix=aks.api_subnet_cidr,
        delegations=[azure.network.DelegationArgs(name="aks-apiserver", service_name=aks.api_subnet_delegation)],
        default_outbound_access=False,
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=[net.subnet, *after])),
    )


def build(
    ctx: Context,
    net: Network,
    identity: Identity,
    api: azure.network.Subnet,
    shipped: logs.Logs | None = None,
    metrics: azure.monitor.AzureMonitorWorkspace | None = None,
) -> Kubernetes:
    """`metrics`: prometheus managed, the Azure Monitor workspace the add-on sends to (aks_metrics.py)."""
    layout, name, rg = ctx.layout, ctx.name, ctx.resource_group_name
    aks = layout.aks
    assert aks is not None
    assert not isinstance(net.subnet, Joined)  # the layout refuses network.existing
    client = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component))
    subscription, tenant = client.subscription_id, client.tenant_id
    api_subnet = api
    control = azure.managedidentity.UserAssignedIdentity(
        f"{name}-aks-identity", resource_group_name=rg, location=ctx.location, tags=ctx.tagged("aks-identity"),
        opts=ctx.opts,
    )  # fmt: skip
    principal = control.principal_id
    roles = aks.roles

    def control_role(suffix: str, role: str, scope: pulumi.Input[str], why: str) -> azure.authorization.RoleAssignment:
        return role_assignment(ctx, f"aks-role-{suffix}", role, principal, scope, subscription, why)

    grants = [
        control_role("net-nodes", roles["networkContributor"], net.subnet.id,
                     "AKS control plane: Azure CNI in the node subnet"),
        control_role("net-apiserver", roles["networkContributor"], api_subnet.id,
                     "AKS control plane: the API server's delegated subnet"),
        control_role("kubelet-operator", roles["managedIdentityOperator"], identity.resource_id,
                     "AKS control plane: assigns the node identity to the nodes as their kubelet identity"),
    ]  # fmt: skip

    kms = aks.kms
    vault = rbac_vault(
        ctx,
        "kms-vault",
        name=vault_name(layout.spec.name, pulumi.get_project(), pulumi.get_stack(), name),
        tenant_id=tenant,
        sku=kms.vault_sku,
        purge_protection=kms.purge_protection or None,
        soft_delete_days=kms.soft_delete_days,
        # private: AKS reaches it through a private endpoint it creates in the node resource group
        public_network_access="Disabled",
        default_action="Deny",
        bypass="AzureServices",
    )
    key = azure.keyvault.Key(
        f"{name}-kms-key",
        resource_group_name=rg,
        vault_name=vault.name,
        key_name="etcd-kms",
        properties=azure.keyvault.KeyPropertiesArgs(kty=kms.key_type, key_size=kms.key_size),
        tags=ctx.tagged("kms-key"),
        opts=ctx.opts,
    )
    grants += [
        control_role("kms-crypto", roles["keyVaultCryptoUser"], vault.id,
                     "AKS KMS: encrypt and decrypt with the etcd key"),
        control_role("kms-link", roles["keyVaultContributor"], vault.id,
                     "AKS KMS: the private link to the private key vault"),
    ]  # fmt: skip

    if ctx.key is not None and layout.encryption is not None:
        # "Ensure your AKS cluster identity has read permission of DiskEncryptionSet" (AKS BYOK)
        grants.append(control_role("des-reader", layout.encryption.aks_reader_role, ctx.key.des_id,
                                   "AKS control plane: reads the node disks' disk encryption set"))  # fmt: skip
    system = _profile(aks.system, aks, net.subnet.id, layout.encryption_at_host)
    collected = aks_metrics.collection(ctx, aks.metrics, metrics) if aks.metrics and metrics else None
    cluster = azure.containerservice.ManagedCluster(
        f"{name}-aks",
        resource_group_name=rg,
        location=ctx.location,
        kubernetes_version=aks.version,
        sku=azure.containerservice.ManagedClusterSKUArgs(name=aks.sku_name, tier=aks.sku_tier),
        dns_prefix=layout.spec.name.rstrip("-"),
        identity=azure.containerservice.ManagedClusterIdentityArgs(
            type="UserAssigned", user_assigned_identities=[control.id]
        ),
        # the cluster's node identity as the kubelet identity: identity.policies / readStorage reach the nodes
        identity_profile={
            "kubeletidentity": azure.containerservice.UserAssignedIdentityArgs(
                resource_id=identity.resource_id, client_id=identity.client_id, object_id=identity.principal_id
            )
        },
        aad_profile=azure.containerservice.ManagedClusterAADProfileArgs(
            managed=True, enable_azure_rbac=True, tenant_id=tenant
        ),
        enable_rbac=True,
        disable_local_accounts=True,
        api_server_access_profile=azure.containerservice.ManagedClusterAPIServerAccessProfileArgs(
            enable_private_cluster=aks.private,
            enable_private_cluster_public_fqdn=False if aks.private else None,
            private_dns_zone="system" if aks.private else None,
            authorized_ip_ranges=list(aks.authorized_ranges) or None,
            enable_vnet_integration=True,
            subnet_id=api_subnet.id,
        ),
        network_profile=azure.containerservice.ContainerServiceNetworkProfileArgs(
            network_plugin=aks.network_plugin,
            network_plugin_mode=aks.network_plugin_mode,
            pod_cidr=aks.pod_cidr,
            service_cidr=aks.service_cidr,
            dns_service_ip=aks.dns_service_ip,
            outbound_type=aks.outbound_type,
            load_balancer_sku="standard",
        ),
        agent_pool_profiles=[azure.containerservice.ManagedClusterAgentPoolProfileArgs(name=aks.system.name, **system)],
        security_profile=azure.containerservice.ManagedClusterSecurityProfileArgs(
            azure_key_vault_kms=azure.containerservice.AzureKeyVaultKmsArgs(
                enabled=True,
                key_id=key.key_uri_with_version,
                key_vault_network_access=kms.network_access,
                key_vault_resource_id=vault.id,
            )
        ),
        # encryption.key not provider: the nodes' OS and data disks on the cluster's disk encryption set
        disk_encryption_set_id=ctx.key.des_id if ctx.key else None,
        # monitoring.logs: Container Insights to the cluster's workspace (None without: the inputs as before)
        addon_profiles=logs.addon_profiles(shipped),
        # prometheus managed: AKS's managed Prometheus add-on (None without: the inputs as before)
        azure_monitor_profile=aks_metrics.profile(aks.metrics),
        tags=ctx.tagged("aks"),
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=grants)),
    )
    logs.associate_cluster(ctx, shipped, cluster)
    if collected is not None and aks.metrics is not None:
        aks_metrics.associate(ctx, aks.metrics, collected, cluster)
    ppg = placement_group(ctx)
    gpu = _profile(aks.gpu, aks, net.subnet.id, layout.encryption_at_host)
    gpu_pool = azure.containerservice.AgentPool(
        f"{name}-gpu-pool",
        resource_group_name=rg,
        resource_name_=cluster.name,
        agent_pool_name=aks.gpu.name,
        gpu_profile=azure.containerservice.GPUProfileArgs(driver=aks.gpu.gpu_driver),
        gpu_instance_profile=aks.gpu.gpu_instance_profile,
        proximity_placement_group_id=ppg.id if ppg is not None and aks.gpu.proximity_placement_group else None,
        # AKS cordons and drains each node itself; the update block sizes the batches and the drain budget
        upgrade_settings=azure.containerservice.AgentPoolUpgradeSettingsArgs(
            max_surge=aks.gpu.upgrade[0],
            max_unavailable=aks.gpu.upgrade[1],
            drain_timeout_in_minutes=aks.gpu.upgrade[2],
        )
        if aks.gpu.upgrade is not None
        else None,
        tags=ctx.tagged("gpu-pool"),
        opts=ctx.opts,
        **gpu,
    )
    # Helm and the custom resources authorise as whoever runs `pulumi up` (Entra ID, no local accounts). ARM
    # refuses a principalType that does not match the principal (UnmatchedPrincipalType) and the SDK's default is
    # User: a service principal deployer needs the type changed (docs/azure.md).
    admin = role_assignment(
        ctx, "aks-role-deployer-admin", roles["clusterAdmin"], client.object_id, cluster.id, subscription,
        "the deploying identity administers the cluster (Helm releases)", principal_type="User",
    )  # fmt: skip
    creds = azure.containerservice.list_managed_cluster_user_credentials_output(
        resource_group_name=rg, resource_name=cluster.name, format="exec", opts=invoke_options(ctx.component)
    )
    kubeconfig = pulumi.Output.secret(creds.kubeconfigs[0].value.apply(azurecli_kubeconfig))
    software = incluster.install(name, kubeconfig, aks.releases, ctx.component, depends_on=[gpu_pool, admin])
    incluster.apply(
        name,
        software.provider,
        aks.manifests,
        ctx.component,
        after={r.name: res for r, res in zip(aks.releases, software.releases, strict=True)},
    )
    if aks.metrics is not None:  # the DCGM exporter's scrape job, for the add-on's pods
        aks_metrics.scrape_config_map(ctx, aks.metrics, software, after=[gpu_pool, admin])
    return Kubernetes(cluster, gpu_pool, ppg, vault, key, api_subnet, control, kubeconfig, software)
