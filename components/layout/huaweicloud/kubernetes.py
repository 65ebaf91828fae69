"""`scheduler: kubernetes` on huaweicloud: a CCE cluster, a CPU system pool, the GPU pool, the gpu-beta add-on (the
driver and device plugin, CCE's way) and the in-cluster releases. Pure, no Pulumi; data in
catalog/kubernetes/huaweicloud.yaml."""

from __future__ import annotations

import base64
import gzip
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ... import bootstrap
from ...catalog import kubernetes as kubernetes_offers
from ...catalog import releases as releases_catalog
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch
from ..kubernetes import GPU_TAINT, Release, autoscaled, gpu_labels, releases
from ..node import node_parts

CCE_BOOTSTRAP = "/var/lib/gpu-cluster/cce-bootstrap.sh"  # where the post-installation script unpacks the bootstrap


def cce_offer() -> dict[str, Any]:
    offer = kubernetes_offers.offer("huaweicloud")
    assert offer is not None  # the capabilities list kubernetes: the data file ships with them
    return offer.extra | {"systemInstanceType": offer.systemInstanceType}


@dataclass(frozen=True)
class GpuAddon:
    """CCE's gpu-beta add-on (cce.Addon): it installs the NVIDIA driver from `driver_url` on every GPU node and runs
    the device plugin that advertises nvidia.com/gpu."""

    template: str
    driver_version: str
    driver_url: str

    def custom(self) -> dict[str, str]:
        """The add-on's `custom` values (CCE API cce_02_0415)."""
        return {"nvidia_driver_download_url": self.driver_url}


@dataclass(frozen=True)
class AutoscalerAddon:
    """CCE's Cluster Autoscaler add-on (cce.Addon template autoscaler) in the version CCE pairs with the cluster's
    Kubernetes version: it moves the pools that have scall_enable between their min and max node counts."""

    template: str
    version: str
    settings: Mapping[str, Any]  # custom values beside cluster_id and tenant_id (scale-in off)
    flavor_key: str  # the template's flavor (parameters.<key>) that the add-on's mandatory flavor value takes

    def custom(self, cluster_id: str, project_id: str) -> dict[str, Any]:
        """The add-on's `custom` values (CCE API cce_02_0411): the template's defaults overridden by these."""
        return {**self.settings, "cluster_id": cluster_id, "tenant_id": project_id}


@dataclass(frozen=True)
class CceLayout:
    """A CCE Standard cluster with a private API server, a CPU system pool and the GPU pool."""

    version: str  # CCE's cluster_version (v1.36)
    flavor: str
    network_type: str
    container_cidr: str
    service_cidr: str
    node_os: str
    runtime: str
    runtime_disk_gb: int
    system_instance_type: str
    system_nodes: int
    gpu_labels: Mapping[str, str]
    gpu_taint: Mapping[str, str]
    addon: GpuAddon
    releases: tuple[Release, ...]
    postinstall: str | None  # the GPU nodes' bootstrap, run by CCE after its own components
    min_nodes: int
    max_nodes: int
    autoscaled: bool  # the pool's own range (scall_enable)
    autoscaler: AutoscalerAddon | None  # CCE's autoscaler add-on, which moves the pool in that range


def cce_postinstall(script: str) -> str:
    """The bootstrap as a small bash script carrying itself gzip-compressed: CCE counts the pre- and
    post-installation scripts together after Base64 against 10240 characters (catalog scriptMaxChars)."""
    packed = bootstrap.gzip_b64(script)
    lines = [packed[i : i + 76] for i in range(0, len(packed), 76)]
    # written to a file first: a script piped into bash would lose its rest to any command that reads stdin
    return "\n".join(
        [
            "#!/bin/bash",
            "set -euo pipefail",
            f"mkdir -p {CCE_BOOTSTRAP.rsplit('/', 1)[0]}",
            f"base64 -d <<'GPU_CLUSTER_EOF' | gunzip > {CCE_BOOTSTRAP}",
            *lines,
            "GPU_CLUSTER_EOF",
            f"exec bash {CCE_BOOTSTRAP}",
            "",
        ]
    )


def cce_bootstrap(postinstall: str) -> str:
    """The bootstrap inside a post-installation script (the inverse of `cce_postinstall`)."""
    body = postinstall.split(f"<<'GPU_CLUSTER_EOF' | gunzip > {CCE_BOOTSTRAP}\n", 1)[1].split("\nGPU_CLUSTER_EOF", 1)[0]
    return gzip.decompress(base64.b64decode("".join(body.split()))).decode()


def cce_problems(spec: ClusterSpec, scratch: Scratch) -> Iterator[ConfigError]:
    """What CCE cannot take from this config, one keyed error each (before any resource is registered)."""
    data, k = cce_offer(), CLUSTER_KEY
    if scratch.kind == "disk":
        yield ConfigError(
            f"{k}.storage.scratch",
            "disk with scheduler kubernetes on huaweicloud: CCE takes a node pool's data disk for its container "
            "runtime and kubelet, and a second disk stays ours only through cce.NodePool `storage` selectors, not "
            "built here; use storage.scratch: none",
        )
    if spec.storage.shared is not None:
        yield ConfigError(
            f"{k}.storage.shared",
            "with scheduler kubernetes on huaweicloud: SFS Turbo is mounted by the ECS nodes' bootstrap, and the CCE "
            "pools would reach it through the everest CSI add-on's PersistentVolumes, not built here; remove "
            "storage.shared or use scheduler none",
        )
    if spec.image not in (releases_catalog.AUTO, releases_catalog.LATEST):
        yield ConfigError(
            f"{k}.image",
            f"{spec.image} with scheduler kubernetes on huaweicloud: the CCE pools boot CCE's {data['nodeOs']} "
            "(cce.NodePool os), whose GPU driver the gpu-beta add-on installs; drop image",
        )
    system = spec.kubernetes.system_nodes if spec.kubernetes else 0
    most = int(data["clusterMaxNodes"])
    if spec.max_nodes + system > most:
        yield ConfigError(
            f"{k}.maxNodes",
            f"{spec.max_nodes} GPU nodes and {system} system nodes, but the CCE flavor "
            f"{data['clusterFlavor']} holds at most {most} nodes (pulumi-huaweicloud 0.0.12 cce/cluster.py flavor_id)",
        )
    pool_tags = len({**spec.base_tags, "Name": ""})  # each pool's tags: the cluster's and its Name
    if pool_tags > int(data["poolTagsMax"]):
        yield ConfigError(
            f"{k}.tags",
            f"{pool_tags} tags on each CCE node pool (the cluster's tags and Name), but CCE takes at most "
            f"{data['poolTagsMax']} on a pool ({one_line(data['poolTagsSource'])}); remove "
            f"{pool_tags - int(data['poolTagsMax'])}",
        )
    if autoscaled(spec) and spec.min_nodes < 1:
        yield ConfigError(
            f"{k}.minNodes",
            f"{spec.min_nodes}, but a CCE pool that scales keeps at least one node (cce.NodePool min_node_count "
            '"must be greater than 0"); use 1 or more',
        )


def cce_layout(spec: ClusterSpec, scratch: Scratch, warnings: list[str]) -> CceLayout:
    kube = spec.kubernetes
    assert kube is not None  # resolved by the spec with scheduler kubernetes
    data = cce_offer()
    addon = data["gpuAddon"]
    # GPU nodes: the node bootstrap without a driver (the add-on's) and without the Docker DCGM exporter (the
    # in-cluster releases run it)
    parts = node_parts(replace(spec, dcgm_exporter=False), scratch, fabric_devices=0, nvme_globs=())
    script = bootstrap.startup_script(parts, header=(f"gpu-cluster {spec.name}: CCE GPU node bootstrap",))
    postinstall = cce_postinstall(script) if script else None
    if postinstall is not None and len(base64.b64encode(postinstall.encode())) > int(data["scriptMaxChars"]):
        raise ConfigError(
            f"{CLUSTER_KEY}.scheduler",
            f"kubernetes: the GPU nodes' bootstrap is {len(base64.b64encode(postinstall.encode()))} characters in "
            f"Base64, over CCE's {data['scriptMaxChars']} for the pre- and post-installation scripts "
            f"({one_line(data['scriptSource'])}); turn off a node feature (health, monitoring)",
        )
    # the mandatory kubernetes-secrets-encryption rule cannot be met through this SDK (policy/kubernetes.yaml)
    warnings.append(
        f"{CLUSTER_KEY}.scheduler: kubernetes on CCE keeps Secrets Base64 in etcd, not envelope-encrypted with a DEW "
        f"key: {one_line(data['secretsEncryption'])}"
    )
    if spec.login is None:
        warnings.append(
            f"{CLUSTER_KEY}.login: not set, and the CCE API server is private (no EIP): the kubeconfig output "
            "reaches it only from inside the VPC (a VPN or Direct Connect); add login: {} to run kubectl from"
        )
    scaling = autoscaled(spec)
    autoscaler = _autoscaler(data["autoscalerAddon"], kube.version) if scaling else None
    if autoscaler is not None:
        warnings.append(
            f"{CLUSTER_KEY}.maxNodes: CCE's autoscaler add-on {autoscaler.version} grows the GPU pool up to "
            f"{spec.max_nodes} nodes for pending pods, with scale-in off, so it never drains a GPU node running a pod: "
            f"the pool shrinks toward {spec.min_nodes} only when "
            "you remove idle nodes (CCE console or kubectl drain and delete)"
        )
    return CceLayout(
        version=f"{data['versionPrefix']}{kube.version}",
        flavor=str(data["clusterFlavor"]),
        network_type=str(data["containerNetworkType"]),
        container_cidr=str(data["containerCidr"]),
        service_cidr=str(data["serviceCidr"]),
        node_os=str(data["nodeOs"]),
        runtime=str(data["runtime"]),
        runtime_disk_gb=int(data["runtimeDiskGb"]),
        system_instance_type=kube.system_instance_type,
        system_nodes=kube.system_nodes,
        gpu_labels=gpu_labels(spec),
        gpu_taint=dict(GPU_TAINT),
        addon=GpuAddon(str(addon["template"]), str(addon["driverVersion"]), str(addon["driverUrl"])),
        releases=releases(spec),
        postinstall=postinstall,
        min_nodes=spec.min_nodes,
        max_nodes=spec.max_nodes,
        autoscaled=scaling,
        autoscaler=autoscaler,
    )


def _autoscaler(data: Mapping[str, Any], kube_version: str) -> AutoscalerAddon:
    # the spec only admits the versions this catalog lists (catalog versions), and each has an add-on version
    return AutoscalerAddon(
        template=str(data["template"]),
        version=str(data["versions"][kube_version]),
        settings=dict(data["custom"]),
        flavor_key=str(data["flavorKey"]),
    )
