"""monitoring.prometheus managed on Alibaba Cloud (layout/alicloud/monitoring.py `AlicloudManaged` decides it): the
ARMS Prometheus instance for ECS in the cluster's VPC, its collector's own security group, the custom job that
federates the login node's Prometheus, one ARMS alert rule per rule of bootstrap/monitoring.py, and with
monitoring.notify the email contacts, their contact group and the dispatch rule the alert rules name.

The collector sits in the nodes' vSwitch with a security group of its own, and the login node's group admits it on
the Prometheus port only: nothing else in the VPC reaches the login node's Prometheus. No AccessKey and no RAM grant:
ARMS pulls from inside the VPC, the login node pushes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud.monitoring import LOGIN_PLACEHOLDER, AlicloudManaged, ArmsNotify
from .context import Context
from .cpu_node import CpuNode
from .network import ingress_rule

CUSTOM_JOB = "customJob"  # arms.PrometheusMonitoring type
PROMETHEUS_RULE_TYPE = "101"  # CreatePrometheusAlertRule Type: "101: Prometheus 告警" (99: custom)


@dataclass(frozen=True)
class Arms:
    instance: alicloud.arms.Prometheus
    collector_group: alicloud.ecs.SecurityGroup
    federate: alicloud.arms.PrometheusMonitoring
    rules: list[alicloud.arms.PrometheusAlertRule]
    dispatch: alicloud.arms.DispatchRule | None


def build(ctx: Context, login: CpuNode | None) -> Arms | None:
    plan = ctx.layout.monitoring
    managed = plan.managed if plan is not None else None
    if managed is None or login is None:
        return None
    spec = ctx.layout.spec
    group = alicloud.ecs.SecurityGroup(
        f"{ctx.name}-arms-sg",
        vpc_id=ctx.network.vpc.id,
        security_group_name=f"{spec.name}-arms-collector",
        description=f"gpu-cluster {spec.name}: the ARMS Prometheus collector (federates the login node)",
        tags=dict(ctx.tags),
        opts=ctx.child,
    )
    port = managed.federate_port
    ingress_rule(
        f"{ctx.name}-login-sg-federate-from-arms",
        login.security_group.id,
        f"{port}/{port}",
        "the ARMS collector federates the login node's Prometheus",
        ctx.child,
        source_group_id=group.id,
    )
    instance = alicloud.arms.Prometheus(
        f"{ctx.name}-arms",
        cluster_type=managed.cluster_type,
        cluster_name=managed.cluster_name,
        grafana_instance_id=managed.grafana_instance,
        payment_type=managed.payment_type,
        vpc_id=ctx.network.vpc.id,
        vswitch_id=ctx.network.vswitch.id,
        security_group_id=group.id,
        tags=dict(ctx.tags),
        opts=ctx.child,
    )
    job = managed.federate_job
    federate = alicloud.arms.PrometheusMonitoring(
        f"{ctx.name}-arms-federate",
        cluster_id=instance.cluster_id,
        type=CUSTOM_JOB,
        status="run",
        config_yaml=login.instance.private_ip.apply(lambda ip: job.replace(LOGIN_PLACEHOLDER, ip)),
        opts=ctx.child,
    )
    dispatch = _dispatch(ctx, managed.notify) if managed.notify else None
    return Arms(instance, group, federate, _rules(ctx, managed, instance, dispatch), dispatch)


def _rules(
    ctx: Context,
    managed: AlicloudManaged,
    instance: alicloud.arms.Prometheus,
    dispatch: alicloud.arms.DispatchRule | None,
) -> list[alicloud.arms.PrometheusAlertRule]:
    """One ARMS alert rule per rule; with notify each names the dispatch rule (else ARMS' alert center shows it)."""
    return [
        alicloud.arms.PrometheusAlertRule(
            f"{ctx.name}-arms-rule-{rule.alert}",
            cluster_id=instance.cluster_id,
            prometheus_alert_rule_name=rule.name,
            expression=rule.expression,
            duration=rule.duration,
            message=rule.message,
            type=PROMETHEUS_RULE_TYPE,
            labels=[alicloud.arms.PrometheusAlertRuleLabelArgs(name=k, value=v) for k, v in rule.labels],
            annotations=[alicloud.arms.PrometheusAlertRuleAnnotationArgs(name=k, value=v) for k, v in rule.annotations],
            notify_type="DISPATCH_RULE" if dispatch is not None else "ALERT_MANAGER",
            dispatch_rule_id=dispatch.id if dispatch is not None else None,
            opts=ctx.child,
        )
        for rule in managed.rules
    ]


def _dispatch(ctx: Context, notify: ArmsNotify) -> alicloud.arms.DispatchRule:
    """One email contact per address, their group, and the dispatch rule mailing it this cluster's alerts."""
    contacts = [
        alicloud.arms.AlertContact(
            f"{ctx.name}-arms-contact-{i}",
            alert_contact_name=f"{notify.group_name}-{i}"[:64],
            email=email,
            opts=ctx.child,
        )
        for i, email in enumerate(notify.emails)
    ]
    group = alicloud.arms.AlertContactGroup(
        f"{ctx.name}-arms-contacts",
        alert_contact_group_name=notify.group_name,
        contact_ids=[c.id for c in contacts],
        opts=ctx.child,
    )
    Arg = alicloud.arms
    return alicloud.arms.DispatchRule(
        f"{ctx.name}-arms-dispatch",
        dispatch_rule_name=notify.rule_name,
        dispatch_type="CREATE_ALERT",
        is_recover=True,
        group_rules=[
            Arg.DispatchRuleGroupRuleArgs(
                group_wait_time=notify.group_wait_seconds,
                group_interval=notify.group_interval_seconds,
                repeat_interval=notify.repeat_interval_seconds,
                grouping_fields=["alertname"],
            )
        ],
        label_match_expression_grids=[
            Arg.DispatchRuleLabelMatchExpressionGridArgs(
                label_match_expression_groups=[
                    Arg.DispatchRuleLabelMatchExpressionGridLabelMatchExpressionGroupArgs(
                        label_match_expressions=[
                            Arg.DispatchRuleLabelMatchExpressionGridLabelMatchExpressionGroupLabelMatchExpressionArgs(
                                key="_aliyun_arms_alert_name", operator="re", value=notify.alert_name_regex
                            )
                        ]
                    )
                ]
            )
        ],
        notify_rules=[
            Arg.DispatchRuleNotifyRuleArgs(
                notify_channels=["email"],
                notify_start_time=notify.window[0],
                notify_end_time=notify.window[1],
                notify_objects=[
                    Arg.DispatchRuleNotifyRuleNotifyObjectArgs(
                        notify_object_id=group.id, notify_type="ARMS_CONTACT_GROUP", name=notify.group_name
                    )
                ],
            )
        ],
        opts=ctx.child,
    )


def output(managed: AlicloudManaged, arms: Arms | None) -> dict[str, pulumi.Input[object]]:
    """The `monitoring` output's managed part: the instance, how it gets the samples, where the dashboards are."""
    if arms is None:
        return {}
    return {
        "prometheus": "managed",
        "service": managed.service,
        "instance": arms.instance.cluster_id,
        "collection": "the ARMS collector federates the login node's Prometheus (no key, no grant on the nodes)",
        "rules": [r.name for r in managed.rules],
        "dashboards": managed.grafana_note,
        "notify": list(managed.notify.emails) if managed.notify else [],
    }
