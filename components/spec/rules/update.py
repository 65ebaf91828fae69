"""`update`: how a managed group or a Kubernetes GPU pool replaces its nodes (catalog/update.yaml)."""

from __future__ import annotations

from collections.abc import Iterator

from ...catalog import Cloud
from ...catalog.update import Bounds, cloud_update
from ...errors import CLUSTER_KEY, ConfigError
from ..context import Context
from ..model import ClusterConfig, UpdateConfig
from ..resolved import UpdateSpec, default_update


def drain_bounds(cloud: Cloud, cfg: ClusterConfig) -> Bounds | None:
    """The drain budget the cloud's group takes (a Kubernetes pool's or a managed VM group's); None: none to set."""
    entry = cloud_update(cloud)
    return entry.kubernetes_drain if cfg.scheduler == "kubernetes" else entry.drain


def update_spec(cloud: Cloud, cfg: ClusterConfig) -> UpdateSpec:
    """`update` with catalog/update.yaml's defaults filled in."""
    base, given = default_update(), cfg.update or UpdateConfig()
    bounds = drain_bounds(cloud, cfg)
    return UpdateSpec(
        strategy=given.strategy,
        min_healthy_percent=base.min_healthy_percent
        if given.min_healthy_percent is None
        else given.min_healthy_percent,
        max_surge=base.max_surge if given.max_surge is None else given.max_surge,
        drain_timeout_seconds=None
        if bounds is None
        else bounds.default
        if given.drain_timeout_seconds is None
        else given.drain_timeout_seconds,
    )


def _update(ctx: Context) -> Iterator[ConfigError]:
    """`update`: a group the cloud rolls, values it can honour, a rolling update that can make progress."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}.update"
    kube = cfg.scheduler == "kubernetes"
    entry = cloud_update(ctx.cloud)
    spec = update_spec(ctx.cloud, cfg)
    elastic = cfg.slurm is not None and bool(cfg.slurm.partitions)  # no group: Slurm launches the nodes
    if (
        cfg.node_group == "managed"
        and not kube
        and not elastic
        and entry.rolling is None
        and spec.rolling
        and entry.manual
    ):
        # the cloud cannot roll this group declaratively: say how to do it by hand, with this spec's batch sizes
        ctx.warn(
            "update", f"strategy rolling is not declarative on {ctx.cloud}: {manual_steps(entry.manual, spec, cfg)}"
        )
    if kube and spec.rolling and entry.kubernetes_manual:
        ctx.warn(
            "update", f"strategy rolling is not declarative on {ctx.cloud}'s node pools: {entry.kubernetes_manual}"
        )
    given = cfg.update
    if given is None:
        return
    if cfg.node_group == "instances" and not kube:
        yield ConfigError(
            k,
            "applies to nodeGroup: managed or a Kubernetes pool; instances are replaced one by one by `pulumi up`, "
            "with no rolling window: remove it",
        )
        return
    if spec.min_healthy_percent == 100 and spec.max_surge == 0:
        yield ConfigError(
            f"{k}.minHealthyPercent",
            "100 with maxSurge 0: no node may go down and none comes up first, so no node can be replaced; "
            "allowed: below 100, or maxSurge 1 or more",
        )
    if kube and given.strategy == "manual":
        yield ConfigError(
            f"{k}.strategy",
            f"manual: the {ctx.cloud} Kubernetes node pool replaces its nodes itself (drained, in batches) on every "
            "change of its template or image; allowed: rolling",
        )
    if kube and spec.max_surge and not entry.kubernetes_surge:
        yield ConfigError(
            f"{k}.maxSurge",
            f"{spec.max_surge}: the {ctx.cloud} Kubernetes node pool has no surge setting (catalog/update.yaml); "
            "allowed: 0",
        )
    yield from _drain(ctx, given, kube)
    if ctx.cloud != "aws" and not kube and given.max_surge and entry.rolling is None and entry.max_healthy:
        # the manual refresh's MaxHealthyPercentage (Alibaba ESS): within the range the API takes
        high, limit = spec.max_in_service_percent(cfg.nodes), entry.max_healthy[1]
        if high > limit:
            yield ConfigError(
                f"{k}.maxSurge",
                f"{spec.max_surge} above {cfg.nodes} nodes is instance refresh MaxHealthyPercentage {high}; "
                f"{ctx.cloud} allows at most {limit} (catalog/update.yaml); "
                f"allowed: up to {max(cfg.nodes, 1) * (limit - 100) // 100}",
            )
    if ctx.cloud == "aws" and not kube and given.max_surge:
        high, low = spec.max_in_service_percent(cfg.nodes), spec.min_healthy_percent
        limit = entry.max_healthy[1] if entry.max_healthy else 200
        if high > limit or high - low > 100:
            yield ConfigError(
                f"{k}.maxSurge",
                f"{spec.max_surge} above {cfg.nodes} nodes is instance refresh MaxHealthyPercentage {high}; AWS "
                f"allows at most {limit} and at most minHealthyPercent ({low}) + 100 (catalog/update.yaml); "
                f"allowed: up to {max(cfg.nodes, 1) * (min(limit, low + 100) - 100) // 100}",
            )


def manual_steps(text: str, spec: UpdateSpec, cfg: ClusterConfig) -> str:
    """catalog/update.yaml's rollingManual with the spec's own batch sizes in place of its placeholders (the cloud's
    API defaults differ from the toolkit's: ESS's MaxHealthyPercentage 120 would launch surge nodes)."""
    return text.replace("<minHealthyPercent>", str(spec.min_healthy_percent)).replace(
        "<maxHealthyPercent>", str(spec.max_in_service_percent(cfg.nodes))
    )


def _drain(ctx: Context, given: UpdateConfig, kube: bool) -> Iterator[ConfigError]:
    seconds = given.drain_timeout_seconds
    if seconds is None:
        return
    key, where = f"{CLUSTER_KEY}.update.drainTimeoutSeconds", "Kubernetes pools" if kube else "managed groups"
    bounds = drain_bounds(ctx.cloud, ctx.cfg)
    if bounds is None:
        yield ConfigError(
            key,
            f"{ctx.cloud} {where} have no drain budget to set ({cloud_update(ctx.cloud).drain_source}); remove it",
        )
        return
    low, high = bounds.min, bounds.max
    if (low is not None and seconds < low) or (high is not None and seconds > high):
        span = f"{low if low is not None else 1} to {high}" if high is not None else f"{low} or more"
        yield ConfigError(
            key, f"{seconds} is out of range for {ctx.cloud} {where}; allowed: {span} (catalog/update.yaml)"
        )
    elif seconds % (step := cloud_update(ctx.cloud).drain_step):
        yield ConfigError(key, f"{seconds}: {ctx.cloud} takes whole minutes; allowed: a multiple of {step}")
