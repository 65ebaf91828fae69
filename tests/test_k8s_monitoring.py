"""monitoring.prometheus with scheduler kubernetes: the kube-prometheus-stack release registered on EKS, AKS and ACK
(chart, pinned version, repository, values), its rules judged by promtool, its values' keys against the chart's,
the refusals (GKE keeps its managed route), and no login-node monitoring leaking into a Kubernetes stack."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from typing import Any

import pytest
import yaml

from components.bootstrap.monitoring import Thresholds, dashboards, rule_list
from components.catalog import monitoring as catalog_monitoring
from components.errors import ConfigErrors
from components.layout import kubernetes as kube
from components.layout.kubernetes_monitoring import DCGM_POD_MATCH, grafana_text
from components.plan.render import monitoring_text
from components.spec import build_spec
from components.spec.model import ClusterConfig
from components.spec.rules import monitoring as monitoring_rules
from components.spec.rules.monitoring import _problems

from .conftest import aws_values, gcp_values, plan_stack, plan_stack_with, resources_of, spec_of

KEY = "gpu-cluster:cluster.monitoring.prometheus"
CHART = "kube-prometheus-stack"
STACKS = {"aws": "aws-eks-h100", "azure": "azure-aks-h100", "alicloud": "alicloud-ack-erdma"}
# Key paths of kube-prometheus-stack 88.5.3's values.yaml (prometheus-community/helm-charts @cf408a2) and of its
# grafana 12.11.1 subchart's (grafana-community/helm-charts @3386a115) that the release sets; below the paths ending
# in "*" the values are free-form (rules, dashboards, a scrape job, a relabeling or toleration list).
CHART_KEYS = {
    "kubeControllerManager.enabled",
    "kubeScheduler.enabled",
    "kubeEtcd.enabled",
    "kubeProxy.enabled",
    "alertmanager.enabled",
    "alertmanager.alertmanagerSpec.tolerations*",
    "additionalPrometheusRulesMap*",
    "prometheus.prometheusSpec.retention",
    "prometheus.prometheusSpec.additionalScrapeConfigs*",
    "prometheus.prometheusSpec.tolerations*",
    "prometheusOperator.tolerations*",
    "prometheusOperator.admissionWebhooks.patch.tolerations*",
    "prometheus-node-exporter.prometheus.monitor.relabelings*",
    "kube-state-metrics.tolerations*",
    "grafana.service.type",
    "grafana.tolerations*",
    "grafana.dashboardProviders*",
    "grafana.dashboards*",
}


def _stack_release(plan) -> dict[str, Any]:
    found = [r for r in resources_of(plan, "helm.sh/v3:Release") if r["inputs"]["chart"] == CHART]
    assert len(found) == 1, f"expected one {CHART} release, found {len(found)}"
    return found[0]["inputs"]


def _paths(values: Any, prefix: str = "") -> set[str]:
    """Every leaf key path of `values`, stopping at a free-form subtree of CHART_KEYS."""
    if prefix and f"{prefix}*" in CHART_KEYS:
        return {f"{prefix}*"}
    if not isinstance(values, dict) or not values:
        return {prefix}
    return {p for k, v in values.items() for p in _paths(v, f"{prefix}.{k}" if prefix else k)}


@pytest.mark.parametrize("cloud", sorted(STACKS))
def test_auto_installs_the_pinned_stack_with_the_specs_retention_rules_and_dashboards(cloud):
    inputs = _stack_release(plan_stack(STACKS[cloud]))
    pin = kube.charts()[CHART]
    assert (inputs["chart"], inputs["version"], inputs["namespace"]) == (CHART, "88.5.3", "monitoring")
    assert pin["version"] == "88.5.3" and "@cf408a2" in pin["source"]
    assert inputs["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
    assert inputs["createNamespace"] is True
    values = inputs["values"]
    spec = plan_stack(STACKS[cloud]).spec
    assert values["prometheus"]["prometheusSpec"]["retention"] == f"{spec.monitoring.retention_days}d" == "15d"
    # the same rules as the login node's Prometheus evaluates
    groups = values["additionalPrometheusRulesMap"]["gpu-cluster"]["groups"]
    assert groups == [{"name": "gpu-cluster", "rules": rule_list(Thresholds(**spec.monitoring.alerts.model_dump()))}]
    # the dashboards of components/bootstrap/monitoring/, byte for byte as JSON, on the chart's datasource uid
    shipped = values["grafana"]["dashboards"]["gpu-cluster"]
    assert {k: json.loads(v["json"]) for k, v in shipped.items()} == {
        name.removesuffix(".json"): body for name, body in dashboards().items()
    }
    provider = values["grafana"]["dashboardProviders"]["gpu-cluster.yaml"]["providers"][0]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards/gpu-cluster"
    assert '"uid": "prometheus"' in json.dumps(list(dashboards().values()))
    # Grafana not exposed, its password never in the values (the chart generates and keeps it)
    assert values["grafana"]["service"] == {"type": "ClusterIP"}
    assert "adminPassword" not in values["grafana"] and "admin" not in values["grafana"]
    # a managed control plane's hidden components are not scraped (they would be "down" forever)
    assert [values[k]["enabled"] for k in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy")] == [
        False
    ] * 4
    assert values["alertmanager"]["enabled"] is True


@pytest.mark.parametrize("cloud", sorted(STACKS))
def test_the_dcgm_exporter_is_scraped_as_job_dcgm_exporter_with_node_and_cluster(cloud):
    plan = plan_stack(STACKS[cloud])
    values = _stack_release(plan)["values"]
    (job,) = values["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"]
    assert job["job_name"] == "dcgm-exporter"  # the dashboards' up{job="dcgm-exporter"}
    # the chart passes the jobs through Helm's tpl (templates/prometheus/additionalScrapeConfigs.yaml @cf408a2): no
    # template action may be in them; the rules go through toYaml only, so their {{ $labels.* }} reach Prometheus
    assert "{{" not in json.dumps(job)
    assert job["kubernetes_sd_configs"] == [{"role": "pod"}]
    relabel = job["relabel_configs"]
    assert relabel[0] == {
        "source_labels": ["__meta_kubernetes_pod_label_app", "__meta_kubernetes_pod_label_app_kubernetes_io_name"],
        "regex": DCGM_POD_MATCH,
        "action": "keep",
    }
    assert {
        "source_labels": ["__meta_kubernetes_pod_container_port_number"],
        "regex": "9400",
        "action": "keep",
    } in relabel
    assert {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"} in relabel
    assert {"target_label": "cluster", "replacement": plan.spec.name} in relabel
    node = values["prometheus-node-exporter"]["prometheus"]["monitor"]["relabelings"]
    assert {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"} in node
    # the exporter it scrapes is installed beside it: the operator's (operator mode) on these stacks
    charts = [r["inputs"]["chart"] for r in resources_of(plan, "helm.sh/v3:Release")]
    assert "gpu-operator" in charts


def test_the_pod_match_keeps_the_operators_and_the_charts_exporter_only():
    match = re.compile(f"^(?:{DCGM_POD_MATCH})$")  # Prometheus anchors relabel regexes
    assert match.match("nvidia-dcgm-exporter;")  # gpu-operator DaemonSet: app=nvidia-dcgm-exporter
    assert match.match(";dcgm-exporter")  # NVIDIA's chart: app.kubernetes.io/name=dcgm-exporter
    assert not match.match("gpu-feature-discovery;") and not match.match(";node-exporter")


def test_aks_pods_tolerate_the_system_pools_taint_and_eks_ack_need_none():
    azure = _stack_release(plan_stack(STACKS["azure"]))["values"]
    system = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    assert azure["prometheusOperator"]["tolerations"] == system
    assert azure["prometheusOperator"]["admissionWebhooks"]["patch"]["tolerations"] == system
    assert azure["prometheus"]["prometheusSpec"]["tolerations"] == system
    assert azure["alertmanager"]["alertmanagerSpec"]["tolerations"] == system
    assert azure["grafana"]["tolerations"] == system and azure["kube-state-metrics"]["tolerations"] == system
    # none tolerates the GPU taint: the stack stays off the GPU nodes (the node exporter's own tolerations cover them)
    assert "nvidia.com/gpu" not in json.dumps({k: v for k, v in azure.items() if k != "grafana"})
    for cloud in ("aws", "alicloud"):
        values = _stack_release(plan_stack(STACKS[cloud]))["values"]
        assert "tolerations" not in json.dumps(values)


@pytest.mark.parametrize("cloud", sorted(STACKS))
def test_every_value_key_is_one_of_the_charts(cloud):
    values = _stack_release(plan_stack(STACKS[cloud]))["values"]
    assert _paths(values) <= CHART_KEYS, sorted(_paths(values) - CHART_KEYS)


def test_the_rules_and_the_scrape_job_pass_promtool(promtool, tmp_path):
    values = _stack_release(plan_stack(STACKS["aws"]))["values"]
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump(values["additionalPrometheusRulesMap"]["gpu-cluster"]))
    (job,) = copy.deepcopy(values["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"])
    # Debian's promtool is built without the Kubernetes discovery ("field kubernetes_sd_configs not found"): the job
    # is judged with a static target in its place, so its relabelling (actions, regexes, labels) is still checked
    assert job.pop("kubernetes_sd_configs") == [{"role": "pod"}]
    job["static_configs"] = [{"targets": ["10.0.0.1:9400"]}]
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"rule_files": [str(rules)], "scrape_configs": [job]}))
    for args in (["check", "rules", str(rules)], ["check", "config", str(config)]):
        run = subprocess.run([promtool, *args], capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
    # negative controls: promtool does judge the relabelling and the rules
    config.write_text(yaml.safe_dump({"scrape_configs": [{**job, "relabel_configs": [{"action": "kept"}]}]}))
    assert subprocess.run([promtool, "check", "config", str(config)], capture_output=True).returncode != 0
    rules.write_text(rules.read_text().replace("avg_over_time(", "avg_over_time((", 1))
    assert subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True).returncode != 0


def test_retention_and_thresholds_reach_the_values():
    plan = plan_stack_with(
        "aws-eks-h100", monitoring={"retentionDays": 30, "alerts": {"gpuIdlePercent": 10, "gpuTemperatureCelsius": 85}}
    )
    values = _stack_release(plan)["values"]
    assert values["prometheus"]["prometheusSpec"]["retention"] == "30d"
    rules = {r["alert"]: r for r in values["additionalPrometheusRulesMap"]["gpu-cluster"]["groups"][0]["rules"]}
    assert rules["GpuIdle"]["expr"] == "avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m]) < 10"
    assert rules["GpuTemperatureHigh"]["expr"] == "DCGM_FI_DEV_GPU_TEMP > 85"


def test_none_installs_no_stack_and_the_plan_says_none():
    plan = plan_stack_with("aws-eks-h100", monitoring={"prometheus": "none"})
    assert CHART not in [r["inputs"]["chart"] for r in resources_of(plan, "helm.sh/v3:Release")]
    assert plan.spec.prometheus == "none"


def test_a_kubernetes_stack_gets_no_login_node_monitoring_nor_its_discovery_grant():
    """selfHosted in the cluster: no Reader role for azure_sd, no ec2:DescribeInstances for ec2_sd."""
    azure = plan_stack(STACKS["azure"])
    assert azure.spec.prometheus == "selfHosted"
    reader = catalog_monitoring.self_hosted("azure")["grant"][0]  # type: ignore[index]
    assigned = [r["inputs"].get("roleDefinitionId", "") for r in resources_of(azure, "RoleAssignment")]
    assert not any(reader.rsplit("/", 1)[-1] in role for role in assigned)
    aws = plan_stack(STACKS["aws"])
    assert "ec2:DescribeInstances" not in json.dumps([r.as_json()["inputs"] for r in aws.resources if "iam" in r.type])


def test_the_plan_row_says_where_grafana_is_and_how_to_reach_it():
    text = monitoring_text(plan_stack(STACKS["alicloud"]).summary())
    assert text.startswith(f"{CHART} in the cluster (namespace monitoring, not exposed); Grafana: ")
    assert grafana_text(CHART, "monitoring") in text
    assert "port-forward svc/kube-prometheus-stack-grafana 3000:80" in text


# --- the spec: auto's choice and the refusals -------------------------------------------------------------------------


def _errors(values: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(values, "t")
    return [(e.key, e.message) for e in info.value.errors]


def test_auto_on_gke_keeps_the_managed_route_and_selfhosted_is_refused_saying_why():
    assert spec_of(gcp_values(scheduler="kubernetes")).prometheus == "none"
    got = _errors(gcp_values(scheduler="kubernetes", monitoring={"prometheus": "selfHosted"}))
    assert [k for k, _ in got] == [KEY]
    assert got[0][1].startswith(
        "selfHosted is not built with scheduler kubernetes on gcp: GKE's route is the managed one"
    )
    assert got[0][1].endswith("(built on: aws, azure, alicloud, tencentcloud, huaweicloud)")


def test_selfhosted_on_eks_needs_no_login_node():
    spec = spec_of(aws_values(scheduler="kubernetes", monitoring={"prometheus": "selfHosted"}))
    assert spec.prometheus == "selfHosted" and spec.login is None


def test_without_nat_egress_auto_is_none_and_selfhosted_is_refused_naming_the_registries():
    # EKS refuses egress none by itself, so the rule is judged on the config alone
    assert spec_of(aws_values(scheduler="kubernetes")).prometheus == "selfHosted"
    raw = ClusterConfig.model_validate(
        {"gpu": "H100:8", "nodes": 2, "scheduler": "kubernetes", "network": {"egress": "none"}}
    )
    problems = _problems("aws", raw)
    assert problems == [
        "needs network.egress nat, got none: the kube-prometheus-stack chart and its images are pulled from "
        "prometheus-community.github.io, quay.io, registry.k8s.io and docker.io (catalog/kubernetes/charts.yaml)"
    ]


def test_selfhosted_without_the_exporters_is_refused_once():
    got = _errors(aws_values(scheduler="kubernetes", monitoring={"prometheus": "selfHosted", "dcgmExporter": False}))
    assert got == [
        (KEY, "selfHosted has nothing to scrape with monitoring.dcgmExporter false; set it true or use none")
    ]


def test_a_cloud_without_kubernetes_names_where_the_stack_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = ClusterConfig.model_validate({"gpu": "H100:8", "nodes": 2, "scheduler": "kubernetes"})
    # every cloud with Kubernetes now installs it but GKE (whose refusal has a reason): take one away
    monkeypatch.setattr(monitoring_rules, "in_cluster_clouds", lambda: ("aws", "azure", "alicloud", "tencentcloud"))
    assert _problems("huaweicloud", raw) == [
        "is not built with scheduler kubernetes on huaweicloud (built on: aws, azure, alicloud, tencentcloud); use none"
    ]
