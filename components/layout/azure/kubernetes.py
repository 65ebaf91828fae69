"""`scheduler: kubernetes` on Azure: the AKS cluster, its pools and KMS, the overlay's NSG rules and whether NCCL can
use InfiniBand on the GPU pool (catalog/kubernetes/azure.yaml)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ...bootstrap.fabric import FabricUsability
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ..kubernetes import GPU_TAINT, Manifest, Release, autoscaled, gpu_labels, gpu_sharing, manifests, releases
from .access import ACCESS_BLOCK_PREFIX
from .aks_metrics import AksMetrics
from .aks_metrics import plan as metrics_plan
from .data import aks_data
from .network import SecurityRule
from .nodes import aks_upgrade

# --- scheduler kubernetes: AKS (catalog/kubernetes/azure.yaml) ---------------------------------------

API_SUBNET_BLOCK = 2  # the third /26 of the VNet's free half (0: AzureBastionSubnet, 1: login)


@dataclass(frozen=True)
class AksPool:
    """One AKS agent pool (`containerservice` agent pool profile or `AgentPool`)."""

    name: str  # ARM agent pool name: lowercase letters and digits, at most 12 (Linux)
    mode: Literal["System", "User"]
    vm_size: str
    count: int
    min_count: int | None  # the cluster autoscaler's range when maxNodes > nodes; None: a fixed count
    max_count: int | None
    os_sku: str
    os_disk_gb: int
    taints: tuple[str, ...]  # "key=value:Effect"
    labels: Mapping[str, str]
    gpu_driver: str | None  # gpuProfile.driver (GPU pool): None when the GPU operator installs the driver
    spot: bool
    zones: tuple[str, ...]
    capacity_reservation_group: str | None
    proximity_placement_group: bool  # in the layout's PPG (the GPU pool with placement cluster)
    # upgradeSettings (the GPU pool): maxSurge, maxUnavailable, drainTimeoutInMinutes; None: AKS's defaults
    upgrade: tuple[str, str, int | None] | None = None
    gpu_instance_profile: str | None = None  # kubernetes.gpuSharing mig: MIG1g..MIG7g, AKS splits every GPU


@dataclass(frozen=True)
class AksKms:
    """KMS etcd encryption with a key in a private Key Vault (catalog/kubernetes/azure.yaml `kms`)."""

    vault_sku: str
    key_type: str
    key_size: int
    soft_delete_days: int
    purge_protection: bool
    network_access: str


@dataclass(frozen=True)
class Aks:
    """`scheduler: kubernetes` on Azure: one AKS cluster in the cluster VNet (catalog/kubernetes/azure.yaml)."""

    version: str
    sku_name: str  # ManagedClusterSKU name / tier (catalog controlPlaneSku)
    sku_tier: str
    private: bool  # enablePrivateCluster: the API server only inside the VNet
    authorized_ranges: tuple[str, ...]  # public endpoint: who may reach it (kubernetes.publicCidrs)
    api_subnet_cidr: str  # API Server VNet Integration: the delegated subnet
    api_subnet_delegation: str
    network_plugin: str
    network_plugin_mode: str
    pod_cidr: str
    service_cidr: str
    dns_service_ip: str
    outbound_type: str
    system: AksPool
    gpu: AksPool
    kms: AksKms
    roles: Mapping[str, str]  # role name -> role definition id (tenant-relative)
    infiniband_feature: str | None  # the subscription feature IB needs (None: no IB wired)
    releases: tuple[Release, ...]
    manifests: tuple[Manifest, ...]
    metrics: AksMetrics | None = None  # monitoring.prometheus managed: AKS's managed Prometheus add-on


def _free_range(candidates: list[str], taken: list[ipaddress.IPv4Network], key: str, what: str) -> str:
    for cidr in candidates:
        net = ipaddress.IPv4Network(cidr)
        if not any(net.overlaps(other) for other in taken):
            return cidr
    raise ConfigError(
        key, f"overlaps every {what} range gpu-cluster can give AKS ({', '.join(candidates)}); use another"
    )


def _api_subnet(spec: ClusterSpec, node_cidr: str, prefix: int) -> str:
    """The API server's delegated subnet: the first /28 of the third /26 block of the VNet's free half (blocks
    0 and 1 are Bastion's and the login node's, the last /24 Managed Lustre's): no other subnet moves."""
    second = next(n for n in ipaddress.IPv4Network(spec.network.cidr).subnets(prefixlen_diff=1) if str(n) != node_cidr)
    blocks = list(second.subnets(new_prefix=ACCESS_BLOCK_PREFIX)) if second.prefixlen <= ACCESS_BLOCK_PREFIX else []
    if len(blocks) <= API_SUBNET_BLOCK + 1:  # the block after it keeps Managed Lustre's /24 clear on small networks
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves {second} beside the node subnet, too small for the AKS API server subnet "
            f"(a /{prefix} after the access subnets); use a /23 or larger network",
        )
    return str(next(blocks[API_SUBNET_BLOCK].subnets(new_prefix=prefix)))


def aks(spec: ClusterSpec, node_cidr: str, ib: bool, warnings: list[str]) -> Aks:
    """The AKS cluster: private API server (VNet-integrated), KMS-encrypted Secrets, a CPU system pool and the GPU
    pool from the same keys as the scale set (size, counts, spot, reservation, PPG, fabric, root disk)."""
    kube = spec.kubernetes
    assert kube is not None
    data, k = aks_data(), f"{CLUSTER_KEY}."
    row = spec.instance
    if spec.network.existing is not None:
        raise ConfigError(
            f"{k}network.existing",
            "set with scheduler kubernetes: AKS needs Network Contributor on the subnets and a delegated API server "
            "subnet, which gpu-cluster gives only in a network it creates; remove network.existing",
        )
    if spec.network.egress != "nat":
        raise ConfigError(
            f"{k}network.egress",
            f"{spec.network.egress} with scheduler kubernetes: AKS nodes must reach the control plane's images and "
            f"packages, through the cluster's NAT gateway (outboundType {data['network']['outboundType']}); use nat",
        )
    ib_data = data["infiniband"]
    if ib and spec.nodes < int(ib_data["minNodes"]):
        raise ConfigError(
            f"{k}nodes",
            f"{spec.nodes} with InfiniBand on {row.instanceType} under AKS: the RDMA setup (Network Operator, "
            f"{ib_data['feature']}) is for at least {ib_data['minNodes']} nodes; use {ib_data['minNodes']} or more, "
            "or fabric: none",
        )
    net = data["network"]
    vnet = ipaddress.IPv4Network(spec.network.cidr)
    reserved = [ipaddress.IPv4Network(r) for r in net["reserved"]]
    pod = _free_range(list(net["podCidrs"]), [vnet, *reserved], f"{k}network.cidr", "pod")
    service = _free_range(
        list(net["serviceCidrs"]), [vnet, *reserved, ipaddress.IPv4Network(pod)], f"{k}network.cidr", "service"
    )
    dns_ip = str(ipaddress.IPv4Network(service).network_address + int(net["dnsServiceHost"]))
    # the cluster autoscaler on the GPU pool when it may grow (maxNodes > nodes) or shrink (minNodes < nodes); a User
    # pool may scale to 0 (AKS: "User node pools ... scale to zero", learn.microsoft.com training
    # aks-optimize-compute-costs/2-node-pools; only System pools need a running node)
    autoscale = autoscaled(spec)
    zones = (spec.zone,) if spec.zone else ()
    system = AksPool(
        name="system",
        mode="System",
        vm_size=kube.system_instance_type,
        count=kube.system_nodes,
        min_count=None,
        max_count=None,
        os_sku=str(data["osSku"]),
        os_disk_gb=spec.storage.root_gb,
        taints=(str(data["systemTaint"]),),
        labels={},
        gpu_driver=None,
        spot=False,
        zones=zones,
        capacity_reservation_group=None,
        proximity_placement_group=False,
    )
    taint = f"{GPU_TAINT['key']}={GPU_TAINT['value']}:{GPU_TAINT['effect']}"
    gpu = AksPool(
        name="gpu",
        mode="User",
        vm_size=row.instanceType,
        count=spec.nodes,
        min_count=spec.min_nodes if autoscale else None,
        max_count=spec.max_nodes if autoscale else None,
        os_sku=str(data["osSku"]),
        os_disk_gb=spec.storage.root_gb,
        taints=(taint,),
        labels=gpu_labels(spec),
        gpu_driver=str(data["gpuDriver"][kube.gpu_software]),
        spot=spec.spot,
        zones=zones,
        capacity_reservation_group=spec.reservation or None,
        proximity_placement_group=spec.placement == "cluster",
        # AKS cordons and drains each node itself, within drainTimeoutInMinutes; the update block sizes it
        upgrade=aks_upgrade(spec),
        gpu_instance_profile=_mig_instance_profile(spec),
    )
    kms = data["kms"]
    api = data["apiServerSubnet"]
    if ib:
        warnings.append(
            f"{k}fabric: InfiniBand on the AKS pool needs the subscription feature {ib_data['feature']} registered "
            f"before deploy (nothing in the SDK sets it): {ib_data['register']}; check with: {ib_data['check']}"
        )
    warnings.append(
        f"{k}scheduler: kubernetes on AKS: agent pools take no custom data, so the node bootstrap (health check, "
        "node exporter, scratch RAID, InfiniBand boot check) does not run on the GPU nodes; the GPU software comes "
        "from the in-cluster releases (docs/azure.md)"
    )
    if spec.storage.shared is not None:
        warnings.append(
            f"{k}storage.shared: built, but not mounted on AKS nodes (no node bootstrap); mount it in pods "
            "through the Azure Lustre or Azure Files CSI driver"
        )
    return Aks(
        version=kube.version,
        sku_name=str(data["controlPlaneSku"]["name"]),
        sku_tier=str(data["controlPlaneSku"]["tier"]),
        private=not kube.public_endpoint,
        authorized_ranges=kube.public_cidrs,
        api_subnet_cidr=_api_subnet(spec, node_cidr, int(api["prefix"])),
        api_subnet_delegation=str(api["delegation"]),
        network_plugin=str(net["plugin"]),
        network_plugin_mode=str(net["pluginMode"]),
        pod_cidr=pod,
        service_cidr=service,
        dns_service_ip=dns_ip,
        outbound_type=str(net["outboundType"]),
        system=system,
        gpu=gpu,
        kms=AksKms(
            str(kms["vaultSku"]),
            str(kms["keyType"]),
            int(kms["keySize"]),
            int(kms["softDeleteRetentionDays"]),
            bool(kms["purgeProtection"]),
            str(kms["networkAccess"]),
        ),
        roles={str(name): str(role) for name, role in data["roles"].items()},
        infiniband_feature=str(ib_data["feature"]) if ib else None,
        releases=releases(spec),
        manifests=manifests(spec),
        metrics=metrics_plan(spec),
    )


def _mig_instance_profile(spec: ClusterSpec) -> str | None:
    """gpuSharing mig: the pool's gpuInstanceProfile of the profile's slice size (sharing.yaml azure mig.profiles;
    the spec's rules allowed only the size's own profile)."""
    sharing = gpu_sharing(spec)
    if sharing is None or sharing.mode != "mig" or sharing.node_pool is None:
        return None
    assert sharing.mig_profile is not None
    return str(sharing.node_pool["profiles"][sharing.mig_profile.split(".", 1)[0]])


def aks_fabric(spec: ClusterSpec, aks: Aks) -> FabricUsability:
    """InfiniBand on an AKS pool: usable when the GPU operator installs the driver with GPUDirect RDMA and the
    Network Operator the DOCA driver and RDMA device plugin (Azure's AKS RDMA guide, catalog `releases:`)."""
    if aks.infiniband_feature is None:
        return FabricUsability(False, ("no fabric wired",))
    charts = {r.chart for r in aks.releases}
    if "network-operator" not in charts:
        return FabricUsability(False, ("the NVIDIA Network Operator release (catalog/kubernetes/azure.yaml)",))
    if spec.kubernetes is not None and spec.kubernetes.gpu_software != "operator":
        return FabricUsability(
            False,
            (
                "GPUDirect RDMA: the GPU operator's driver with driver.rdma.enabled (gpuSoftware: operator); "
                "AKS's own driver is not set up for it here",
            ),
        )
    return FabricUsability(
        True,
        (),
        (
            "Network Operator: DOCA driver + RDMA shared device plugin (rdma/shared_ib)",
            "GPU operator: driver with GPUDirect RDMA",
            f"subscription feature {aks.infiniband_feature}",
        ),
    )


def pod_rules(aks: Aks, node_cidr: str) -> tuple[SecurityRule, ...]:
    """Azure CNI Overlay: the node subnet's NSG applies to pod traffic, and the pod range is not in the
    VirtualNetwork tag, so node -> pod and pod -> anything in the cluster are allowed explicitly
    (concepts-network-azure-cni-overlay.md "Network security groups")."""
    return (
        SecurityRule(
            "allow-pods-inbound", 210, "Inbound", "Allow", "*", (aks.pod_cidr,), "*", "*",
            "AKS overlay: pod to pod and pod to node traffic (pod CIDR)",
        ),
        SecurityRule(
            "allow-nodes-to-pods", 220, "Inbound", "Allow", "*", (node_cidr,), aks.pod_cidr, "*",
            "AKS overlay: node to pod traffic (service routing)",
        ),
    )  # fmt: skip
