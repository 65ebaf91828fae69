"""What `build_spec` hands on: the validated, resolved cluster (`ClusterSpec`) and its resolved blocks."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..catalog import Cloud, InstanceType
from ..catalog import update as catalog_update
from ..errors import Finding
from .model import (
    AlicloudOptions,
    AzureOptions,
    GcpOptions,
    GpuSharingConfig,
    IdentityConfig,
    LoginConfig,
    MonitoringConfig,
    NetworkConfig,
    ScheduledSize,
    SlurmConfig,
    StorageConfig,
)


@dataclass(frozen=True)
class ScalingSpec:
    """`scaling` resolved: metric gpuUtilization | queueDepth | schedule (none is no ScalingSpec)."""

    metric: Literal["gpuUtilization", "queueDepth", "schedule"]
    target: float | None
    queue: str | None  # queueDepth: "auto" or an existing queue's id
    schedule: tuple[ScheduledSize, ...]
    time_zone: str
    scale_in_cooldown_seconds: int


@dataclass(frozen=True)
class ServeSpec:
    """`serve` resolved: healthPath defaulted for http (None for tcp)."""

    port: int
    protocol: Literal["http", "tcp"]
    health_path: str | None
    public: bool
    certificate: str | None
    allowed_cidrs: tuple[str, ...]
    idle_timeout_seconds: int | None
    requests_per_node: int | None = None  # the load balancer's requests per second one node takes (scaling)


@dataclass(frozen=True)
class KubernetesSpec:
    """`kubernetes` resolved against catalog/kubernetes/<cloud>.yaml."""

    version: str
    public_endpoint: bool
    public_cidrs: tuple[str, ...]
    gpu_software: Literal["operator", "device-plugin"]
    system_instance_type: str
    system_nodes: int
    service_monitor: bool
    # how pods share the GPU pool's GPUs (mode none: they do not)
    gpu_sharing: GpuSharingConfig = field(default_factory=GpuSharingConfig)
    cluster_name: str | None = None  # the control plane's name at the cloud (None: generated at deploy)


@dataclass(frozen=True)
class BudgetSpec:
    """`budget` resolved: the currency defaulted to the cloud's billing currency (capabilities `budget:`)."""

    monthly: float
    currency: Literal["USD", "CNY"]
    currency_source: str  # why that currency: the data's source, or "given"
    thresholds: tuple[float, ...]  # percent of the amount actually spent
    forecast: float | None  # percent of the amount the month's forecast reaches
    notify: tuple[str, ...]
    billing_account: str | None = None  # GCP


@dataclass(frozen=True)
class UpdateSpec:
    """`update` resolved against catalog/update.yaml (defaults, and the cloud's drain budget for this kind of group)."""

    strategy: Literal["rolling", "manual"]
    min_healthy_percent: int
    max_surge: int
    drain_timeout_seconds: int | None  # None: the cloud has no drain budget to set on this group

    @property
    def rolling(self) -> bool:
        return self.strategy == "rolling"

    def max_unavailable(self, nodes: int) -> int:
        """Nodes one batch may take down: what minHealthyPercent leaves of `nodes`, and at least one when nothing
        surges (otherwise no node could ever be replaced; the spec refuses minHealthyPercent 100 without a surge)."""
        down = nodes - math.ceil(nodes * self.min_healthy_percent / 100)
        return max(down, 1) if self.max_surge == 0 else max(down, 0)

    def max_in_service_percent(self, nodes: int) -> int:
        """The count plus maxSurge, as a percent of `nodes` (AWS instance refresh MaxHealthyPercentage; 100: none)."""
        return 100 + math.ceil(self.max_surge * 100 / max(nodes, 1))


def default_update() -> UpdateSpec:
    """No `update` block, no cloud: catalog/update.yaml's defaults (a cloud's drain budget is set by `resolve`)."""
    base = catalog_update.defaults()
    return UpdateSpec(base["strategy"], int(base["minHealthyPercent"]), int(base["maxSurge"]), None)


@dataclass(frozen=True)
class PartitionSpec:
    """`slurm.partitions[]` resolved: an elastic partition of `max_nodes` Slurm CLOUD nodes `<name>-<i>`."""

    name: str
    instance: InstanceType
    min_nodes: int
    max_nodes: int
    spot: bool
    default: bool

    def node_names(self) -> tuple[str, ...]:
        return tuple(f"{self.name}-{i}" for i in range(self.max_nodes))

    @property
    def hostlist(self) -> str:
        """The nodes as a Slurm hostlist expression: `gpu-[0-3]` (one node: `gpu-0`)."""
        return f"{self.name}-0" if self.max_nodes == 1 else f"{self.name}-[0-{self.max_nodes - 1}]"


@dataclass(frozen=True)
class ClusterSpec:
    """The validated, resolved cluster: what every layout step starts from."""

    project: str
    stack: str
    cloud: Cloud
    region: str
    zone: str | None
    name: str
    instance: InstanceType
    resolution: str
    nodes: int
    max_nodes: int
    node_group: Literal["managed", "instances"]
    spot: bool
    reservation: str
    reservation_type: Literal["odcr", "capacity-block"]
    fabric_wired: bool
    placement: Literal["cluster", "spread", "none"]
    scratch: Literal["nvme", "disk", "none"]
    storage: StorageConfig
    network: NetworkConfig
    image: str
    admin_user: str
    ssh_public_key: str | None
    tags: Mapping[str, str]
    findings: tuple[Finding, ...]
    gcp_project: str | None = None
    # how people reach the nodes: the cloud's method `access: auto` resolved (capabilities data)
    access: str = "none"
    identity: IdentityConfig = field(default_factory=IdentityConfig)
    login: LoginConfig | None = None  # with instanceType resolved
    health_action: Literal["replace", "report"] | None = None  # None: no health check
    dcgm_exporter: bool = False
    # monitoring.prometheus resolved (auto: spec/rules/monitoring.py; selfHosted runs on the login node); monitoring
    # as written, for the retention and the alert thresholds
    prometheus: Literal["selfHosted", "managed", "none"] = "none"
    monitoring: MonitoringConfig = field(default_factory=MonitoringConfig)
    # MIG: the profile and how many instances of it fill one GPU
    gpu_partition: tuple[str, int] | None = None
    max_hourly_usd: float | None = None
    min_nodes: int = 0  # the group's floor (minNodes, default nodes)
    # spot: nodes above this many are spot; fallback onDemand launches on demand when spot is short
    spot_on_demand_base: int = 0
    spot_fallback: Literal["onDemand", "none"] = "none"
    serve: ServeSpec | None = None  # None: no load-balanced endpoint
    scaling: ScalingSpec | None = None  # None: nothing moves the group between minNodes and maxNodes
    # provider | auto | an existing key's id; algorithm sm4 only with auto and a KMS instance on Alibaba
    encryption_key: str = "provider"
    encryption_algorithm: Literal["aes256", "sm4"] = "aes256"
    encryption_kms_instance: str | None = None  # Alibaba: the KMS instance key auto is created in
    compliance: Literal["none", "cis", "mlps3"] = "none"
    scheduler: Literal["none", "kubernetes", "slurm"] = "none"
    kubernetes: KubernetesSpec | None = None  # scheduler kubernetes, version and system type resolved
    slurm: SlurmConfig | None = None  # scheduler slurm, headInstanceType resolved
    # slurm.partitions resolved (their catalog rows, one default): elastic partitions; empty: the cluster's nodes
    partitions: tuple[PartitionSpec, ...] = ()
    # the cluster config holds secure values: values taken from it stay secret in state and plans
    secret_config: bool = False
    update: UpdateSpec = field(default_factory=default_update)  # how the managed group's nodes are replaced
    budget: BudgetSpec | None = None  # the cloud's monthly budget of the cluster's resources (None: none)
    azure: AzureOptions = field(default_factory=AzureOptions)
    gcp: GcpOptions = field(default_factory=GcpOptions)
    alicloud: AlicloudOptions = field(default_factory=AlicloudOptions)

    @property
    def gpus_per_node(self) -> int:
        return self.instance.gpus

    @property
    def total_gpus(self) -> int:
        """GPUs running at `nodes` (elastic partitions: at their minNodes)."""
        if self.partitions:
            return sum(p.instance.gpus * p.min_nodes for p in self.partitions)
        return self.instance.gpus * self.nodes

    @property
    def hourly_usd(self) -> float | None:
        if self.partitions:
            return _partitions_usd(self.partitions, lambda p: p.min_nodes)
        price = self.instance.hourlyUsd
        return None if price is None else round(price * self.nodes, 2)

    @property
    def max_hourly_usd_at_scale(self) -> float | None:
        """What the cluster can cost once scaled to maxNodes: the figure a cost ceiling is about."""
        if self.partitions:
            return _partitions_usd(self.partitions, lambda p: p.max_nodes)
        price = self.instance.hourlyUsd
        return None if price is None else round(price * self.max_nodes, 2)

    @property
    def uses_spot(self) -> bool:
        """Any GPU node on spot: the cluster's, or an elastic partition's."""
        return self.spot or any(p.spot for p in self.partitions)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(str(f) for f in self.findings if f.level == "warning")

    @property
    def base_tags(self) -> dict[str, str]:
        """User tags plus the ones the toolkit owns (they win: policies rely on them).

        `environment` (the required-tags policy wants it) defaults to the stack name unless a user tag
        already spells it, in any case or punctuation (`Environment`, `ENVIRONMENT`): one key per cloud label.
        """
        return base_tags_of(self.tags, self.name, self.stack)


def _partitions_usd(partitions: tuple[PartitionSpec, ...], count: Callable[[PartitionSpec], int]) -> float | None:
    """The GPU nodes' on-demand price at `count` nodes per partition; None when a partition has no USD price."""
    total = 0.0
    for part in partitions:
        if part.instance.hourlyUsd is None:
            return None
        total += part.instance.hourlyUsd * count(part)
    return round(total, 2)


def base_tags_of(tags: Mapping[str, str], name: str, stack: str) -> dict[str, str]:
    """`ClusterSpec.base_tags` from its parts (the spec's `_tags` rule counts them before there is a spec)."""
    spelled = {re.sub(r"[^a-z0-9]", "", key.lower()) for key in tags}
    default = {} if "environment" in spelled else {"environment": stack}
    return {**tags, **default, "gpu-cluster:cluster": name, "gpu-cluster:stack": stack}
