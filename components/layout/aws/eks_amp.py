"""monitoring.prometheus managed with scheduler kubernetes on AWS (EKS), pure: Amazon Managed Service for
Prometheus's managed collector (catalog/monitoring.yaml managed.aws kubernetes).

The workspace, its rule groups namespace and its alert manager to SNS are VM mode's (layout/aws/monitoring.py
`workspace_plan`, built by components/aws/amp.py). What EKS adds: the collector (an amp.Scraper) and its scrape
configuration, rendered here: two kubernetes_sd_config pod jobs, the DCGM exporter's pods (the GPU operator's or
NVIDIA's standalone chart, as the in-cluster Prometheus finds them) and the node exporter's (the only part of the
kube-prometheus-stack release that runs: catalog/kubernetes/aws.yaml releases), their series labelled `node` and
`cluster` as the rules and dashboards read them. No authorization, no TLS, no name to resolve: the collector reaches
each pod's IP on its port over the cluster security group, within what the AMP guide allows a configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import yaml

from ...bootstrap.metrics import endpoints
from ...bootstrap.monitoring import versions
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ...text import one_line
from ..kubernetes import Release
from ..kubernetes_monitoring import dcgm_scrape_job
from .monitoring import AwsManaged, workspace_plan

# the node exporter's pods: prometheus-node-exporter 4.56.1 templates/_helpers.tpl selectorLabels
# (app.kubernetes.io/name is the chart's name); hostNetwork, so the container port is the node's
NODE_EXPORTER_LABEL = "__meta_kubernetes_pod_label_app_kubernetes_io_name"
NODE_EXPORTER_NAME = "prometheus-node-exporter"
# what the kube-prometheus-stack release's values keep with managed: the in-cluster Prometheus's rules, scrape job
# and Grafana's dashboards (layout/kubernetes_monitoring.py stack_values) would configure parts that do not run
IN_CLUSTER_ONLY = ("additionalPrometheusRulesMap", "prometheus.prometheusSpec", "grafana.dashboards")


@dataclass(frozen=True)
class EksAmp:
    """The workspace as VM mode builds it, and the collector that fills it from the cluster."""

    managed: AwsManaged
    notify: tuple[str, ...]  # monitoring.notify: the SNS topic's email subscriptions (the alert manager sends)
    scraper_alias: str  # the scraper's alias (not unique in AMP; says whose it is)
    scrape_configuration: str  # the collector's Prometheus configuration (YAML)


def _port(name: str) -> int:
    return next(e.port for e in endpoints() if e.name == name)


def node_exporter_job(cluster: str) -> dict[str, Any]:
    """The node exporter's pods on every node, labelled as the DCGM job's series are."""
    return {
        "job_name": "node-exporter",
        "kubernetes_sd_configs": [{"role": "pod"}],
        "relabel_configs": [
            {"source_labels": [NODE_EXPORTER_LABEL], "regex": NODE_EXPORTER_NAME, "action": "keep"},
            {
                "source_labels": ["__meta_kubernetes_pod_container_port_number"],
                "regex": str(_port("node-exporter")),
                "action": "keep",
            },
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
            {"target_label": "cluster", "replacement": cluster},
        ],
    }


def scrape_configuration(spec: ClusterSpec) -> str:
    """The collector's configuration: global and scrape_configs only, at the AMP guide's floor interval or above."""
    kube = (catalog_monitoring.managed("aws") or {})["kubernetes"]
    interval = max(int(versions()["scrapeIntervalSeconds"]), int(kube["minScrapeIntervalSeconds"]))
    body = {
        "global": {"scrape_interval": f"{interval}s"},
        "scrape_configs": [dcgm_scrape_job(spec.name), node_exporter_job(spec.name)],
    }
    return yaml.safe_dump(body, sort_keys=False, width=1000)


def plan(spec: ClusterSpec) -> EksAmp | None:
    if spec.kubernetes is None or spec.prometheus != "managed":
        return None
    kube = (catalog_monitoring.managed("aws") or {})["kubernetes"]
    managed = replace(workspace_plan(spec), role_actions=(), grafana_note=one_line(str(kube["grafanaPlan"])))
    return EksAmp(
        managed=managed,
        notify=tuple(spec.monitoring.notify),
        scraper_alias=f"gpu-cluster-{spec.name}-{spec.stack}"[:100],
        scrape_configuration=scrape_configuration(spec),
    )


def _without(values: dict[str, Any], path: str) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    if head not in values:
        return values
    if not rest:
        return {k: v for k, v in values.items() if k != head}
    inner = values[head]
    return {**values, head: _without(inner, rest)} if isinstance(inner, dict) else values


def collector_releases(releases: tuple[Release, ...]) -> tuple[Release, ...]:
    """The releases with managed: the kube-prometheus-stack release keeps only what its node exporter reads."""
    chart = catalog_monitoring.kubernetes_chart()
    out = []
    for release in releases:
        if release.chart == chart:
            values = dict(release.values)
            for path in IN_CLUSTER_ONLY:
                values = _without(values, path)
            release = replace(release, values=values)
        out.append(release)
    return tuple(out)
