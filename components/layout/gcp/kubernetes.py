"""`scheduler: kubernetes` on GCP: the GKE cluster, its pools, pod ranges and the fabric's DaemonSets
(catalog/kubernetes/gcp.yaml)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ... import catalog
from ...bootstrap.fabric import FabricUsability
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ..kubernetes import GPU_TAINT, gpu_labels, gpu_sharing
from .data import gke_data
from .fabric import NO_FABRIC
from .network import GPU_SUBNET_BITS, Nic, buddy_block, gpu_subnet_cidrs
from .nodes import disk_type

# --- Kubernetes (GKE) -----------------------------------------------------------------------
# scheduler: kubernetes builds a GKE Standard cluster on the same VPCs: the host subnet carries the pods and
# services ranges, the GPU pool takes the GPU VPCs the VM layout builds as extra node networks, and the
# fabric's NCCL plugin comes from Google's DaemonSets (data: catalog/kubernetes/gcp.yaml, sources there).

GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"  # set by GKE on GPU nodes; Google's DaemonSets select on it


@dataclass(frozen=True)
class NodeNetwork:
    """One extra network of the GPU pool (`additionalNodeNetworkConfigs`) and its in-cluster objects' name."""

    vpc: str  # Vpc.role
    subnet: str  # Subnet.role
    name: str  # the Network / GKENetworkParamSet the workloads' interface annotations name
    device_mode: Literal["NetDevice", "RDMA"]


@dataclass(frozen=True)
class GkePool:
    """A GKE node pool: the system pool (CPU) or the GPU pool, from the same spec keys as the VMs."""

    name: str
    machine_type: str
    nodes: int
    max_nodes: int  # > nodes, or min_nodes < nodes: the pool autoscales between min_nodes and max_nodes
    disk_gb: int | None  # None: GKE's default boot disk
    disk_type: str | None
    labels: Mapping[str, str]  # Kubernetes node labels
    taints: tuple[Mapping[str, str], ...]  # in the GKE API's spelling (effect NO_SCHEDULE)
    accelerator: tuple[str, int] | None = None  # (accelerator type, count): GKE installs the driver
    local_ssd_count: int | None = None  # local SSDs behind the pods' ephemeral storage
    spot: bool = False
    reservation: str | None = None
    compact: bool = False  # placementPolicy COMPACT
    networks: tuple[NodeNetwork, ...] = ()
    min_nodes: int | None = None  # the autoscaler's floor (minNodes); None: nodes
    # upgrade_settings SURGE (update: the GPU pool): nodes above the count, nodes down at once; None: GKE's default
    surge: tuple[int, int] | None = None
    # kubernetes.gpuSharing: gpuSharingConfig (strategy TIME_SHARING | MPS, max clients per GPU) or gpuPartitionSize
    sharing: tuple[str, int] | None = None
    partition: str | None = None

    @property
    def floor(self) -> int:
        return self.nodes if self.min_nodes is None else self.min_nodes

    @property
    def autoscaled(self) -> bool:
        """The pool's size is the autoscaler's between `floor` and `max_nodes` (GKE cluster autoscaler)."""
        return self.max_nodes > self.nodes or self.floor < self.nodes


@dataclass(frozen=True)
class Gke:
    """`scheduler: kubernetes` on GCP (catalog/kubernetes/gcp.yaml): what components/gcp/kubernetes.py builds."""

    name: str
    version: str
    release_channel: str
    exclusion: Mapping[str, str]  # exclusionName, startTime, scope, endTimeBehavior
    daily_window: str
    public_endpoint: bool
    authorized_cidrs: tuple[str, ...]  # masterAuthorizedNetworksConfig: publicCidrs, else the host VPC's range
    pods_range: str  # secondary range names on the host subnet ...
    services_range: str
    pods_cidr: str  # ... and their CIDRs
    services_cidr: str
    multi_networking: bool  # extra node networks: multi-networking on GKE Dataplane V2
    monitoring_components: tuple[str, ...]
    image_type: str
    gpu_driver_version: str
    secure_boot: bool
    system: GkePool
    gpu: GkePool
    key_role: str  # granted on the cluster's KMS key to the service agents below
    secrets_agent: str  # "service-{projectNumber}@...": filled in with the project's number at deploy
    disks_agent: str
    daemonsets: tuple[Mapping[str, Any], ...]  # the fabric's NCCL installers (Kubernetes objects, camelCase)
    network_api_version: str
    fabric_source: str  # where the DaemonSets come from (repository@commit)

    @property
    def pools(self) -> tuple[GkePool, ...]:
        return (self.system, self.gpu)


def _sharing(spec: ClusterSpec) -> dict[str, Any]:
    """The GPU pool's own GPU sharing (sharing.yaml gcp: the node pool mechanism for every mode)."""
    sharing = gpu_sharing(spec)
    if sharing is None:
        return {}
    if sharing.mode == "mig":
        return {"partition": sharing.mig_profile}
    assert sharing.node_pool is not None
    return {"sharing": (str(sharing.node_pool["strategy"]), sharing.per_gpu)}


def pod_ranges(spec: ClusterSpec, data: Mapping[str, Any]) -> tuple[str, str]:
    """(pods, services) CIDRs: slots of the buddy block beside the GPU subnets (catalog podRanges)."""
    gpu_subnet_cidrs(spec.network.cidr, 0)  # the same size and privacy checks as the GPU subnets
    ranges = data["podRanges"]
    buddy = buddy_block(spec.network.cidr)
    slots = list(buddy.subnets(prefixlen_diff=GPU_SUBNET_BITS))
    first, count = ranges["podsSlots"]
    (pods,) = ipaddress.collapse_addresses(slots[first : first + count])
    services = slots[int(ranges["servicesSlot"])]
    per_node = int(ranges["addressesPerNode"])
    assert spec.kubernetes is not None
    most = spec.kubernetes.system_nodes + spec.max_nodes
    if pods.num_addresses // per_node < most:
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves pods the range {pods}: {pods.num_addresses // per_node} nodes of "
            f"{per_node} addresses (110 pods each), but the cluster may have {most} "
            f"({spec.kubernetes.system_nodes} system + {spec.max_nodes} GPU); use a larger network.cidr "
            "(one bit shorter doubles it)",
        )
    return str(pods), str(services)


def node_networks(spec: ClusterSpec, nics: Sequence[Nic], data: Mapping[str, Any]) -> tuple[NodeNetwork, ...]:
    """The GPU pool's extra node networks: every NIC after nic0, named as Google's workloads expect."""
    extra = [n for n in nics[1:]]
    if not extra:
        return ()
    names = data["networkObjects"]["names"][spec.instance.fabric]
    out: list[NodeNetwork] = []
    gvnic = rdma = 0
    for nic in extra:
        if nic.nic_type == "MRDMA":
            out.append(NodeNetwork(nic.vpc, nic.subnet, f"{names['rdmaPrefix']}{names['rdmaStart'] + rdma}", "RDMA"))
            rdma += 1
        else:
            out.append(
                NodeNetwork(nic.vpc, nic.subnet, f"{names['gvnicPrefix']}{names['gvnicStart'] + gvnic}", "NetDevice")
            )
            gvnic += 1
    return tuple(out)


def _container(name: str, image: str, entry: Mapping[str, Any], fw: Mapping[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        "resources": {"requests": {"cpu": fw["cpuRequest"]}},
        "securityContext": {"privileged": True},
    }
    mounts = entry.get("mounts") or {}
    if mounts:
        container["volumeMounts"] = [{"name": k, "mountPath": v} for k, v in mounts.items()]
    return container


def fabric_daemonsets(spec: ClusterSpec, data: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """Google's NCCL plugin DaemonSets for the fabric (catalog fabricWorkloads), on this type's GPU nodes only."""
    fw = data["fabricWorkloads"]
    if not spec.fabric_wired:
        return ()
    accelerator = str(spec.instance.extra["acceleratorType"])
    out = []
    for name in fw["byFabric"].get(spec.instance.fabric) or []:
        entry = fw["daemonSets"][name]
        create = set(entry.get("createHostDirs") or [])
        volumes = [
            {"name": k, "hostPath": {"path": v, **({"type": "DirectoryOrCreate"} if k in create else {})}}
            for k, v in (entry.get("volumes") or {}).items()
        ]
        term = {"matchExpressions": [{"key": GKE_ACCELERATOR_LABEL, "operator": "In", "values": [accelerator]}]}
        pod: dict[str, Any] = {
            "priorityClassName": fw["priorityClassName"],
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
            },
            "tolerations": [{"operator": "Exists"}],  # as upstream: the GPU taint and any other
            "hostNetwork": True,
            "hostPID": True,
            "volumes": volumes,
        }
        if entry.get("daemon"):
            pod["containers"] = [_container(name, entry["image"], entry, fw)]
        else:
            init = []
            setup = entry.get("hostSetup")
            if setup:
                init.append(
                    {
                        "name": "pre-installation",
                        "image": setup["image"],
                        "securityContext": {"privileged": True},
                        "command": ["nsenter", "-at", "1", "--", "sh", "-c"],
                        "args": [setup["script"]],
                    }
                )
            installer = _container(name, entry["image"], entry, fw)
            installer.update({"command": ["/bin/sh", "-c"], "args": [entry["script"]]})
            init.append(installer)
            pod["initContainers"] = init
            pod["containers"] = [{"name": "pause", "image": fw["pause"]}]  # keeps the pod: the install is done once
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": fw["namespace"], "labels": {"k8s-app": name}},
                "spec": {
                    "selector": {"matchLabels": {"k8s-app": name}},
                    "updateStrategy": {"type": "RollingUpdate"},
                    "template": {"metadata": {"labels": {"name": name, "k8s-app": name}}, "spec": pod},
                },
            }
        )
    return tuple(out)


def gke_fabric_usability(
    spec: ClusterSpec, daemonsets: Sequence[Mapping[str, Any]], data: Mapping[str, Any]
) -> FabricUsability:
    """On GKE the DaemonSets give every GPU node the NCCL plugin; the pods add Google's per-workload parts."""
    if not spec.fabric_wired:
        return NO_FABRIC
    if not daemonsets:
        return FabricUsability(False, (f"{spec.instance.fabric}: no GKE NCCL plugin is known to gpu-cluster",))
    fw = data["fabricWorkloads"]
    images = [
        c["image"].rsplit("/", 1)[1].split("@")[0]
        for ds in daemonsets
        for c in (
            *ds["spec"]["template"]["spec"].get("initContainers", []),
            *ds["spec"]["template"]["spec"]["containers"],
        )
        if c["name"] not in ("pause", "pre-installation")
    ]
    return FabricUsability(
        True,
        (),
        (
            f"GKE DaemonSets {', '.join(str(d['metadata']['name']) for d in daemonsets)} ({', '.join(images)})",
            f"workloads add {fw['workloadParts'][spec.instance.fabric]} (docs/gcp.md)",
        ),
    )


def gke_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    assert spec.kubernetes is not None
    if spec.network.existing is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.network.existing",
            "set with scheduler kubernetes: GKE needs pods and services ranges on the nodes' subnet, which "
            "gpu-cluster adds only to a VPC it creates; remove network.existing",
        )
    if spec.storage.shared is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.storage.shared",
            "set with scheduler kubernetes on gcp: the node bootstrap that mounts it does not run on GKE nodes "
            "and no PersistentVolume for GKE's CSI drivers is built; remove storage.shared",
        )
    if spec.kubernetes.service_monitor:
        yield ConfigError(
            f"{CLUSTER_KEY}.kubernetes.serviceMonitor",
            "true on gcp: GKE exports the GPU metrics itself (managed DCGM metrics into Managed Service for "
            "Prometheus) and no exporter chart runs for a ServiceMonitor to watch; set it false",
        )


def gke_layout(spec: ClusterSpec, nics: Sequence[Nic], placement: bool, warnings: list[str]) -> Gke:
    """The GKE cluster of `scheduler: kubernetes` (catalog/kubernetes/gcp.yaml)."""
    kube = spec.kubernetes
    assert kube is not None
    refuse(gke_problems(spec))
    data = gke_data()
    hold, nodes_data = data["versionHold"], data["nodes"]
    pods, services = pod_ranges(spec, data)
    effects: Mapping[str, str] = nodes_data["taintEffects"]
    row = spec.instance
    local_ssd = row.localNvmeCount if spec.scratch == "nvme" and row.localNvmeCount else None
    if spec.scratch == "disk":
        warnings.append(
            f"{CLUSTER_KEY}.storage.scratch: GKE nodes take no extra data disk; pods use ephemeral storage on the "
            f"boot disk ({spec.storage.root_gb} GB, storage.rootGb)"
        )
    gpu_pool = GkePool(
        name="gpu",
        machine_type=row.instanceType,
        nodes=spec.nodes,
        max_nodes=spec.max_nodes,
        min_nodes=spec.min_nodes,
        disk_gb=spec.storage.root_gb,
        disk_type=disk_type(row.instanceType, catalog.load("gcp").rules),
        labels=gpu_labels(spec),
        taints=({**GPU_TAINT, "effect": effects[GPU_TAINT["effect"]]},),
        accelerator=(str(row.extra["acceleratorType"]), row.gpus),
        **_sharing(spec),
        local_ssd_count=local_ssd,
        spot=spec.spot,
        reservation=spec.reservation or None,
        compact=placement,
        networks=node_networks(spec, nics, data),
        # GKE cordons and drains each node itself; the update block sizes the batches
        surge=(spec.update.max_surge, spec.update.max_unavailable(spec.nodes)),
    )
    system = GkePool(
        name="system",
        machine_type=kube.system_instance_type,
        nodes=kube.system_nodes,
        max_nodes=kube.system_nodes,
        disk_gb=None,
        disk_type=None,
        labels={},
        taints=(),
    )
    monitoring = tuple(data["monitoring"]["components"])
    if spec.dcgm_exporter:
        monitoring += (str(data["monitoring"]["dcgmComponent"]),)
    enc = data["encryption"]
    return Gke(
        name=spec.name,
        version=kube.version,
        release_channel=str(hold["releaseChannel"]),
        exclusion={k: str(hold[k]) for k in ("exclusionName", "startTime", "scope", "endTimeBehavior")},
        daily_window=str(hold["dailyWindowStart"]),
        public_endpoint=kube.public_endpoint,
        authorized_cidrs=kube.public_cidrs if kube.public_endpoint else (spec.network.cidr,),
        pods_range=str(data["podRanges"]["podsName"]),
        services_range=str(data["podRanges"]["servicesName"]),
        pods_cidr=pods,
        services_cidr=services,
        multi_networking=bool(gpu_pool.networks),
        monitoring_components=monitoring,
        image_type=str(nodes_data["imageType"]),
        gpu_driver_version=str(nodes_data["gpuDriverVersion"]),
        secure_boot=bool(nodes_data["secureBoot"]),
        system=system,
        gpu=gpu_pool,
        key_role=str(enc["keyRole"]),
        secrets_agent=str(enc["secretsAgent"]),
        disks_agent=str(enc["disksAgent"]),
        daemonsets=fabric_daemonsets(spec, data),
        network_api_version=str(data["networkObjects"]["apiVersion"]),
        fabric_source=str(data["fabricWorkloads"]["source"]),
    )
