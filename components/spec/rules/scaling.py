"""`minNodes` and `scaling`: bounds, targets, queues and schedules of an elastic group."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from cronsim import CronSim, CronSimError

from ...errors import CLUSTER_KEY, ConfigError
from ..context import Context
from ..model import ClusterConfig


def min_nodes(cfg: ClusterConfig) -> int:
    return cfg.nodes if cfg.min_nodes is None else cfg.min_nodes


def _scaling(ctx: Context) -> Iterator[ConfigError]:
    """`minNodes` and `scaling`: a managed group of the VM modes, bounds that hold, a target, a queue, crons."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    low = min_nodes(cfg)
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
