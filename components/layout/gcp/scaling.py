"""GCP elastic fleets, pure: the MIG autoscaler, its metric, schedules and queue, the Ops Agent part, and the
on-demand floor group of a spot mix (data: catalog/scaling/gcp.yaml, sources there)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import yaml
from cronsim import CronSim

from ... import bootstrap
from ...bootstrap import File, Part
from ...bootstrap.metrics import versions
from ...catalog import serving
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ..scaling import gpu_metric_problems, scaling_data

K = f"{CLUSTER_KEY}."
OPS_AGENT_SCRIPT = "/usr/local/sbin/gpu-cluster-ops-agent"
# A fixed Monday: schedule intervals are measured over one week from it, in wall-clock time of the time zone.
_WEEK_START = datetime(2026, 1, 5)


def data() -> dict[str, Any]:
    return scaling_data("gcp")


@dataclass(frozen=True)
class Metric:
    name: str
    filter: str
    single_instance_assignment: float  # per-group metrics only: the work one VM takes


@dataclass(frozen=True)
class Schedule:
    name: str
    cron: str
    duration_sec: int  # until the next entry of the schedule starts
    min_required_replicas: int
    time_zone: str


@dataclass(frozen=True)
class Queue:
    topic: str | None  # queue auto: the topic and subscription the cluster creates (names)
    subscription: str  # auto: the name; else the existing subscription's full id
    ack_deadline_seconds: int
    subscriber_role: str

    @property
    def auto(self) -> bool:
        return self.topic is not None


@dataclass(frozen=True)
class Autoscaler:
    min_replicas: int
    max_replicas: int
    metric: Metric | None
    schedules: tuple[Schedule, ...]
    scale_in_window_sec: int | None  # scaleInCooldownSeconds: at most one VM removed per window
    queue: Queue | None
    # serve.requestsPerNode: the fraction of the load balancer's serving capacity (RATE) the group is kept at
    load_balancing_target: float | None = None


@dataclass(frozen=True)
class Elastic:
    """What moves the GPU group, and the spot mix: `floor` STANDARD VMs in a second group, spot above them."""

    autoscaler: Autoscaler | None
    floor: int  # spot.onDemandBase: the always-on standard VMs (a second MIG); 0: none
    spot_target: int  # the spot group's size at deploy (nodes - floor)
    job: str  # the Ops Agent's scrape job: the metric's resource.labels.job
    parts: tuple[Part, ...]  # node bootstrap parts (the Ops Agent) to append
    warnings: tuple[str, ...] = ()


def _job(spec: ClusterSpec) -> str:
    return f"gpu-cluster-{spec.name}"


def ops_agent_body(job: str, port: int) -> dict[str, Any]:
    """The autoscaler's receiver: one Prometheus receiver on the local DCGM exporter, GPU utilisation only (cost)."""
    agent = data()["opsAgent"]
    metric = data()["metrics"]["gpuUtilization"]["exporterMetric"]
    return {
        "metrics": {
            "receivers": {
                "gpu_cluster_dcgm": {
                    "type": "prometheus",
                    "config": {
                        "scrape_configs": [
                            {
                                "job_name": job,
                                "scrape_interval": f"{agent['scrapeIntervalSeconds']}s",
                                "static_configs": [{"targets": [f"localhost:{port}"]}],
                                "metric_relabel_configs": [
                                    {"source_labels": ["__name__"], "regex": metric, "action": "keep"}
                                ],
                            }
                        ]
                    },
                }
            },
            "service": {"pipelines": {"gpu_cluster_dcgm": {"receivers": ["gpu_cluster_dcgm"]}}},
        }
    }


def ops_agent_config(job: str, port: int) -> str:
    """The Ops Agent's config of an elastic fleet with nothing else asked of the agent (text kept as deployed)."""
    return "# gpu-cluster: the DCGM exporter's GPU utilisation to Cloud Monitoring (the MIG autoscaler's metric)\n" + (
        yaml.safe_dump(ops_agent_body(job, port), sort_keys=False)
    )


def autoscaler_port() -> int:
    return int(versions()["dcgmExporter"]["port"])


def ops_agent_part(job: str | None, config: str | None = None, summary: str | None = None) -> Part:
    """The Ops Agent: the autoscaler's receiver alone (`job`), or `config` (observe.py: logs, alert metrics)."""
    agent = data()["opsAgent"]
    port = autoscaler_port()
    assert job is not None or config is not None
    text = config if config is not None else ops_agent_config(str(job), port)
    what = f"it sends DCGM_FI_DEV_GPU_UTIL (:{port}) to Cloud Monitoring for the autoscaler" if job else ""
    what = "; ".join(w for w in (what, summary or "") if w)
    return bootstrap.service_part(
        "ops-agent",
        script_text=bootstrap.script("gcp_ops_agent.sh"),
        env={"OPS_AGENT_INSTALLER": agent["installer"], "OPS_AGENT_VERSION": agent["version"]},
        unit=bootstrap.oneshot_unit(
            "Google Cloud Ops Agent (scrapes the DCGM exporter for the autoscaler)"
            if config is None
            else "Google Cloud Ops Agent (gpu-cluster receivers)",
            name="ops-agent",
            after=("network-online.target",),
            wants=("network-online.target",),
        ),
        extra_files=(File(agent["config"], text),),
        summary=f"installs the Ops Agent ({agent['version']}); {what}.",
        no_block=True,
    )


def _queue(spec: ClusterSpec, queue: str) -> Queue:
    q = data()["queue"]
    if queue == "auto":
        return Queue(f"{spec.name}-work", f"{spec.name}-work", int(q["ackDeadlineSeconds"]), str(q["subscriberRole"]))
    if not re.match(data()["metrics"]["queueDepth"]["subscriptionPattern"], queue):
        raise ConfigError(
            f"{K}scaling.queue",
            f"got {queue!r}; allowed: auto, or a Pub/Sub subscription id projects/PROJECT/subscriptions/NAME",
        )
    return Queue(None, queue, int(q["ackDeadlineSeconds"]), str(q["subscriberRole"]))


def schedules(spec: ClusterSpec, floor: int) -> tuple[Schedule, ...]:
    """One scaling schedule per entry: a floor of `nodes` from its cron until the next entry of the list starts."""
    scaling = spec.scaling
    if scaling is None:
        return ()
    end = _WEEK_START + timedelta(days=7)
    fires: list[tuple[datetime, int]] = []
    for i, entry in enumerate(scaling.schedule):
        for at in CronSim(entry.cron, _WEEK_START - timedelta(minutes=1)):
            if at >= end + timedelta(days=7):
                break
            fires.append((at, i))
    fires.sort()
    minimum = int(data()["autoscaler"]["scheduleMinDurationSec"])
    out = []
    for i, entry in enumerate(scaling.schedule):
        gaps = [
            int((fires[j + 1][0] - at).total_seconds())
            for j, (at, who) in enumerate(fires[:-1])
            if who == i and at < end and fires[j + 1][0] > at
        ]
        if not gaps:
            raise ConfigError(f"{K}scaling.schedule[{i}].cron", f"{entry.cron!r} never starts within a week")
        duration = min(gaps)
        if duration < minimum:
            raise ConfigError(
                f"{K}scaling.schedule[{i}].cron",
                f"{entry.cron!r} lasts {duration} s before the next entry starts; a GCP scaling schedule lasts at "
                f"least {minimum} s",
            )
        replicas = max(entry.nodes - floor, 0)
        if replicas == 0:
            continue  # a floor of zero is no schedule: the group falls back to minNodes and the metric
        out.append(Schedule(f"{spec.name}-{i}", entry.cron, duration, replicas, scaling.time_zone))
    return tuple(out)


def _problems(spec: ClusterSpec, no_on_demand: bool) -> Iterator[ConfigError]:
    base = spec.spot_on_demand_base if spec.spot else 0
    if spec.spot and spec.spot_fallback == "onDemand":
        yield ConfigError(
            f"{K}spot.fallback",
            "onDemand is not built on GCP: a MIG takes its template's provisioning model and Compute Engine has no "
            "Spot-to-standard fallback; use onDemandBase for standard VMs that always run, or fallback: none",
        )
    if base:
        if spec.node_group != "managed":
            yield ConfigError(f"{K}spot.onDemandBase", "needs nodeGroup: managed")
        if no_on_demand:
            yield ConfigError(
                f"{K}spot.onDemandBase",
                f"{spec.instance.instanceType} is not sold on demand: no standard VMs for the base; set 0",
            )
        if base > spec.min_nodes:
            yield ConfigError(
                f"{K}spot.onDemandBase",
                f"{base} is more than minNodes {spec.min_nodes}: on GCP the base is a second group of standard VMs "
                "that always run; set it at most minNodes",
            )
    yield from gpu_metric_problems(
        spec,
        reaches="the Ops Agent is downloaded at boot (dl.google.com)",
        at_zero="no GPU reports utilisation, so nothing would scale the group out again",
    )


def _request_rate_target(spec: ClusterSpec) -> float | None:
    """serve.requestsPerNode: the autoscaler's load-balancing utilisation target (catalog/serving/gcp.yaml)."""
    if spec.serve is None or spec.serve.requests_per_node is None:
        return None
    offer = serving.offer("gcp")
    assert offer is not None and offer.requestRate is not None  # the spec refuses it where there is none
    return offer.requestRate.utilizationTarget


def plan(spec: ClusterSpec, no_on_demand: bool) -> Elastic | None:
    """The elastic part of the GCP layout, or None when nothing of it is asked (existing stacks)."""
    refuse(_problems(spec, no_on_demand))
    scaling = spec.scaling
    floor = spec.spot_on_demand_base if spec.spot else 0
    rate = _request_rate_target(spec)
    if scaling is None and not floor and rate is None:
        return None
    job = _job(spec)
    autoscaler = None
    parts: tuple[Part, ...] = ()
    if scaling is None and rate is not None:  # the load balancer's request rate alone moves the group
        autoscaler = Autoscaler(max(spec.min_nodes - floor, 0), spec.max_nodes - floor, None, (), None, None, rate)
    if scaling is not None:
        metric = None
        queue = None
        if scaling.metric == "gpuUtilization":
            m = data()["metrics"]["gpuUtilization"]
            target = float(scaling.target or 0)
            # per-group: the autoscaler sums every GPU's percent; one node takes target% on each of its GPUs
            metric = Metric(
                m["name"],
                f'metric.type = "{m["name"]}" AND resource.type = "{m["resourceType"]}" '
                f'AND resource.labels.job = "{job}"',
                target * spec.instance.gpus,
            )
            parts = (ops_agent_part(job),)
        elif scaling.metric == "queueDepth":
            m = data()["metrics"]["queueDepth"]
            queue = _queue(spec, str(scaling.queue))
            sub_id = queue.subscription.rsplit("/", 1)[-1]
            metric = Metric(
                m["name"],
                f'metric.type = "{m["name"]}" AND resource.type = "{m["resourceType"]}" '
                f'AND resource.labels.subscription_id = "{sub_id}"',
                float(scaling.target or 0),
            )
        cooldown = scaling.scale_in_cooldown_seconds
        autoscaler = Autoscaler(
            min_replicas=max(spec.min_nodes - floor, 0),
            max_replicas=spec.max_nodes - floor,
            metric=metric,
            schedules=schedules(spec, floor),
            scale_in_window_sec=cooldown or None,
            queue=queue,
            load_balancing_target=rate,
        )
    warnings: tuple[str, ...] = ()
    if parts and spec.identity.existing:
        role = data()["opsAgent"]["role"]
        warnings = (
            f"{K}identity.existing: the Ops Agent writes the GPU metric as {spec.identity.existing}; that account "
            f"needs {role} (gpu-cluster grants nothing to an existing account)",
        )
    return Elastic(autoscaler, floor, max(spec.nodes - floor, 0), job, parts, warnings)
