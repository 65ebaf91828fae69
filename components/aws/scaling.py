"""Elastic fleets: the target-tracking policy, the scheduled actions and the cluster's SQS queue of `AwsScaling`.

The Auto Scaling group itself (bounds, Spot mix, capacity rebalancing, group metrics) is built in `nodes`; the
node role's scoped PutMetricData grant in `identity`. Everything here is a child of `CloudCluster`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

import pulumi
import pulumi_aws as aws

from ..layout.aws import AwsScaling, QueueMetric
from .naming import Context

_TT = aws.autoscaling
_Stat: TypeAlias = aws.autoscaling.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricMetricStatArgs
_Custom: TypeAlias = aws.autoscaling.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationArgs


@dataclass(frozen=True)
class Scaling:
    policy: aws.autoscaling.Policy | None
    schedules: tuple[aws.autoscaling.Schedule, ...]
    queue: aws.sqs.Queue | None  # queue auto: the cluster's own

    def output(self, scaling: AwsScaling) -> dict[str, Any]:
        """`scaling`: what moves the group, for the stack outputs."""
        out: dict[str, Any] = {"metric": scaling.metric, "target": scaling.target, "minNodes": scaling.min_size}
        if scaling.gpu is not None:
            out["cloudwatch"] = {"namespace": scaling.gpu.namespace, "metric": scaling.gpu.name}
        if scaling.queue is not None:
            out["queue"] = self.queue.url if self.queue is not None else scaling.queue.queue_arn
        if scaling.schedule:
            out["schedule"] = [
                {"cron": a.cron, "nodes": a.nodes, "timeZone": scaling.time_zone} for a in scaling.schedule
            ]
        return out


def build_queue(ctx: Context, scaling: AwsScaling) -> aws.sqs.Queue | None:
    """queue auto: an SQS queue of the cluster's own, encrypted with SQS-managed keys."""
    if scaling.queue is None or not scaling.queue.create:
        return None
    return aws.sqs.Queue(
        f"{ctx.name}-queue",
        sqs_managed_sse_enabled=True,
        tags=ctx.tagged("queue"),
        opts=ctx.child,
    )


def _stat(namespace: str, metric: str, stat: str, dimension: tuple[str, pulumi.Input[str]]) -> _Stat:
    return _TT.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricMetricStatArgs(
        metric=_TT.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricMetricStatMetricArgs(
            namespace=namespace,
            metric_name=metric,
            dimensions=[
                _TT.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricMetricStatMetricDimensionArgs(
                    name=dimension[0], value=dimension[1]
                )
            ],
        ),
        stat=stat,
    )


def _backlog(q: QueueMetric, queue_name: pulumi.Input[str], group: aws.autoscaling.Group) -> _Custom:
    """Backlog per instance (EC2 Auto Scaling User Guide, as-using-sqs-queue): m1 / m2 as metric math."""
    metric = _TT.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricArgs
    return _TT.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationArgs(
        metrics=[
            metric(
                id="m1",
                label="messages waiting in the queue",
                metric_stat=_stat(q.namespace, q.metric_name, q.statistic, ("QueueName", queue_name)),
                return_data=False,
            ),
            metric(
                id="m2",
                label="in-service instances of the group",
                metric_stat=_stat(
                    q.group_namespace, q.group_metric, q.group_statistic, ("AutoScalingGroupName", group.name)
                ),
                return_data=False,
            ),
            metric(id="e1", label="backlog per instance", expression=q.expression, return_data=True),
        ],
    )


def build_scaling(
    ctx: Context,
    group: aws.autoscaling.Group,
    queue: aws.sqs.Queue | None,
    drain_hook: aws.autoscaling.LifecycleHook | None = None,
) -> Scaling | None:
    scaling = ctx.layout.scaling
    if scaling is None:
        return None
    # nothing scales the group in before its drain hook exists (a scale-in would skip the drain)
    opts = (
        pulumi.ResourceOptions.merge(ctx.child, pulumi.ResourceOptions(depends_on=[drain_hook]))
        if drain_hook is not None
        else ctx.child
    )
    policy = None
    spec: _Custom | None = None
    if scaling.gpu is not None:
        gpu = scaling.gpu
        spec = _TT.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationArgs(
            namespace=gpu.namespace,
            metric_name=gpu.name,
            statistic=gpu.statistic,
            metric_dimensions=[
                _TT.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricDimensionArgs(
                    name=gpu.dimension[0], value=gpu.dimension[1]
                )
            ],
        )
    elif scaling.queue is not None:
        name: pulumi.Input[str] = queue.name if queue is not None else (scaling.queue.queue_name or "")
        spec = _backlog(scaling.queue, name, group)
    if spec is not None and scaling.target is not None:
        policy = aws.autoscaling.Policy(
            f"{ctx.name}-scaling-{'gpu' if scaling.gpu else 'queue'}",
            autoscaling_group_name=group.name,
            policy_type="TargetTrackingScaling",
            # a node launching (driver, images) counts neither for the metric nor against scale-in until then
            estimated_instance_warmup=scaling.warmup_seconds,
            target_tracking_configuration=_TT.PolicyTargetTrackingConfigurationArgs(
                target_value=scaling.target,
                customized_metric_specification=spec,
            ),
            opts=opts,
        )
    schedules = tuple(
        aws.autoscaling.Schedule(
            f"{ctx.name}-schedule-{i}",
            scheduled_action_name=action.name,
            autoscaling_group_name=group.name,
            recurrence=action.cron,
            time_zone=scaling.time_zone,
            desired_capacity=action.nodes,
            # the entry's count is also the floor until the next entry: target tracking on an idle fleet cannot
            # take it below what the schedule asked for (and a night entry of 0 lets it reach zero); -1: max stays
            min_size=action.nodes,
            max_size=-1,
            opts=opts,
        )
        for i, action in enumerate(scaling.schedule)
    )
    return Scaling(policy, schedules, queue)


def build_request_policy(
    ctx: Context,
    group: aws.autoscaling.Group,
    load_balancer: aws.lb.LoadBalancer,
    target_group: aws.lb.TargetGroup,
    attachment: aws.autoscaling.Attachment,
    drain_hook: aws.autoscaling.LifecycleHook | None = None,
) -> aws.autoscaling.Policy | None:
    """serve.requestsPerNode: target tracking on the Application Load Balancer's requests per target, beside the
    fleet's own policy (EC2 Auto Scaling takes the largest capacity any policy asks for)."""
    serve = ctx.layout.serve
    app = serve.application if serve is not None else None
    if app is None:
        return None
    # the resource label names a target group attached to the group (botocore PredefinedMetricSpecification)
    after: list[pulumi.Resource] = [attachment, *([drain_hook] if drain_hook is not None else [])]
    label = pulumi.Output.all(load_balancer.arn_suffix, target_group.arn_suffix).apply(lambda parts: "/".join(parts))
    return aws.autoscaling.Policy(
        f"{ctx.name}-scaling-requests",
        autoscaling_group_name=group.name,
        policy_type="TargetTrackingScaling",
        estimated_instance_warmup=app.warmup_seconds,
        target_tracking_configuration=_TT.PolicyTargetTrackingConfigurationArgs(
            target_value=app.target_value,
            predefined_metric_specification=_TT.PolicyTargetTrackingConfigurationPredefinedMetricSpecificationArgs(
                predefined_metric_type=app.metric,
                resource_label=label,
            ),
        ),
        opts=pulumi.ResourceOptions.merge(ctx.child, pulumi.ResourceOptions(depends_on=after)),
    )
