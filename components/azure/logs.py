"""The nodes' logs in Azure Monitor Logs (layout.logs, decided in components/layout/azure/logs.py): the Log Analytics
workspace, its data collection rule, and per VM the Azure Monitor Agent extension and the rule's association.

A single VM's extension is its own child resource (Microsoft.Compute/virtualMachines/extensions): adding it changes
nothing of the VM, not its custom data. A Uniform scale set carries it in its extension profile
(`scale_set_extension`), and the association names the scale set itself, so every instance, later ones included, is
covered.

AKS: a second rule, Container Insights' (its extension data source and the nodes' syslog), associated with the
ManagedCluster after it exists (`associate_cluster`); kubernetes.py enables the omsagent add-on with the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..layout.azure.logs import DESTINATION, SYSLOG_STREAM, AzureLogs
from .context import Context


@dataclass(frozen=True)
class Logs:
    plan: AzureLogs
    workspace: azure.operationalinsights.Workspace
    rule: azure.monitor.DataCollectionRule | None  # the VMs' (None: AKS without a login node)
    cluster_rule: azure.monitor.DataCollectionRule | None = None  # AKS: Container Insights' rule

    def output(self) -> dict[str, Any]:
        return {
            "service": self.plan.service,
            "workspace": self.workspace.name,
            "workspaceId": self.workspace.customer_id,  # what `az monitor log-analytics query -w` takes
            "retentionDays": self.plan.retention_days,
            "query": "Syslog | where TimeGenerated > ago(1h) | order by TimeGenerated desc",
            "notCollected": list(self.plan.not_collected),
            **(
                {"kubernetes": "ContainerLogV2 | where TimeGenerated > ago(1h) (pods); Syslog (nodes); KubeEvents"}
                if self.cluster_rule is not None
                else {}
            ),
        }


def build(ctx: Context) -> Logs | None:
    plan = ctx.layout.logs
    if plan is None:
        return None
    workspace = azure.operationalinsights.Workspace(
        f"{ctx.name}-logs",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        sku=azure.operationalinsights.WorkspaceSkuArgs(name=plan.sku),
        retention_in_days=plan.retention_days,
        tags=ctx.tagged("logs"),
        opts=ctx.opts,
    )
    rule = _vm_rule(ctx, plan, workspace) if plan.vm_rule else None
    return Logs(plan, workspace, rule, _cluster_rule(ctx, plan, workspace))


def _vm_rule(
    ctx: Context, plan: AzureLogs, workspace: azure.operationalinsights.Workspace
) -> azure.monitor.DataCollectionRule:
    """The VMs' rule: their syslog into the workspace."""
    return azure.monitor.DataCollectionRule(
        f"{ctx.name}-logs-rule",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        kind="Linux",
        description=f"gpu-cluster {ctx.layout.spec.name}: the nodes' syslog into the cluster's workspace",
        data_sources=azure.monitor.DataCollectionRuleDataSourcesArgs(syslog=[_syslog(plan)]),
        destinations=azure.monitor.DataCollectionRuleDestinationsArgs(
            log_analytics=[
                azure.monitor.LogAnalyticsDestinationArgs(name=DESTINATION, workspace_resource_id=workspace.id)
            ]
        ),
        data_flows=[azure.monitor.DataFlowArgs(streams=[SYSLOG_STREAM], destinations=[DESTINATION])],
        tags=ctx.tagged("logs-rule"),
        opts=ctx.opts,
    )


def _syslog(plan: AzureLogs) -> azure.monitor.SyslogDataSourceArgs:
    return azure.monitor.SyslogDataSourceArgs(
        name="syslog", streams=[SYSLOG_STREAM], facility_names=list(plan.facilities), log_levels=list(plan.log_levels)
    )


def _cluster_rule(
    ctx: Context, plan: AzureLogs, workspace: azure.operationalinsights.Workspace
) -> azure.monitor.DataCollectionRule | None:
    """AKS: Container Insights' rule: its extension's streams and the nodes' syslog into the workspace."""
    ci = plan.container_insights
    if ci is None:
        return None
    return azure.monitor.DataCollectionRule(
        f"{ctx.name}-logs-aks-rule",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        kind="Linux",
        description=f"gpu-cluster {ctx.layout.spec.name}: Container Insights' logs and the AKS nodes' syslog",
        data_sources=azure.monitor.DataCollectionRuleDataSourcesArgs(
            extensions=[
                azure.monitor.ExtensionDataSourceArgs(
                    name=ci.data_source_name,
                    extension_name=ci.extension_name,
                    streams=list(ci.streams),
                    extension_settings={"dataCollectionSettings": dict(ci.settings)},
                )
            ],
            syslog=[_syslog(plan)],
        ),
        destinations=azure.monitor.DataCollectionRuleDestinationsArgs(
            log_analytics=[
                azure.monitor.LogAnalyticsDestinationArgs(name=DESTINATION, workspace_resource_id=workspace.id)
            ]
        ),
        data_flows=[
            azure.monitor.DataFlowArgs(streams=list(ci.streams), destinations=[DESTINATION]),
            azure.monitor.DataFlowArgs(streams=[SYSLOG_STREAM], destinations=[DESTINATION]),
        ],
        tags=ctx.tagged("logs-aks-rule"),
        opts=ctx.opts,
    )


def addon_profiles(logs: Logs | None) -> dict[str, azure.containerservice.ManagedClusterAddonProfileArgs] | None:
    """The ManagedCluster's addonProfiles: Container Insights to the workspace (None without logs: as before)."""
    if logs is None or logs.plan.container_insights is None:
        return None
    ci = logs.plan.container_insights
    return {
        ci.addon: azure.containerservice.ManagedClusterAddonProfileArgs(
            enabled=True, config=ci.addon_config(logs.workspace.id)
        )
    }


def associate_cluster(ctx: Context, logs: Logs | None, cluster: azure.containerservice.ManagedCluster) -> None:
    """Container Insights' rule on the cluster: under the name the add-on looks for."""
    if logs is None or logs.cluster_rule is None or logs.plan.container_insights is None:
        return
    azure.monitor.DataCollectionRuleAssociation(
        f"{ctx.name}-aks-logs",
        resource_uri=cluster.id,
        association_name=logs.plan.container_insights.association_name,
        data_collection_rule_id=logs.cluster_rule.id,
        description=f"gpu-cluster {ctx.layout.spec.name}: Container Insights' rule (deleting it stops the collection)",
        opts=ctx.opts,
    )


def scale_set_extension(
    plan: AzureLogs | None, identity_id: pulumi.Input[str]
) -> azure.compute.VirtualMachineScaleSetExtensionArgs | None:
    """The agent in a Uniform scale set's extension profile (None without logs)."""
    if plan is None:
        return None
    agent = plan.agent
    return azure.compute.VirtualMachineScaleSetExtensionArgs(
        name=agent.name,
        publisher=agent.publisher,
        type=agent.type,
        type_handler_version=agent.type_handler_version,
        auto_upgrade_minor_version=True,
        enable_automatic_upgrade=True,
        settings=agent.settings(identity_id),
    )


def associate(ctx: Context, logs: Logs, role: str, resource_id: pulumi.Input[str]) -> None:
    """The rule's association with one VM or scale set: what the agent there collects and where it sends it."""
    assert logs.rule is not None  # the layout builds the VMs' rule wherever a VM ships
    azure.monitor.DataCollectionRuleAssociation(
        f"{ctx.name}-{role}-logs",
        resource_uri=resource_id,
        association_name=f"{ctx.layout.spec.name}-logs",
        data_collection_rule_id=logs.rule.id,
        description=f"gpu-cluster {ctx.layout.spec.name}: {role}'s syslog into the cluster's workspace",
        opts=ctx.opts,
    )


def attach_vm(
    ctx: Context,
    logs: Logs | None,
    role: str,
    vm: azure.compute.VirtualMachine,
    identity_id: pulumi.Input[str],
) -> None:
    """The agent on a single VM (its own child resource) and the rule's association with the VM."""
    if logs is None:
        return
    agent = logs.plan.agent
    azure.compute.VirtualMachineExtension(
        f"{ctx.name}-{role}-agent",
        resource_group_name=ctx.resource_group_name,
        vm_name=vm.name,
        vm_extension_name=agent.name,
        location=ctx.location,
        publisher=agent.publisher,
        type=agent.type,
        type_handler_version=agent.type_handler_version,
        auto_upgrade_minor_version=True,
        enable_automatic_upgrade=True,
        settings=agent.settings(identity_id),
        tags=ctx.tagged(f"{role}-agent"),
        opts=ctx.opts,
    )
    associate(ctx, logs, role, vm.id)
