"""`GpuClusterArgs`: the typed arguments of `GpuCluster`, one field per stack config key.

Both ways in go through the same validation: a Python program builds a `GpuClusterArgs`; the stack
program (`__main__.py`) reads the engine's config into one with `GpuClusterArgs.from_config`. Either
way `to_spec` writes it back as flat config and validates it with `spec.build_spec`, so a value is
refused with the same rule and the same message whatever the way in; only the key naming differs
(`args.max_nodes` from Python, `gpu-cluster:cluster.maxNodes` from a stack file).

Nested blocks (`storage`, `network`, `login`, ...) are mappings with the stack file's camelCase keys
(`{"cidr": "10.42.0.0/16", "sshCidrs": [...]}`): the same keys, documented once in the README.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from . import catalog
from .errors import CLUSTER_KEY, ConfigError, ConfigErrors
from .spec import PROJECT, ClusterSpec, build_spec

CLOUD_KEY = f"{PROJECT}:cloud"
MAX_HOURLY_KEY = f"{PROJECT}:maxHourlyUsd"


@dataclass(frozen=True)
class GpuClusterArgs:
    """The inputs of one `GpuCluster`. Unset fields (None) take the defaults a stack file gets."""

    cloud: str
    """The cloud to build on (`gpu-cluster:cloud`): one of `catalog.CLOUDS`."""
    region: str | None = None
    """The region (`aws:region`, `azure-native:location`, `gcp:region`, `alicloud:region`, ...)."""
    project: str | None = None
    """GCP only: the project to build in (`gcp:project`)."""
    max_hourly_usd: float | None = None
    """A cost ceiling in USD per hour at maxNodes (`gpu-cluster:maxHourlyUsd`); the policy pack enforces it."""
    name: str | None = None
    """Cluster name ([a-z][a-z0-9-]{0,30}); default: the resource name."""
    gpu: str | None = None
    """MODEL:COUNT (H100:8), or MODEL:1/N for a vGPU slice of one GPU (L4:1/8); resolved by the catalog."""
    instance_type: str | None = None
    """An instance type the catalog knows (set this or gpu, or both when they agree)."""
    nodes: int | None = None
    """Number of GPU nodes (default 1)."""
    max_nodes: int | None = None
    """Upper bound for a managed group (default: nodes)."""
    min_nodes: int | None = None
    """Lower bound of a managed group (default: nodes; 0 scales to zero where the cloud's group can)."""
    node_group: Literal["managed", "instances"] | None = None
    """managed (the cloud's scaling group; default) or instances (a fixed list of VMs)."""
    zone: str | None = None
    """The zone of the nodes (default: the cloud's or the first zone selling the type)."""
    spot: bool | Mapping[str, Any] | None = None
    """Spot / preemptible nodes: true, false, or {enabled, onDemandBase, fallback: onDemand|none}."""
    scaling: Mapping[str, Any] | None = None
    """What moves a managed group between minNodes and maxNodes: {metric: gpuUtilization|queueDepth|schedule|none,
    target, queue, schedule: [{cron, nodes}], timeZone, scaleInCooldownSeconds}."""
    serve: Mapping[str, Any] | None = None
    """A load-balanced endpoint in front of the managed group: {port, protocol: http|tcp, healthPath, public,
    certificate, allowedCidrs, idleTimeoutSeconds}."""
    reservation: str | None = None
    """A capacity reservation id in the cloud's form."""
    reservation_type: Literal["odcr", "capacity-block"] | None = None
    """AWS: odcr (default) or capacity-block."""
    fabric: Literal["auto", "required", "none"] | None = None
    """The HPC fabric (EFA, InfiniBand, GPUDirect, eRDMA): auto, required or none."""
    placement: Literal["auto", "cluster", "spread", "none"] | None = None
    """Placement of the nodes: auto, cluster, spread or none."""
    storage: Mapping[str, Any] | None = None
    """{rootGb, scratch: auto|nvme|disk|none, scratchGb, scratchPath, retainScratch}."""
    network: Mapping[str, Any] | None = None
    """{cidr, publicIp, sshCidrs, egress: nat|none, existing: {vpcId, subnetIds, securityGroupIds}}."""
    image: str | None = None
    """auto (the cloud's GPU image) or an image in the cloud's form."""
    admin_user: str | None = None
    """The Linux admin user (default ubuntu)."""
    ssh_public_key: str | None = None
    """An OpenSSH public key for the admin user."""
    tags: Mapping[str, str] | None = None
    """Tags (labels on GCP) on every resource."""
    access: Literal["auto", "ssm", "iap", "bastion", "session-manager", "ssh", "none"] | None = None
    """How people reach the nodes (auto: the cloud's default)."""
    login: Mapping[str, Any] | None = None
    """A login VM: {instanceType, publicIp}."""
    identity: Mapping[str, Any] | None = None
    """The nodes' identity: {policies, existing, readStorage}."""
    health: Mapping[str, Any] | None = None
    """The boot-time health check: {enabled, action: auto|replace|report}."""
    monitoring: Mapping[str, Any] | None = None
    """{dcgmExporter, prometheus: auto|selfHosted|none, retentionDays, alerts: {gpuIdlePercent, gpuIdleMinutes,
    gpuMemoryPercent, gpuTemperatureCelsius, diskFullPercent, nodeMissingMinutes}}."""
    gpu_partition: str | None = None
    """A MIG profile, for example 1g.10gb."""
    scheduler: Literal["none", "kubernetes", "slurm"] | None = None
    """What schedules work on the GPU nodes: none (default), kubernetes or slurm."""
    kubernetes: Mapping[str, Any] | None = None
    """scheduler kubernetes: {version, publicEndpoint, publicCidrs, gpuSoftware: operator|device-plugin,
    systemInstanceType, systemNodes, serviceMonitor}."""
    slurm: Mapping[str, Any] | None = None
    """scheduler slurm: {headInstanceType, accounting, partition}."""
    encryption: Mapping[str, Any] | None = None
    """The key of every disk and filesystem: {key: provider|auto|<key id>, algorithm: aes256|sm4, kmsInstance}."""
    update: Mapping[str, Any] | None = None
    """How a managed group's nodes are replaced: {strategy: rolling|manual, minHealthyPercent, maxSurge,
    drainTimeoutSeconds}."""
    compliance: Literal["none", "cis", "mlps3"] | None = None
    """A named set of policy rules and levels (components/policy/profiles.yaml): none (default), cis or mlps3."""
    budget: Mapping[str, Any] | None = None
    """The cloud's monthly budget of the cluster's resources: {monthly, currency: auto|USD|CNY, thresholds, forecast,
    notify, billingAccount (GCP)}."""
    aws: Mapping[str, Any] | None = None
    """AWS options."""
    azure: Mapping[str, Any] | None = None
    """Azure options: {resourceGroup, encryptionAtHost}."""
    gcp: Mapping[str, Any] | None = None
    """GCP options: {iap, flexStart, placementMaxDistance}."""
    alicloud: Mapping[str, Any] | None = None
    """Alibaba Cloud options: {scratchPerformanceLevel}."""
    tencentcloud: Mapping[str, Any] | None = None
    """Tencent Cloud options."""
    huaweicloud: Mapping[str, Any] | None = None
    """Huawei Cloud options."""
    secret: bool = False
    """The settings hold secrets: values taken from them stay secret in state (a `secure:` stack config)."""
    extra_config: Mapping[str, Any] = field(default_factory=dict)
    """Further config as a stack file writes it (`namespace:key`); the stack program keeps the rest of its
    config here, so what the typed fields do not cover is still validated (unknown keys are refused)."""

    @classmethod
    def from_config(cls, values: Mapping[str, Any], secret_keys: Collection[str] = ()) -> GpuClusterArgs:
        """The engine's flat config as args, losslessly: `to_config` gives back what `build_spec` reads."""
        rest = dict(values)
        cloud = rest.pop(CLOUD_KEY, None)
        typed: dict[str, Any] = {"cloud": cloud}
        if cloud in catalog.CLOUDS:
            region_rule = catalog.load(cloud).rules["region"]
            for name, key in (("region", region_rule["key"]), ("project", region_rule.get("project"))):
                if key is not None and isinstance(rest.get(key), str):
                    typed[name] = rest.pop(key)
        if isinstance(rest.get(MAX_HOURLY_KEY), int | float) and not isinstance(rest[MAX_HOURLY_KEY], bool):
            typed["max_hourly_usd"] = rest.pop(MAX_HOURLY_KEY)
        raw = rest.get(CLUSTER_KEY)
        if isinstance(raw, str):
            with contextlib.suppress(json.JSONDecodeError):  # else left as text: the validation refuses it
                raw = json.loads(raw)
        if isinstance(raw, Mapping):
            leftover: dict[str, Any] = {}
            for key, value in raw.items():
                field_name = _FIELD_OF_KEY.get(key)
                if field_name is None or value is None:  # unknown, or null as written: validated as given
                    leftover[key] = value
                else:
                    typed[field_name] = value
            if leftover:
                rest[CLUSTER_KEY] = leftover
            else:
                rest.pop(CLUSTER_KEY)
        typed["secret"] = CLUSTER_KEY in secret_keys
        return cls(**typed, extra_config=rest)

    def to_config(self) -> tuple[dict[str, Any], set[str]]:
        """Flat stack config (`namespace:key` values) and its secret keys, as `build_spec` reads them."""
        values: dict[str, Any] = dict(self.extra_config)
        cluster: dict[str, Any] = {}
        extra_cluster = values.pop(CLUSTER_KEY, None)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _CLUSTER_FIELDS and value is not None:
                cluster[_camel(f.name)] = dict(value) if isinstance(value, Mapping) else value
        if isinstance(extra_cluster, Mapping):
            cluster.update(extra_cluster)
            values[CLUSTER_KEY] = cluster
        elif extra_cluster is not None and not cluster:
            values[CLUSTER_KEY] = extra_cluster  # not a mapping: refused by the validation
        elif cluster or extra_cluster is not None:
            values[CLUSTER_KEY] = cluster
        values[CLOUD_KEY] = self.cloud
        if self.cloud in catalog.CLOUDS:
            region_rule = catalog.load(self.cloud).rules["region"]
            if self.region is not None:
                values[region_rule["key"]] = self.region
            if self.project is not None and region_rule.get("project"):
                values[region_rule["project"]] = self.project
        if self.max_hourly_usd is not None:
            values[MAX_HOURLY_KEY] = self.max_hourly_usd
        return values, ({CLUSTER_KEY} if self.secret else set())

    def to_spec(self, stack: str, project: str = PROJECT, *, python_names: bool = False) -> ClusterSpec:
        """Validate (the one path: `build_spec`). `python_names`: errors name the args' fields, not config keys."""
        values, secret_keys = self.to_config()
        try:
            return build_spec(values, stack, project, secret_keys)
        except ConfigError as exc:
            if not python_names:
                raise
            raise GpuClusterArgsError(exc, self) from None


class GpuClusterArgsError(ConfigErrors):
    """Invalid `GpuClusterArgs`: one message, a line per problem, each naming the field (`args.max_nodes`)."""

    def __init__(self, error: ConfigError, args: GpuClusterArgs) -> None:
        errors = error.errors if isinstance(error, ConfigErrors) else [error]
        super().__init__([ConfigError(python_key(e.key, args.cloud), e.message) for e in errors])
        self.config_keys = [e.key for e in errors]

    def __str__(self) -> str:
        return "invalid GpuClusterArgs: " + "; ".join(str(e) for e in self.errors)


def python_key(key: str, cloud: str) -> str:
    """`gpu-cluster:cluster.maxNodes` -> `args.max_nodes`; `aws:region` -> `args.region`."""
    if key == CLOUD_KEY:
        return "args.cloud"
    if key == MAX_HOURLY_KEY:
        return "args.max_hourly_usd"
    if key == CLUSTER_KEY or key.startswith(CLUSTER_KEY + "."):
        path = key[len(CLUSTER_KEY) + 1 :]
        if not path:
            return "args"
        head, dot, tail = path.partition(".")
        bracket = re.match(r"^([A-Za-z]+)(.*)$", head)
        if bracket and bracket.group(1) in _FIELD_OF_KEY:
            head = _FIELD_OF_KEY[bracket.group(1)] + bracket.group(2)
        return f"args.{head}{dot}{tail}"
    if cloud in catalog.CLOUDS:
        region_rule = catalog.load(cloud).rules["region"]
        if key == region_rule["key"]:
            return "args.region"
        if key == region_rule.get("project"):
            return "args.project"
    return f"args.extra_config[{key!r}]"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_NOT_CLUSTER = {"cloud", "region", "project", "max_hourly_usd", "secret", "extra_config"}
_CLUSTER_FIELDS = {f.name for f in fields(GpuClusterArgs)} - _NOT_CLUSTER
_FIELD_OF_KEY = {_camel(name): name for name in _CLUSTER_FIELDS}
