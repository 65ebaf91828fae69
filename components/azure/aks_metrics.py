"""monitoring.prometheus managed on AKS (decided in components/layout/azure/aks_metrics.py): the ManagedCluster's
azureMonitorProfile (the add-on), the data collection endpoint and rule that carry its samples to the cluster's Azure
Monitor workspace, the rule's association with the cluster, and the add-on's scrape ConfigMap for the DCGM exporter
(components/incluster.py, through the cluster's Kubernetes provider, as the Helm releases are installed)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

from .. import incluster
from ..layout.azure.aks_metrics import AksMetrics
from .context import Context


@dataclass(frozen=True)
class Collection:
    endpoint: azure.monitor.DataCollectionEndpoint
    rule: azure.monitor.DataCollectionRule


def profile(plan: AksMetrics | None) -> azure.containerservice.ManagedClusterAzureMonitorProfileArgs | None:
    """The ManagedCluster's azureMonitorProfile: the add-on on (None without managed: the inputs as before)."""
    if plan is None:
        return None
    return azure.containerservice.ManagedClusterAzureMonitorProfileArgs(
        metrics=azure.containerservice.ManagedClusterAzureMonitorProfileMetricsArgs(
            enabled=True,
            kube_state_metrics=azure.containerservice.ManagedClusterAzureMonitorProfileKubeStateMetricsArgs(
                metric_labels_allowlist=plan.metric_labels_allowlist,
                metric_annotations_allow_list=plan.metric_annotations_allow_list,
            ),
        )
    )


def collection(ctx: Context, plan: AksMetrics, workspace: azure.monitor.AzureMonitorWorkspace) -> Collection:
    """The endpoint and rule the add-on sends through: its Prometheus stream to the workspace."""
    endpoint = azure.monitor.DataCollectionEndpoint(
        f"{ctx.name}-prom-dce",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        kind=plan.kind,
        description=f"gpu-cluster {ctx.layout.spec.name}: AKS's managed Prometheus add-on",
        tags=ctx.tagged("prom-dce"),
        opts=ctx.opts,
    )
    rule = azure.monitor.DataCollectionRule(
        f"{ctx.name}-prom-dcr",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        kind=plan.kind,
        description=f"gpu-cluster {ctx.layout.spec.name}: the AKS add-on's Prometheus metrics into the workspace",
        data_collection_endpoint_id=endpoint.id,
        data_sources=azure.monitor.DataCollectionRuleDataSourcesArgs(
            prometheus_forwarder=[
                azure.monitor.PrometheusForwarderDataSourceArgs(
                    name=plan.data_source_name, streams=[plan.stream], label_include_filter={}
                )
            ]
        ),
        destinations=azure.monitor.DataCollectionRuleDestinationsArgs(
            monitoring_accounts=[
                azure.monitor.MonitoringAccountDestinationArgs(
                    name=plan.destination_name, account_resource_id=workspace.id
                )
            ]
        ),
        data_flows=[azure.monitor.DataFlowArgs(streams=[plan.stream], destinations=[plan.destination_name])],
        tags=ctx.tagged("prom-dcr"),
        opts=ctx.opts,
    )
    return Collection(endpoint, rule)


def associate(
    ctx: Context, plan: AksMetrics, built: Collection, cluster: azure.containerservice.ManagedCluster
) -> azure.monitor.DataCollectionRuleAssociation:
    """The rule on the cluster: what the add-on's agent sends, and where (it authorises the add-on's writes)."""
    return azure.monitor.DataCollectionRuleAssociation(
        f"{ctx.name}-prom-dcra",
        resource_uri=cluster.id,
        association_name=plan.association_name,
        data_collection_rule_id=built.rule.id,
        description=f"gpu-cluster {ctx.layout.spec.name}: the Prometheus add-on's rule (deleting it stops the "
        "collection)",
        opts=ctx.opts,
    )


def scrape_config_map(
    ctx: Context, plan: AksMetrics, software: incluster.InCluster, after: list[pulumi.Resource]
) -> pulumi.Resource:
    """The add-on's custom scrape jobs (the DCGM exporter's pods) in the ConfigMap it reads from kube-system."""
    scrape = plan.scrape
    return incluster.config_map(
        f"{ctx.name}-aks-scrape-config",
        software.provider,
        scrape.name,
        scrape.namespace,
        {scrape.key: scrape.content},
        ctx.component,
        depends_on=after,
    )
