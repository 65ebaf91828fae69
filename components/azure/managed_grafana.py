"""monitoring.prometheus managed on Azure, beside the workspace components/azure/alerts.py builds: the nodes'
identity reads that workspace only (the login node's Grafana), the dashboards are Azure Monitor dashboards with
Grafana (portal_dashboards.py), and with monitoring.grafanaAdmins Azure Managed Grafana with that workspace linked, its
system identity reading it only, and Grafana Admin for each named principal.
Decisions are layout/azure/monitoring.py's `AzureManaged`; this module only builds them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi_azure_native as azure

from ..layout.azure.monitoring import AzureManaged
from ..resources import invoke_options
from . import portal_dashboards
from .alerts import Alerts
from .context import Context
from .identity import Identity, role_assignment


@dataclass(frozen=True)
class ManagedGrafana:
    grafana: azure.dashboard.Grafana
    reader: azure.authorization.RoleAssignment
    admins: list[azure.authorization.RoleAssignment]

    def output(self) -> dict[str, Any]:
        return {"name": self.grafana.name, "endpoint": self.grafana.properties.apply(lambda p: p.endpoint)}


def build(
    ctx: Context, identity: Identity, alerts: Alerts | None, aks: AzureManaged | None = None
) -> ManagedGrafana | None:
    """`aks`: AKS's plan (no login node; layout/azure/aks_metrics.py), else the login node's (layout.monitoring)."""
    plan = ctx.layout.monitoring
    managed = aks if aks is not None else plan.managed if plan is not None else None
    if managed is None or alerts is None:
        return None
    subscription = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component)).subscription_id
    workspace = alerts.workspace.id
    for i, role in enumerate(managed.query_roles):
        role_assignment(
            ctx,
            f"role-metrics-reader-{i}" if i else "role-metrics-reader",
            role,
            identity.principal_id or "",
            workspace,
            subscription,
            "the login node's Grafana reads the cluster's Azure Monitor workspace (monitoring.prometheus managed)",
        )
    portal_dashboards.build(ctx, managed.dashboards, alerts.workspace)
    g = managed.grafana
    if g is None:
        return None
    grafana = azure.dashboard.Grafana(
        f"{ctx.name}-grafana",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        workspace_name=g.name,
        sku=azure.dashboard.ResourceSkuArgs(name=g.sku),
        identity=azure.dashboard.ManagedServiceIdentityArgs(type="SystemAssigned"),
        properties=azure.dashboard.ManagedGrafanaPropertiesArgs(
            grafana_major_version=g.major_version,
            zone_redundancy=g.zone_redundancy,
            public_network_access=g.public_network_access,
            api_key=g.api_key,
            grafana_integrations=azure.dashboard.GrafanaIntegrationsArgs(
                azure_monitor_workspace_integrations=[
                    azure.dashboard.AzureMonitorWorkspaceIntegrationArgs(azure_monitor_workspace_resource_id=workspace)
                ]
            ),
        ),
        tags=ctx.tagged("grafana"),
        opts=ctx.opts,
    )
    principal = grafana.identity.apply(lambda i: str(i.principal_id) if i is not None else "")
    reader = role_assignment(
        ctx,
        "role-grafana-reader",
        g.reader_role,
        principal,
        workspace,
        subscription,
        "Azure Managed Grafana reads the cluster's Azure Monitor workspace only",
    )
    admins = [
        role_assignment(
            ctx,
            f"role-grafana-admin-{i}",
            g.admin_role,
            admin,
            grafana.id,
            subscription,
            "monitoring.grafanaAdmins: Grafana Admin on the cluster's Azure Managed Grafana",
            principal_type="User",  # monitoring.grafanaAdmins names users (Azure refuses a type that does not match)
        )
        for i, admin in enumerate(g.admins)
    ]
    return ManagedGrafana(grafana, reader, admins)
