"""Azure elastic fleets, pure: the scale set's autoscale setting (profiles, rules, recurrences), the Service Bus
queue, the GPU metric publisher part (data: catalog/scaling/azure.yaml, sources there)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.metrics import versions
from ...catalog.slurm import cloud_data
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ..scaling import gpu_metric_problems, scaling_data

K = f"{CLUSTER_KEY}."
DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_DAY_NAMES = {d[:3].upper(): i for i, d in enumerate(DAYS)}
PUBLISHER = "gpu-metric"

UNIT = """[Unit]
Description=gpu-cluster: the node's GPU utilisation to Azure Monitor (the autoscale setting's metric)
Wants=network-online.target
After=network-online.target gpu-cluster-dcgm-exporter.service

[Service]
EnvironmentFile=/etc/gpu-cluster/{name}.env
ExecStart=/usr/local/sbin/gpu-cluster-{name}
Restart=always
RestartSec=30

[Install]
WantedBy=multi-user.target
"""


def data() -> dict[str, Any]:
    return scaling_data("azure")


@dataclass(frozen=True)
class Recurrence:
    days: tuple[str, ...]
    hours: tuple[int, ...]
    minutes: tuple[int, ...]
    time_zone: str  # a Windows time zone name


@dataclass(frozen=True)
class Profile:
    name: str
    minimum: int
    maximum: int
    default: int
    recurrence: Recurrence | None  # None: the default profile
    rules: bool  # the metric's rules apply in this profile (schedule-only profiles hold a fixed count)


@dataclass(frozen=True)
class Rule:
    """One metric trigger; `source` says which resource's id the build fills in as metricResourceUri."""

    source: Literal["scale-set", "namespace", "existing"]
    metric_name: str
    metric_namespace: str
    threshold: float
    operator: Literal["GreaterThan", "LessThan"]
    direction: Literal["Increase", "Decrease"]
    cooldown: str
    divide_per_instance: bool
    dimension: tuple[str, str] | None  # (name, value), Equals


@dataclass(frozen=True)
class Queue:
    auto: bool  # create a Service Bus namespace and a queue
    queue: str  # the queue's name
    namespace_id: str | None  # existing: the namespace's resource id
    receiver_role: str


@dataclass(frozen=True)
class AzureElastic:
    profiles: tuple[Profile, ...]
    rules: tuple[Rule, ...]
    queue: Queue | None
    publisher_role: str | None  # gpuUtilization: Monitoring Metrics Publisher on the scale set
    parts: tuple[Part, ...]  # node bootstrap parts to append (the metric publisher)
    time_grain: str
    time_window: str


def duration(seconds: int) -> str:
    """ISO 8601, in whole minutes when it is (how Azure returns it, so a refresh shows no change)."""
    return f"PT{seconds // 60}M" if seconds % 60 == 0 else f"PT{seconds}S"


def _values(text: str, low: int, high: int, names: dict[str, int] | None = None) -> tuple[int, ...] | None:
    """A cron field as a sorted tuple (None for *): numbers, names, lists and ranges; no steps."""
    if text == "*":
        return None
    out: set[int] = set()
    for token in text.split(","):
        if "/" in token:
            raise ValueError("steps (/) have no Azure recurrence form")
        ends = [names.get(p.upper(), p) if names else p for p in token.split("-", 1)]
        a, b = int(ends[0]), int(ends[-1])
        if not (low <= a <= high and low <= b <= high and a <= b):
            raise ValueError(f"{token} is outside {low}-{high}")
        out.update(range(a, b + 1))
    return tuple(sorted(out))


def recurrence(cron: str, time_zone: str, key: str) -> Recurrence:
    """A five-field cron as an Azure weekly recurrence: minutes and hours listed, any day of month and month."""
    minute, hour, dom, month, dow = cron.split()
    try:
        if dom != "*" or month != "*":
            raise ValueError("Azure recurrences repeat weekly: day of month and month must be *")
        minutes, hours = _values(minute, 0, 59), _values(hour, 0, 23)
        if minutes is None or hours is None:
            raise ValueError("minute and hour must be listed (an Azure profile starts at given times)")
        days = _values(dow, 0, 7, _DAY_NAMES)
    except ValueError as exc:
        raise ConfigError(f"{key}.cron", f"{cron!r} has no Azure recurrence form: {exc}") from None
    day_names = DAYS if days is None else tuple(DAYS[d % 7] for d in sorted({d % 7 for d in days}))
    zone = data()["timeZones"].get(time_zone)
    if zone is None:
        raise ConfigError(
            f"{K}scaling.timeZone",
            f"{time_zone} has no Windows time zone name in catalog/scaling/azure.yaml (Azure recurrences take "
            f"Windows names); use one of {', '.join(sorted(data()['timeZones']))}",
        )
    return Recurrence(day_names, hours, minutes, zone)


def publisher_part() -> Part:
    m = data()["metrics"]["gpuUtilization"]
    imds = cloud_data("azure")["imds"]  # the IMDS token endpoint the MUNGE-key hook uses too
    port = int(versions()["dcgmExporter"]["port"])
    return bootstrap.service_part(
        PUBLISHER,
        script_text=bootstrap.script("azure_gpu_metric.sh"),
        env={
            "DCGM_URL": f"http://localhost:{port}/metrics",
            "METRIC_NAMESPACE": m["namespace"],
            "METRIC_NAME": m["name"],
            "INTERVAL_SECONDS": str(m["intervalSeconds"]),
            "IMDS_TOKEN_URL": imds["tokenUrl"],
            "IMDS_API_VERSION": str(imds["apiVersion"]),
            "TOKEN_RESOURCE": m["tokenResource"],
        },
        unit=UNIT.format(name=PUBLISHER),
        summary=f"publishes the mean DCGM_FI_DEV_GPU_UTIL (:{port}) as {m['namespace']}/{m['name']} on the scale "
        "set (Azure Monitor custom metrics) for the autoscale setting.",
        no_block=True,
    )


def _queue(spec: ClusterSpec, queue: str) -> Queue:
    q = data()["metrics"]["queueDepth"]
    if queue == "auto":
        return Queue(True, "work", None, q["receiverRole"])
    if not re.match(q["queuePattern"], queue):
        raise ConfigError(
            f"{K}scaling.queue",
            f"got {queue!r}; allowed: auto, or a Service Bus queue's resource id /subscriptions/SUB/resourceGroups/RG/"
            "providers/Microsoft.ServiceBus/namespaces/NAMESPACE/queues/QUEUE",
        )
    namespace_id, name = queue.split("/queues/", 1)
    return Queue(False, name, namespace_id, q["receiverRole"])


def _problems(spec: ClusterSpec, group: str) -> Iterator[ConfigError]:
    if spec.spot and spec.spot_on_demand_base:
        yield ConfigError(
            f"{K}spot.onDemandBase",
            "not built on Azure: Spot Priority Mix (priorityMixPolicy) needs a Flexible scale set and gpu-cluster's is "
            "Uniform (singlePlacementGroup scopes InfiniBand); set 0, or spot: false for regular VMs",
        )
    if spec.spot and spec.spot_fallback == "onDemand":
        yield ConfigError(
            f"{K}spot.fallback",
            "onDemand is not built on Azure: a scale set does not fall back from Spot to regular VMs; use fallback: "
            "none, or spot: false",
        )
    scaling = spec.scaling
    if scaling is None:
        return
    if group != "scale-set":
        yield ConfigError(f"{K}scaling", "needs nodeGroup: managed (the autoscale setting targets a scale set)")
    yield from gpu_metric_problems(
        spec,
        reaches="the nodes post the metric to REGION.monitoring.azure.com",
        at_zero="no node publishes the metric, so nothing would scale the set out again",
    )
    a = data()["autoscale"]
    low, high = int(a["cooldownMinSeconds"]), int(a["cooldownMaxSeconds"])
    if not low <= scaling.scale_in_cooldown_seconds <= high:
        yield ConfigError(
            f"{K}scaling.scaleInCooldownSeconds",
            f"{scaling.scale_in_cooldown_seconds} on Azure: an autoscale cooldown is {low} s to {high} s",
        )
    if len(scaling.schedule) + 1 > int(a["maxProfiles"]):
        yield ConfigError(
            f"{K}scaling.schedule",
            f"{len(scaling.schedule)} entries; an autoscale setting holds {a['maxProfiles']} profiles, one of them the "
            "default",
        )


def _rules(spec: ClusterSpec, queue: Queue | None) -> tuple[Rule, ...]:
    scaling = spec.scaling
    assert scaling is not None
    a = data()["autoscale"]
    target = float(scaling.target or 0)
    scale_in = duration(scaling.scale_in_cooldown_seconds)
    if scaling.metric == "gpuUtilization":
        m = data()["metrics"]["gpuUtilization"]
        args: tuple[Literal["scale-set", "namespace", "existing"], str, str, bool, tuple[str, str] | None] = (
            "scale-set",
            m["name"],
            m["namespace"],
            False,
            None,
        )
    elif scaling.metric == "queueDepth" and queue is not None:
        m = data()["metrics"]["queueDepth"]
        args = (
            "namespace" if queue.auto else "existing",
            m["name"],
            m["metricNamespace"],
            True,  # messages per node
            (m["dimension"], queue.queue),
        )
    else:
        return ()
    source, name, namespace, divide, dimension = args
    # one threshold both ways: autoscale's flapping check keeps a scale-in from undoing itself
    return (
        Rule(source, name, namespace, target, "GreaterThan", "Increase", a["scaleOutCooldown"], divide, dimension),
        Rule(source, name, namespace, target, "LessThan", "Decrease", scale_in, divide, dimension),
    )


def plan(spec: ClusterSpec, group: str) -> AzureElastic | None:
    """The elastic part of the Azure layout, or None when nothing of it is asked (existing stacks)."""
    refuse(_problems(spec, group))
    scaling = spec.scaling
    if scaling is None:
        return None
    queue = _queue(spec, str(scaling.queue)) if scaling.metric == "queueDepth" else None
    with_rules = scaling.metric != "schedule"
    profiles = [Profile("default", spec.min_nodes, spec.max_nodes, spec.nodes, None, with_rules)]
    for i, entry in enumerate(scaling.schedule):
        rec = recurrence(entry.cron, scaling.time_zone, f"{K}scaling.schedule[{i}]")
        top = spec.max_nodes if with_rules else entry.nodes
        profiles.append(Profile(f"schedule-{i}", entry.nodes, top, entry.nodes, rec, with_rules))
    a = data()["autoscale"]
    metric = scaling.metric == "gpuUtilization"
    return AzureElastic(
        profiles=tuple(profiles),
        rules=_rules(spec, queue),
        queue=queue,
        publisher_role=data()["metrics"]["gpuUtilization"]["publisherRole"] if metric else None,
        parts=(publisher_part(),) if metric else (),
        time_grain=a["timeGrain"],
        time_window=a["timeWindow"],
    )
