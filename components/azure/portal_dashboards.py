"""monitoring.prometheus managed on Azure: the dashboards of bootstrap/monitoring/ as Azure Monitor dashboards with
Grafana in the cluster's resource group, each a dashboard and its `default` definition, the JSON's data source
filter naming the cluster's Azure Monitor workspace once azure-native has named it. Decisions are
layout/azure/portal_dashboards.py's; this module only builds them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import pulumi
import pulumi_azure_native as azure

from ..layout.azure.portal_dashboards import PortalDashboards, serialized
from .context import Context


@dataclass(frozen=True)
class Built:
    dashboard: azure.dashboard.Dashboard
    definition: azure.dashboard.DashboardDefinition


def build(ctx: Context, plan: PortalDashboards, workspace: azure.monitor.AzureMonitorWorkspace) -> list[Built]:
    built = []
    for d in plan.dashboards:
        stem = d.file.removesuffix(".json")
        dashboard = azure.dashboard.Dashboard(
            f"{ctx.name}-{stem}",
            resource_group_name=ctx.resource_group_name,
            location=ctx.location,
            dashboard_name=d.name,
            tags=ctx.tagged(stem),
            opts=ctx.opts,
        )
        definition = azure.dashboard.DashboardDefinition(
            f"{ctx.name}-{stem}-definition",
            resource_group_name=ctx.resource_group_name,
            dashboard_name=d.name,  # the name decided (the dashboard's output is the same at deploy)
            definition_name=plan.definition_name,
            properties=azure.dashboard.DashboardDefinitionPropertiesArgs(
                serialized_data=workspace.name.apply(partial(serialized, d.template))
            ),
            opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=[dashboard])),
        )
        built.append(Built(dashboard, definition))
    return built
