"""monitoring.prometheus managed on Alibaba Cloud (layout/alicloud/monitoring.py `AlicloudManaged` decides it): the
ARMS ECS environment bound to the cluster's VPC, the custom job that federates the login node's Prometheus, one ARMS
alert rule per rule of bootstrap/monitoring.py on the environment's Prometheus instance, and with monitoring.notify
the email contacts, their contact group and the dispatch rule the alert rules name.

The environment's collector runs in the VPC (CreateEnvironment takes the VPC and no narrower placement), so the login
node's group admits the Prometheus port from the VPC's CIDR only. No AccessKey and no RAM grant: ARMS pulls from
inside the VPC, the login node pushes nothing.

With scheduler kubernetes (layout/alicloud/ack_monitoring.py `AckArms`): an ARMS container (CS) environment bound to
the ACK cluster instead, its in-cluster Prometheus agent (the metric-agent feature) and the PodMonitor that has it
scrape NVIDIA's DCGM exporter; the rules and the notify path are the same builders'.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud.ack_monitoring import AckArms
from ..layout.alicloud.monitoring import LOGIN_PLACEHOLDER, AlicloudManaged, ArmsNotify, ArmsRule
from ..resources import invoke_options
from .context import Context
from .cpu_node import CpuNode
from .kubernetes import Kubernetes
from .network import ingress_rule

PROMETHEUS_RULE_TYPE = "101"  # CreatePrometheusAlertRule Type: "101: Prometheus Service alert" (99: custom)


@dataclass(frozen=True)
class Arms:
    environment: alicloud.arms.Environment
    prometheus_id: pulumi.Output[str]  # the environment's Prometheus instance (the alert rules' cluster_id)
    federate: alicloud.arms.EnvCustomJob | None  # VM and Slurm: the login node's /federate
    rules: list[alicloud.arms.PrometheusAlertRule]
    dispatch: alicloud.arms.DispatchRule | None
    agent: alicloud.arms.EnvFeature | None = None  # ACK: the in-cluster Prometheus agent
    pod_monitor: alicloud.arms.EnvPodMonitor | None = None  # ACK: the DCGM exporter's pods


def build(ctx: Context, login: CpuNode | None, ack: Kubernetes | None = None) -> Arms | None:
    if ack is not None:
        return build_ack(ctx, ack)
    plan = ctx.layout.monitoring
    managed = plan.managed if plan is not None else None
    if managed is None or login is None:
        return None
    port = managed.federate_port
    ingress_rule(
        f"{ctx.name}-login-sg-federate-from-arms",
        login.security_group.id,
        f"{port}/{port}",
        "the ARMS environment's collector (in the VPC) federates the login node's Prometheus",
        ctx.child,
        cidr=managed.vpc_cidr,
    )
    environment = alicloud.arms.Environment(
        f"{ctx.name}-arms",
        environment_type=managed.environment_type,
        environment_sub_type=managed.environment_sub_type,
        environment_name=managed.environment_name,
        bind_resource_id=ctx.network.vpc.id,
        tags=dict(ctx.tags),
        opts=ctx.child,
    )
    prometheus_id = _prometheus_id(ctx, environment)
    job = managed.federate_job
    federate = alicloud.arms.EnvCustomJob(
        f"{ctx.name}-arms-federate",
        environment_id=environment.id,
        env_custom_job_name=managed.federate_job_name,
        status="run",
        config_yaml=login.instance.private_ip.apply(lambda ip: job.replace(LOGIN_PLACEHOLDER, ip)),
        aliyun_lang="en",
        opts=ctx.child,
    )
    dispatch = _dispatch(ctx, managed.notify) if managed.notify else None
    return Arms(environment, prometheus_id, federate, _rules(ctx, managed.rules, prometheus_id, dispatch), dispatch)


def build_ack(ctx: Context, ack: Kubernetes) -> Arms | None:
    """ACK: the container environment bound to the cluster, its agent once the pools can run it, the DCGM
    PodMonitor once the agent (and its PodMonitor CRD) is there, the rules and the notify path."""
    plan = ctx.layout.kubernetes.arms if ctx.layout.kubernetes else None
    if plan is None:
        return None
    environment = alicloud.arms.Environment(
        f"{ctx.name}-arms",
        environment_type=plan.environment_type,
        environment_sub_type=plan.environment_sub_type,
        environment_name=plan.environment_name,
        bind_resource_id=ack.cluster.id,
        tags=dict(ctx.tags),
        opts=ctx.child,
    )
    agent = alicloud.arms.EnvFeature(
        f"{ctx.name}-arms-agent",
        environment_id=environment.id,
        env_feature_name=plan.feature,
        feature_version=plan.feature_version,
        opts=pulumi.ResourceOptions(parent=ctx.parent, depends_on=[ack.system_pool]),
    )
    monitor = alicloud.arms.EnvPodMonitor(
        f"{ctx.name}-arms-dcgm",
        environment_id=environment.id,
        config_yaml=plan.pod_monitor,
        aliyun_lang="en",
        opts=pulumi.ResourceOptions(parent=ctx.parent, depends_on=[agent]),
    )
    prometheus_id = _prometheus_id(ctx, environment)
    dispatch = _dispatch(ctx, plan.notify) if plan.notify else None
    rules = _rules(ctx, plan.rules, prometheus_id, dispatch)
    return Arms(environment, prometheus_id, None, rules, dispatch, agent, monitor)


def _prometheus_id(ctx: Context, environment: alicloud.arms.Environment) -> pulumi.Output[str]:
    """The environment's Prometheus instance, which InitEnvironment created (the alert rules' cluster_id)."""
    found = alicloud.arms.get_environments_output(ids=[environment.id], opts=invoke_options(ctx.parent))
    instance: pulumi.Output[str] = found.environments.apply(lambda envs: str(envs[0].prometheus_instance_id))
    return instance


def _rules(
    ctx: Context,
    rules: tuple[ArmsRule, ...],
    prometheus_id: pulumi.Output[str],
    dispatch: alicloud.arms.DispatchRule | None,
) -> list[alicloud.arms.PrometheusAlertRule]:
    """One ARMS alert rule per rule; with notify each names the dispatch rule (else ARMS' alert center shows it)."""
    return [
        alicloud.arms.PrometheusAlertRule(
            f"{ctx.name}-arms-rule-{rule.alert}",
            cluster_id=prometheus_id,
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
        for rule in rules
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
        "environment": arms.environment.id,
        "instance": arms.prometheus_id,
        "collection": "the ARMS environment's collector federates the login node's Prometheus (no key, no grant)",
        "rules": [r.name for r in managed.rules],
        "dashboards": managed.grafana_note,
        "notify": list(managed.notify.emails) if managed.notify else [],
    }


def ack_output(plan: AckArms, arms: Arms | None) -> dict[str, pulumi.Input[object]]:
    """The `monitoring` output on ACK: the instance, the in-cluster agent, what it scrapes, the rules."""
    if arms is None:
        return {"prometheus": "none", "grafana": None}
    return {
        "prometheus": "managed",
        "service": plan.service,
        "environment": arms.environment.id,
        "instance": arms.prometheus_id,
        "host": f"the ACK cluster (ARMS' Prometheus agent, {plan.feature} {plan.feature_version})",
        "collection": f"the agent scrapes NVIDIA's DCGM exporter through the PodMonitor {plan.pod_monitor_name}",
        "rules": [r.name for r in plan.rules],
        "grafana": None,
        "grafanaNote": "dashboards: the ARMS console's shared Grafana (no Grafana in the cluster or on a login node)",
        "notify": list(plan.notify.emails) if plan.notify else [],
    }
