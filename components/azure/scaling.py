"""Elastic fleets: the scale set's autoscale setting (a GPU custom metric or a Service Bus queue's active messages,
schedules as recurring profiles), the cluster's own queue, and the nodes' scoped roles. Decided in
layout/azure/scaling.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..layout.azure.scaling import AzureElastic, Profile, Rule
from ..resources import invoke_options
from .context import Context
from .identity import Identity, role_assignment


@dataclass
class Scaling:
    setting: azure.monitor.AutoscaleSetting
    namespace: azure.servicebus.Namespace | None = None
    queue: azure.servicebus.Queue | None = None
    assignments: list[azure.authorization.RoleAssignment] = field(default_factory=list)

    def output(self, ctx: Context) -> dict[str, Any]:
        spec = ctx.layout.spec
        out: dict[str, Any] = {
            "minNodes": spec.min_nodes,
            "maxNodes": spec.max_nodes,
            "metric": spec.scaling.metric if spec.scaling else "none",
            "autoscaleSetting": self.setting.name,
        }
        elastic = ctx.layout.elastic
        if self.queue is not None:
            out["queue"] = self.queue.id
        elif elastic is not None and elastic.queue is not None and elastic.queue.namespace_id is not None:
            out["queue"] = f"{elastic.queue.namespace_id}/queues/{elastic.queue.queue}"
        return out


def _trigger(rule: Rule, elastic: AzureElastic, uri: pulumi.Input[str]) -> azure.monitor.ScaleRuleArgs:
    return azure.monitor.ScaleRuleArgs(
        metric_trigger=azure.monitor.MetricTriggerArgs(
            metric_name=rule.metric_name,
            metric_namespace=rule.metric_namespace,
            metric_resource_uri=uri,
            operator=rule.operator,
            statistic="Average",
            threshold=rule.threshold,
            time_aggregation="Average",
            time_grain=elastic.time_grain,
            time_window=elastic.time_window,
            divide_per_instance=rule.divide_per_instance,
            dimensions=[
                azure.monitor.ScaleRuleMetricDimensionArgs(
                    dimension_name=rule.dimension[0], operator="Equals", values=[rule.dimension[1]]
                )
            ]
            if rule.dimension
            else None,
        ),
        scale_action=azure.monitor.ScaleActionArgs(
            direction=rule.direction, type="ChangeCount", value="1", cooldown=rule.cooldown
        ),
    )


def _profile(profile: Profile, rules: list[azure.monitor.ScaleRuleArgs]) -> azure.monitor.AutoscaleProfileArgs:
    rec = profile.recurrence
    return azure.monitor.AutoscaleProfileArgs(
        name=profile.name,
        capacity=azure.monitor.ScaleCapacityArgs(
            minimum=str(profile.minimum), maximum=str(profile.maximum), default=str(profile.default)
        ),
        rules=rules if profile.rules else [],
        recurrence=azure.monitor.RecurrenceArgs(
            frequency="Week",
            schedule=azure.monitor.RecurrentScheduleArgs(
                days=list(rec.days), hours=list(rec.hours), minutes=list(rec.minutes), time_zone=rec.time_zone
            ),
        )
        if rec is not None
        else None,
    )


def build(ctx: Context, scale_set: azure.compute.VirtualMachineScaleSet | None, identity: Identity) -> Scaling | None:
    elastic = ctx.layout.elastic
    if elastic is None or scale_set is None:
        return None
    assignments = []
    subscription = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component)).subscription_id
    principal = identity.principal_id or ""
    namespace = queue = None
    uri: pulumi.Input[str] = scale_set.id
    if elastic.queue is not None:
        if elastic.queue.auto:
            namespace = azure.servicebus.Namespace(
                f"{ctx.name}-sb",
                resource_group_name=ctx.resource_group_name,
                location=ctx.location,
                sku=azure.servicebus.SBSkuArgs(name="Standard", tier="Standard"),
                tags=ctx.tagged("sb"),
                opts=ctx.opts,
            )
            queue = azure.servicebus.Queue(
                f"{ctx.name}-sb-queue",
                resource_group_name=ctx.resource_group_name,
                namespace_name=namespace.name,
                queue_name=elastic.queue.queue,
                opts=ctx.opts,
            )
            uri = namespace.id
            # the nodes take their work from this one queue
            assignments.append(
                role_assignment(
                    ctx, "sb-receiver", elastic.queue.receiver_role, principal, queue.id, subscription, "receive"
                )
            )
        else:
            uri = str(elastic.queue.namespace_id)
    if elastic.publisher_role is not None:
        # the GPU metric is published on the scale set, and only there
        assignments.append(
            role_assignment(
                ctx, "metrics-publisher", elastic.publisher_role, principal, scale_set.id, subscription, "GPU metric"
            )
        )
    rules = [_trigger(rule, elastic, uri) for rule in elastic.rules]
    setting = azure.monitor.AutoscaleSetting(
        f"{ctx.name}-autoscale",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        target_resource_uri=scale_set.id,
        enabled=True,
        profiles=[_profile(p, rules) for p in elastic.profiles],
        tags=ctx.tagged("autoscale"),
        opts=ctx.opts,
    )
    return Scaling(setting, namespace, queue, assignments)
