"""`scheduler: kubernetes` on tencentcloud: a managed TKE cluster, its API endpoint, a CPU system pool and the GPU
pool (catalog/kubernetes/tencentcloud.yaml), decided here; components/tencentcloud/kubernetes.py builds it.

The GPU nodes boot Ubuntu 22.04 without a driver: the GPU operator's driver container installs it (TKE's own
`gpu_args.driver` takes names no source lists), so `gpuSoftware: device-plugin` is refused. TKE formats and mounts
the scratch disk itself; no node bootstrap runs, so the GPU health check is not built (a warning says so).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...catalog import kubernetes as kubernetes_offers
from ...catalog import releases as catalog_releases
from ...catalog.capabilities import capabilities
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch
from ..kubernetes import GPU_TAINT, Release, autoscaled, gpu_labels, releases
from .nodes import is_hcc

TKE_CLUSTER = "tencentcloud:Kubernetes/cluster:Cluster"
TKE_ENDPOINT = "tencentcloud:Kubernetes/clusterEndpoint:ClusterEndpoint"
TKE_NODE_POOL = "tencentcloud:Kubernetes/nodePool:NodePool"
POOL_NAME_MAX = 25  # node_pool.py name: "The name does not exceed 25 characters"


@dataclass(frozen=True)
class TkeLayout:
    """The TKE cluster and its two pools, as the cloud package registers them."""

    version: str  # cluster_version: the minor's patch (patchVersions)
    deploy_type: str
    network_type: str
    container_runtime: str
    pod_cidr: str
    service_cidr: str
    max_pods_per_node: int
    max_services: int
    node_os: str
    system_instance_type: str
    system_nodes: int
    system_pool_name: str
    gpu_pool_name: str
    gpu_labels: Mapping[str, str]
    gpu_taint: Mapping[str, str]
    min_nodes: int
    max_nodes: int
    desired_nodes: int
    autoscale: bool  # TKE's cluster autoscaler sizes the pool between min and max (enable_auto_scale)
    scratch_gb: int | None  # the scratch data disk TKE formats and mounts (None: no scratch disk)
    scratch_path: str
    scratch_file_system: str
    scratch_delete_with_node: bool
    public_cidrs: tuple[str, ...]  # the public endpoint's admitted ranges; empty: the API server stays private
    api_port: int
    secrets_key: Mapping[str, Any]  # kms.Key arguments for the Secrets' EncryptionProtection (camelCase keys)
    releases: tuple[Release, ...]

    @property
    def public_endpoint(self) -> bool:
        return bool(self.public_cidrs)


def tke_offer() -> dict[str, Any]:
    offer = kubernetes_offers.offer("tencentcloud")
    assert offer is not None  # the capabilities list kubernetes for tencentcloud
    return offer.extra


def _free_range(candidates: list[str], taken: list[ipaddress.IPv4Network], what: str) -> str:
    for cidr in candidates:
        net = ipaddress.IPv4Network(cidr)
        if not any(net.overlaps(other) for other in taken):
            return cidr
    raise ConfigError(
        f"{CLUSTER_KEY}.network.cidr",
        f"overlaps every {what} range gpu-cluster can give TKE ({', '.join(candidates)}); use another",
    )


def tke_problems(spec: ClusterSpec) -> list[ConfigError]:
    """What TKE cannot build through tencentcloud-iac-pulumi 0.2.3, keyed, before any resource."""
    kube = spec.kubernetes
    assert kube is not None
    data = tke_offer()
    problems = []
    refused = (data.get("gpuDriverRefused") or {}).get(kube.gpu_software)
    if refused:
        problems.append(
            ConfigError(f"{CLUSTER_KEY}.kubernetes.gpuSoftware", f"{kube.gpu_software} on TKE: {one_line(refused)}")
        )
    if is_hcc(spec):
        limit = capabilities("tencentcloud").managed_limit("hccCluster")
        assert limit is not None
        problems.append(
            ConfigError(
                f"{CLUSTER_KEY}.instanceType",
                f"{spec.instance.instanceType} is an HCC type: a TKE node pool is an auto scaling group, which "
                f"{one_line(limit.message).split('; use ')[0]}; use a non-HCC type, or scheduler none with "
                "nodeGroup: instances",
            )
        )
    if spec.image not in (catalog_releases.AUTO, catalog_releases.LATEST):
        problems.append(
            ConfigError(
                f"{CLUSTER_KEY}.image",
                f"{spec.image} on TKE: both node pools boot TKE's node OS {data['nodeOs']} (the GPU operator's driver "
                "container is built for it); leave image at auto",
            )
        )
    if spec.scratch == "nvme":
        problems.append(
            ConfigError(
                f"{CLUSTER_KEY}.storage.scratch",
                "nvme on TKE: the node pool runs no gpu-cluster bootstrap to stripe local NVMe, and TKE mounts cloud "
                "data disks only (NodePoolNodeConfigDataDiskArgs); use disk or none",
            )
        )
    if spec.scratch == "disk" and spec.encryption_key != "provider":
        problems.append(
            ConfigError(
                f"{CLUSTER_KEY}.storage.scratch",
                f"disk on TKE with encryption.key {spec.encryption_key}: a TKE node pool's data disk takes encrypt but "
                "no KMS key (tencentcloud-iac-pulumi 0.2.3 NodePoolAutoScalingConfigDataDiskArgs), so it would stay on "
                "the CBS-managed key; use storage.scratch: none, or encryption.key: provider",
            )
        )
    if len(f"{spec.name}-system") > POOL_NAME_MAX:
        problems.append(
            ConfigError(
                f"{CLUSTER_KEY}.name",
                f"{spec.name!r} makes the TKE node pool name {spec.name}-system, over the {POOL_NAME_MAX} characters "
                f"a node pool name takes; use a name of at most {POOL_NAME_MAX - len('-system')} characters",
            )
        )
    return problems


def tke_layout(spec: ClusterSpec, scratch: Scratch, delete_scratch: bool, warnings: list[str]) -> TkeLayout:
    """The TKE cluster, its pools and in-cluster releases (`scheduler: kubernetes`); tke_problems refused the rest."""
    kube = spec.kubernetes
    assert kube is not None
    data = tke_offer()
    k = CLUSTER_KEY
    vpc = ipaddress.IPv4Network(spec.network.cidr)
    pod = _free_range(list(data["podCidrs"]), [vpc], "pod")
    service = _free_range(list(data["serviceCidrs"]), [vpc, ipaddress.IPv4Network(pod)], "service")
    scale = autoscaled(spec)
    if spec.health_action is not None:
        warnings.append(
            f"{k}.health: the GPU health check is not built on TKE: the node pool runs no gpu-cluster bootstrap (TKE "
            "formats the scratch disk itself; the GPU operator brings the driver and the DCGM exporter)"
        )
    if scale:
        warnings.append(
            f"{k}.maxNodes: TKE's cluster autoscaler sizes the GPU pool between {spec.min_nodes} and {spec.max_nodes} "
            "nodes on pending GPU pods (node_pool.NodePool enable_auto_scale); pods must tolerate the pool's "
            "nvidia.com/gpu taint"
        )
    return TkeLayout(
        version=str(data["patchVersions"][kube.version]),
        deploy_type=str(data["deployType"]),
        network_type=str(data["networkType"]),
        container_runtime=str(data["containerRuntime"]),
        pod_cidr=pod,
        service_cidr=service,
        max_pods_per_node=int(data["maxPodsPerNode"]),
        max_services=int(data["maxServices"]),
        node_os=str(data["nodeOs"]),
        system_instance_type=kube.system_instance_type,
        system_nodes=kube.system_nodes,
        system_pool_name=f"{spec.name}-system",
        gpu_pool_name=f"{spec.name}-gpu",
        gpu_labels=gpu_labels(spec),
        gpu_taint=dict(GPU_TAINT),
        min_nodes=spec.min_nodes,
        max_nodes=spec.max_nodes,
        desired_nodes=spec.nodes,
        autoscale=scale,
        scratch_gb=int(scratch.device_gb or 0) if scratch.kind == "disk" else None,
        scratch_path=scratch.path,
        scratch_file_system=str(data["scratchFileSystem"]),
        scratch_delete_with_node=delete_scratch,
        public_cidrs=tuple(kube.public_cidrs) if kube.public_endpoint else (),
        api_port=int(data["apiPort"]),
        secrets_key=dict(data["secretsKey"]),
        releases=releases(spec),
    )
