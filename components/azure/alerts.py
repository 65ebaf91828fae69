"""Alerts to people (layout.alerts, decided in components/layout/azure/alerts.py): the Azure Monitor workspace the
login node's Prometheus remote-writes to (monitoring.notify, or prometheus managed: its agent), the publisher role on
its own data collection rule, the action group with the email receivers (notify only), and the Prometheus rule group
that fires it. On AKS (prometheus managed) the add-on writes instead (aks_metrics.py): no publisher grant, and the
rule group is scoped to the cluster too, so it is built after it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..layout.azure.alerts import AzureAlerts
from ..resources import invoke_options
from .context import Context
from .identity import Identity, role_assignment


@dataclass(frozen=True)
class Alerts:
    plan: AzureAlerts
    workspace: azure.monitor.AzureMonitorWorkspace
    action_group: azure.monitor.ActionGroup | None  # None: prometheus managed without notify
    rule_group: azure.alertsmanagement.PrometheusRuleGroup
    ingestion_url: pulumi.Output[str]
    query_url: pulumi.Output[str]  # the workspace's Prometheus query endpoint (managed: the login node's Grafana)

    def output(self) -> dict[str, Any] | None:
        if self.action_group is None:
            return None
        return {
            "service": "Azure Monitor action group (email)",
            "emails": list(self.plan.emails),
            "actionGroup": self.action_group.name,
            "rules": [r.alert for r in self.plan.rules],
            "evaluatedBy": "the Azure Monitor workspace's Prometheus rule group ("
            + (
                "AKS's managed Prometheus add-on writes to it)"
                if self.plan.aks
                else "the login node remote-writes to it)"
            ),
        }


def _part(resource_id: Any, index: int) -> str:
    """A segment of an ARM id (/subscriptions/S/resourceGroups/RG/providers/NS/TYPE/NAME: 4 the group, 8 the name)."""
    return str(resource_id).split("/")[index]


def workspace(ctx: Context) -> azure.monitor.AzureMonitorWorkspace:
    """The Azure Monitor workspace (AKS: built before the cluster, whose collection rule names it)."""
    return azure.monitor.AzureMonitorWorkspace(
        f"{ctx.name}-metrics",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        tags=ctx.tagged("metrics"),
        opts=ctx.opts,
    )


def build(
    ctx: Context,
    identity: Identity,
    built: azure.monitor.AzureMonitorWorkspace | None = None,
    cluster: azure.containerservice.ManagedCluster | None = None,
) -> Alerts | None:
    """`built`: the workspace when made already (AKS); `cluster`: AKS, whose data the rule group is scoped to."""
    plan = ctx.layout.alerts
    if plan is None:
        return None
    metrics = built if built is not None else workspace(ctx)
    if plan.aks:
        assert cluster is not None, "AKS: the rule group is scoped to the cluster"
        group = _action_group(ctx, plan)
        rules = _rule_group(ctx, plan, metrics, group, cluster)
        # the add-on writes through the cluster's own rule (components/azure/aks_metrics.py): no ingestion URL
        return Alerts(plan, metrics, group, rules, pulumi.Output.from_input(""), _query(metrics))
    return _with_remote_write(ctx, identity, plan, metrics)


def _query(metrics: azure.monitor.AzureMonitorWorkspace) -> pulumi.Output[str]:
    query: pulumi.Output[str] = metrics.metrics.apply(
        lambda m: str(m.prometheus_query_endpoint if m is not None else "")
    )
    return query


def _with_remote_write(
    ctx: Context, identity: Identity, plan: AzureAlerts, workspace: azure.monitor.AzureMonitorWorkspace
) -> Alerts:
    """The login node remote-writes to the workspace's default rule: its URL and the identity's publisher grant."""
    settings = workspace.default_ingestion_settings
    endpoint_id = settings.apply(lambda s: s.data_collection_endpoint_resource_id)
    rule_id = settings.apply(lambda s: s.data_collection_rule_resource_id)
    options = invoke_options(ctx.component)
    endpoint = azure.monitor.get_data_collection_endpoint_output(
        data_collection_endpoint_name=endpoint_id.apply(lambda i: _part(i, 8)),
        resource_group_name=endpoint_id.apply(lambda i: _part(i, 4)),
        opts=options,
    )
    rule = azure.monitor.get_data_collection_rule_output(
        data_collection_rule_name=rule_id.apply(lambda i: _part(i, 8)),
        resource_group_name=rule_id.apply(lambda i: _part(i, 4)),
        opts=options,
    )
    url = pulumi.Output.all(endpoint.metrics_ingestion, rule.immutable_id).apply(
        lambda v: (
            str(v[0].endpoint if hasattr(v[0], "endpoint") else v[0]["endpoint"])
            + plan.ingestion_path.format(immutable_id=v[1])
        )
    )
    subscription = azure.authorization.get_client_config_output(opts=options).subscription_id
    # the remote write's only grant: publish to this workspace's own rule, nothing else
    role_assignment(
        ctx,
        "role-metrics-publisher",
        plan.publisher_role,
        identity.principal_id or "",
        rule_id,
        subscription,
        "the login node's Prometheus remote-writes to the cluster's Azure Monitor workspace ("
        # notify's text kept when it is set: a description change may replace the assignment
        + ("monitoring.notify)" if plan.emails else "monitoring.prometheus managed)"),
    )
    group = _action_group(ctx, plan)
    rules = _rule_group(ctx, plan, workspace, group)
    return Alerts(plan, workspace, group, rules, url, _query(workspace))


def _rule_group(
    ctx: Context,
    plan: AzureAlerts,
    workspace: azure.monitor.AzureMonitorWorkspace,
    group: azure.monitor.ActionGroup | None,
    cluster: azure.containerservice.ManagedCluster | None = None,
) -> azure.alertsmanagement.PrometheusRuleGroup:
    """The rules, evaluated by the workspace; with an AKS cluster scoped to it and to its data (clusterName: the
    add-on's `cluster` label), as Microsoft's recommended rule groups for AKS are."""
    spec = ctx.layout.spec
    actions = [azure.alertsmanagement.PrometheusRuleGroupActionArgs(action_group_id=group.id)] if group else None
    return azure.alertsmanagement.PrometheusRuleGroup(
        f"{ctx.name}-alert-rules",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        description=f"gpu-cluster {spec.name}: "
        + (
            "the GPU alert rules on the AKS cluster's metrics"
            if cluster is not None
            else "the login node's alert rules"
        )
        + ", evaluated by Azure Monitor",
        scopes=[workspace.id, cluster.id] if cluster is not None else [workspace.id],
        cluster_name=cluster.name if cluster is not None else None,
        enabled=True,
        interval=plan.interval,
        rules=[
            azure.alertsmanagement.PrometheusRuleArgs(
                alert=r.alert,
                expression=r.expression,
                for_=r.for_,
                severity=r.severity,
                labels=r.labels,
                annotations=r.annotations,
                enabled=True,
                actions=actions,
            )
            for r in plan.rules
        ],
        tags=ctx.tagged("alert-rules"),
        opts=ctx.opts,
    )


def _action_group(ctx: Context, plan: AzureAlerts) -> azure.monitor.ActionGroup | None:
    """monitoring.notify: one email receiver per address (none without notify)."""
    if not plan.emails:
        return None
    return azure.monitor.ActionGroup(
        f"{ctx.name}-alerts",
        resource_group_name=ctx.resource_group_name,
        location="Global",  # action groups are global resources
        group_short_name=plan.short_name,
        enabled=True,
        email_receivers=[
            azure.monitor.MicrosoftCommonEmailReceiverArgs(
                name=plan.receiver_name(i), email_address=email, use_common_alert_schema=True
            )
            for i, email in enumerate(plan.emails)
        ],
        tags=ctx.tagged("alerts"),
        opts=ctx.opts,
    )
