"""`gpu-cluster:cluster` as the user writes it: the ONE source of the config's shape.

Every key is a field here, with its type, default, limits and its description (the docstring under the field, read
by `markers.field_docs` for the generated types and docs; not by pydantic at class creation, which parses the source
of every model at every import: a tenth of a plan); a closed set of values is a named `Choice` (most in
`choices.py`), with a description per value.
The multi-language package's types (`components/provider_types.py`) are generated from this module
(`python -m components.provider_gen`), and a test fails when they are stale. Rules across keys live in the spec's
rule modules; what the keys resolve to is `ClusterSpec`."""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from ..catalog.rows import Cloud  # the one list of clouds
from ..cidr import PRIVATE_RANGES, parse_cidr
from .choices import (
    Access,
    BudgetCurrency,
    Compliance,
    ControlPlaneLog,
    Egress,
    EncryptionAlgorithm,
    Fabric,
    GpuSoftware,
    HealthAction,
    NodeGroup,
    PerformanceLevel,
    Placement,
    ReservationType,
    ScalingMetric,
    Scheduler,
    ScratchKind,
    ServeProtocol,
    SharedKind,
    SlurmContainers,
    SpotFallback,
    UpdateStrategy,
)
from .markers import Choice, Flatten, TakesOutput

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,30}$"
MAX_NODES = 5000
PATH_PATTERN = r"^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$"


class _Model(BaseModel):
    # aliases only: `max_nodes` is an unknown key, not a spelling of maxNodes
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, alias_generator=to_camel)


class SharedStorageConfig(_Model):
    """One filesystem every node mounts (catalog/storage/<cloud>.yaml)."""

    kind: SharedKind = "auto"
    """auto, lustre, nfs or existing."""
    size_gb: int | None = Field(None, ge=1)
    """Capacity in GB (default: the service's smallest size)."""
    throughput: int | None = Field(None, ge=1)
    """MB/s per TiB, where the service has tiers."""
    path: str = Field("/shared", pattern=PATH_PATTERN)
    """Where every node mounts it (default /shared)."""
    retain: bool = True
    """Protect it: never deleted by a destroy or a replacement (default true)."""
    existing: str = ""
    """kind existing: the filesystem's mount source."""


class StorageConfig(_Model):
    """Disks of each node, and a shared filesystem."""

    root_gb: int = Field(200, ge=30, le=16384)
    """Boot disk size in GB (default 200)."""
    scratch: ScratchKind = "auto"
    """auto (local NVMe where the type has it, else a disk), nvme, disk or none."""
    scratch_gb: int = Field(1000, ge=1, le=65536)
    """Scratch disk size in GB when scratch is a disk (default 1000)."""
    scratch_path: str = Field("/scratch", pattern=PATH_PATTERN)
    """Where scratch is mounted (default /scratch)."""
    retain_scratch: bool = False
    """Keep the scratch disk when a node is deleted."""
    shared: SharedStorageConfig | None = None
    """One filesystem every node mounts (Lustre or NFS, or an existing one)."""


class ExistingNetwork(_Model):
    """A network to join: nothing of it is created (ids in the cloud's form; capabilities `existingNetwork:`)."""

    vpc_id: Annotated[str, TakesOutput()] = Field(min_length=1)
    """The VPC id (AWS vpc-..., Alibaba vpc-...), or the host network's self link (GCP)."""
    subnet_ids: Annotated[tuple[str, ...], TakesOutput()] = Field(min_length=1, strict=False)
    """The nodes' subnet (vSwitch on Alibaba); GCP: one subnetwork per NIC, the host's first, then the GPU NICs'."""
    security_group_ids: Annotated[tuple[str, ...], TakesOutput()] = Field((), strict=False)
    """Groups attached beside the cluster's own (AWS, Alibaba)."""


class NetworkConfig(_Model):
    """The cluster network."""

    cidr: str = "10.42.0.0/16"
    """A private range for the VPC (default 10.42.0.0/16); with existing on GCP, the host subnetwork's range."""
    public_ip: bool = False
    """Public IPs on the nodes (default false)."""
    ssh_cidrs: tuple[str, ...] = Field((), strict=False)
    """Ranges allowed to SSH in."""
    egress: Egress = "nat"
    """nat (default) or none."""
    existing: ExistingNetwork | None = None
    """Join this network instead of creating one."""

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        net = parse_cidr(value)
        if not any(net.subnet_of(r) for r in PRIVATE_RANGES):  # type: ignore[arg-type]
            raise ValueError(f"{value} is not a private range; use part of 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16")
        return str(net)

    @field_validator("ssh_cidrs")
    @classmethod
    def _ssh_cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted({str(parse_cidr(v)) for v in value}))


# Per-cloud options: only the block of the chosen cloud may be set.
class AwsOptions(_Model):
    """AWS options (none yet)."""


class AzureOptions(_Model):
    """Azure options."""

    resource_group: str | None = Field(None, pattern=r"^[-\w._()]{1,90}$")
    """An existing resource group (default: create one)."""
    encryption_at_host: bool = False
    """Encryption at host (needs the subscription feature Microsoft.Compute/EncryptionAtHost; docs/azure.md)."""


class GcpOptions(_Model):
    """GCP options."""

    iap: bool = False
    """Allow SSH from Identity-Aware Proxy (its range is `iapRange` in catalog/gcp.yaml)."""
    flex_start: bool = False
    """DWS flex-start: A3 Ultra / A4 without a reservation (rules in catalog/gcp.yaml)."""
    placement_max_distance: int | None = Field(None, ge=1, le=3)
    """Compact placement's maxDistance (1-3): tighter placement, lower VM caps (catalog/gcp.yaml)."""


class AlicloudOptions(_Model):
    """Alibaba Cloud options."""

    scratch_performance_level: PerformanceLevel = "PL1"
    """The ESSD performance level of the scratch disk (default PL1)."""


class TencentcloudOptions(_Model):
    """Tencent Cloud options (none yet)."""


class HuaweicloudOptions(_Model):
    """Huawei Cloud options (none yet)."""


class IdentityConfig(_Model):
    """The nodes' cloud identity (least privilege by default; catalog/capabilities/<cloud>.yaml)."""

    policies: tuple[str, ...] = Field((), strict=False)
    """Extra grants, in the cloud's own form."""
    existing: str | None = Field(None, min_length=1)
    """Use this identity instead of creating one."""
    read_storage: bool = False
    """Also read the cloud's object storage (S3 / GCS / Blob / OSS)."""


class LoginConfig(_Model):
    """A small CPU VM in the cluster network: the only place a public IP or SSH CIDR may land."""

    instance_type: str | None = Field(None, min_length=1)
    """Its type (default: the cloud's login type)."""
    public_ip: bool = False
    """A public IP on it."""


class HealthConfig(_Model):
    """The boot-time health check (components/bootstrap/health.py)."""

    enabled: bool = True
    """Run it (default true)."""
    action: HealthAction = "auto"
    """auto (replace for managed groups, report for instances), replace or report."""


PrometheusMode = Annotated[
    Literal["auto", "selfHosted", "managed", "none"],
    Choice(
        "PrometheusMode",
        "Who scrapes the nodes' exporters (docs/monitoring.md).",
        {
            "auto": "selfHosted where built (catalog/monitoring.yaml) with a login node and egress nat, else none.",
            "selfHosted": "Prometheus and Grafana on the login node, private, from pinned releases.",
            "managed": "The cloud's managed Prometheus stores and alerts (catalog/monitoring.yaml managed); the login "
            "node's Prometheus agent scrapes and writes to it, its Grafana reads it.",
            "none": "Nothing scrapes the exporters (scrape them from your own Prometheus).",
        },
    ),
]


class AlertsConfig(_Model):
    """The alert rules' thresholds (catalog/monitoring.yaml alertDefaults: each default's source)."""

    gpu_idle_percent: float = Field(5, ge=0, le=100)
    """A GPU below this utilisation for gpuIdleMinutes while its node runs is idle (default 5)."""
    gpu_idle_minutes: int = Field(60, ge=5, le=1440)
    """How long a GPU must be idle before the alert fires (default 60)."""
    gpu_memory_percent: float = Field(95, gt=0, le=100)
    """GPU memory used above this share of its total (default 95)."""
    gpu_temperature_celsius: int | None = Field(None, ge=30, le=120)
    """GPU temperature above this (default none: no rule; the slowdown temperature differs per GPU model)."""
    disk_full_percent: float = Field(95, gt=0, lt=100)
    """A node filesystem used above this share (default 95)."""
    node_missing_minutes: int = Field(5, ge=1, le=1440)
    """A node's exporter unreachable this long (default 5)."""


class LogsConfig(_Model):
    """The nodes' logs in the cloud's log service (catalog/monitoring.yaml logs: which service per cloud)."""

    enabled: bool = False
    """Ship cloud-init, the bootstrap parts, health checks, Slurm and kubelet logs (default false: turning it on
    changes every node's boot data, so a deployed cluster opts in)."""
    retention_days: int = Field(30, ge=1, le=3653)
    """How long the log service keeps them (default 30; the values each cloud takes: catalog/monitoring.yaml logs)."""
    control_plane: tuple[ControlPlaneLog, ...] = Field((), strict=False)
    """The Kubernetes control plane's log types shipped to the same service with the same retention (EKS: api, audit,
    authenticator, controllerManager, scheduler, needs kubernetes.clusterName; CCE: all but authenticator, at most
    30 days; default none)."""

    @field_validator("control_plane")
    @classmethod
    def _control_plane(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(value)))  # EKS takes them as a set


class MonitoringConfig(_Model):
    """Node metrics, and who scrapes them (docs/monitoring.md)."""

    dcgm_exporter: bool = True
    """The DCGM and node exporters, scraped from inside the network (default true)."""
    prometheus: PrometheusMode = "auto"
    """auto (default), selfHosted, managed or none."""
    retention_days: int = Field(15, ge=1, le=3650)
    """How long the self-hosted Prometheus keeps samples (default 15, Prometheus' own default)."""
    alerts: AlertsConfig = AlertsConfig()
    """The alert thresholds."""
    notify: tuple[str, ...] = Field((), strict=False)
    """Email addresses the firing alerts go to through the cloud's notification service (catalog/monitoring.yaml
    notify; default none: the alerts show in Prometheus and Grafana only)."""
    logs: LogsConfig = LogsConfig()
    """Shipping the nodes' logs."""
    grafana_admins: tuple[str, ...] = Field((), strict=False)
    """prometheus managed: the users given the admin role on the cloud's managed Grafana built beside the workspace,
    in the cloud's id form: Azure, Microsoft Entra user object ids (Azure Managed Grafana); AWS, IAM Identity Center
    user ids (Amazon Managed Grafana, with the dashboards). Default none: no managed Grafana; the login node's Grafana
    shows the dashboards."""


GpuSharingMode = Annotated[
    Literal["none", "timeSlicing", "mps", "mig"],
    Choice(
        "GpuSharingMode",
        "How pods share the GPU pool's GPUs (catalog/kubernetes/<cloud>.yaml gpuSharing: each cloud's mechanism).",
        {
            "none": "A pod takes whole GPUs (default).",
            "timeSlicing": "Each GPU advertised replicas times; the pods take turns (no memory or fault isolation).",
            "mps": "Each GPU advertised replicas times; the pods run at once through NVIDIA MPS.",
            "mig": "Each GPU split into MIG instances of migProfile (catalog/mig.yaml), one per pod.",
        },
    ),
]


class GpuSharingConfig(_Model):
    """How pods of the GPU pool share its GPUs (docs/kubernetes.md, GPU sharing)."""

    mode: GpuSharingMode = "none"
    """none (default), timeSlicing, mps or mig."""
    replicas: int | None = Field(None, ge=2)
    """timeSlicing and mps: the pods that share one GPU (at most the cloud's gpuSharing maxReplicas)."""
    mig_profile: str | None = Field(None, min_length=1)
    """mig: the MIG profile every GPU is split into, for example 1g.10gb (catalog/mig.yaml)."""


class KubernetesConfig(_Model):
    """scheduler kubernetes: the managed control plane and the in-cluster GPU software (catalog/kubernetes/)."""

    version: str | None = Field(None, pattern=r"^1\.[0-9]{2}$")
    """Kubernetes MAJOR.MINOR the cloud offers (default: catalog/kubernetes/<cloud>.yaml's)."""
    public_endpoint: bool = False
    """The API server on the internet, only from publicCidrs (default false: private)."""
    public_cidrs: tuple[str, ...] = Field((), strict=False)
    """The ranges allowed to reach a public API server."""
    gpu_software: GpuSoftware = "operator"
    """operator (default) or device-plugin."""
    system_instance_type: str | None = Field(None, min_length=1)
    """The CPU type of the system node pool, for cluster add-ons (default: the cloud's)."""
    system_nodes: int = Field(2, ge=1, le=10)
    """Nodes of the system pool (default 2)."""
    service_monitor: bool = False
    """A ServiceMonitor for the DCGM exporter (needs the Prometheus operator's CRDs)."""
    gpu_sharing: GpuSharingConfig = GpuSharingConfig()
    """How pods share the GPU pool's GPUs: none (default), timeSlicing, mps or mig."""
    cluster_name: str | None = Field(None, pattern=r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
    """The control plane's name at the cloud (AWS only; default: generated at deploy). A deployed cluster keeps its
    name when this is the one its outputs show (kubernetes.clusterName); any other name replaces the cluster."""

    @field_validator("public_cidrs")
    @classmethod
    def _public_cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted({str(parse_cidr(v)) for v in value}))


class SlurmPartition(_Model):
    """An elastic partition: Slurm creates its nodes when jobs wait for them and deletes them when idle."""

    name: str = Field(pattern=r"^[a-z][a-z0-9]{0,14}$")
    """The partition's name, also its nodes' prefix (<name>-0, <name>-1, ...)."""
    instance_type: str | None = Field(None, min_length=1)
    """Its GPU type (default: the cluster's instanceType)."""
    max_nodes: int = Field(ge=1, le=MAX_NODES)
    """The most nodes it may run at once."""
    min_nodes: int = Field(0, ge=0, le=MAX_NODES)
    """Nodes kept running, never suspended (default 0: it scales from zero)."""
    spot: bool = False
    """Spot / preemptible nodes (default false)."""
    default: bool = False
    """The partition jobs go to without -p (default: the first)."""


class SlurmUser(_Model):
    """A person who submits jobs: the same Linux user and uid on the head, the login node and every GPU node."""

    name: str = Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")
    """The Linux user name."""
    uid: int = Field(ge=1000, le=59999, strict=False)
    """Its uid (and its group's gid) on every node; fixed, so files on /home keep their owner."""
    ssh_public_key: Annotated[str | None, TakesOutput()] = Field(
        None, pattern=r"^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$"
    )
    """An OpenSSH public key for ~/.ssh/authorized_keys (SSH from the login node to the nodes, or to the login)."""
    sudo: bool = False
    """Passwordless sudo on every node (default false)."""


class SlurmConfig(_Model):
    """scheduler slurm: a head node running slurmctld; the GPU nodes run slurmd (configless)."""

    head_instance_type: str | None = Field(None, min_length=1)
    """The head node's CPU type (default: the cloud's login type)."""
    accounting: bool = False
    """slurmdbd on the head with the cloud's managed MySQL: sacct shows every job (default false; AWS, GCP, Azure)."""
    partition: str = Field("gpu", pattern=r"^[a-z][a-z0-9_-]{0,30}$")
    """The GPU partition's name without partitions (default gpu)."""
    partitions: tuple[SlurmPartition, ...] = Field((), strict=False)
    """Elastic partitions (power saving); empty: one partition of the cluster's nodes, always running."""
    suspend_after_seconds: int | None = Field(None, ge=60, le=604800)
    """With partitions: a node idle this long is deleted (default: catalog/slurm.yaml powerSave)."""
    resume_timeout_seconds: int | None = Field(None, ge=300, le=7200)
    """With partitions: a node not up this long after its launch is deleted and its job requeued."""
    users: tuple[SlurmUser, ...] = Field((), strict=False)
    """The people who log in and submit jobs, created on every node (home on the shared /home)."""
    containers: SlurmContainers = "none"
    """pyxis: NVIDIA's enroot and pyxis on the nodes, for srun --container-image (default none)."""
    mps: bool = False
    """CUDA MPS as a Slurm GRES beside the GPUs: jobs ask --gres=mps:<percent of a GPU> (default false)."""


class SpotConfig(_Model):
    """Spot nodes above an on-demand base, and what to do when spot runs short (YAML: true, false or the object)."""

    enabled: bool = True
    """Spot / preemptible nodes."""
    on_demand_base: int = Field(0, ge=0, le=MAX_NODES)
    """Nodes that are always on demand (default 0)."""
    fallback: SpotFallback = "none"
    """onDemand or none (default)."""


class ScheduledSize(_Model):
    """One entry of a scaling schedule."""

    cron: str = Field(min_length=1)
    """Five cron fields, in the scaling's timeZone."""
    nodes: int = Field(ge=0, le=MAX_NODES)
    """The desired count from then on."""


class ScalingConfig(_Model):
    """What moves a managed group between minNodes and maxNodes (catalog/scaling/<cloud>.yaml)."""

    metric: ScalingMetric = "none"
    """gpuUtilization, queueDepth, schedule or none (default)."""
    target: float | None = Field(None, gt=0, strict=False)
    """Percent of GPU utilisation (gpuUtilization) or messages per node (queueDepth)."""
    queue: str | None = Field(None, min_length=1)
    """queueDepth: auto (the cluster's own queue) or an existing queue's id in the cloud's form."""
    schedule: tuple[ScheduledSize, ...] = Field((), strict=False)
    """Sizes from cron entries on."""
    time_zone: str = "UTC"
    """The IANA time zone of the schedule (default UTC)."""
    scale_in_cooldown_seconds: int = Field(600, ge=0, le=86400)
    """Seconds between scale-ins (default 600)."""

    @field_validator("time_zone")
    @classmethod
    def _time_zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError("not an IANA time zone; use one such as UTC or Europe/Berlin") from None
        return value


class ServeConfig(_Model):
    """A load-balanced endpoint in front of an elastic fleet's managed group (docs/serving.md)."""

    port: int = Field(8000, ge=1, le=65535)
    """The port the nodes serve on, checked by the load balancer (default 8000)."""
    protocol: ServeProtocol = "http"
    """http (default) or tcp."""
    health_path: str | None = Field(None, pattern=r"^/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$")
    """http: the path the health check asks for a 2xx (default /health)."""
    public: bool = False
    """Reachable from the internet, from allowedCidrs only (default false: from inside the network)."""
    certificate: Annotated[str | None, TakesOutput()] = Field(None, min_length=1)
    """The cloud's certificate id: TLS at the load balancer (required when public and http)."""
    allowed_cidrs: tuple[str, ...] = Field((), strict=False)
    """public: the client ranges allowed to reach the endpoint."""
    idle_timeout_seconds: int | None = Field(None, ge=1)
    """Seconds an idle connection stays open, where the cloud's load balancer takes it (default: the cloud's)."""
    requests_per_node: int | None = Field(None, ge=1, le=1_000_000)
    """Requests per second one node serves: the group scales on the load balancer's request rate (http; GCP)."""

    @field_validator("allowed_cidrs")
    @classmethod
    def _allowed_cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted({str(parse_cidr(v)) for v in value}))


class UpdateConfig(_Model):
    """How a managed group or a Kubernetes GPU pool replaces its nodes after a change (catalog/update.yaml)."""

    strategy: UpdateStrategy = "rolling"
    """rolling (default: drain, then replace in batches) or manual (nothing rolls)."""
    min_healthy_percent: int | None = Field(None, ge=0, le=100)
    """Percent of the nodes kept in service while nodes are replaced (default 90)."""
    max_surge: int | None = Field(None, ge=0, le=MAX_NODES)
    """Nodes launched above the count while nodes are replaced (default 0: GPU capacity is usually the count)."""
    drain_timeout_seconds: int | None = Field(None, ge=1, le=86400)
    """Seconds a node has to drain before it is terminated (default: the cloud's, catalog/update.yaml)."""


class EncryptionConfig(_Model):
    """The key of every disk and filesystem the stack creates (capabilities `encryption:`)."""

    key: Annotated[str, TakesOutput()] = Field("provider", min_length=1)
    """provider (the cloud's managed keys; default), auto (one key per cluster, rotated, protected) or a key id."""
    algorithm: EncryptionAlgorithm = "aes256"
    """aes256 (default) or sm4 (Alibaba, with key auto and kmsInstance: an Aliyun_SM4 key in that instance)."""
    kms_instance: str | None = Field(None, min_length=1)
    """Alibaba: an existing KMS instance (kst-...) the key auto is created in (default: none, a KMS default key)."""


class BudgetConfig(_Model):
    """The cloud's monthly budget of this cluster's resources, with alerts (capabilities `budget:`; docs/costs.md)."""

    monthly: float = Field(strict=False)
    """The amount per calendar month, in currency (a positive number)."""
    currency: BudgetCurrency = "auto"
    """auto (default: the cloud's billing currency, capabilities `budget.currencies`), USD or CNY."""
    thresholds: tuple[float, ...] = Field((50, 80, 100), strict=False)
    """Percent of the amount actually spent that sends an alert, each 1 to 1000 (default [50, 80, 100])."""
    forecast: float | None = Field(None, strict=False)
    """Percent of the amount the month's forecast reaches that sends an alert, 1 to 1000 (default: none)."""
    notify: tuple[str, ...] = Field((), strict=False)
    """Email addresses the alerts go to (at least one)."""
    billing_account: str | None = None
    """GCP: the Cloud Billing account the budget belongs to (XXXXXX-XXXXXX-XXXXXX; required on GCP)."""


class ClusterConfig(_Model):
    """The inputs of one GPU cluster: `gpu-cluster:cluster` exactly as the user writes it (camelCase keys)."""

    name: str | None = Field(None, pattern=NAME_PATTERN)
    """Cluster name ([a-z][a-z0-9-]{0,30}); default: the stack's name."""
    gpu: str | None = None
    """MODEL:COUNT (H100:8), or MODEL:1/N for a vGPU slice of one GPU (L4:1/8); resolved by the catalog."""
    instance_type: str | None = Field(None, min_length=1)
    """An instance type the catalog knows (set this or gpu, or both when they agree)."""
    nodes: int = Field(1, ge=0, le=MAX_NODES)
    """GPU nodes (default 1)."""
    max_nodes: int | None = Field(None, ge=0, le=MAX_NODES)
    """Upper bound of a managed group (default: nodes)."""
    min_nodes: int | None = Field(None, ge=0, le=MAX_NODES)
    """Lower bound of a managed group (default: nodes; 0 scales to zero where the cloud's group can)."""
    node_group: NodeGroup = "managed"
    """managed (default) or instances."""
    zone: str | None = Field(None, min_length=1)
    """The zone of the nodes (default: the cloud's or the first zone selling the type)."""
    spot: Annotated[SpotConfig, Flatten()] = SpotConfig(enabled=False)
    """Spot / preemptible nodes: true, false, or {enabled, onDemandBase, fallback}."""
    scaling: ScalingConfig | None = None
    """What moves a managed group between minNodes and maxNodes."""
    reservation: str = ""
    """A capacity reservation id in the cloud's form."""
    reservation_type: ReservationType = "odcr"
    """AWS: odcr (default) or capacity-block."""
    fabric: Fabric = "auto"
    """auto (default), required or none."""
    placement: Placement = "auto"
    """auto (default), cluster, spread or none."""
    storage: StorageConfig = StorageConfig()
    """Disks of each node, and a shared filesystem."""
    network: NetworkConfig = NetworkConfig()
    """The cluster network, or the one to join."""
    image: Annotated[str, TakesOutput()] = Field("auto", min_length=1)
    """auto (the cloud's GPU image) or an image in the cloud's form."""
    admin_user: str = Field("ubuntu", pattern=r"^[a-z_][a-z0-9_-]{0,31}$")
    """The Linux admin user (default ubuntu)."""
    ssh_public_key: Annotated[str | None, TakesOutput()] = Field(
        None, pattern=r"^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$"
    )
    """An OpenSSH public key for the admin user."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tags (labels on GCP) on every resource."""
    access: Access = "auto"
    """How people reach the nodes."""
    login: LoginConfig | None = None
    """A login VM."""
    identity: IdentityConfig = IdentityConfig()
    """The nodes' identity."""
    health: HealthConfig = HealthConfig()
    """The boot-time health check."""
    monitoring: MonitoringConfig = MonitoringConfig()
    """Node metrics."""
    gpu_partition: str | None = Field(None, min_length=1)
    """A MIG profile, for example 1g.10gb (catalog/mig.yaml); with slurm, each instance is a GRES gpu:<profile>."""
    scheduler: Scheduler = "none"
    """none (default), kubernetes or slurm."""
    kubernetes: KubernetesConfig | None = None
    """scheduler kubernetes: the control plane and the GPU software."""
    slurm: SlurmConfig | None = None
    """scheduler slurm: the head node and the partition."""
    encryption: EncryptionConfig = EncryptionConfig()
    """The key of every disk and filesystem."""
    serve: ServeConfig | None = None
    """A load-balanced endpoint with a health check in front of the managed group (VM mode)."""
    update: UpdateConfig | None = None
    """How the nodes of a managed group or Kubernetes pool are replaced: rolling (default) or manual."""
    compliance: Compliance = "none"
    """none (default), cis or mlps3."""
    budget: BudgetConfig | None = None
    """A monthly budget of the cluster's resources with alert thresholds, where the cloud has one."""
    aws: AwsOptions | None = None
    """AWS options."""
    azure: AzureOptions | None = None
    """Azure options."""
    gcp: GcpOptions | None = None
    """GCP options."""
    alicloud: AlicloudOptions | None = None
    """Alibaba Cloud options."""
    tencentcloud: TencentcloudOptions | None = None
    """Tencent Cloud options."""
    huaweicloud: HuaweicloudOptions | None = None
    """Huawei Cloud options."""

    @field_validator("spot", mode="before")
    @classmethod
    def _spot_form(cls, value: Any) -> Any:
        if isinstance(value, bool):  # `spot: true` as it always was: no on-demand base, no fallback
            return {"enabled": value}
        if not isinstance(value, Mapping | SpotConfig):
            raise ValueError("allowed: true, false or {enabled, onDemandBase, fallback}")
        return value


class StackKeys(_Model):
    """The stack config keys beside `gpu-cluster:cluster` that a GpuCluster takes as inputs."""

    cloud: Annotated[Cloud, Choice("Cloud", "The cloud to build on.")]
    """The cloud to build on."""
    region: str | None = None
    """The region (location on Azure)."""
    project: str | None = None
    """GCP: the project."""
    max_hourly_usd: float | None = None
    """A cost ceiling in USD per hour at maxNodes."""
