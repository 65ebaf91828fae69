"""monitoring.prometheus managed with scheduler kubernetes on Alibaba Cloud (ACK), pure: an ARMS container (CS)
environment bound to the ACK cluster (catalog/monitoring.yaml managed.alicloud.kubernetes).

ARMS' container monitoring is the route Alibaba gives for an ACK cluster: the environment's Prometheus instance
stores the samples and evaluates the rules, and its Prometheus agent (ack-arms-prometheus, the environment's
metric-agent feature) runs in the cluster. An ACK environment is created unmanaged (InitEnvironment ManagedType none,
"Default for ACK clusters"), so the agent is installed here as the feature, at a sourced version.

The agent collects ARMS' own default jobs; this cluster's GPU metrics come from NVIDIA's DCGM exporter of its
releases (catalog/kubernetes/alicloud.yaml: the GPU operator's or NVIDIA's chart), not ARMS' GPU exporter, so one
PodMonitor written through ARMS (CreateEnvPodMonitor) points the agent at the exporter's pods with the relabelling
the in-cluster kube-prometheus-stack job has (layout/kubernetes_monitoring.py dcgm_scrape_job): `node`, `cluster`
and job `dcgm-exporter`, the labels the rules and dashboards use. The rules and the notify path are VM mode's
(layout/alicloud/monitoring.py arms_rules, arms_notify). No kube-prometheus-stack, no login node, no RAM grant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ...bootstrap.metrics import endpoints
from ...bootstrap.monitoring import versions
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ..kubernetes_monitoring import dcgm_scrape_job
from .monitoring import ArmsNotify, ArmsRule, arms_notify, arms_rules

POD_MONITOR = "gpu-cluster-dcgm-exporter"
# the DCGM exporter's pod label, by who installs it (layout/kubernetes_monitoring.py DCGM_POD_LABELS: the GPU
# operator's DaemonSet app=nvidia-dcgm-exporter, NVIDIA's chart app.kubernetes.io/name=dcgm-exporter)
DCGM_SELECTOR = {
    "operator": ("app", "nvidia-dcgm-exporter"),
    "device-plugin": ("app.kubernetes.io/name", "dcgm-exporter"),
}
# Prometheus' relabel_config keys as the Prometheus operator's RelabelConfig spells them (monitoring.coreos.com/v1)
_CAMEL = {"source_labels": "sourceLabels", "target_label": "targetLabel"}


@dataclass(frozen=True)
class AckArms:
    """monitoring.prometheus managed on ACK: the CS environment, its agent, the DCGM PodMonitor, rules and notify."""

    environment_name: str  # arms.Environment environment_name
    environment_type: str  # catalog: CS
    environment_sub_type: str  # catalog: ManagedKubernetes
    feature: str  # arms.EnvFeature env_feature_name: metric-agent, the in-cluster Prometheus agent
    feature_version: str
    pod_monitor_name: str
    pod_monitor: str  # arms.EnvPodMonitor config_yaml
    rules: tuple[ArmsRule, ...]
    notify: ArmsNotify | None
    service: str


def pod_monitor(spec: ClusterSpec, entry: dict[str, Any]) -> str:
    """The PodMonitor the ARMS agent reads: the DCGM exporter's pods in any namespace, at the scrape interval of the
    VM clusters, relabelled as the in-cluster stack's job (reused, not copied) plus job=dcgm-exporter."""
    assert spec.kubernetes is not None  # scheduler kubernetes
    key, value = DCGM_SELECTOR[spec.kubernetes.gpu_software]
    relabel = [{_CAMEL.get(k, k): v for k, v in rule.items()} for rule in dcgm_scrape_job(spec.name)["relabel_configs"]]
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {
            "name": POD_MONITOR,
            "namespace": str(entry["podMonitorNamespace"]),
            "annotations": {str(k): str(v) for k, v in dict(entry["podMonitorAnnotations"]).items()},
        },
        "spec": {
            "selector": {"matchLabels": {key: value}},
            "namespaceSelector": {"any": True},
            "podMetricsEndpoints": [
                {
                    "targetPort": next(e.port for e in endpoints() if e.name == "dcgm-exporter"),
                    "path": "/metrics",
                    "interval": f"{int(versions()['scrapeIntervalSeconds'])}s",
                    "relabelings": [*relabel, {"targetLabel": "job", "replacement": "dcgm-exporter"}],
                }
            ],
        },
    }
    return yaml.safe_dump(monitor, sort_keys=False, width=1000)


def ack_arms(spec: ClusterSpec) -> AckArms | None:
    """The ARMS container environment of an ACK cluster with monitoring.prometheus managed; None otherwise."""
    entry = catalog_monitoring.managed("alicloud")
    if spec.kubernetes is None or spec.prometheus != "managed" or entry is None:
        return None
    ack = dict(entry["kubernetes"])
    rules = arms_rules(spec)
    return AckArms(
        environment_name=f"gpu-cluster-{spec.name}-{spec.stack}",
        environment_type=str(ack["environmentType"]),
        environment_sub_type=str(ack["environmentSubType"]),
        feature=str(ack["feature"]),
        feature_version=str(ack["featureVersion"]),
        pod_monitor_name=POD_MONITOR,
        pod_monitor=pod_monitor(spec, ack),
        rules=rules,
        notify=arms_notify(spec, rules),
        service=str(ack["service"]),
    )
