"""Elastic fleets: the MIG autoscaler (a Cloud Monitoring metric, Pub/Sub backlog, schedules), the cluster's own
queue, and the on-demand floor of a spot mix (a second group of standard VMs). Decided in layout/gcp/scaling.py."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout
from ..layout.gcp.scaling import Autoscaler, Queue
from .identity import Identity
from .network import Network
from .nodes import Nodes, _template, update_policy


@dataclass
class Scaling:
    autoscaler: gcp.compute.Autoscaler | None = None
    topic: gcp.pubsub.Topic | None = None
    subscription: gcp.pubsub.Subscription | None = None
    floor_group: gcp.compute.InstanceGroupManager | None = None

    def output(self, layout: GcpLayout) -> dict[str, Any]:
        elastic = layout.elastic
        assert elastic is not None
        spec = layout.spec
        scaler = elastic.autoscaler
        out: dict[str, Any] = {
            "minNodes": spec.min_nodes,
            "maxNodes": spec.max_nodes,
            "metric": spec.scaling.metric if spec.scaling else "none",
            "onDemandBase": elastic.floor,
            "onDemandGroup": self.floor_group.name if self.floor_group else None,
        }
        if scaler is not None and scaler.metric is not None:
            out["monitoringFilter"] = scaler.metric.filter
        if self.subscription is not None:
            out["queue"] = self.subscription.id
        elif scaler is not None and scaler.queue is not None:
            out["queue"] = scaler.queue.subscription
        return out


def _policy(scaler: Autoscaler) -> gcp.compute.AutoscalerAutoscalingPolicyArgs:
    metric = scaler.metric
    return gcp.compute.AutoscalerAutoscalingPolicyArgs(
        min_replicas=scaler.min_replicas,
        max_replicas=scaler.max_replicas,
        mode="ON",
        metrics=[
            # per-group metrics: the summed value over single_instance_assignment is the number of VMs wanted
            gcp.compute.AutoscalerAutoscalingPolicyMetricArgs(
                name=metric.name, filter=metric.filter, single_instance_assignment=metric.single_instance_assignment
            )
        ]
        if metric is not None
        else None,
        scaling_schedules=[
            gcp.compute.AutoscalerAutoscalingPolicyScalingScheduleArgs(
                name=s.name,
                schedule=s.cron,
                duration_sec=s.duration_sec,
                min_required_replicas=s.min_required_replicas,
                time_zone=s.time_zone,
                description=f"gpu-cluster: at least {s.min_required_replicas} nodes from {s.cron!r}",
            )
            for s in scaler.schedules
        ]
        or None,
        load_balancing_utilization=gcp.compute.AutoscalerAutoscalingPolicyLoadBalancingUtilizationArgs(
            target=scaler.load_balancing_target
        )
        if scaler.load_balancing_target is not None
        else None,
        # scaleInCooldownSeconds: the autoscaler removes at most one VM per window
        scale_in_control=gcp.compute.AutoscalerAutoscalingPolicyScaleInControlArgs(
            max_scaled_in_replicas=gcp.compute.AutoscalerAutoscalingPolicyScaleInControlMaxScaledInReplicasArgs(
                fixed=1
            ),
            time_window_sec=scaler.scale_in_window_sec,
        )
        if scaler.scale_in_window_sec
        else None,
    )


def _queue(
    name: str, layout: GcpLayout, queue: Queue, identity: Identity, child: pulumi.ResourceOptions
) -> tuple[gcp.pubsub.Topic, gcp.pubsub.Subscription]:
    labels = dict(layout.labels)
    project = layout.project or None
    topic = gcp.pubsub.Topic(f"{name}-queue", name=queue.topic, project=project, labels=labels, opts=child)
    subscription = gcp.pubsub.Subscription(
        f"{name}-queue-sub",
        name=queue.subscription,
        topic=topic.id,
        project=project,
        ack_deadline_seconds=queue.ack_deadline_seconds,
        labels=labels,
        opts=child,
    )
    # the nodes pull their work from this one subscription, nothing else of Pub/Sub
    gcp.pubsub.SubscriptionIAMMember(
        f"{name}-queue-subscriber",
        subscription=subscription.name,
        project=project,
        role=queue.subscriber_role,
        member=identity.account.member
        if identity.account is not None
        else pulumi.Output.concat("serviceAccount:", identity.email),
        opts=child,
    )
    return topic, subscription


def _floor_group(
    name: str,
    layout: GcpLayout,
    net: Network,
    identity: Identity,
    nodes: Nodes,
    child: pulumi.ResourceOptions,
    health_check: gcp.compute.HealthCheck | None,
    mount_source: pulumi.Input[str] | None,
    head_address: pulumi.Input[str] | None,
) -> gcp.compute.InstanceGroupManager:
    """spot.onDemandBase: the same node on STANDARD provisioning, in its own fixed-size group."""
    assert layout.elastic is not None
    standard = replace(
        layout.scheduling,
        provisioning_model="STANDARD",
        preemptible=False,
        automatic_restart=True,
        instance_termination_action=None,
    )
    # no compact policy on the floor: its vmCount is the spot group's
    template = _template(
        f"{name}-ondemand",
        replace(layout, scheduling=standard),
        net,
        nodes.image_id,
        identity,
        None,
        child,
        mount_source,
        head_address,
        nodes.key,
    )
    return gcp.compute.InstanceGroupManager(
        f"{name}-ondemand-mig",
        base_instance_name=f"{layout.spec.name}-od",
        zone=layout.zone,
        target_size=layout.elastic.floor,
        versions=[
            gcp.compute.InstanceGroupManagerVersionArgs(name="primary", instance_template=template.self_link_unique)
        ],
        wait_for_instances=False,
        update_policy=update_policy(layout),
        auto_healing_policies=gcp.compute.InstanceGroupManagerAutoHealingPoliciesArgs(
            health_check=health_check.id, initial_delay_sec=layout.health_probe.initial_delay_sec
        )
        if health_check is not None and layout.health_probe is not None
        else None,
        opts=child,
    )


def _signals(layout: GcpLayout) -> str:
    """What moves the group, for the autoscaler's description (an existing stack's stays its metric alone)."""
    spec = layout.spec
    metric = spec.scaling.metric if spec.scaling else ""
    if spec.serve is None or spec.serve.requests_per_node is None:
        return metric
    rate = f"request rate ({spec.serve.requests_per_node}/s per node)"
    return f"{metric} and {rate}" if metric else rate


def build_scaling(
    name: str,
    layout: GcpLayout,
    net: Network,
    identity: Identity,
    nodes: Nodes,
    parent: pulumi.Resource,
    health_check: gcp.compute.HealthCheck | None = None,
    mount_source: pulumi.Input[str] | None = None,
    head_address: pulumi.Input[str] | None = None,
) -> Scaling | None:
    elastic = layout.elastic
    if elastic is None or nodes.group is None:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    out = Scaling()
    if elastic.floor:
        out.floor_group = _floor_group(
            name, layout, net, identity, nodes, child, health_check, mount_source, head_address
        )
    scaler = elastic.autoscaler
    if scaler is None:
        return out
    if scaler.queue is not None and scaler.queue.auto:
        out.topic, out.subscription = _queue(name, layout, scaler.queue, identity, child)
    out.autoscaler = gcp.compute.Autoscaler(
        f"{name}-autoscaler",
        zone=layout.zone,
        project=layout.project or None,
        target=nodes.group.id,
        autoscaling_policy=_policy(scaler),
        description=f"gpu-cluster {layout.spec.name}: {_signals(layout)}",
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[out.subscription] if out.subscription else None),
    )
    return out
