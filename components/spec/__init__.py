"""The cloud-neutral cluster spec: stack config in, one validated, resolved `ClusterSpec` out.

`build_spec` is pure (no Pulumi runtime): the CLI validates a stack file with it before planning,
and `__main__.py` calls it with the engine's config, so `pulumi up` and `gpu-cluster plan` reject
the same input with the same message, before any resource is registered. Every error names the
config key path, the value given and what is allowed.
"""

from __future__ import annotations

import base64
import difflib
import ipaddress
import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, get_args

from cronsim import CronSim, CronSimError
from pydantic import ValidationError

from .. import catalog, placeholders
from ..catalog import CLOUDS, Cloud, InstanceType
from ..catalog import capacity as capacity_offers
from ..catalog import kubernetes as kubernetes_offers
from ..catalog import names as derived_names
from ..catalog import paths as mount_paths
from ..catalog import spot as spot_offers
from ..catalog import storage as shared_storage
from ..catalog import tags as tag_rules
from ..catalog.capabilities import Capabilities, capabilities, capability_data
from ..cidr import wide_public
from ..errors import CLUSTER_KEY, ConfigError, ConfigErrors, Finding
from ..existing_network import check as check_existing_network
from ..text import one_line
from .model import (
    NAME_PATTERN,
    AlicloudOptions,
    AzureOptions,
    ClusterConfig,
    GcpOptions,
    IdentityConfig,
    KubernetesConfig,
    LoginConfig,
    NetworkConfig,
    ScheduledSize,
    SlurmConfig,
    StorageConfig,
    _Model,
)

PROJECT = "gpu-cluster"
GPU_PATTERN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9 _.-]*?)\s*(?::\s*(\d+)\s*)?$")
OWN_KEYS = ("cloud", "cluster", "maxHourlyUsd")
SECRET_PLACEHOLDER = placeholders.SECRET
# What the offline plan uses for a `secure:` SSH key it cannot decrypt (never checked further).
SECRET_KEY_STAND_IN = "ssh-ed25519 AAAAsecretplaceholder"


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
class KubernetesSpec:
    """`kubernetes` resolved against catalog/kubernetes/<cloud>.yaml."""

    version: str
    public_endpoint: bool
    public_cidrs: tuple[str, ...]
    gpu_software: Literal["operator", "device-plugin"]
    system_instance_type: str
    system_nodes: int
    service_monitor: bool


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
    # MIG: the profile and how many instances of it fill one GPU
    gpu_partition: tuple[str, int] | None = None
    max_hourly_usd: float | None = None
    min_nodes: int = 0  # the group's floor (minNodes, default nodes)
    # spot: nodes above this many are spot; fallback onDemand launches on demand when spot is short
    spot_on_demand_base: int = 0
    spot_fallback: Literal["onDemand", "none"] = "none"
    scaling: ScalingSpec | None = None  # None: nothing moves the group between minNodes and maxNodes
    # provider | auto | an existing key's id; algorithm sm4 only with auto on Alibaba
    encryption_key: str = "provider"
    encryption_algorithm: Literal["aes256", "sm4"] = "aes256"
    compliance: Literal["none", "cis", "mlps3"] = "none"
    scheduler: Literal["none", "kubernetes", "slurm"] = "none"
    kubernetes: KubernetesSpec | None = None  # scheduler kubernetes, version and system type resolved
    slurm: SlurmConfig | None = None  # scheduler slurm, headInstanceType resolved
    # the cluster config holds secure values: values taken from it stay secret in state and plans
    secret_config: bool = False
    azure: AzureOptions = field(default_factory=AzureOptions)
    gcp: GcpOptions = field(default_factory=GcpOptions)
    alicloud: AlicloudOptions = field(default_factory=AlicloudOptions)

    @property
    def gpus_per_node(self) -> int:
        return self.instance.gpus

    @property
    def total_gpus(self) -> int:
        return self.instance.gpus * self.nodes

    @property
    def hourly_usd(self) -> float | None:
        price = self.instance.hourlyUsd
        return None if price is None else round(price * self.nodes, 2)

    @property
    def max_hourly_usd_at_scale(self) -> float | None:
        """What the cluster can cost once scaled to maxNodes: the figure a cost ceiling is about."""
        price = self.instance.hourlyUsd
        return None if price is None else round(price * self.max_nodes, 2)

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


def base_tags_of(tags: Mapping[str, str], name: str, stack: str) -> dict[str, str]:
    """`ClusterSpec.base_tags` from its parts (the spec's `_tags` rule counts them before there is a spec)."""
    spelled = {re.sub(r"[^a-z0-9]", "", key.lower()) for key in tags}
    default = {} if "environment" in spelled else {"environment": stack}
    return {**tags, **default, "gpu-cluster:cluster": name, "gpu-cluster:stack": stack}


def cloud_rules() -> dict[str, dict[str, Any]]:
    """Each cloud's `rules:` section of its catalog file (region key, CIDR limits, patterns)."""
    return {cloud: catalog.load(cloud).rules for cloud in CLOUDS}


def parse_gpu(text: str) -> tuple[str, int]:
    """`H100:8` -> ("H100", 8); `a100-80gb` -> ("A100-80GB", 1). Raises ValueError with the reason."""
    match = GPU_PATTERN.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"{text!r} is not MODEL or MODEL:COUNT (for example H100:8)")
    model, count_text = match.group(1), match.group(2)
    canonical = catalog.normalize_gpu(model)
    if canonical is None:
        known = ", ".join(sorted(set(catalog.gpu_aliases().values())))
        raise ValueError(f"unknown GPU model {model!r}; known models: {known}")
    count = int(count_text) if count_text is not None else 1
    if not 1 <= count <= 16:
        raise ValueError(f"GPU count {count} is out of range; allowed: 1 to 16 per node")
    return canonical, count


def _describe(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# What a pattern means, in words, for the fields validated by a regular expression.
PATTERN_HINTS = {
    "name": "must be lowercase letters, digits and '-', start with a letter, at most 31 characters",
    "scratchPath": "must be an absolute path such as /scratch (letters, digits, '.', '_', '-')",
    "path": "must be an absolute path such as /shared (letters, digits, '.', '_', '-')",
    "sshPublicKey": "must be an OpenSSH public key: ssh-ed25519 AAAA..., ssh-rsa AAAA... or ecdsa-sha2-... AAAA...",
    "adminUser": "must be a Linux user name: lowercase letters, digits, '_' and '-', at most 32 characters",
    "resourceGroup": "must be an Azure resource group name: 1-90 letters, digits, '-', '_', '.', '(' or ')'",
    "version": "must be a Kubernetes MAJOR.MINOR version such as '1.33'",
    "partition": "must be a Slurm partition name: lowercase letters, digits, '_' and '-', starting with a letter",
}


def _pydantic_message(err: Mapping[str, Any]) -> tuple[str, str]:
    path = ".".join(str(p) for p in err["loc"])
    key = f"{CLUSTER_KEY}.{path}" if path else CLUSTER_KEY
    kind, value = err["type"], err.get("input")
    if kind == "extra_forbidden":
        parent: type[_Model] = ClusterConfig
        for part in err["loc"][:-1]:
            field = next((f for f in parent.model_fields.values() if f.alias == part), None)
            # `X | None` (storage.shared, login): the model inside the optional
            annotation = None if field is None else field.annotation
            if annotation is not None and not isinstance(annotation, type):
                annotation = next((a for a in get_args(annotation) if isinstance(a, type)), None)
            if field is None or not isinstance(annotation, type) or not issubclass(annotation, _Model):
                break
            parent = annotation
        names = [f.alias or n for n, f in parent.model_fields.items()]
        near = difflib.get_close_matches(str(err["loc"][-1]), names, n=1, cutoff=0.7)
        hint = f"did you mean {near[0]}? " if near else ""
        return key, f"unknown key; {hint}allowed keys here: {', '.join(names)}"
    message = str(err["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        message = message.replace("Input should be", "allowed:")
    if kind == "string_pattern_mismatch" and err["loc"][-1] in PATTERN_HINTS:
        message = PATTERN_HINTS[err["loc"][-1]]
    if kind == "string_type" and err["loc"][-1] == "version" and isinstance(value, int | float):
        # YAML reads 1.30 as the number 1.3: the version must be quoted
        message = "must be text: quote it, as in version: '1.30' (YAML reads an unquoted 1.30 as the number 1.3)"
    if kind in ("tuple_type", "list_type"):
        message = "must be a list (YAML `[a, b]` or one `- item` per line)"
    return key, f"got {_describe(value)}; {message}"


def _check_cidr_rules(cloud: Cloud, network: NetworkConfig, rules: Mapping[str, Any]) -> None:
    key = f"{CLUSTER_KEY}.network.cidr"
    net = ipaddress.IPv4Network(network.cidr)
    low, high = rules["cidrPrefix"]
    if not low <= net.prefixlen <= high:
        raise ConfigError(key, f"got {network.cidr}; {cloud} needs a prefix between /{low} and /{high}")
    for reserved in rules["reservedCidrs"]:
        if net.overlaps(ipaddress.IPv4Network(reserved["cidr"])):
            raise ConfigError(
                key, f"{network.cidr} overlaps {reserved['cidr']}, reserved by {reserved['why']}; pick another range"
            )


def _trains_across_nodes(cfg: ClusterConfig) -> bool:
    """Whether the nodes run one job together, so NCCL needs a fabric between them: more than one node (maxNodes
    counts), unless fabric is none (the ordinary network is accepted) or a scaling fleet (independent replicas; the
    placement rule reads a fleet so too)."""
    max_nodes = cfg.max_nodes if cfg.max_nodes is not None else cfg.nodes
    fleet = cfg.scaling is not None and cfg.scaling.metric != "none"
    return max_nodes > 1 and cfg.fabric != "none" and not fleet


def _fabric_check(cfg: ClusterConfig) -> catalog.FabricCheck | None:
    """What a multi-node cluster's type must pass: a fabric NCCL can use on `image: auto` (the catalog vouches for the
    image), or on a custom image a fabric at all (the image may bring the software; the plan says what it cannot
    vouch for); None when the nodes do not train together."""
    if not _trains_across_nodes(cfg):
        return None
    return catalog.fabric_usable if cfg.image == "auto" else catalog.fabric_present


def _resolve_type(cloud: Cloud, cfg: ClusterConfig, region: str | None = None) -> catalog.Resolution:
    """The type for the config; with a region, one the availability data does not rule out there. Multi-node
    (`_trains_across_nodes`), `gpu: MODEL:COUNT` prefers a type whose fabric NCCL can use; the resolution carries
    `fabric_problem` when the type has none (`_instance_type` refuses it for `gpu:`, warns for a configured type)."""
    wanted: tuple[str, int] | None = None
    check = _fabric_check(cfg)
    if cfg.gpu is not None:
        try:
            wanted = parse_gpu(cfg.gpu)
        except ValueError as exc:
            raise ConfigError(f"{CLUSTER_KEY}.gpu", str(exc)) from None
    if cfg.instance_type is not None:
        rows = catalog.find(cloud, cfg.instance_type)
        if not rows:
            raise ConfigError(
                f"{CLUSTER_KEY}.instanceType",
                f"{cfg.instance_type!r} is not a GPU type gpu-cluster knows on {cloud}; "
                f"see `gpu-cluster catalog --cloud {cloud}`",
            )
        if wanted is not None:
            rows = [r for r in rows if (r.gpu, r.gpus) == wanted]
            if not rows:
                have = ", ".join(f"{r.gpu}:{r.gpus}" for r in catalog.find(cloud, cfg.instance_type))
                raise ConfigError(
                    f"{CLUSTER_KEY}.gpu",
                    f"gpu {cfg.gpu} disagrees with instanceType {cfg.instance_type}, which has {have}",
                )
        if len(rows) > 1:
            options = ", ".join(f"{r.gpu}:{r.gpus}" for r in rows)
            raise ConfigError(
                f"{CLUSTER_KEY}.gpu", f"{cfg.instance_type} takes several GPU configurations ({options}); set gpu"
            )
        gpu = rows[0].gpu  # n1's availability is per GPU
        unsold = None if region is None else catalog.availability.why_not(cloud, cfg.instance_type, region, gpu=gpu)
        if unsold:
            raise ConfigError(f"{CLUSTER_KEY}.instanceType", unsold)
        ok, why = check(rows[0]) if check is not None else (True, "")
        problem = None if ok else f"{cfg.instance_type} has no fabric NCCL can use between nodes ({why})"
        return catalog.Resolution(rows[0], f"instanceType {cfg.instance_type} as configured", problem)
    if wanted is None:
        raise ConfigError(CLUSTER_KEY, "set gpu (MODEL:COUNT, for example H100:8) or instanceType")
    try:
        return catalog.resolve(cloud, *wanted, region=region, fabric=check)
    except catalog.CatalogError as exc:
        raise ConfigError(f"{CLUSTER_KEY}.gpu", str(exc)) from None


def _region(cloud: Cloud, values: Mapping[str, Any], rules: Mapping[str, Any]) -> tuple[str, str | None]:
    region_rule = rules["region"]
    project = None
    if "project" in region_rule:
        project = values.get(region_rule["project"])
        if not isinstance(project, str) or not project:
            raise ConfigError(region_rule["project"], f"required when gpu-cluster:cloud is {cloud}")
    region = values.get(region_rule["key"])
    example = region_rule["example"]
    if not isinstance(region, str) or not re.fullmatch(r"[a-z0-9-]+", region or ""):
        raise ConfigError(
            region_rule["key"],
            f"got {_describe(region)}; required when gpu-cluster:cloud is {cloud} (a region such as {example})",
        )
    known = rules.get("regions")
    if known and region not in known:
        near = difflib.get_close_matches(region, known, n=3)
        hint = f"did you mean {', '.join(near)}?" if near else f"for example {example}"
        raise ConfigError(region_rule["key"], f"got {region!r}; {cloud} has no such region ({hint})")
    return region, project


def _check_foreign_keys(cloud: Cloud, values: Mapping[str, Any]) -> None:
    rules = cloud_rules()
    for key in sorted(values):
        namespace, _, name = key.partition(":")
        if namespace == PROJECT and name not in OWN_KEYS:
            raise ConfigError(key, f"unknown key; allowed: {', '.join(f'{PROJECT}:{k}' for k in OWN_KEYS)}")
        for other in CLOUDS:
            if other != cloud and namespace in rules[other]["providerNamespaces"]:
                raise ConfigError(
                    key, f"is a {other} setting but gpu-cluster:cloud is {cloud}; remove it or change the cloud"
                )


def rsa_bits(public_key: str) -> int | None:
    """The modulus size of an `ssh-rsa` public key (RFC 4253 wire format), None when it does not parse."""
    try:
        blob = base64.b64decode(public_key.split()[1], validate=True)
        fields: list[bytes] = []
        pos = 0
        for _ in range(3):  # string "ssh-rsa", mpint e, mpint n
            size = int.from_bytes(blob[pos : pos + 4], "big")
            fields.append(blob[pos + 4 : pos + 4 + size])
            pos += 4 + size
    except (ValueError, IndexError):
        return None
    if fields[0] != b"ssh-rsa" or not fields[2]:
        return None
    return int.from_bytes(fields[2], "big").bit_length()


def _check_login_user(cloud: Cloud, cfg: ClusterConfig, caps: Capabilities) -> None:
    """The key types and admin names the cloud accepts (data: catalog/capabilities/<cloud>.yaml)."""
    k = f"{CLUSTER_KEY}."
    key = cfg.ssh_public_key
    if key is not None and key != SECRET_KEY_STAND_IN:
        kind = key.split()[0]
        if kind not in caps.ssh_key_types:
            raise ConfigError(
                f"{k}sshPublicKey",
                f"a {kind} key, but {cloud} accepts only {', '.join(caps.ssh_key_types)} ({caps.ssh_keys_source})",
            )
        bits = rsa_bits(key) if kind == "ssh-rsa" else None
        if kind == "ssh-rsa" and (bits is None or (caps.rsa_min_bits and bits < caps.rsa_min_bits)):
            size = "an unreadable" if bits is None else f"a {bits}-bit"
            raise ConfigError(
                f"{k}sshPublicKey",
                f"{size} RSA key; {cloud} needs at least {caps.rsa_min_bits or 1024} bits ({caps.ssh_keys_source})",
            )
    if cfg.admin_user.lower() in caps.forbidden_admin_users:
        raise ConfigError(
            f"{k}adminUser",
            f"{cfg.admin_user!r} is an admin name {cloud} refuses; pick another ({caps.admin_users_source})",
        )


def _check_access(cloud: Cloud, cfg: ClusterConfig, findings: list[Finding]) -> tuple[str, LoginConfig | None]:
    """`access`, `identity` and `login` against what the cloud offers (its capabilities data)."""
    k = f"{CLUSTER_KEY}."
    caps = capabilities(cloud)
    access = caps.resolve_access(cfg.access)
    if access not in caps.access_methods:
        offered = ", ".join([f"auto ({caps.access_default})", *caps.access_methods])
        raise ConfigError(f"{k}access", f"got {cfg.access!r}; {cloud} offers: {offered}")
    ident = caps.identity
    for i, policy in enumerate(cfg.identity.policies):
        if not ident.policy_ok(policy):
            raise ConfigError(f"{k}identity.policies[{i}]", f"got {_describe(policy)}; expected {ident.policy_hint}")
    if cfg.identity.existing is not None and not ident.existing_ok(cfg.identity.existing):
        raise ConfigError(
            f"{k}identity.existing", f"got {_describe(cfg.identity.existing)}; expected {ident.existing_hint}"
        )
    login = None
    if cfg.login is not None:
        login_type = cfg.login.instance_type or caps.login_default_type
        if catalog.find(cloud, login_type):
            raise ConfigError(
                f"{k}login.instanceType",
                f"{login_type} is a GPU type; a login node is a small CPU VM such as {caps.login_default_type}",
            )
        login = cfg.login.model_copy(update={"instance_type": login_type})
    net = cfg.network
    reachable_from_outside = net.public_ip or (login is not None and login.public_ip)
    if access == "ssh":
        if not net.ssh_cidrs:
            findings.append(
                Finding("warning", f"{k}access", "ssh, but network.sshCidrs is empty: no address may reach port 22")
            )
        elif not reachable_from_outside:
            findings.append(
                Finding(
                    "warning",
                    f"{k}access",
                    "ssh from network.sshCidrs, but neither the nodes nor a login node have a public IP: "
                    "no working login path (use access: auto, or login: {publicIp: true})",
                )
            )
        if cfg.ssh_public_key is None and cloud != "gcp":  # GCP: OS Login keys live in the user's profile
            findings.append(Finding("warning", f"{k}sshPublicKey", "not set, but access is ssh: nobody can log in"))
    elif access == "none" and login is None:
        findings.append(Finding("info", f"{k}access", "none: the plan builds no way to log in to the nodes"))
    if login is not None and login.public_ip and not net.ssh_cidrs:
        findings.append(
            Finding("warning", f"{k}login.publicIp", "true, but network.sshCidrs is empty: the login node is closed")
        )
    return access, login


def _max_hourly(raw: Any) -> float | None:
    """`gpu-cluster:maxHourlyUsd`: a positive number (the engine passes it as text)."""
    key = f"{PROJECT}:maxHourlyUsd"
    if raw is None or raw == "":
        return None
    value = raw
    if isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(key, f"got {raw!r}; a number of USD per hour") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(key, f"got {_describe(raw)}; a positive number of USD per hour")
    if value <= 0:  # shown as a number: the engine passes text, the stack file a number
        raise ConfigError(key, f"got {value:g}; a positive number of USD per hour")
    return float(value)


def build_spec(
    values: Mapping[str, Any], stack: str, project: str = PROJECT, secret_keys: Collection[str] = ()
) -> ClusterSpec:
    """Validate flat stack config (`{"gpu-cluster:cloud": "aws", "aws:region": ...}`) into a spec.

    `gpu-cluster:cluster` may be a mapping or its JSON text (the engine passes objects as JSON).
    `secret_keys` are the config keys holding `secure:` values.
    """
    cloud = values.get(f"{PROJECT}:cloud")
    if cloud not in CLOUDS:
        raise ConfigError(f"{PROJECT}:cloud", f"got {_describe(cloud)}; allowed: {', '.join(CLOUDS)}")
    rules = cloud_rules()[cloud]
    _check_foreign_keys(cloud, values)
    region, gcp_project = _region(cloud, values, rules)

    raw = values.get(CLUSTER_KEY, {})
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise ConfigError(CLUSTER_KEY, "must be a mapping of cluster settings, got text") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(CLUSTER_KEY, f"must be a mapping of cluster settings, got {_describe(raw)}")
    secret_config = CLUSTER_KEY in secret_keys
    if raw.get("sshPublicKey") == SECRET_PLACEHOLDER:
        # a secure key the offline plan cannot decrypt: plan with a stand-in, shown as secret
        raw = {**raw, "sshPublicKey": SECRET_KEY_STAND_IN}
        secret_config = True
    try:
        cfg = ClusterConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigErrors([ConfigError(*_pydantic_message(err)) for err in exc.errors()]) from None

    max_hourly = _max_hourly(values.get(f"{PROJECT}:maxHourlyUsd"))
    spec = _cross_check(cloud, region, gcp_project, cfg, values, stack, project, rules, max_hourly)
    return replace(spec, secret_config=secret_config) if secret_config else spec


@dataclass
class _Context:
    """What the cross-field rules read; `row` is None when the type could not be resolved."""

    cloud: Cloud
    region: str
    cfg: ClusterConfig
    values: Mapping[str, Any]
    stack: str
    rules: Mapping[str, Any]
    resolution: catalog.Resolution | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def row(self) -> InstanceType | None:
        return None if self.resolution is None else self.resolution.type

    @property
    def max_nodes(self) -> int:
        return self.cfg.max_nodes if self.cfg.max_nodes is not None else self.cfg.nodes

    @property
    def fabric_wired(self) -> bool:
        return self.row is not None and self.row.has_fabric and self.cfg.fabric != "none"

    def warn(self, key: str, message: str, level: Literal["warning", "info"] = "warning") -> None:
        self.findings.append(Finding(level, f"{CLUSTER_KEY}.{key}", message))


Check = Callable[[_Context], Iterator[ConfigError]]


def _name(ctx: _Context) -> Iterator[ConfigError]:
    if ctx.cfg.name is None and not re.fullmatch(NAME_PATTERN, ctx.stack):
        yield ConfigError(
            f"{CLUSTER_KEY}.name",
            f"not set, and the stack name {ctx.stack!r} is not a valid cluster name ([a-z][a-z0-9-]{{0,30}}); set name",
        )


def _zone(ctx: _Context) -> Iterator[ConfigError]:
    zone = _zone_of(ctx)
    pattern = ctx.rules["zonePattern"].format(region=re.escape(ctx.region))
    if zone is not None and not re.fullmatch(pattern, str(zone)):
        yield ConfigError(f"{CLUSTER_KEY}.zone", f"got {zone!r}; it must be a zone of {ctx.region} on {ctx.cloud}")


def _zone_of(ctx: _Context) -> str | None:
    """The configured zone; else, once the type is resolved, the first zone of the region that sells it,
    where the availability data lists the cloud's zones (GCP); else None (the cloud's own default)."""
    zone_key = ctx.rules["zoneKey"]
    zone = ctx.cfg.zone or (ctx.values.get(zone_key) if zone_key else None)
    if zone is None and ctx.row is not None:
        selling = catalog.availability.zones_selling(ctx.cloud, ctx.row.instanceType, ctx.region, gpu=ctx.row.gpu)
        return selling[0] if selling else None
    return None if zone is None else str(zone)


def _other_cloud_blocks(ctx: _Context) -> Iterator[ConfigError]:
    for other in CLOUDS:
        if other != ctx.cloud and getattr(ctx.cfg, other) is not None:
            yield ConfigError(
                f"{CLUSTER_KEY}.{other}", f"options for {other}, but gpu-cluster:cloud is {ctx.cloud}; remove the block"
            )


def _instance_type(ctx: _Context) -> Iterator[ConfigError]:
    try:
        ctx.resolution = _resolve_type(ctx.cloud, ctx.cfg, ctx.region)
    except ConfigError as exc:
        yield exc
        return
    problem = ctx.resolution.fabric_problem
    if problem and ctx.cfg.instance_type is None:
        # resolved from gpu: nothing of that count has a fabric NCCL can use, and the user has not said that is fine
        picked = ctx.resolution.type
        # a wired fabric the catalog cannot vouch for may still be wanted: naming the type takes it, with a warning
        as_is = (
            f"set instanceType: {picked.instanceType} to take its {picked.fabric} as it is, "
            if picked.has_fabric
            else ""
        )
        yield ConfigError(
            f"{CLUSTER_KEY}.gpu",
            f"{ctx.cfg.gpu} for {ctx.max_nodes} nodes that train together: {problem}; or {as_is}set fabric: none to "
            "accept nodes that talk over the ordinary network",
        )
    elif problem:  # a configured type: the user chose it, so a warning, said loudly
        ctx.warn(
            "instanceType",
            f"{problem}; {ctx.max_nodes} nodes that train together would talk over the ordinary network; set "
            "fabric: none if that is intended",
        )
    zone_key = ctx.rules["zoneKey"]
    configured = ctx.cfg.zone or (ctx.values.get(zone_key) if zone_key else None)
    row, where = ctx.row, f"catalog/availability/{ctx.cloud}.yaml"
    if row is None:
        return
    what = catalog.availability.label(ctx.cloud, row.instanceType, gpu=row.gpu)  # `n1-standard-96 with T4`
    offer = catalog.availability.offer(ctx.cloud, row.instanceType, gpu=row.gpu)
    if offer is not None and catalog.availability.sold_in(ctx.cloud, row.instanceType, ctx.region, gpu=row.gpu) is None:
        ctx.warn(
            "instanceType",
            f"{what} in {ctx.region}: unknown, {where} does not cover {ctx.region}; it lists "
            f"{what} in {', '.join(catalog.availability.nearest_first(ctx.region, offer.regions))}",
        )
    if configured is not None:
        # A configured zone the data does not list is warned, not refused: per-zone offers change more often
        # than per-region ones, and the source is a snapshot (its date is in the message).
        unsold = catalog.availability.why_not(ctx.cloud, row.instanceType, ctx.region, str(configured), gpu=row.gpu)
        if unsold:
            ctx.warn("zone", f"{unsold}; the deploy fails there unless the zone sells it by then")
    elif (defaulted := _zone_of(ctx)) is not None:
        ctx.warn(
            "zone",
            f"not set; {defaulted}, the first zone of {ctx.region} that sells {what} "
            f"({where}, read {catalog.availability.load(ctx.cloud).date}); set zone to choose",
            "info",
        )


def _node_counts(ctx: _Context) -> Iterator[ConfigError]:
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    if cfg.nodes > ctx.max_nodes:
        yield ConfigError(f"{k}nodes", f"{cfg.nodes} is more than maxNodes {ctx.max_nodes}")
    if cfg.node_group == "instances" and cfg.nodes == 0:
        yield ConfigError(
            f"{k}nodes", "0 with nodeGroup: instances creates nothing; use 1 or more, or nodeGroup: managed"
        )
    if cfg.node_group == "instances" and cfg.max_nodes is not None and cfg.max_nodes != cfg.nodes:
        yield ConfigError(f"{k}maxNodes", "only applies to nodeGroup: managed (instances are a fixed count)")


def _node_group(ctx: _Context) -> Iterator[ConfigError]:
    caps = capabilities(ctx.cloud)
    if ctx.cfg.node_group not in caps.node_groups:
        yield ConfigError(
            f"{CLUSTER_KEY}.nodeGroup",
            f"{ctx.cfg.node_group} is not built on {ctx.cloud} ({caps.node_groups_why}); "
            f"allowed: {', '.join(caps.node_groups)}",
        )


# What a managed-group limit of the cloud (capabilities `managedGroupLimits`) takes from a wired fabric, read on the
# resolved type: `fabric` the whole wired fabric (Alibaba ESS: no ERI passes both provider and ESS; no card index),
# `placement` the deployment set a multi-node fabric is placed in, `hccCluster` the HCC fabric itself (Tencent).
_FABRIC_LIMITS: dict[str, Callable[[_Context, InstanceType], bool]] = {
    "fabric": lambda ctx, row: True,
    "placement": lambda ctx, row: ctx.max_nodes > 1,
    "hccCluster": lambda ctx, row: True,
}


def _needs_managed(cfg: ClusterConfig) -> str:
    """What in the config only a managed group does ("" when nothing): the keys the spec refuses with instances."""
    spot = cfg.spot
    needs = [
        ("scheduler kubernetes", cfg.scheduler == "kubernetes"),
        ("maxNodes", cfg.max_nodes is not None and cfg.max_nodes != cfg.nodes),
        ("minNodes", cfg.min_nodes is not None and cfg.min_nodes != cfg.nodes),
        ("scaling", cfg.scaling is not None),
        ("spot onDemandBase/fallback", spot.enabled and (spot.on_demand_base > 0 or spot.fallback != "none")),
        ("nodes: 0", cfg.nodes == 0),
    ]
    return ", ".join(what for what, needed in needs if needed)


def _node_group_default(ctx: _Context) -> Iterator[ConfigError]:
    """nodeGroup not set: instances where the cloud's managed group would cut the fabric the type is rated for (its
    `managedGroupLimits`; Alibaba's ESS wires no ERI and takes no deployment set, so an ebmgn8v would get none of its
    160 Gb/s, unplaced). A default must not halve the fabric paid for; a config that needs a managed group
    (`_needs_managed`) keeps it, and the layout says what it loses."""
    cfg, row = ctx.cfg, ctx.row
    if row is None or "node_group" in cfg.model_fields_set or not ctx.fabric_wired or _needs_managed(cfg):
        return
    caps = capabilities(ctx.cloud)
    cut = [lim for lim in caps.managed_group_limits if (cuts := _FABRIC_LIMITS.get(lim.feature)) and cuts(ctx, row)]
    if not cut or "instances" not in caps.node_groups:
        return
    ctx.cfg = cfg.model_copy(update={"node_group": "instances"})
    ctx.warn(
        "nodeGroup",
        f"not set; instances, for all {row.fabricGbps:g} Gb/s of {row.instanceType}'s {row.fabric}: a managed group "
        "would apply less ("
        + "; ".join(f"{lim.feature}: {lim.applied}, {lim.source}" for lim in cut)
        + (")" if "managed" not in caps.node_groups else "); set nodeGroup: managed to take that"),
        "info",
    )
    yield from ()


def _fabric(ctx: _Context) -> Iterator[ConfigError]:
    row = ctx.row
    if row is not None and ctx.cfg.fabric == "required" and not row.has_fabric:
        yield ConfigError(
            f"{CLUSTER_KEY}.fabric",
            f"required, but {row.instanceType} has no HPC fabric; pick a type that has one or use auto",
        )
    if row is not None and row.has_fabric and not ctx.fabric_wired and ctx.max_nodes > 1:
        ctx.warn(
            "fabric",
            f"none: {row.instanceType} has {row.fabricGbps:g} Gb/s of {row.fabric} "
            "that multi-node training will not use",
        )


def _scratch(ctx: _Context) -> Iterator[ConfigError]:
    row = ctx.row
    if row is not None and ctx.cfg.storage.scratch == "nvme" and row.localNvmeCount == 0:
        yield ConfigError(
            f"{CLUSTER_KEY}.storage.scratch",
            f"nvme, but {row.instanceType} has no local NVMe; allowed here: auto, disk, none",
        )


def _shared_storage(ctx: _Context) -> Iterator[ConfigError]:
    shared, k = ctx.cfg.storage.shared, f"{CLUSTER_KEY}.storage.shared"
    if shared is None:
        return
    for key, message in shared_storage.problems(
        ctx.cloud, ctx.region, shared.kind, shared.size_gb, shared.throughput, shared.existing
    ):
        yield ConfigError(f"{k}.{key}", message)
    scratch = ctx.cfg.storage.scratch_path
    if ctx.cfg.storage.scratch != "none" and (
        shared.path == scratch or shared.path.startswith(scratch + "/") or scratch.startswith(shared.path + "/")
    ):
        yield ConfigError(
            f"{k}.path", f"got {shared.path!r}; it clashes with scratchPath {scratch!r}: use another path"
        )


def _capacity(ctx: _Context) -> Iterator[ConfigError]:
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    spot = cfg.spot
    if spot.enabled and cfg.reservation:
        yield ConfigError(f"{k}reservation", "a reservation and spot are exclusive; set one of them")
    if spot.enabled and ctx.row is not None and (why := spot_offers.refusal(ctx.cloud, ctx.row.instanceType)):
        yield ConfigError(f"{k}spot", why)  # the spot data, or the catalog's own word (catalog/spot.py)
    if cfg.reservation and not re.fullmatch(ctx.rules["reservationPattern"], cfg.reservation):
        yield ConfigError(f"{k}reservation", f"got {cfg.reservation!r}; not a reservation id for {ctx.cloud}")
    if cfg.reservation_type == "capacity-block" and (ctx.cloud != "aws" or not cfg.reservation):
        yield ConfigError(f"{k}reservationType", "capacity-block needs cloud aws and a reservation id")
    if spot.enabled and spot.on_demand_base > ctx.max_nodes:
        yield ConfigError(f"{k}spot.onDemandBase", f"{spot.on_demand_base} is more than maxNodes {ctx.max_nodes}")
    if not spot.enabled and (spot.on_demand_base or spot.fallback != "none"):
        yield ConfigError(f"{k}spot", "onDemandBase and fallback apply only with enabled: true")
    if spot.enabled and (spot.on_demand_base or spot.fallback != "none") and cfg.node_group == "instances":
        yield ConfigError(
            f"{k}spot", "onDemandBase and fallback need nodeGroup: managed (a fixed set of instances has no mix)"
        )
    if spot.enabled:
        ctx.warn(
            "spot", "spot nodes can be reclaimed at any time; cost shows the on-demand price as an upper bound", "info"
        )
        eviction = capabilities(ctx.cloud).spot_eviction
        if eviction:
            ctx.warn("spot", eviction)


def _min_nodes(cfg: ClusterConfig) -> int:
    return cfg.nodes if cfg.min_nodes is None else cfg.min_nodes


def _scaling(ctx: _Context) -> Iterator[ConfigError]:
    """`minNodes` and `scaling`: a managed group of the VM modes, bounds that hold, a target, a queue, crons."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    low = _min_nodes(cfg)
    if cfg.min_nodes is not None:
        if cfg.min_nodes > ctx.max_nodes:
            yield ConfigError(f"{k}minNodes", f"{cfg.min_nodes} is more than maxNodes {ctx.max_nodes}")
        elif cfg.min_nodes > cfg.nodes:
            yield ConfigError(f"{k}minNodes", f"{cfg.min_nodes} is more than nodes {cfg.nodes} (the count at deploy)")
        if cfg.node_group == "instances" and cfg.min_nodes != cfg.nodes:
            yield ConfigError(f"{k}minNodes", "only applies to nodeGroup: managed (instances are a fixed count)")
    scaling = cfg.scaling
    if scaling is None:
        return
    if cfg.node_group == "instances":
        yield ConfigError(f"{k}scaling", "needs nodeGroup: managed (a fixed set of instances does not scale)")
        return
    if cfg.scheduler != "none":
        yield ConfigError(
            f"{k}scaling",
            f"not with scheduler {cfg.scheduler}: its own autoscaler sizes the GPU pool (docs/scaling.md); remove it",
        )
        return
    metric = scaling.metric
    needs_target = metric in ("gpuUtilization", "queueDepth")
    if needs_target and scaling.target is None:
        unit = "a percent of GPU utilisation (1-100)" if metric == "gpuUtilization" else "messages per node"
        yield ConfigError(f"{k}scaling.target", f"required with metric {metric}: {unit}")
    if metric == "gpuUtilization" and scaling.target is not None and not 1 <= scaling.target <= 100:
        yield ConfigError(f"{k}scaling.target", f"got {scaling.target:g}; a percent of GPU utilisation, 1 to 100")
    if not needs_target and scaling.target is not None:
        yield ConfigError(f"{k}scaling.target", f"applies to gpuUtilization and queueDepth, not {metric}")
    if metric == "queueDepth" and scaling.queue is None:
        yield ConfigError(
            f"{k}scaling.queue", "required with metric queueDepth: auto (the cluster's own) or a queue id"
        )
    if metric != "queueDepth" and scaling.queue is not None:
        yield ConfigError(f"{k}scaling.queue", f"applies to metric queueDepth, not {metric}")
    if metric == "schedule" and not scaling.schedule:
        yield ConfigError(f"{k}scaling.schedule", "empty, but metric is schedule: list {cron, nodes} entries")
    for i, entry in enumerate(scaling.schedule):
        key = f"{k}scaling.schedule[{i}]"
        fields = entry.cron.split()
        try:
            if len(fields) != 5:
                raise CronSimError("five fields are needed: minute hour day-of-month month day-of-week")
            CronSim(entry.cron, datetime(2026, 1, 1))
        except CronSimError as exc:
            yield ConfigError(f"{key}.cron", f"got {entry.cron!r}; not a cron expression ({exc})")
        if not low <= entry.nodes <= ctx.max_nodes:
            yield ConfigError(f"{key}.nodes", f"{entry.nodes} is outside minNodes {low} to maxNodes {ctx.max_nodes}")
    if metric != "none" and low == ctx.max_nodes:
        ctx.warn("scaling", f"{metric}, but minNodes = maxNodes = {low}: nothing can move; raise maxNodes")
    if metric != "none" and ctx.fabric_wired and ctx.max_nodes > 1:
        ctx.warn(
            "scaling",
            f"{metric} on a fabric-wired multi-node cluster: nodes added later may not land near the others in "
            "the placement group, and a training job loses ranks when a node is removed",
        )


def _image(ctx: _Context) -> Iterator[ConfigError]:
    image, row, k = ctx.cfg.image, ctx.row, f"{CLUSTER_KEY}."
    if image != "auto" and not re.fullmatch(ctx.rules["imagePattern"], image):
        yield ConfigError(f"{k}image", f"got {image!r}; allowed: auto or {ctx.rules['imageHint']}")
    if row is None:
        return
    named = None if image == "auto" else catalog.image_arch(image)
    if named is not None and named != row.arch:
        # the reference names its architecture (an SSM path's x86_64/arm64, a family's amd64/arm64): the cloud refuses
        # to boot it on the other one
        yield ConfigError(
            f"{k}image",
            f"{image} names an {named} image, but {row.instanceType} is {row.arch}; allowed: auto (the {row.arch} "
            f"image) or an image built for {row.arch}",
        )
    yield from _root_floor(ctx, row)


def _root_floor(ctx: _Context, row: InstanceType) -> Iterator[ConfigError]:
    """`storage.rootGb` against the root size of the images `image: auto` boots (catalog `minRootGb`): the clouds refuse
    a root disk smaller than the image's (EC2: the AMI's root snapshot). An unsourced size (null) is not checked."""
    cfg = ctx.cfg
    if cfg.scheduler == "kubernetes":  # the node pools boot catalog/kubernetes images, which carry no size here
        return
    booted: list[tuple[str, dict[str, Any]]] = []
    if cfg.image == "auto":
        booted.append((row.instanceType, catalog.gpu_image(ctx.cloud, row)))
    head = (cfg.slurm or SlurmConfig()).head_instance_type or capabilities(ctx.cloud).login_default_type
    if cfg.scheduler == "slurm" and ctx.cloud != "azure":  # the head's root is rootGb too (Azure: the image's size)
        booted.append((f"the Slurm head ({head})", catalog.cpu_image(ctx.cloud, head)))
    for what, entry in booted:
        floor = catalog.min_root_gb(entry)
        if floor is not None and cfg.storage.root_gb < floor:
            name = next(
                (str(entry[key]) for key in ("ssmParameter", "urn", "family", "nameRegex") if entry.get(key)), ""
            )
            yield ConfigError(
                f"{CLUSTER_KEY}.storage.rootGb",
                f"{cfg.storage.root_gb} GB, but {what} boots {name}, whose root is {floor} GB "
                f"(catalog/{ctx.cloud}.yaml minRootGb), and {ctx.cloud} refuses a smaller root disk; "
                f"allowed: {floor} or more",
            )


def _network(ctx: _Context) -> Iterator[ConfigError]:
    try:
        _check_cidr_rules(ctx.cloud, ctx.cfg.network, ctx.rules)
    except ConfigError as exc:
        yield exc
    net = ctx.cfg.network
    open_ssh = [cidr for cidr in net.ssh_cidrs if wide_public(cidr)]
    if open_ssh:
        ctx.warn("network.sshCidrs", f"{', '.join(open_ssh)} opens SSH to much of the internet")
    if net.egress == "none" and ctx.cfg.image == "auto" and not net.public_ip:
        ctx.warn("network.egress", "none: nodes cannot reach package mirrors or container registries")


def _tags(ctx: _Context) -> Iterator[ConfigError]:
    """`tags` against the cloud's tag rules (catalog/tags.yaml): each tag's key and value, and how many tags a
    resource carries once the toolkit's own are added."""
    cfg = ctx.cfg
    shared = cfg.storage.shared
    carried = base_tags_of(cfg.tags, cfg.name or ctx.stack, ctx.stack)
    storage_account = ctx.cloud == "azure" and shared is not None and shared.kind == "nfs"
    for tag, message in tag_rules.problems(ctx.cloud, cfg.tags, carried, storage_account=storage_account):
        yield ConfigError(f"{CLUSTER_KEY}.tags" + ("" if tag is None else f".{tag}"), message)


def _login_user(ctx: _Context) -> Iterator[ConfigError]:
    try:
        _check_login_user(ctx.cloud, ctx.cfg, capabilities(ctx.cloud))
    except ConfigError as exc:
        yield exc


def _gpu_partition(ctx: _Context) -> Iterator[ConfigError]:
    profile, row = ctx.cfg.gpu_partition, ctx.row
    if profile is None or row is None:
        return
    profiles = catalog.mig_profiles(row)
    key = f"{CLUSTER_KEY}.gpuPartition"
    if profiles is None:
        yield ConfigError(key, f"{row.gpu or row.gpuDescription} GPUs of {row.instanceType} have no MIG partitioning")
    elif profile not in profiles:
        yield ConfigError(key, f"got {profile!r}; {row.gpu} takes {', '.join(profiles)} (NVIDIA MIG User Guide)")


def _scheduler(ctx: _Context) -> Iterator[ConfigError]:
    """`scheduler` and its own block: offered by the cloud (capabilities, catalog/kubernetes), used alone."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    caps = capabilities(ctx.cloud)
    if cfg.scheduler not in caps.schedulers:
        yield ConfigError(
            f"{k}scheduler",
            f"{cfg.scheduler} is not built on {ctx.cloud} ({caps.schedulers_why}); "
            f"allowed: {', '.join(caps.schedulers)}",
        )
        return
    for block in ("kubernetes", "slurm"):
        if getattr(cfg, block) is not None and cfg.scheduler != block:
            yield ConfigError(f"{k}{block}", f"options for scheduler {block}, but scheduler is {cfg.scheduler}")
    if cfg.scheduler == "kubernetes":
        yield from _kubernetes(ctx, cfg.kubernetes or KubernetesConfig())
    elif cfg.scheduler == "slurm":
        yield from _slurm(ctx, cfg.slurm or SlurmConfig())


def _kubernetes(ctx: _Context, kube: KubernetesConfig) -> Iterator[ConfigError]:
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    offer = kubernetes_offers.offer(ctx.cloud)
    if offer is None:  # the capabilities list kubernetes, so the data must exist: a packaging mistake
        yield ConfigError(f"{k}scheduler", f"kubernetes has no catalog/kubernetes/{ctx.cloud}.yaml")
        return
    if cfg.node_group == "instances":
        yield ConfigError(
            f"{k}nodeGroup",
            f"instances, but scheduler kubernetes runs the GPU nodes as a {offer.service} node pool; use managed",
        )
    if kube.version is not None and kube.version not in offer.versions:
        yield ConfigError(
            f"{k}kubernetes.version",
            f"got {kube.version!r}; {offer.service} offers {', '.join(offer.versions)} "
            f"(read {offer.read}: {offer.source})",
        )
    refused = offer.extra.get("publicEndpointRefused")
    if kube.public_endpoint and refused:
        yield ConfigError(f"{k}kubernetes.publicEndpoint", f"true, but {one_line(refused)}")
    if kube.public_endpoint and not kube.public_cidrs:
        yield ConfigError(
            f"{k}kubernetes.publicCidrs",
            "empty, but publicEndpoint is true: list the CIDRs allowed to reach the API server",
        )
    if kube.public_cidrs and not kube.public_endpoint:
        yield ConfigError(f"{k}kubernetes.publicCidrs", "set, but publicEndpoint is false: the API stays private")
    for cidr in kube.public_cidrs:
        if wide_public(cidr):
            yield ConfigError(
                f"{k}kubernetes.publicCidrs",
                f"{cidr} opens the API server to much of the internet; list narrower CIDRs",
            )
    system = kube.system_instance_type
    if system is not None and catalog.find(ctx.cloud, system):
        yield ConfigError(
            f"{k}kubernetes.systemInstanceType",
            f"{system} is a GPU type; the system pool is CPU, such as {offer.systemInstanceType}",
        )


def _slurm(ctx: _Context, slurm: SlurmConfig) -> Iterator[ConfigError]:
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    if cfg.nodes == 0:
        yield ConfigError(
            f"{k}nodes",
            "0 with scheduler slurm: the partition would be empty (Slurm power saving is not built, "
            "so the group size is nodes); use 1 or more",
        )
    if slurm.accounting:
        yield ConfigError(
            f"{k}slurm.accounting",
            "true, but slurmdbd (accounting) is not built yet; use false (jobs run, sacct has no history)",
        )
    if cfg.gpu_partition is not None:
        yield ConfigError(
            f"{k}gpuPartition",
            f"{cfg.gpu_partition} with scheduler slurm: MIG instances as Slurm GRES are not built; "
            "drop gpuPartition (whole GPUs are the GRES)",
        )
    if cfg.network.egress != "nat":
        yield ConfigError(
            f"{k}network.egress",
            f"{cfg.network.egress} with scheduler slurm: the head, GPU and login nodes install Slurm and MUNGE at "
            "boot from packages.microsoft.com and Ubuntu's archive (catalog/slurm.yaml); use nat",
        )
    head = slurm.head_instance_type
    if head is not None and catalog.find(ctx.cloud, head):
        yield ConfigError(
            f"{k}slurm.headInstanceType",
            f"{head} is a GPU type; the head node is a small CPU VM such as "
            f"{capabilities(ctx.cloud).login_default_type}",
        )


def _encryption(ctx: _Context) -> Iterator[ConfigError]:
    """`encryption`: a key the cloud takes (its capabilities' `encryption:` patterns), SM4 only where it is sold."""
    enc, k = ctx.cfg.encryption, f"{CLUSTER_KEY}.encryption"
    data = capability_data(ctx.cloud).get("encryption")
    if data is None:
        if enc.key != "provider" or enc.algorithm != "aes256":
            yield ConfigError(f"{k}.key", f"customer-managed keys are not built on {ctx.cloud}; allowed: provider")
        return
    if enc.key not in ("provider", "auto") and not re.fullmatch(data["keyPattern"], enc.key):
        yield ConfigError(f"{k}.key", f"got {_describe(enc.key)}; allowed: provider, auto or {data['keyHint']}")
    if enc.algorithm == "sm4":
        sm4_regions = data.get("sm4Regions")
        if sm4_regions is None:
            yield ConfigError(f"{k}.algorithm", f"sm4 is an Alibaba Cloud KMS key spec; {ctx.cloud} has none")
        elif enc.key != "auto":
            yield ConfigError(f"{k}.algorithm", "sm4 applies to the key the stack creates: set key: auto")
        elif ctx.region not in sm4_regions:
            where = f"in {ctx.region} (only in {', '.join(sm4_regions)})" if sm4_regions else "in any region"
            yield ConfigError(
                f"{k}.algorithm",
                f"sm4 keys are not built {where}: {one_line(data.get('sm4Source', ''))}",
            )


def _gpu_vendor(ctx: _Context) -> Iterator[ConfigError]:
    """On GPUs that are not NVIDIA's, the plan says what the node bootstrap does not cover (catalog.vendor_gaps)."""
    row = ctx.row
    if row is None:
        return
    for gap in catalog.vendor_gaps(row, health=ctx.cfg.health.enabled, metrics=ctx.cfg.monitoring.dcgm_exporter):
        ctx.warn("instanceType", gap)
    yield from ()


def _cpu_arch(ctx: _Context) -> Iterator[ConfigError]:
    """On hosts that are not x86_64 (Grace), the plan says what the node bootstrap does not vouch for there
    (catalog.arch_gaps: the Lustre clients' arm64 builds)."""
    row, shared = ctx.row, ctx.cfg.storage.shared
    if row is None or row.arch == "x86_64":
        return
    offered = shared_storage.load(ctx.cloud) if shared is not None else None
    service = offered.service(shared.kind) if offered is not None and shared is not None else None
    for gap in catalog.arch_gaps(row, lustre=service is not None and service.kind == "lustre"):
        ctx.warn("storage.shared", gap)
    yield from ()


def _existing_network(ctx: _Context) -> Iterator[ConfigError]:
    """`network.existing`: the ids' shapes, one zone, and the plan warnings on what the network must provide."""
    return check_existing_network(ctx)


def _mount_paths(ctx: _Context) -> Iterator[ConfigError]:
    """`storage.scratchPath` and `storage.shared.path`: normalised, and not where a mount would hide what the OS, the
    image or the bootstrap keeps (catalog/paths.yaml). Scratch and shared inside each other: `_shared_storage`."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}.storage"
    paths = {"scratchPath": cfg.storage.scratch_path} if cfg.storage.scratch != "none" else {}
    if cfg.storage.shared is not None:
        paths["shared.path"] = cfg.storage.shared.path
    for key, path in paths.items():
        for message in mount_paths.problems(path, admin_user=cfg.admin_user, slurm=cfg.scheduler == "slurm"):
            yield ConfigError(f"{k}.{key}", message)


def _derived_names(ctx: _Context) -> Iterator[ConfigError]:
    """`name`: every name the cloud builds from it must be one the cloud takes (catalog/names.yaml)."""
    cfg = ctx.cfg
    name = cfg.name or ctx.stack
    if cfg.name is None and not re.fullmatch(NAME_PATTERN, ctx.stack):
        return  # `_name` said so
    login = cfg.login is not None or cfg.scheduler == "slurm"  # scheduler slurm always adds a login node
    for message in derived_names.name_problems(
        ctx.cloud, name, scheduler=cfg.scheduler, node_group=cfg.node_group, login=login, max_nodes=ctx.max_nodes
    ):
        given = f"{name!r}" if cfg.name is not None else f"not set, so the stack name {name!r}"
        yield ConfigError(f"{CLUSTER_KEY}.name", f"{given}: {message}")


def _slurm_names(ctx: _Context) -> Iterator[ConfigError]:
    """`slurm.partition`: not a word slurm.conf reads as its defaults record (catalog/names.yaml `slurm:`)."""
    slurm = ctx.cfg.slurm
    word = None if slurm is None else derived_names.reserved_partition(slurm.partition)
    if slurm is not None and word is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.slurm.partition",
            f"got {slurm.partition!r}; PartitionName={word} is slurm.conf's defaults record (compared without case), "
            "not a partition: the cluster would come up with none (catalog/names.yaml: SchedMD/slurm "
            "read_config.c _parse_partitionname); use another name such as gpu",
        )


def _capacity_offers(ctx: _Context) -> Iterator[ConfigError]:
    """What the capacity asked for can buy (catalog/capacity.yaml): a Capacity Block only for the families AWS sells
    as such; GCP flex-start VMs placed compactly only on the series that allow it."""
    cfg, row, k = ctx.cfg, ctx.row, f"{CLUSTER_KEY}."
    if row is None:
        return
    if ctx.cloud == "aws" and cfg.reservation_type == "capacity-block":
        why = capacity_offers.capacity_block_refusal(row.instanceType)
        if why is not None:
            yield ConfigError(f"{k}reservationType", f"capacity-block, but {why}")
    gcp = cfg.gcp
    if (
        ctx.cloud == "gcp"
        and gcp is not None
        and gcp.flex_start
        and cfg.placement == "cluster"
        and ctx.max_nodes > 1
        and cfg.scheduler != "kubernetes"
        and any(row.instanceType.startswith(p) for p in ctx.rules["consumption"]["flexStart"])
        and not capacity_offers.flex_start_compact_ok(row.instanceType)
    ):
        yield ConfigError(
            f"{k}placement",
            f"cluster with gcp.flexStart on {row.instanceType}: flex-start VMs are placed compactly only on "
            f"{capacity_offers.flex_start_compact_series()} (catalog/capacity.yaml: Cluster Toolkit "
            'dws-flex-start-compact-placement; its Slurm guide: flex-start "cannot be used in tandem with a ... '
            'placement policy"); use placement: none or auto, or drop gcp.flexStart',
        )


def _flex_start_loose(ctx: _Context) -> str | None:
    """Why `placement: auto` resolves to none for GCP flex-start VMs of a series that cannot be placed compactly."""
    cfg, row = ctx.cfg, ctx.row
    if ctx.cloud != "gcp" or cfg.gcp is None or not cfg.gcp.flex_start or row is None or ctx.max_nodes < 2:
        return None  # one node has no neighbour to be placed near (layout/gcp/placement.py placement_of)
    if capacity_offers.flex_start_compact_ok(row.instanceType):
        return None
    return (
        f"auto resolves to none with gcp.flexStart: {row.instanceType} flex-start VMs get no compact placement "
        f"(only {capacity_offers.flex_start_compact_series()} allow it, catalog/capacity.yaml); the nodes may land "
        "far apart"
    )


def _zone_known(ctx: _Context) -> Iterator[ConfigError]:
    """A configured zone the availability data lists for no GPU type of the region is refused, where the data knows
    the region's GPU zones (catalog/capacity.yaml zonesKnown: GCP); a listed zone that does not sell the type stays a
    warning (`_instance_type`): per-zone offers change more often than the list of zones."""
    row, zone_key = ctx.row, ctx.rules["zoneKey"]
    configured = ctx.cfg.zone or (ctx.values.get(zone_key) if zone_key else None)
    if row is None or configured is None or not capacity_offers.zones_known(ctx.cloud):
        return
    pattern = ctx.rules["zonePattern"].format(region=re.escape(ctx.region))
    if not re.fullmatch(pattern, str(configured)):
        return  # `_zone` said so
    offer = catalog.availability.offer(ctx.cloud, row.instanceType, gpu=row.gpu)
    listed = capacity_offers.zones_listed(ctx.cloud, ctx.region)
    if offer is None or not offer.zones_in(ctx.region) or str(configured) in listed:
        return
    data = catalog.availability.load(ctx.cloud)
    what = catalog.availability.label(ctx.cloud, row.instanceType, gpu=row.gpu)
    yield ConfigError(
        f"{CLUSTER_KEY}.zone" if ctx.cfg.zone else str(zone_key),
        f"got {configured!r}; no GPU type is sold in such a zone of {ctx.region}: "
        f"catalog/availability/{ctx.cloud}.yaml (read {data.date}) lists {', '.join(listed)} there, and {what} in "
        f"{', '.join(offer.zones_in(ctx.region))}; use one of those",
    )


# The cross-field rules, in the order their errors are reported. Each reads the keys it names
# and yields one ConfigError per problem; all run, so a config with three mistakes hears of three.
CROSS_RULES: tuple[Check, ...] = (
    _name,
    _derived_names,
    _zone,
    _other_cloud_blocks,
    _instance_type,
    _zone_known,
    _node_group_default,
    _node_counts,
    _node_group,
    _fabric,
    _scratch,
    _shared_storage,
    _mount_paths,
    _capacity,
    _capacity_offers,
    _image,
    _network,
    _tags,
    _login_user,
    _gpu_partition,
    _existing_network,
    _scheduler,
    _slurm_names,
    _gpu_vendor,
    _cpu_arch,
    _scaling,
    _encryption,
)


def _placement(ctx: _Context) -> Literal["cluster", "spread", "none"]:
    """`placement: auto` resolved, then what the cloud's managed groups can apply (capabilities data)."""
    cfg = ctx.cfg
    placement: Literal["cluster", "spread", "none"]
    if cfg.placement == "auto":
        if cfg.reservation:
            placement = "none"
            ctx.warn(
                "placement",
                "auto resolves to none with a reservation: a forced cluster placement group breaks capacity "
                "reservations (aws-parallelcluster#4215)",
                "info",
            )
        elif (loose := _flex_start_loose(ctx)) is not None:
            placement = "none"
            ctx.warn("placement", loose)
        elif cfg.scaling is not None and cfg.scaling.metric != "none" and not ctx.fabric_wired:
            # a fleet that grows and shrinks: a cluster placement group would cap where new nodes can land
            # (GCP compact placement fixes the VM count), and nothing between its nodes needs the locality
            placement = "none"
            ctx.warn("placement", "auto resolves to none for a scaling fleet without a fabric", "info")
        else:
            placement = "cluster" if ctx.max_nodes > 1 or ctx.fabric_wired else "none"
            why = "maxNodes > 1" if ctx.max_nodes > 1 else "the fabric is wired"
            if placement == "cluster":
                ctx.warn("placement", f"auto resolves to cluster ({why})", "info")
    else:
        placement = cfg.placement
    if placement == "cluster" and cfg.reservation:
        ctx.warn(
            "placement", "a reservation with a cluster placement group may fail for capacity; prefer placement: auto"
        )
    row = ctx.row
    if row is not None and ctx.fabric_wired and placement != "cluster" and ctx.max_nodes > 1:
        ctx.warn(
            "placement",
            f"{row.fabric} is wired but placement is {placement}: "
            "fabric latency and bandwidth between nodes are not guaranteed",
        )
    return placement


def _health_action(cfg: ClusterConfig) -> Literal["replace", "report"] | None:
    if not cfg.health.enabled:
        return None
    if cfg.health.action == "auto":
        return "replace" if cfg.node_group == "managed" else "report"
    return cfg.health.action


def _partition(cfg: ClusterConfig, row: InstanceType) -> tuple[str, int] | None:
    if cfg.gpu_partition is None:
        return None
    profiles = catalog.mig_profiles(row) or {}
    return cfg.gpu_partition, profiles[cfg.gpu_partition]


def _scaling_spec(cfg: ClusterConfig) -> ScalingSpec | None:
    scaling = cfg.scaling
    if scaling is None or scaling.metric == "none":
        return None
    return ScalingSpec(
        metric=scaling.metric,
        target=scaling.target,
        queue=scaling.queue,
        schedule=scaling.schedule,
        time_zone=scaling.time_zone,
        scale_in_cooldown_seconds=scaling.scale_in_cooldown_seconds,
    )


def _kubernetes_spec(cloud: Cloud, cfg: ClusterConfig) -> KubernetesSpec | None:
    offer = kubernetes_offers.offer(cloud)
    if cfg.scheduler != "kubernetes" or offer is None:
        return None
    kube = cfg.kubernetes or KubernetesConfig()
    return KubernetesSpec(
        version=kube.version or offer.default,
        public_endpoint=kube.public_endpoint,
        public_cidrs=kube.public_cidrs,
        gpu_software=kube.gpu_software,
        system_instance_type=kube.system_instance_type or offer.systemInstanceType,
        system_nodes=kube.system_nodes,
        service_monitor=kube.service_monitor,
    )


def _slurm_spec(cloud: Cloud, cfg: ClusterConfig) -> SlurmConfig | None:
    if cfg.scheduler != "slurm":
        return None
    slurm = cfg.slurm or SlurmConfig()
    head = slurm.head_instance_type or capabilities(cloud).login_default_type
    return slurm.model_copy(update={"head_instance_type": head})


def _cross_check(
    cloud: Cloud,
    region: str,
    gcp_project: str | None,
    cfg: ClusterConfig,
    values: Mapping[str, Any],
    stack: str,
    project: str,
    rules: Mapping[str, Any],
    max_hourly: float | None,
) -> ClusterSpec:
    ctx = _Context(cloud, region, cfg, values, stack, rules)
    errors = [error for check in CROSS_RULES for error in check(ctx)]
    if errors:
        raise ConfigErrors(errors)
    cfg = ctx.cfg  # with what the rules resolved (nodeGroup's default)
    assert ctx.resolution is not None  # _instance_type yielded no error
    row = ctx.resolution.type
    placement = _placement(ctx)
    if cfg.scheduler == "slurm" and cfg.login is None:
        # users reach the cluster through the login node: sbatch/srun run there
        cfg = cfg.model_copy(update={"login": LoginConfig()})
    access, login = _check_access(cloud, cfg, ctx.findings)
    scratch: Literal["nvme", "disk", "none"] = (
        ("nvme" if row.localNvmeCount > 0 else "disk") if cfg.storage.scratch == "auto" else cfg.storage.scratch
    )
    return ClusterSpec(
        project=project,
        stack=stack,
        cloud=cloud,
        region=region,
        zone=_zone_of(ctx),
        name=cfg.name or stack,
        instance=row,
        resolution=ctx.resolution.reason,
        nodes=cfg.nodes,
        max_nodes=ctx.max_nodes,
        node_group=cfg.node_group,
        spot=cfg.spot.enabled,
        # a disabled spot block is refused when it sets these, so they hold only with enabled
        spot_on_demand_base=cfg.spot.on_demand_base,
        spot_fallback=cfg.spot.fallback,
        min_nodes=_min_nodes(cfg),
        encryption_key=cfg.encryption.key,
        encryption_algorithm=cfg.encryption.algorithm,
        compliance=cfg.compliance,
        scaling=_scaling_spec(cfg),
        reservation=cfg.reservation,
        reservation_type=cfg.reservation_type,
        fabric_wired=ctx.fabric_wired,
        placement=placement,
        scratch=scratch,
        storage=cfg.storage,
        network=cfg.network,
        image=cfg.image,
        admin_user=cfg.admin_user,
        ssh_public_key=cfg.ssh_public_key,
        tags=dict(sorted(cfg.tags.items())),
        findings=tuple(ctx.findings),
        gcp_project=gcp_project,
        access=access,
        identity=cfg.identity,
        login=login,
        health_action=_health_action(cfg),
        dcgm_exporter=cfg.monitoring.dcgm_exporter,
        gpu_partition=_partition(cfg, row),
        max_hourly_usd=max_hourly,
        scheduler=cfg.scheduler,
        kubernetes=_kubernetes_spec(cloud, cfg),
        slurm=_slurm_spec(cloud, cfg),
        azure=cfg.azure or AzureOptions(),
        gcp=cfg.gcp or GcpOptions(),
        alicloud=cfg.alicloud or AlicloudOptions(),
    )
