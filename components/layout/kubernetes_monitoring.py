"""monitoring.prometheus selfHosted with scheduler kubernetes: the values of the kube-prometheus-stack release that
depend on the spec (the chart's pin and shared values: catalog/kubernetes/charts.yaml; the cloud's own:
catalog/kubernetes/<cloud>.yaml `releases:`). Pure, no Pulumi.

The same alert rules and dashboards as the login node's Prometheus (components/bootstrap/monitoring.py): the series
carry the labels they use, `job="dcgm-exporter"`, `node` (the Kubernetes node) and `cluster`.
"""

from __future__ import annotations

import json
from typing import Any

from ..bootstrap.metrics import endpoints
from ..bootstrap.monitoring import Thresholds, dashboards, rule_list
from ..spec import ClusterSpec

RULES_NAME = "gpu-cluster"  # additionalPrometheusRulesMap key: the PrometheusRule object's name suffix
DASHBOARD_PROVIDER = "gpu-cluster"  # charts.yaml grafana.dashboardProviders: the provider these dashboards go to
# The DCGM exporter's pods, whichever release runs it: the GPU operator's DaemonSet (gpu-operator
# assets/state-dcgm-exporter/0800_daemonset.yaml: label app=nvidia-dcgm-exporter, container port "metrics" 9400) or
# NVIDIA's standalone chart (dcgm-exporter deployment/templates/_helpers.tpl selectorLabels:
# app.kubernetes.io/name=dcgm-exporter). Joined by Prometheus' default separator ";".
DCGM_POD_LABELS = ("__meta_kubernetes_pod_label_app", "__meta_kubernetes_pod_label_app_kubernetes_io_name")
DCGM_POD_MATCH = "nvidia-dcgm-exporter;.*|.*;dcgm-exporter"


def _dcgm_port() -> int:
    return next(e.port for e in endpoints() if e.name == "dcgm-exporter")


def dcgm_scrape_job(cluster: str | None) -> dict[str, Any]:
    """A Prometheus scrape job (additionalScrapeConfigs) for the DCGM exporter's pods: no ServiceMonitor, so it needs
    no CRD before the GPU software installs and no label on the exporter's Service. `cluster` None: the collector
    labels the series itself (a cloud's managed collector that adds the cluster label on its own)."""
    job: dict[str, Any] = {
        "job_name": "dcgm-exporter",
        "kubernetes_sd_configs": [{"role": "pod"}],
        "relabel_configs": [
            {"source_labels": list(DCGM_POD_LABELS), "regex": DCGM_POD_MATCH, "action": "keep"},
            {
                "source_labels": ["__meta_kubernetes_pod_container_port_number"],
                "regex": str(_dcgm_port()),
                "action": "keep",
            },
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
        ],
    }
    if cluster is not None:
        job["relabel_configs"].append({"target_label": "cluster", "replacement": cluster})
    return job


def stack_values(spec: ClusterSpec) -> dict[str, Any]:
    """The release's values from the spec: retention, the alert rules, the DCGM job and the dashboards."""
    rules = rule_list(Thresholds(**spec.monitoring.alerts.model_dump()))
    return {
        "additionalPrometheusRulesMap": {RULES_NAME: {"groups": [{"name": RULES_NAME, "rules": rules}]}},
        "prometheus": {
            "prometheusSpec": {
                "retention": f"{spec.monitoring.retention_days}d",
                "additionalScrapeConfigs": [dcgm_scrape_job(spec.name)],
            }
        },
        # the node exporter's series get `cluster` as the DCGM job's do (the node label: charts.yaml)
        "prometheus-node-exporter": {
            "prometheus": {
                "monitor": {
                    "relabelings": [
                        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"},
                        {"targetLabel": "cluster", "replacement": spec.name},
                    ]
                }
            }
        },
        "grafana": {
            "dashboards": {
                DASHBOARD_PROVIDER: {
                    name.removesuffix(".json"): {"json": json.dumps(body, indent=1)}
                    for name, body in dashboards().items()
                }
            }
        },
    }


def grafana_text(release: str, namespace: str) -> str:
    """How to reach the release's Grafana: a ClusterIP Service named by the grafana chart's fullname (the release's
    name + "-grafana", port 80) and the password the chart generated in the Secret of that name (grafana 12.11.1
    templates/_helpers.tpl grafana.fullname, grafana.password; values.yaml service.port)."""
    grafana = f"{release}-grafana"
    return (
        f"kubectl -n {namespace} port-forward svc/{grafana} 3000:80, then http://localhost:3000 as admin "
        f"(kubectl -n {namespace} get secret {grafana} -o jsonpath='{{.data.admin-password}}' | base64 -d)"
    )
