"""Elastic fleets on AWS (pure): what moves the Auto Scaling group and the Spot mix it launches.

The facts (namespaces, metric names, the agent, allocation strategy, what EC2 Auto Scaling cannot do) come from
`catalog/scaling/aws.yaml`; `components/aws/scaling.py` maps this onto pulumi-aws. A cluster that uses none of
minNodes, scaling, spot.onDemandBase or spot.fallback gets no `AwsScaling`, and its group plans as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ...bootstrap import File as BootFile
from ...bootstrap import Part, oneshot_unit, script, service_part
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ..scaling import elastic, scaling_data

AGENT_CONFIG = "/etc/gpu-cluster/cloudwatch-agent.json"


def data() -> dict[str, Any]:
    return scaling_data("aws")


@dataclass(frozen=True)
class GpuMetric:
    """The GPU utilisation the CloudWatch agent publishes: one series per cluster (the `Cluster` dimension)."""

    namespace: str
    name: str
    dimension: tuple[str, str]
    statistic: str


@dataclass(frozen=True)
class QueueMetric:
    """Backlog per instance: the queue's visible messages over the group's in-service instances (metric math)."""

    create: bool  # queue auto: the cluster's own SQS queue
    queue_name: str | None  # an existing queue's name (from its ARN); None when created
    queue_arn: str | None
    namespace: str
    metric_name: str
    statistic: str
    group_namespace: str
    group_metric: str
    group_statistic: str
    expression: str


@dataclass(frozen=True)
class ScheduledAction:
    name: str
    cron: str
    nodes: int


@dataclass(frozen=True)
class SpotMix:
    on_demand_base: int
    allocation_strategy: str
    capacity_rebalance: bool


@dataclass(frozen=True)
class AwsScaling:
    min_size: int
    metric: Literal["gpuUtilization", "queueDepth", "schedule"] | None
    target: float | None
    gpu: GpuMetric | None
    queue: QueueMetric | None
    schedule: tuple[ScheduledAction, ...]
    time_zone: str
    warmup_seconds: int  # the policy's estimated instance warm-up (scaleInCooldownSeconds: catalog scaleIn)
    spot: SpotMix | None  # None: on demand, or `spot: true` as before

    @property
    def permission(self) -> dict[str, Any] | None:
        """The one statement the node role gets for the GPU metric: PutMetricData into its namespace only."""
        if self.gpu is None:
            return None
        return {
            "Sid": "PutGpuMetricIntoClusterNamespace",
            "Effect": "Allow",
            "Action": data()["gpuUtilization"]["permission"],
            "Resource": "*",  # PutMetricData has no resource-level ARN; the condition scopes it
            "Condition": {"StringEquals": {"cloudwatch:namespace": self.gpu.namespace}},
        }


def agent_config(metric: GpuMetric | None, collect: list[dict[str, str]] | None = None) -> str:
    """The CloudWatch agent's Classic configuration: nvidia_gpu utilisation rolled up per cluster (gpuUtilization),
    and the node's log files (monitoring.logs: layout/aws/logs.py `collect_list`); either may be absent."""
    config: dict[str, Any] = {}
    if metric is not None:
        gpu = data()["gpuUtilization"]
        key, value = metric.dimension
        config["agent"] = {"metrics_collection_interval": gpu["collectionIntervalSeconds"], "omit_hostname": True}
        config["metrics"] = {
            "namespace": metric.namespace,
            # one series across every GPU of every node: what target tracking averages
            "aggregation_dimensions": [[key]],
            "metrics_collected": {
                "nvidia_gpu": {"measurement": [gpu["measurement"]], "append_dimensions": {key: value}},
            },
        }
    if collect:
        config["logs"] = {"logs_collected": {"files": {"collect_list": collect}}}
    return json.dumps(config, indent=2, sort_keys=True) + "\n"


def agent_part(metric: GpuMetric | None, collect: list[dict[str, str]] | None = None, group: str = "") -> Part:
    """The agent's part (empty with neither the metric nor logs): installed once, restarted with this config."""
    if metric is None and not collect:
        return Part("cloudwatch-agent")
    agent = data()["agent"]
    what = [f"publishes {metric.name} to CloudWatch namespace {metric.namespace}"] if metric else []
    if collect:
        what.append(f"ships {len(collect)} log files to CloudWatch Logs {group}")
    return service_part(
        "cloudwatch-agent",
        script_text=script("aws_cloudwatch_agent.sh"),
        env={
            "AGENT_URL": agent["url"],
            "AGENT_CTL": agent["ctl"],
            "AGENT_CONFIG": AGENT_CONFIG,
            "AGENT_PACKAGE": agent["package"],
        },
        unit=oneshot_unit(
            "gpu-cluster: CloudWatch agent for the GPU utilisation metric"
            if not collect
            else "gpu-cluster: CloudWatch agent for the node's logs"
            + (" and the GPU utilisation metric" if metric else ""),
            name="cloudwatch-agent",
            after=("network-online.target",),
            wants=("network-online.target",),
        ),
        summary=f"{' and '.join(what)} (CloudWatch agent).",
        extra_files=(BootFile(AGENT_CONFIG, agent_config(metric, collect)),),
        no_block=True,
    )


def _queue(spec: ClusterSpec, queue: str) -> QueueMetric:
    q = data()["queueDepth"]
    create = queue == "auto"
    return QueueMetric(
        create=create,
        queue_name=None if create else queue.rsplit(":", 1)[1],
        queue_arn=None if create else queue,
        namespace=q["namespace"],
        metric_name=q["metricName"],
        statistic=q["statistic"],
        group_namespace=q["groupNamespace"],
        group_metric=q["groupMetric"],
        group_statistic=q["groupStatistic"],
        expression=q["expression"],
    )


def _problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    k = f"{CLUSTER_KEY}."
    if spec.spot_fallback == "onDemand":
        yield ConfigError(
            f"{k}spot.fallback",
            "onDemand is not available on AWS: EC2 Auto Scaling has no Spot-to-On-Demand fallback "
            "(catalog/scaling/aws.yaml spot.fallbackSource); use none with onDemandBase for an On-Demand floor",
        )
    if spec.kubernetes is not None and spec.spot_on_demand_base:
        yield ConfigError(
            f"{k}spot.onDemandBase",
            "not built for scheduler kubernetes on AWS (an EKS node group has one capacity type); remove it",
        )
    scaling = spec.scaling
    queue = (scaling.queue or "auto") if scaling is not None and scaling.metric == "queueDepth" else "auto"
    if queue != "auto" and not re.fullmatch(data()["queueDepth"]["queuePattern"], queue):
        yield ConfigError(
            f"{k}scaling.queue",
            f"got {queue!r}; allowed: auto (the cluster's own SQS queue) or an SQS queue ARN "
            "(arn:aws:sqs:<region>:<account>:<name>)",
        )
    if scaling is not None and scaling.metric == "gpuUtilization":
        if spec.network.egress == "none":
            yield ConfigError(
                f"{k}network.egress",
                "none, but scaling.metric gpuUtilization needs the nodes to download the CloudWatch agent and "
                "reach CloudWatch; use egress nat or another scaling.metric",
            )
        if spec.instance.gpu_vendor != "nvidia":
            yield ConfigError(f"{k}scaling.metric", "gpuUtilization reads NVIDIA GPUs only (nvidia_gpu)")
        if spec.min_nodes == 0 and not any(e.nodes for e in scaling.schedule):
            yield ConfigError(
                f"{k}minNodes",
                "0 with scaling.metric gpuUtilization and no schedule entry above 0: an empty group publishes no GPU "
                "metric, so target tracking could never scale it out again; set minNodes to 1 or more, or add a "
                "schedule entry that brings nodes back (catalog/scaling/aws.yaml scaleToZeroSource)",
            )


def plan(spec: ClusterSpec) -> AwsScaling | None:
    """The fleet's scaling, or None when the cluster uses none of it. Refusals are keyed, before any resource."""
    if not elastic(spec):
        return None
    refuse(_problems(spec))
    if spec.kubernetes is not None:
        # EKS: the Cluster Autoscaler moves the GPU node group between minNodes and maxNodes (layout.aws.kubernetes)
        return None
    scaling = spec.scaling
    metric = scaling.metric if scaling else None
    gpu = None
    if scaling is not None and metric == "gpuUtilization":
        g = data()["gpuUtilization"]
        gpu = GpuMetric(g["namespace"], g["metricName"], (g["dimension"], spec.name), g["statistic"])
    queue = _queue(spec, scaling.queue or "") if metric == "queueDepth" and scaling else None
    schedule = tuple(
        ScheduledAction(f"{spec.name}-schedule-{i}", entry.cron, entry.nodes)
        for i, entry in enumerate(scaling.schedule if scaling else ())
    )
    s = data()["spot"]
    spot = (
        SpotMix(spec.spot_on_demand_base, s["allocationStrategy"], bool(s["capacityRebalance"])) if spec.spot else None
    )
    return AwsScaling(
        min_size=spec.min_nodes,
        metric=metric,
        target=scaling.target if scaling else None,
        gpu=gpu,
        queue=queue,
        schedule=schedule,
        time_zone=scaling.time_zone if scaling else "UTC",
        warmup_seconds=scaling.scale_in_cooldown_seconds if scaling else 0,
        spot=spot,
    )
