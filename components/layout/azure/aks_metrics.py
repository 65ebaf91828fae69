"""monitoring.prometheus managed with scheduler kubernetes on Azure (AKS), pure (catalog/monitoring.yaml
managed.azure kubernetes): AKS's managed Prometheus add-on collects, nothing runs on a login node.

The ManagedCluster's azureMonitorProfile.metrics turns the add-on on (its ama-metrics pods and kube-state-metrics,
which scrape the default Kubernetes targets: kubelet, cAdvisor, kube-state-metrics, the node exporter). It sends what
it scrapes to the Azure Monitor workspace (the one layout/azure/alerts.py plans, reused with its rule group and
Managed Grafana) through a data collection endpoint and rule of the cluster's own, associated with the cluster; the
association authorises the add-on's own identity, so no role is granted. The GPU operator's DCGM exporter is not a
default target: one custom scrape job (the DCGM job the in-cluster kube-prometheus-stack runs, without its `cluster`
label, which the add-on sets to the AKS cluster's name) goes in the ConfigMap the add-on reads from kube-system.

Day 2: the profile is a property of the ManagedCluster (updated in place; no node pool changes), the endpoint, rule,
association and ConfigMap are created or deleted beside it; a new ConfigMap restarts the add-on's pods only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ..kubernetes_monitoring import dcgm_scrape_job
from .monitoring import AzureManaged, managed_plan


@dataclass(frozen=True)
class ScrapeConfigMap:
    name: str
    namespace: str
    key: str
    content: str  # a Prometheus config holding only scrape_configs (YAML)


@dataclass(frozen=True)
class AksMetrics:
    """The add-on, its collection path to the workspace and the DCGM scrape job."""

    metric_labels_allowlist: str  # azureMonitorProfile.metrics.kubeStateMetrics
    metric_annotations_allow_list: str
    kind: str  # the data collection endpoint's and rule's kind
    stream: str  # Microsoft-PrometheusMetrics
    data_source_name: str  # the rule's prometheusForwarder data source
    destination_name: str  # the rule's monitoringAccounts destination (the workspace)
    association_name: str  # the rule's association with the cluster
    scrape: ScrapeConfigMap
    managed: AzureManaged  # the service, Managed Grafana (grafanaAdmins); no login node to grant reads to


def _entry() -> dict[str, Any]:
    entry = catalog_monitoring.managed("azure")
    assert entry is not None and "kubernetes" in entry, "catalog/monitoring.yaml managed.azure kubernetes"
    return entry


def scrape_config() -> str:
    """The ConfigMap's Prometheus config: the DCGM exporter's pods, as the in-cluster stack scrapes them."""
    return yaml.safe_dump({"scrape_configs": [dcgm_scrape_job(None)]}, sort_keys=False, width=1000)


def plan(spec: ClusterSpec) -> AksMetrics | None:
    """None unless monitoring.prometheus managed on AKS (the spec refuses managed where it cannot be built)."""
    if spec.prometheus != "managed" or spec.kubernetes is None:
        return None
    entry = _entry()
    kube = entry["kubernetes"]
    config_map = kube["scrapeConfigMap"]
    return AksMetrics(
        metric_labels_allowlist=str(kube["metricLabelsAllowlist"]),
        metric_annotations_allow_list=str(kube["metricAnnotationsAllowList"]),
        kind=str(kube["kind"]),
        stream=str(kube["stream"]),
        data_source_name=str(kube["dataSourceName"]),
        destination_name=str(kube["destinationName"]),
        association_name=str(kube["associationName"]),
        scrape=ScrapeConfigMap(
            name=str(config_map["name"]),
            namespace=str(config_map["namespace"]),
            key=str(config_map["key"]),
            content=scrape_config(),
        ),
        managed=managed_plan(spec, login_grafana=False),
    )
