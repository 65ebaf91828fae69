"""monitoring.prometheus managed with scheduler kubernetes on Azure (AKS), as registered with the mocks: the
ManagedCluster's managed Prometheus add-on (azureMonitorProfile.metrics), its data collection endpoint and rule
sending the Prometheus stream to the cluster's Azure Monitor workspace, the rule's association with the cluster, the
DCGM exporter's scrape job in the add-on's ConfigMap (judged by promtool), VM mode's rule group scoped to the cluster
and Managed Grafana, no kube-prometheus-stack, no grant to the nodes, the plan's row, the SDK models' verdict and
the day-2 diff on the shipped AKS stack."""

from __future__ import annotations

import copy
import json
import subprocess
from typing import Any

import pytest
import yaml

from components.bootstrap.monitoring import Thresholds, rule_list
from components.diff import diff_plans
from components.layout.kubernetes_monitoring import dcgm_scrape_job
from components.plan.render import monitoring_text

from .conftest import one, plan_json, plan_stack, plan_stack_with, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

MANAGED = {"prometheus": "managed"}
AKS = {"scheduler": "kubernetes", "nodeGroup": "managed", "kubernetes": {"systemNodes": 2}}
ADMIN = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
ROLES = "/providers/Microsoft.Authorization/roleDefinitions/"
PUBLISHER = "3913510d-42f4-4e42-8a64-420c390055eb"
DATA_READER = "b0d8363b-8ddd-447d-831f-62ca05bff136"
WORKSPACE_ID = "<id of test-azure-metrics>"
CLUSTER_ID = "<id of test-azure-aks>"


@pytest.fixture(scope="module")
def aks() -> Any:
    return plan_values(azure_values(**AKS, monitoring=MANAGED | {"notify": ["ops@example.com"]}))


@pytest.fixture(scope="module")
def shipped() -> Any:
    return plan_stack("azure-aks-managed-prom")


def _config_map(plan: Any) -> dict[str, Any]:
    return one(plan, "core/v1:ConfigMap")["inputs"]


def test_the_cluster_runs_the_managed_prometheus_add_on_and_no_kube_prometheus_stack(aks):
    cluster = one(aks, "containerservice:ManagedCluster")["inputs"]
    assert cluster["azureMonitorProfile"] == {
        "metrics": {
            "enabled": True,
            "kubeStateMetrics": {"metricLabelsAllowlist": "", "metricAnnotationsAllowList": ""},
        }
    }
    charts = {r["inputs"]["chart"] for r in resources_of(aks, "helm.sh/v3:Release")}
    assert "kube-prometheus-stack" not in charts and "gpu-operator" in charts
    # the GPU operator's ServiceMonitor (a monitoring.coreos.com CRD nothing installs here) stays off
    (operator,) = [r for r in resources_of(aks, "helm.sh/v3:Release") if r["inputs"]["chart"] == "gpu-operator"]
    assert operator["inputs"]["values"]["dcgmExporter"]["serviceMonitor"] == {"enabled": False}


def test_the_clusters_rule_sends_the_prometheus_stream_to_the_workspace_through_its_endpoint(aks):
    endpoint = one(aks, "monitor:DataCollectionEndpoint")
    assert endpoint["name"] == "test-azure-prom-dce" and endpoint["inputs"]["kind"] == "Linux"
    rule = one(aks, "monitor:DataCollectionRule")["inputs"]  # no logs: the only rule is the add-on's
    assert rule["kind"] == "Linux" and rule["dataCollectionEndpointId"] == "<id of test-azure-prom-dce>"
    assert rule["dataSources"] == {
        "prometheusForwarder": [
            {"name": "PrometheusDataSource", "streams": ["Microsoft-PrometheusMetrics"], "labelIncludeFilter": {}}
        ]
    }
    assert rule["destinations"] == {
        "monitoringAccounts": [{"name": "MonitoringAccount1", "accountResourceId": WORKSPACE_ID}]
    }
    assert rule["dataFlows"] == [{"streams": ["Microsoft-PrometheusMetrics"], "destinations": ["MonitoringAccount1"]}]
    association = one(aks, "monitor:DataCollectionRuleAssociation")["inputs"]
    assert association["resourceUri"] == CLUSTER_ID
    assert association["associationName"] == "ContainerInsightsMetricsExtension"
    assert association["dataCollectionRuleId"] == "<id of test-azure-prom-dcr>"


def test_the_rule_group_is_vm_modes_scoped_to_the_cluster_and_fires_the_action_group(aks):
    group = one(aks, "alertsmanagement:PrometheusRuleGroup")["inputs"]
    assert group["scopes"] == [WORKSPACE_ID, CLUSTER_ID]
    assert group["clusterName"] == "<autoname:test-azure-aks>"  # the add-on's `cluster` label: the AKS name
    assert group["interval"] == "PT1M"
    spec = spec_of(azure_values(**AKS, monitoring=MANAGED))
    expected = rule_list(Thresholds(**spec.monitoring.alerts.model_dump()))
    assert [(r["alert"], r["expression"]) for r in group["rules"]] == [(r["alert"], r["expr"]) for r in expected]
    assert all(r["actions"] == [{"actionGroupId": "<id of test-azure-alerts>"}] for r in group["rules"])
    assert one(aks, "monitor:ActionGroup")["inputs"]["emailReceivers"][0]["emailAddress"] == "ops@example.com"


def test_nothing_is_granted_to_the_nodes_the_association_authorises_the_add_on(aks):
    roles = [r["inputs"]["roleDefinitionId"] for r in resources_of(aks, "RoleAssignment")]
    assert not [r for r in roles if r.endswith(PUBLISHER) or r.endswith(DATA_READER)]  # no grafanaAdmins here


def test_managed_grafana_reads_the_workspace_for_the_named_admin(shipped):
    grafana = one(shipped, "dashboard:Grafana")["inputs"]
    assert grafana["properties"]["grafanaIntegrations"] == {
        "azureMonitorWorkspaceIntegrations": [{"azureMonitorWorkspaceResourceId": "<id of aks-prom-azure-metrics>"}]
    }
    readers = [
        r["inputs"] for r in resources_of(shipped, "RoleAssignment") if DATA_READER in r["inputs"]["roleDefinitionId"]
    ]
    assert [(r["principalId"], r["scope"]) for r in readers] == [
        ("<principal id of aks-prom-azure-grafana>", "<id of aks-prom-azure-metrics>")
    ]


def test_the_scrape_config_map_holds_the_dcgm_job_without_a_cluster_label(aks):
    config_map = _config_map(aks)
    assert config_map["metadata"] == {"name": "ama-metrics-prometheus-config", "namespace": "kube-system"}
    config = yaml.safe_load(config_map["data"]["prometheus-config"])
    (job,) = config["scrape_configs"]
    assert job == dcgm_scrape_job(None) and job["job_name"] == "dcgm-exporter"
    # the add-on sets cluster=<AKS name> on every series, which the rule group's clusterName selects
    assert all(r.get("target_label") != "cluster" for r in job["relabel_configs"])
    assert {"target_label": "cluster", "replacement": "x"} in dcgm_scrape_job("x")["relabel_configs"]


def test_the_scrape_config_passes_promtool(aks, promtool, tmp_path):
    config = yaml.safe_load(_config_map(aks)["data"]["prometheus-config"])
    (job,) = config["scrape_configs"]
    # Debian's promtool is built without the Kubernetes discovery ("field kubernetes_sd_configs not found"): the job
    # is judged with a static target in its place, so its relabelling is still checked (as test_k8s_monitoring does)
    assert job.pop("kubernetes_sd_configs") == [{"role": "pod"}]
    job["static_configs"] = [{"targets": ["10.0.0.1:9400"]}]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    run = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    job["relabel_configs"][0]["action"] = "kept"  # a negative control: promtool judges the relabelling
    path.write_text(yaml.safe_dump(config))
    assert subprocess.run([promtool, "check", "config", str(path)], capture_output=True).returncode != 0


def test_the_plan_names_the_workspace_the_add_on_and_where_the_dashboards_go(shipped):
    row = shipped.summary()["monitoring"]
    assert row["prometheus"] == "managed" and row["service"] == "Azure Monitor managed service for Prometheus"
    assert row["endpoint"] == "https://<prometheus query endpoint of aks-prom-azure-metrics>"
    assert row["managedGrafana"]["endpoint"] == "https://<endpoint of aks-prom-azure-grafana>"
    text = monitoring_text(shipped.summary())
    assert "scraped in the cluster by AKS's managed Prometheus add-on" in text
    # the dashboards are provisioned as Azure Monitor dashboards with Grafana (tests/test_azure_portal_dashboards.py)
    assert "Azure Monitor dashboards with Grafana: aks-prom-nodes, aks-prom-overview" in text
    bill = json.dumps(shipped.as_json(), default=str)
    assert "Azure Monitor managed service for Prometheus" in bill


def test_the_add_on_and_its_collection_are_judged_by_the_azure_sdk_models(aks):
    from .conformance import azure as conformance

    resources = [r.as_json() for r in aks.resources]
    report = conformance.check_resources(resources)
    assert not report.refusals, report.text()
    for kind in ("DataCollectionEndpoint", "DataCollectionRule", "DataCollectionRuleAssociation"):
        assert report.checked[f"azure-native:monitor:{kind}"] == 1
    bad = copy.deepcopy(resources)
    (cluster,) = [r for r in bad if r["type"] == "azure-native:containerservice:ManagedCluster"]
    cluster["inputs"]["azureMonitorProfile"]["metrics"]["enabled"] = "yes"
    (endpoint,) = [r for r in bad if r["type"] == "azure-native:monitor:DataCollectionEndpoint"]
    endpoint["inputs"]["kind"] = "Solaris"
    text = conformance.check_resources(bad).text()
    assert "azureMonitorProfile.metrics.enabled: expected bool, got str 'yes'" in text, text
    assert "kind: 'Solaris' is not one of the known values" in text, text


def test_managed_on_aks_needs_no_login_node_and_takes_notify():
    plan = plan_values(azure_values(**AKS, monitoring=MANAGED | {"notify": ["ops@example.com"]}))
    assert not [r for r in resources_of(plan, "compute:VirtualMachine")]
    assert one(plan, "monitor:ActionGroup")


def test_day2_self_hosted_to_managed_updates_the_cluster_in_place_and_restarts_no_node():
    base = plan_stack_with("azure-aks-managed-prom", monitoring={"prometheus": "selfHosted"})
    after = plan_stack_with("azure-aks-managed-prom", monitoring=MANAGED)
    d = diff_plans(plan_json(base), plan_json(after))
    assert [c.key for c in d.spec_changes] == ["cluster.monitoring.prometheus"]
    verdicts = {c.name: c.verdict for c in d.changed}
    assert verdicts["aks-prom-azure-aks"] == "update"  # azureMonitorProfile: in place
    assert "aks-prom-azure-gpu-pool" not in verdicts and "aks-prom-azure-login" not in verdicts
    created = sorted(urn.rsplit("::", 1)[1] for urn in d.created)
    assert created == sorted(
        f"aks-prom-azure-{name}" for name in ("prom-dce", "prom-dcr", "prom-dcra", "aks-scrape-config", "metrics",
                                              "alert-rules", "dashboard-nodes", "dashboard-nodes-definition",
                                              "dashboard-overview", "dashboard-overview-definition")
    )  # fmt: skip
    deleted = [urn.rsplit("::", 1)[1] for urn in d.deleted]
    assert deleted == ["aks-prom-azure-kube-prometheus-stack"]
