"""The multi-language package: `GpuCluster` as Pulumi's schema inference sees it (docs/component.md).

`pulumi package add <this repository>` runs `plugin/__main__.py`, which hosts this module's `GpuCluster`
with `pulumi.provider.experimental.component_provider_host`; the schema is inferred from the annotations
here. What inference supports shapes this module (SDK `pulumi/provider/experimental/analyzer.py`):
no `from __future__ import annotations` (string annotations are not followed), enums instead of
`Literal`, lists instead of tuples, TypedDicts for nested blocks, plain (not `Input`) values because
they are validated before anything is registered. It is a thin wrapper: the args become a
`GpuClusterArgs` and the Python component does the rest (the same validation, resources, outputs).
"""

import json
from enum import Enum
from typing import Any, Required, TypedDict

import pulumi

from . import cluster
from .args import GpuClusterArgs

PACKAGE = "gpu-cluster"


class Cloud(Enum):
    """The cloud to build on."""

    AWS = "aws"
    AZURE = "azure"
    GCP = "gcp"
    ALICLOUD = "alicloud"
    TENCENTCLOUD = "tencentcloud"


class NodeGroup(Enum):
    """How the nodes are grouped."""

    MANAGED = "managed"
    """The cloud's scaling group (Auto Scaling group, scale set, managed instance group, ESS)."""
    INSTANCES = "instances"
    """A fixed list of VMs."""


class ReservationType(Enum):
    """AWS: the kind of reservation."""

    ODCR = "odcr"
    CAPACITY_BLOCK = "capacity-block"


class Fabric(Enum):
    """The HPC fabric (EFA, InfiniBand, GPUDirect, eRDMA)."""

    AUTO = "auto"
    REQUIRED = "required"
    NONE = "none"


class Placement(Enum):
    """Placement of the nodes."""

    AUTO = "auto"
    CLUSTER = "cluster"
    SPREAD = "spread"
    NONE = "none"


class Access(Enum):
    """How people reach the nodes (auto: the cloud's default)."""

    AUTO = "auto"
    SSM = "ssm"
    IAP = "iap"
    BASTION = "bastion"
    SESSION_MANAGER = "session-manager"
    SSH = "ssh"
    NONE = "none"


class Scratch(Enum):
    """Node-local scratch space."""

    AUTO = "auto"
    NVME = "nvme"
    DISK = "disk"
    NONE = "none"


class Egress(Enum):
    """Outbound access of the nodes."""

    NAT = "nat"
    NONE = "none"


class HealthAction(Enum):
    """What an unhealthy node gets."""

    AUTO = "auto"
    REPLACE = "replace"
    REPORT = "report"


class Scheduler(Enum):
    """What schedules work on the GPU nodes."""

    NONE = "none"
    """Nothing: the nodes as they are (default)."""
    KUBERNETES = "kubernetes"
    """The cloud's managed Kubernetes (EKS, GKE, AKS, ACK) with the GPU nodes as a node pool."""
    SLURM = "slurm"
    """A Slurm head node; the GPU nodes run slurmd."""


class GpuSoftware(Enum):
    """The NVIDIA software installed in a Kubernetes cluster."""

    OPERATOR = "operator"
    """The NVIDIA GPU operator (its driver off where the image or the cloud installs one)."""
    DEVICE_PLUGIN = "device-plugin"
    """NVIDIA's device plugin alone."""


class SpotFallback(Enum):
    """What a Spot mix does when Spot capacity is short."""

    ON_DEMAND = "onDemand"
    """Launch on-demand nodes instead (where the cloud's group can)."""
    NONE = "none"
    """Wait for Spot capacity (default)."""


class ScalingMetric(Enum):
    """What moves a managed group between minNodes and maxNodes."""

    GPU_UTILIZATION = "gpuUtilization"
    """The DCGM GPU utilisation, in percent."""
    QUEUE_DEPTH = "queueDepth"
    """Messages waiting in a cloud queue, per node."""
    SCHEDULE = "schedule"
    """Sizes set by cron entries alone."""
    NONE = "none"
    """Nothing (default)."""


class EncryptionAlgorithm(Enum):
    """The algorithm of a key the stack creates (key auto)."""

    AES256 = "aes256"
    """AES-256 (default)."""
    SM4 = "sm4"
    """Alibaba KMS Aliyun_SM4 keys, where the region sells them."""


class Compliance(Enum):
    """A named set of policy rules and their levels (components/policy/profiles.yaml)."""

    NONE = "none"
    """No profile: the policy pack's default levels."""
    CIS = "cis"
    """The cluster-level controls of the cloud's CIS benchmark."""
    MLPS3 = "mlps3"
    """GB/T 22239-2019 level 3 (等保 2.0 三级) controls a cluster stack can meet."""


class ScratchPerformanceLevel(Enum):
    """Alibaba ESSD performance level."""

    PL0 = "PL0"
    PL1 = "PL1"
    PL2 = "PL2"
    PL3 = "PL3"


class StorageArgs(TypedDict, total=False):
    """Disks of each node."""

    root_gb: int
    """Boot disk size in GB (default 200)."""
    scratch: Scratch
    """auto (local NVMe where the type has it, else a disk), nvme, disk or none."""
    scratch_gb: int
    """Scratch disk size in GB when scratch is a disk (default 1000)."""
    scratch_path: str
    """Where scratch is mounted (default /scratch)."""
    retain_scratch: bool
    """Keep the scratch disk when a node is deleted."""


class ExistingNetworkArgs(TypedDict, total=False):
    """A network to join: nothing of it is created (ids in the cloud's form)."""

    vpc_id: Required[str]
    """The VPC id (AWS vpc-..., Alibaba vpc-...), or the host network's self link (GCP)."""
    subnet_ids: Required[list[str]]
    """The nodes' subnet (vSwitch on Alibaba); GCP: one subnetwork per NIC, the host's first, then the GPU NICs'."""
    security_group_ids: list[str]
    """Groups attached beside the cluster's own (AWS, Alibaba)."""


class NetworkArgs(TypedDict, total=False):
    """The cluster network."""

    cidr: str
    """A private range for the VPC (default 10.42.0.0/16); with existing on GCP, the host subnetwork's range."""
    public_ip: bool
    """Public IPs on the nodes (default false)."""
    ssh_cidrs: list[str]
    """Ranges allowed to SSH in."""
    egress: Egress
    """nat (default) or none."""
    existing: ExistingNetworkArgs
    """Join this network instead of creating one."""


class LoginArgs(TypedDict, total=False):
    """A small CPU VM in the cluster network."""

    instance_type: str
    """Its type (default: the cloud's login type)."""
    public_ip: bool
    """A public IP on it."""


class IdentityArgs(TypedDict, total=False):
    """The nodes' cloud identity (least privilege by default)."""

    policies: list[str]
    """Extra grants, in the cloud's own form."""
    existing: str
    """Use this identity instead of creating one."""
    read_storage: bool
    """Also read the cloud's object storage."""


class HealthArgs(TypedDict, total=False):
    """The boot-time health check."""

    enabled: bool
    """Run it (default true)."""
    action: HealthAction
    """auto, replace or report."""


class MonitoringArgs(TypedDict, total=False):
    """Node metrics."""

    dcgm_exporter: bool
    """The DCGM and node exporters (default true)."""


class KubernetesArgs(TypedDict, total=False):
    """scheduler kubernetes: the managed control plane and the in-cluster GPU software."""

    version: str
    """Kubernetes MAJOR.MINOR the cloud offers (default: catalog/kubernetes/<cloud>.yaml's)."""
    public_endpoint: bool
    """The API server on the internet, only from publicCidrs (default false: private)."""
    public_cidrs: list[str]
    """The ranges allowed to reach a public API server."""
    gpu_software: GpuSoftware
    """operator (default) or device-plugin."""
    system_instance_type: str
    """The CPU type of the system node pool (default: the cloud's)."""
    system_nodes: int
    """Nodes of the system pool (default 2)."""
    service_monitor: bool
    """A ServiceMonitor for the DCGM exporter (needs the Prometheus operator's CRDs)."""


class SlurmArgs(TypedDict, total=False):
    """scheduler slurm: a head node running slurmctld; the GPU nodes run slurmd."""

    head_instance_type: str
    """The head node's CPU type (default: the cloud's login type)."""
    accounting: bool
    """slurmdbd with a local MariaDB on the head node (default false)."""
    partition: str
    """The GPU partition's name (default gpu)."""


class ScheduledSizeArgs(TypedDict, total=False):
    """One entry of a scaling schedule."""

    cron: Required[str]
    """Five cron fields, in the scaling's timeZone."""
    nodes: Required[int]
    """The desired count from then on."""


class ScalingArgs(TypedDict, total=False):
    """What moves a managed group between minNodes and maxNodes (catalog/scaling/<cloud>.yaml)."""

    metric: ScalingMetric
    """gpuUtilization, queueDepth, schedule or none (default)."""
    target: float
    """Percent of GPU utilisation (gpuUtilization) or messages per node (queueDepth)."""
    queue: str
    """queueDepth: auto (the cluster's own queue) or an existing queue's id in the cloud's form."""
    schedule: list[ScheduledSizeArgs]
    """Sizes from cron entries on."""
    time_zone: str
    """The IANA time zone of the schedule (default UTC)."""
    scale_in_cooldown_seconds: int
    """Seconds between scale-ins (default 600)."""


class EncryptionArgs(TypedDict, total=False):
    """The key of every disk and filesystem the stack creates."""

    key: str
    """provider (the cloud's managed keys; default), auto (one key per cluster, rotated, protected) or a key id."""
    algorithm: EncryptionAlgorithm
    """aes256 (default) or sm4 (Alibaba, with key auto)."""


class AzureOptionsArgs(TypedDict, total=False):
    """Azure options."""

    resource_group: str
    """An existing resource group (default: create one)."""
    encryption_at_host: bool
    """Encryption at host (needs the subscription feature)."""


class GcpOptionsArgs(TypedDict, total=False):
    """GCP options."""

    iap: bool
    """Allow SSH from Identity-Aware Proxy."""
    flex_start: bool
    """DWS flex-start."""
    placement_max_distance: int
    """Compact placement's maxDistance (1-3)."""


class AlicloudOptionsArgs(TypedDict, total=False):
    """Alibaba Cloud options."""

    scratch_performance_level: ScratchPerformanceLevel
    """The ESSD performance level of the scratch disk (default PL1)."""


class GpuClusterInputs(TypedDict, total=False):
    """The inputs of one GPU cluster: the stack config keys (README "Config reference")."""

    cloud: Required[Cloud]
    """The cloud to build on."""
    region: str
    """The region (location on Azure)."""
    project: str
    """GCP: the project."""
    max_hourly_usd: float
    """A cost ceiling in USD per hour at maxNodes."""
    name: str
    """Cluster name ([a-z][a-z0-9-]{0,30}); default: the resource name."""
    gpu: str
    """MODEL:COUNT, for example H100:8."""
    instance_type: str
    """An instance type the catalog knows (set this or gpu)."""
    nodes: int
    """GPU nodes (default 1)."""
    max_nodes: int
    """Upper bound of a managed group (default: nodes)."""
    min_nodes: int
    """Lower bound of a managed group (default: nodes; 0 scales to zero where the cloud's group can)."""
    node_group: NodeGroup
    """managed (default) or instances."""
    zone: str
    """The zone of the nodes."""
    spot: bool
    """Spot / preemptible nodes (the stack file's spot.enabled)."""
    spot_on_demand_base: int
    """With spot: nodes that are always on demand (the stack file's spot.onDemandBase; default 0)."""
    spot_fallback: SpotFallback
    """With spot: onDemand or none (the stack file's spot.fallback; default none)."""
    scaling: ScalingArgs
    """What moves a managed group between minNodes and maxNodes."""
    reservation: str
    """A capacity reservation id."""
    reservation_type: ReservationType
    """AWS: odcr (default) or capacity-block."""
    fabric: Fabric
    """auto (default), required or none."""
    placement: Placement
    """auto (default), cluster, spread or none."""
    storage: StorageArgs
    """Disks of each node."""
    network: NetworkArgs
    """The cluster network, or the one to join."""
    image: str
    """auto (the cloud's GPU image) or an image in the cloud's form."""
    admin_user: str
    """The Linux admin user (default ubuntu)."""
    ssh_public_key: str
    """An OpenSSH public key for the admin user."""
    tags: dict[str, str]
    """Tags (labels on GCP) on every resource."""
    access: Access
    """How people reach the nodes."""
    login: LoginArgs
    """A login VM."""
    identity: IdentityArgs
    """The nodes' identity."""
    health: HealthArgs
    """The boot-time health check."""
    monitoring: MonitoringArgs
    """Node metrics."""
    gpu_partition: str
    """A MIG profile, for example 1g.10gb."""
    scheduler: Scheduler
    """none (default), kubernetes or slurm."""
    kubernetes: KubernetesArgs
    """scheduler kubernetes: the control plane and the GPU software."""
    slurm: SlurmArgs
    """scheduler slurm: the head node and the partition."""
    encryption: EncryptionArgs
    """The key of every disk and filesystem."""
    compliance: Compliance
    """none (default), cis or mlps3."""
    azure: AzureOptionsArgs
    """Azure options."""
    gcp: GcpOptionsArgs
    """GCP options."""
    alicloud: AlicloudOptionsArgs
    """Alibaba Cloud options."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _plain(value: Any) -> Any:
    """Enums as their values; a nested block's keys as the stack file writes them (camelCase)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {_camel(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# `spot` is `true|false` or an object in a stack file; schema inference has no unions, so the schema keeps
# `spot: bool` (what programs already pass) and takes the object's other keys flat beside it.
_SPOT_KEYS = {"spot_on_demand_base": "onDemandBase", "spot_fallback": "fallback"}


def to_args(inputs: GpuClusterInputs) -> GpuClusterArgs:
    """The schema's inputs as the Python API's `GpuClusterArgs` (tags are kept as given)."""
    given: dict[str, Any] = dict(inputs)
    kwargs: dict[str, Any] = {}
    spot: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        if key in _SPOT_KEYS:
            spot[_SPOT_KEYS[key]] = _plain(value)
        else:
            kwargs[key] = dict(value) if key == "tags" else _plain(value)
    if spot:  # the object form; enabled as given (an unset spot with a base is refused by the spec)
        kwargs["spot"] = {"enabled": kwargs.get("spot", False), **spot}
    return GpuClusterArgs(**kwargs)


class GpuCluster(cluster.GpuCluster):
    """A GPU cluster on one cloud: nodes, their network, identity and access (gpu-cluster)."""

    # The outputs of `cluster.GpuCluster`, repeated here because schema inference reads property
    # descriptions from this class's own source (tests/test_component_schema.py keeps both equal).
    cloud_name: pulumi.Output[str]
    """The cloud: aws, azure, gcp, alicloud or tencentcloud."""
    region: pulumi.Output[str]
    """The region (location on Azure)."""
    zone: pulumi.Output[str] | None
    """The zone of the nodes, where the cloud reports one in the outputs (GCP)."""
    instance_type: pulumi.Output[str]
    """The nodes' instance type."""
    gpu: pulumi.Output[str]
    """The GPU model."""
    gpus_per_node: pulumi.Output[int]
    """GPUs per node."""
    nodes: pulumi.Output[int]
    """Nodes at deploy."""
    max_nodes: pulumi.Output[int]
    """Upper bound of the node group."""
    fabric: pulumi.Output[str]
    """The HPC fabric wired (efa, infiniband, gpudirect-*, erdma) or none."""
    fabric_gbps_per_node: pulumi.Output[float]
    """Fabric bandwidth wired per node, in Gb/s (0 without a fabric)."""
    placement_requested: pulumi.Output[str]
    """The placement asked for (auto resolved)."""
    placement_applied: pulumi.Output[str]
    """The placement the resources apply (a cloud's managed groups may apply less)."""
    placement_group: pulumi.Output[str] | None
    """The placement group / proximity group / policy / deployment set, if any."""
    scratch: pulumi.Output[str]
    """The scratch space of each node, in words."""
    resource_group: pulumi.Output[str] | None
    """Azure: the resource group."""
    vpc_id: pulumi.Output[str]
    """The network: VPC id (VNet id on Azure, network self link on GCP)."""
    subnet_ids: pulumi.Output[list[str]]
    """The nodes' subnets (vSwitches on Alibaba)."""
    gpu_network_ids: pulumi.Output[list[str]] | None
    """GCP: the GPU VPCs of the extra NICs."""
    security_group_id: pulumi.Output[str]
    """The nodes' security group (NSG on Azure, internal firewall rule on GCP)."""
    image_id: pulumi.Output[str]
    """The nodes' image."""
    node_group: pulumi.Output[str] | None
    """The managed node group (nodeGroup: managed), else None."""
    instance_ids: pulumi.Output[list[str]] | None
    """The instances (nodeGroup: instances), else None."""
    private_ips: pulumi.Output[list[str]] | None
    """The nodes' private IPs in node order (nodeGroup: instances): a hostfile."""
    identity: pulumi.Output[dict[str, Any]]
    """The nodes' cloud identity and its grants."""
    access: pulumi.Output[dict[str, Any]]
    """How to log in and how to list the nodes."""
    metrics: pulumi.Output[dict[str, Any]]
    """The exporters' endpoints and how to list the scrape targets."""
    kubernetes: pulumi.Output[dict[str, Any]] | None
    """scheduler kubernetes: clusterName, endpoint, version, nodePools, credentials (the command), releases."""
    kubeconfig: pulumi.Output[str] | None
    """scheduler kubernetes: the cluster's kubeconfig (secret)."""
    slurm: pulumi.Output[dict[str, Any]] | None
    """scheduler slurm: the head node, the partition and the login command."""

    def __init__(self, name: str, args: GpuClusterInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, to_args(args), opts)


def package_version() -> str:
    """The package version for the schema and SDKs: pyproject.toml's (an installed copy's metadata may be absent)."""
    import tomllib
    from pathlib import Path

    data = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    return str(data["project"]["version"])


def schema(version: str | None = None) -> dict[str, Any]:
    """The package schema, as `pulumi package add` infers it (no Pulumi CLI needed)."""
    from pulumi.provider.experimental.component import ComponentProvider

    provider = ComponentProvider([GpuCluster], PACKAGE, None, version or package_version())
    assert provider.schema is not None
    inferred: dict[str, Any] = json.loads(provider.schema)
    return inferred
