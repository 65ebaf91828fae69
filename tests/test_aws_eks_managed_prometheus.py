"""monitoring.prometheus managed on EKS, as registered with the mocks: AMP's managed collector (its EKS source, the
workspace destination, its scrape configuration judged by promtool and by the AMP guide's allowed sections), the
workspace with VM mode's rules and alert manager to SNS, the kube-prometheus-stack release reduced to its node
exporter, the CreateScraper request judged against botocore, the plan's row, and the refusals."""

from __future__ import annotations

import copy
import subprocess
from typing import Any

import pytest
import yaml

from components.bootstrap.monitoring import Thresholds, rule_list
from components.diff import load_rules
from components.diff.rules import classify
from components.errors import ConfigErrors
from components.layout.kubernetes_monitoring import DCGM_POD_MATCH
from components.plan.render import monitoring_text

from .conformance import aws
from .conformance.aws_api import Request, validate
from .conftest import aws_values, one, plan_stack, plan_stack_with, plan_values, resources_of

STACK = "aws-eks-managed-prom"
KEY = "gpu-cluster:cluster.monitoring.prometheus"
EKS = {"scheduler": "kubernetes", "kubernetes": {"version": "1.36"}, "network": {"egress": "nat"}}
# the AMP guide's scraper configuration: the top-level sections and a job's fields it takes (AMP-collector-how-to)
TOP_LEVEL = {"global", "scrape_configs"}
JOB_FIELDS = {
    "job_name",
    "metrics_path",
    "scheme",
    "scrape_interval",
    "scrape_timeout",
    "static_configs",
    "kubernetes_sd_configs",
    "relabel_configs",
    "metric_relabel_configs",
}


@pytest.fixture(scope="module")
def plan() -> Any:
    return plan_stack(STACK)


def _config(plan: Any) -> dict[str, Any]:
    text = one(plan, "amp/scraper:Scraper")["inputs"]["scrapeConfiguration"]
    config: dict[str, Any] = yaml.safe_load(text)
    return config


def test_the_collector_reads_the_cluster_from_its_two_subnets_with_the_cluster_security_group(plan):
    scraper = one(plan, "amp/scraper:Scraper")
    assert scraper["name"] == "eks-amp-aws-amp-scraper"
    inputs = scraper["inputs"]
    assert inputs["alias"] == "gpu-cluster-eks-amp-aws-eks-managed-prom"
    eks = inputs["source"]["eks"]
    assert eks["clusterArn"] == "<arn of eks-amp-aws-eks>"
    # the nodes' subnet and the control plane's, in another zone: AMP needs two zones
    assert eks["subnetIds"] == ["<id of eks-amp-aws-nodes>", "<id of eks-amp-aws-control-plane>"]
    cluster = one(plan, "eks/cluster:Cluster")
    assert cluster["inputs"]["vpcConfig"]["endpointPrivateAccess"] is True  # the collector's prerequisite
    (group,) = eks["securityGroupIds"]
    assert "eks-amp-aws-eks" in group  # the cluster security group EKS creates: every node carries it
    assert inputs["destination"] == {"amp": {"workspaceArn": "<arn of eks-amp-aws-amp>"}}
    assert inputs["tags"]["gpu-cluster:cluster"] == "eks-amp"


def test_the_scrape_configuration_scrapes_the_dcgm_and_node_exporters_as_amp_allows(plan):
    config = _config(plan)
    assert set(config) <= TOP_LEVEL
    assert config["global"] == {"scrape_interval": "30s"}  # AMP's floor
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert set(jobs) == {"dcgm-exporter", "node-exporter"}  # the names the dashboards and rules read
    for job in jobs.values():
        assert set(job) <= JOB_FIELDS, set(job) - JOB_FIELDS
        assert job["kubernetes_sd_configs"] == [{"role": "pod"}]
        relabel = job["relabel_configs"]
        assert {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"} in relabel
        assert {"target_label": "cluster", "replacement": "eks-amp"} in relabel
    dcgm = jobs["dcgm-exporter"]["relabel_configs"]
    assert dcgm[0]["regex"] == DCGM_POD_MATCH and dcgm[1]["regex"] == "9400"
    node = jobs["node-exporter"]["relabel_configs"]
    assert node[0] == {
        "source_labels": ["__meta_kubernetes_pod_label_app_kubernetes_io_name"],
        "regex": "prometheus-node-exporter",
        "action": "keep",
    }
    assert node[1]["regex"] == "9100"


def test_the_scrape_configuration_passes_promtool(plan, promtool, tmp_path):
    config = copy.deepcopy(_config(plan))
    # Debian's promtool is built without the Kubernetes discovery: each job is judged with a static target in its
    # place, so its relabelling (actions, regexes, labels) and the global section are still checked
    for job in config["scrape_configs"]:
        assert job.pop("kubernetes_sd_configs") == [{"role": "pod"}]
        job["static_configs"] = [{"targets": ["10.0.0.1:9400"]}]
    path = tmp_path / "scraper.yml"
    path.write_text(yaml.safe_dump(config))
    run = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    # negative control: promtool judges the relabelling
    config["scrape_configs"][1]["relabel_configs"][0]["action"] = "kept"
    path.write_text(yaml.safe_dump(config))
    assert subprocess.run([promtool, "check", "config", str(path)], capture_output=True).returncode != 0


def test_the_workspace_holds_the_rules_and_its_alert_manager_mails_through_sns(plan):
    workspace = one(plan, "amp/workspace:Workspace")["inputs"]
    assert workspace["alias"] == "gpu-cluster-eks-amp-aws-eks-managed-prom" and "kmsKeyArn" not in workspace
    rules = one(plan, "amp/ruleGroupNamespace:RuleGroupNamespace")["inputs"]
    (group,) = yaml.safe_load(rules["data"])["groups"]
    assert group["rules"] == rule_list(Thresholds(**plan.spec.monitoring.alerts.model_dump()))
    definition = yaml.safe_load(one(plan, "amp/alertManagerDefinition:AlertManagerDefinition")["inputs"]["definition"])
    (receiver,) = definition["receivers"]
    assert receiver["sns_configs"][0]["topic_arn"] == "<arn of eks-amp-aws-alerts>"
    subscription = one(plan, "sns/topicSubscription:TopicSubscription")["inputs"]
    assert subscription["endpoint"] == "gpu-oncall@example.com" and subscription["protocol"] == "email"
    policy = one(plan, "sns/topicPolicy:TopicPolicy")["inputs"]
    assert "aps.amazonaws.com" in policy["policy"]
    # no login node: no node-role grant on the workspace, nobody but AMP publishes
    names = {r["name"] for r in resources_of(plan, "iam/rolePolicy:RolePolicy")}
    assert not {"eks-amp-aws-node-role-amp", "eks-amp-aws-node-role-alerts"} & names


def test_the_stack_release_runs_only_its_node_exporter(plan):
    (release,) = [
        r for r in resources_of(plan, "helm.sh/v3:Release") if r["inputs"]["chart"] == "kube-prometheus-stack"
    ]
    values = release["inputs"]["values"]
    for part in ("prometheus", "alertmanager", "grafana", "prometheusOperator", "kubeStateMetrics"):
        assert values[part]["enabled"] is False, part
    assert values["defaultRules"]["create"] is False
    assert values["kubernetesServiceMonitors"]["enabled"] is False
    assert values["prometheus-node-exporter"]["prometheus"]["monitor"]["enabled"] is False
    # nothing configures the parts that do not run: the rules are AMP's, the scrape jobs the collector's
    assert "additionalPrometheusRulesMap" not in values
    assert "prometheusSpec" not in values["prometheus"]
    assert "dashboards" not in values["grafana"]


def test_the_shipped_self_hosted_eks_stack_keeps_its_in_cluster_prometheus():
    plan = plan_stack("aws-eks-h100")
    assert not resources_of(plan, "amp/scraper:Scraper") and not resources_of(plan, "amp/workspace:Workspace")
    (release,) = [
        r for r in resources_of(plan, "helm.sh/v3:Release") if r["inputs"]["chart"] == "kube-prometheus-stack"
    ]
    assert "additionalPrometheusRulesMap" in release["inputs"]["values"]


def test_thresholds_change_the_rules_and_not_the_collector():
    plan = plan_stack_with(STACK, monitoring={"prometheus": "managed", "alerts": {"gpuIdlePercent": 12}})
    rules = yaml.safe_load(one(plan, "amp/ruleGroupNamespace:RuleGroupNamespace")["inputs"]["data"])
    assert rules["groups"][0]["rules"][0]["expr"] == "avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m]) < 12"
    assert _config(plan) == _config(plan_stack(STACK))
    assert not resources_of(plan, "sns/topic:Topic")  # no notify: no topic, no alert manager
    assert not resources_of(plan, "amp/alertManagerDefinition:AlertManagerDefinition")


def test_the_plan_names_the_workspace_and_the_collector(plan):
    text = monitoring_text(plan.summary())
    assert text.startswith(
        "Amazon Managed Service for Prometheus (workspace gpu-cluster-eks-amp-aws-eks-managed-prom), scraped in the "
        "cluster by AMP's managed collector gpu-cluster-eks-amp-aws-eks-managed-prom (jobs dcgm-exporter and "
        "node-exporter); no Grafana in the cluster: Amazon Managed Grafana with the dashboards only with "
        "monitoring.grafanaAdmins"
    )
    assert (
        "alerts: Amazon Managed Service for Prometheus's alert manager to SNS, email to gpu-oncall@example.com" in text
    )
    assert "kubectl" not in text  # no in-cluster Grafana to forward


def test_create_scraper_is_judged_against_botocore(plan):
    report = aws.check_plan(plan)
    (request,) = [r for r in report.requests if r.operation == "CreateScraper"]
    assert set(request.params) == {"alias", "scrapeConfiguration", "source", "destination", "tags"}
    assert report.ok, "\n".join(report.lines())
    # negative controls: an alias outside ScraperAlias' pattern, six subnets (SubnetIds: at most 5)
    bad = copy.deepcopy(request.params)
    bad["alias"] = "-starts-with-a-dash"
    bad["source"]["eksConfiguration"]["subnetIds"] = [f"subnet-{i}" for i in range(6)]
    found = [f"{p.path}: {p.message}" for p in validate(Request("amp", "CreateScraper", bad, "urn:test", "test"))]
    assert any("alias" in f for f in found) and any("subnetIds" in f for f in found), found


def _errors(**cluster: Any) -> list[str]:
    with pytest.raises(ConfigErrors) as refused:
        plan_values(aws_values(**cluster))
    return [str(e) for e in refused.value.errors]


def test_a_customer_managed_key_is_refused_with_the_reason():
    errors = _errors(**EKS, encryption={"key": "auto"}, monitoring={"prometheus": "managed"})
    (error,) = [e for e in errors if e.startswith(KEY)]
    assert "managed cannot be built with encryption.key auto" in error
    assert "customer managed key" in error and "provider" in error


def test_notify_on_eks_still_needs_managed():
    errors = _errors(**EKS, monitoring={"prometheus": "selfHosted", "notify": ["ops@example.com"]})
    assert any(e.startswith("gpu-cluster:cluster.monitoring.notify") and "remove notify" in e for e in errors)


def test_nothing_to_scrape_is_refused():
    errors = _errors(**EKS, monitoring={"prometheus": "managed", "dcgmExporter": False})
    assert any(e.startswith(KEY) and "nothing to scrape" in e for e in errors)


@pytest.mark.parametrize(
    ("path", "verdict"),
    [
        ("scrapeConfiguration", "update"),  # UpdateScraper
        ("alias", "update"),
        ("destination.amp.workspaceArn", "update"),
        ("source.eks.clusterArn", "replace"),  # a new source: deleted and created again
        ("source.eks.subnetIds[1]", "replace"),
        ("source.eks.securityGroupIds[0]", "replace"),
    ],
)
def test_the_diff_updates_the_collector_in_place_and_replaces_it_for_a_new_source(path, verdict):
    rules = load_rules()
    assert classify(rules.rule("aws:amp/scraper:Scraper"), path) == verdict
    assert rules.rule("aws:amp/scraper:Scraper").holds == "none"  # the samples are the workspace's (holds data)
    assert rules.rule("aws:amp/workspace:Workspace").holds == "data"
