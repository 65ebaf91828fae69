"""`scheduler: kubernetes` on alicloud: ACK Pro, its pools, the eRDMA Controller add-on, the GPU nodes' bootstrap
and the cluster's tags as ACK takes them.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.fabric import FabricUsability, nccl_env_part
from ...catalog import kubernetes as kubernetes_offers
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch
from ..kubernetes import GPU_TAINT, Release, autoscaled, gpu_labels, gpu_sharing, releases
from ..node import node_parts
from ..shared import Shared
from .ack_monitoring import AckArms, ack_arms
from .data import ack_offer
from .fabric import nccl_env


@dataclass(frozen=True)
class ErdmaController:
    """The ACK eRDMA Controller add-on and the RRSA role it calls ECS with (catalog/kubernetes/alicloud.yaml)."""

    addon: str
    config: str  # the add-on's JSON config (cs.KubernetesAddon `config`)
    role_prefix: str  # the add-on's RAM role is <prefix><cluster id>
    namespace: str
    service_account: str
    actions: tuple[str, ...]
    eris: int  # ERIs it wires per node: one per network card, min(cards, ERIs of the type)
    mtu: int


@dataclass(frozen=True)
class AckAutoscaler:
    """ACK's cluster-autoscaler settings (cs.AutoscalingConfig; catalog/kubernetes/alicloud.yaml `autoscaler`)."""

    scaler_type: str
    expander: str
    scale_down_enabled: bool
    scale_up_from_zero: bool


@dataclass(frozen=True)
class AckLayout:
    """`scheduler: kubernetes` on alicloud: an ACK Pro cluster, a CPU system pool and the GPU pool."""

    version: str  # ACK's full version string of spec.kubernetes.version
    cluster_spec: str
    network_addon: str
    pod_cidr: str
    service_cidr: str
    proxy_mode: str
    image_type: str
    system_instance_type: str
    system_nodes: int
    gpu_labels: Mapping[str, str]  # gpu_labels(spec) and ACK's driver-version label
    gpu_taint: Mapping[str, str]
    driver_version: str
    secrets_key: Mapping[str, Any]  # kms.Key arguments (camelCase keys of the data)
    erdma: ErdmaController | None  # None: no ERI-capable fabric wired
    releases: tuple[Release, ...]
    user_data_b64: str | None  # the GPU nodes' bootstrap (a bash script: ACK runs it after joining the node)
    pre_user_data_b64: str | None  # before ACK's own init: keep ACK off the scratch disk
    min_nodes: int  # the GPU pool's floor: minNodes (0 scales to zero), or nodes
    max_nodes: int
    cluster_tags: Mapping[str, str]  # the cluster's tags as ACK takes them: Kubernetes labels (`ack_tags`)
    autoscaler: AckAutoscaler | None = None  # the GPU pool autoscales (maxNodes > nodes or minNodes < nodes)
    gpu_share: AckGpuShare | None = None  # kubernetes.gpuSharing: ACK's shared GPU scheduling
    arms: AckArms | None = None  # monitoring.prometheus managed: the ARMS container environment (ack_monitoring.py)


@dataclass(frozen=True)
class AckGpuShare:
    """ACK's shared GPU scheduling (catalog/kubernetes/sharing.yaml alicloud): the add-on that brings it, the GPU
    pool's label, and what each pod asks (ACK shares a GPU by memory)."""

    addon: str
    label: tuple[str, str]  # (ack.node.gpu.schedule, share | mps)
    pod_resource: str  # aliyun.com/gpu-mem
    pod_gib: int  # the GPU's memory over the pods planned per GPU, rounded down


def ack_gpu_share(spec: ClusterSpec) -> AckGpuShare | None:
    """kubernetes.gpuSharing on ACK; None when pods take whole GPUs."""
    sharing = gpu_sharing(spec)
    if sharing is None:
        return None
    assert sharing.node_pool is not None  # nodeLabel: the mode's ACK label (the spec refused the rest)
    data = kubernetes_offers.sharing("alicloud")
    memory = spec.instance.gpuMemoryGiB or 0
    return AckGpuShare(
        addon=str(data["addon"]),
        label=(str(data["labelKey"]), str(sharing.node_pool["label"])),
        pod_resource=str(data["podResource"]),
        pod_gib=int(memory // sharing.per_gpu),
    )


# --- scheduler: kubernetes (ACK) -------------------------------------------------------------------------
# What is wired where on ACK: pulumi-alicloud 4.0.0 cs.NodePool has no ENI, ERI or network-card argument, so
# the node pool itself registers no eRDMA. The ACK eRDMA Controller add-on (cs.KubernetesAddon) does it on
# every node that joins: it converts the primary ENI to HighPerformance on network card 0 and creates and
# attaches one more ERI per further card, min(NetworkCardQuantity, EriQuantity) of the type, then loads the
# eRDMA driver (preferDriver) and sets the jumbo-frame MTU (catalog/kubernetes/alicloud.yaml erdmaController).
# The fabric is therefore counted from the GPU pool's instance type, and only when the add-on is registered
# on the same cluster; without it the pool counts 0.
ACK_CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
ACK_NODE_POOL = "alicloud:cs/nodePool:NodePool"
ACK_ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
ACK_BOOTSTRAP = "/var/lib/gpu-cluster/ack-bootstrap.sh"  # where the GPU nodes' user data unpacks the bootstrap
ACK_DATA_DISK_GB = (40, 32768)  # cs.NodePool data_disks.size "valid value range [40~32768] in GB" (SDK docstring)


def ack_user_data(script: str) -> str:
    """The bootstrap as a small bash script carrying itself gzip-compressed.

    ACK puts the node pool's user data into the one user-data script it runs with its own init (ACK node
    initialization), so it cannot be gzip user data itself; compressed inside, it stays far under the ECS
    16 KB user-data limit next to ACK's script (the whole bootstrap is about 14 KB as text).
    """
    packed = bootstrap.gzip_b64(script)
    lines = [packed[i : i + 76] for i in range(0, len(packed), 76)]
    # written to a file first: a script piped into bash would lose its rest to any command that reads stdin
    return "\n".join(
        [
            "#!/bin/bash",
            "set -euo pipefail",
            f"mkdir -p {ACK_BOOTSTRAP.rsplit('/', 1)[0]}",
            f"base64 -d <<'GPU_CLUSTER_EOF' | gunzip > {ACK_BOOTSTRAP}",
            *lines,
            "GPU_CLUSTER_EOF",
            f"exec bash {ACK_BOOTSTRAP}",
            "",
        ]
    )


def ack_bootstrap(user_data_b64: str) -> str:
    """The bootstrap script inside an ACK node pool's user data (the inverse of `ack_user_data`)."""
    wrapper = base64.b64decode(user_data_b64).decode()
    body = wrapper.split(f"<<'GPU_CLUSTER_EOF' | gunzip > {ACK_BOOTSTRAP}\n", 1)[1].split("\nGPU_CLUSTER_EOF", 1)[0]
    return gzip.decompress(base64.b64decode("".join(body.split()))).decode()


def ack_eri_count(row: Any) -> int:
    """ERIs the eRDMA controller wires on one node of this type: one per network card, at most the type's ERIs."""
    return max(0, min(int(row.fabricDevices or 0), int(row.networkCards or 1)))


def ack_erdma_mtu() -> int:
    return int(ack_offer()["erdmaController"]["mtu"])


def ack_fabric_usability(eris: int) -> FabricUsability:
    data = ack_offer()["erdmaController"]
    return FabricUsability(
        True,
        provides=(
            f"the ACK eRDMA Controller add-on ({data['addon']}): {eris} ERI(s), one per network card, with MTU "
            f"{data['mtu']} and the eRDMA driver in {data['config']['agent']['preferDriver']} mode",
            "pods get every ERI of their node as aliyun/erdma (allocateAllDevices); the NCCL environment for eRDMA "
            "is the job's (NCCL_IB_* in the pod spec)",
        ),
    )


def _ack_erdma(row: Any, eris: int) -> ErdmaController | None:
    if eris == 0:
        return None
    data = ack_offer()["erdmaController"]
    rrsa = data["rrsa"]
    return ErdmaController(
        addon=str(data["addon"]),
        config=json.dumps(data["config"], sort_keys=True, separators=(",", ":")),
        role_prefix=str(rrsa["rolePrefix"]),
        namespace=str(rrsa["namespace"]),
        service_account=str(rrsa["serviceAccount"]),
        actions=tuple(str(a) for a in rrsa["actions"]),
        eris=ack_eri_count(row),
        mtu=int(data["mtu"]),
    )


def ack_layout(spec: ClusterSpec, scratch: Scratch, eris: int, shared: Shared | None, warnings: list[str]) -> AckLayout:
    """The ACK cluster, its pools and the GPU nodes' bootstrap (`scheduler: kubernetes`)."""
    kube = spec.kubernetes
    assert kube is not None  # resolved by the spec with scheduler kubernetes
    data = ack_offer()
    # kubernetes.publicEndpoint is refused by the spec (catalog/kubernetes/alicloud.yaml publicEndpointRefused)
    driver = str(data["nvidiaDriverVersion"])
    share = ack_gpu_share(spec)
    labels = {**gpu_labels(spec), str(data["driverLabel"]): driver, **(dict([share.label]) if share else {})}
    # GPU nodes: the node bootstrap as a bash script (ACK concatenates user data into the cloud-init script it
    # runs after joining the node: "ACK node initialization"). No driver (ACK's), no eRDMA part (the add-on's),
    # no metrics part (the in-cluster DCGM exporter replaces the Docker one), no ESS unhealthy hook.
    fabric: list[Part] = []
    if eris:
        env, source = nccl_env()
        fabric.append(nccl_env_part(env, source))
    parts = node_parts(
        replace(spec, dcgm_exporter=False),
        scratch,
        fabric_devices=eris,
        nvme_globs=(),
        fabric=fabric,
        unhealthy_hook=None,
        mounts=shared.mount if shared else None,
    )
    script = bootstrap.startup_script(parts, header=(f"gpu-cluster {spec.name}: ACK GPU node bootstrap",))
    if scratch.kind == "disk" and spec.storage.scratch_gb < ACK_DATA_DISK_GB[0]:
        raise ConfigError(
            f"{CLUSTER_KEY}.storage.scratchGb",
            f"got {spec.storage.scratch_gb}; an ACK node pool data disk is {ACK_DATA_DISK_GB[0]} to "
            f"{ACK_DATA_DISK_GB[1]} GB",
        )
    # ACK formats the node pool's last data disk for the container runtime unless /var/.skip-auto-fdisk exists
    # before its init ("ACK node initialization", step 3.1): the scratch disk stays ours.
    pre = "#!/bin/bash\ntouch /var/.skip-auto-fdisk\n" if scratch.kind == "disk" else None
    autoscaler: AckAutoscaler | None = None
    if autoscaled(spec):
        conf = data["autoscaler"]
        autoscaler = AckAutoscaler(
            scaler_type=str(conf["scalerType"]),
            expander=str(conf["expander"]),
            scale_down_enabled=bool(conf["scaleDownEnabled"]),
            scale_up_from_zero=bool(conf["scaleUpFromZero"]),
        )
        warnings.append(
            f"{CLUSTER_KEY}.maxNodes: ACK's cluster-autoscaler sizes the GPU pool between {spec.min_nodes} and "
            f"{spec.max_nodes} nodes on pending GPU pods (cs.AutoscalingConfig); once per account, not built here: "
            f"{one_line(conf['prerequisites'])}"
        )
    return AckLayout(
        version=str(data["patchVersions"][kube.version]),
        cluster_spec=str(data["clusterSpec"]),
        network_addon=str(data["networkAddon"]),
        pod_cidr=str(data["podCidr"]),
        service_cidr=str(data["serviceCidr"]),
        proxy_mode=str(data["proxyMode"]),
        image_type=str(data["imageType"]),
        system_instance_type=kube.system_instance_type,
        system_nodes=kube.system_nodes,
        gpu_labels=labels,
        gpu_taint=dict(GPU_TAINT),
        driver_version=driver,
        secrets_key=dict(data["secretsKey"]),
        erdma=_ack_erdma(spec.instance, eris),
        releases=releases(spec),
        user_data_b64=base64.b64encode(ack_user_data(script).encode()).decode() if script else None,
        pre_user_data_b64=base64.b64encode(pre.encode()).decode() if pre else None,
        min_nodes=spec.min_nodes,
        max_nodes=spec.max_nodes,
        cluster_tags=ack_tags(spec)[0],
        autoscaler=autoscaler,
        gpu_share=share,
        arms=ack_arms(spec),
    )


def ack_tags(spec: ClusterSpec) -> tuple[dict[str, str], list[ConfigError]]:
    """The cluster's tags for cs.ManagedKubernetes, and one error per tag ACK cannot take.

    ACK puts the cluster's tags on its nodes as Kubernetes labels (catalog/kubernetes/alicloud.yaml `clusterTags`):
    a key's ':' becomes '_' (gpu-cluster:cluster -> gpu-cluster_cluster, the GCP labels' spelling, so the
    required-tags policy still finds it); what is still no label is refused, naming the config key it comes from.
    """
    data = ack_offer()["clusterTags"]
    out: dict[str, str] = {}
    problems: list[ConfigError] = []
    for key, value in spec.base_tags.items():
        label = key
        for old, new in dict(data["keyReplace"]).items():
            label = label.replace(str(old), str(new))
        where = (
            f"{CLUSTER_KEY}.tags.{key}"
            if key in spec.tags
            else f"{CLUSTER_KEY}.name"
            if key == "gpu-cluster:cluster"
            else f"{CLUSTER_KEY}.tags"
        )
        if not re.fullmatch(str(data["labelKey"]), label) or not re.fullmatch(str(data["labelValue"]), value):
            problems.append(
                ConfigError(
                    where,
                    f"tag {key}={value!r} becomes the ACK cluster tag {label}={value!r}, which ACK puts on the nodes "
                    f"as a Kubernetes label: {one_line(data['rule'])}",
                )
            )
        elif label in out:
            problems.append(ConfigError(where, f"tag {key} becomes the ACK cluster tag {label}, as another tag does"))
        out[label] = value
    return out, problems
