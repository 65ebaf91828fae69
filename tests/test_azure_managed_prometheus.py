"""monitoring.prometheus managed on Azure, as registered with the mocks: the Azure Monitor workspace (the one
monitoring.notify builds) with the alert rules as its Prometheus rule group, the nodes' identity publishing to its
own data collection rule and reading the workspace only, the login node's Prometheus agent (judged by promtool
--agent) and Grafana reading the workspace with the managed identity, Azure Managed Grafana with
monitoring.grafanaAdmins (its system identity reading that workspace only, Grafana Admin per named user), the plan's
row and price, the day-2 diff and the refusals."""

from __future__ import annotations

import base64
import json
import subprocess
from typing import Any

import pytest
import yaml

from components.bootstrap import monitoring
from components.bootstrap.monitoring import Thresholds, rule_list
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout.azure.managed_grafana import grafana_name

from .conftest import one, plan_json, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

MANAGED = {"prometheus": "managed"}
ADMIN = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
ROLES = "/providers/Microsoft.Authorization/roleDefinitions/"
PUBLISHER = ROLES + "3913510d-42f4-4e42-8a64-420c390055eb"
DATA_READER = ROLES + "b0d8363b-8ddd-447d-831f-62ca05bff136"
GRAFANA_ADMIN = ROLES + "22926164-76b3-42b3-bc55-97df8dab3e41"
AZURE_SD_READER = ROLES + "acdd72a7-3385-48ef-bd42-f606fba81ae7"
WORKSPACE_ID = "<id of test-azure-metrics>"
QUERY = "https://<prometheus query endpoint of test-azure-metrics>"  # components/plan/mocks/azure.yaml
CLIENT_ID = "<client id of test-azure-identity>"
INGEST = (
    "https://gc-test-abcd.eastus-1.metrics.ingest.monitor.azure.com/dataCollectionRules/dcr-0123456789abcdef/streams/"
    "Microsoft-PrometheusMetrics/api/v1/write?api-version=2021-11-01-preview"
)


def _files(plan: Any) -> dict[str, str]:
    login = next(r for r in resources_of(plan, "compute:VirtualMachine") if r["name"].endswith("-login"))
    cloud_config = yaml.safe_load(base64.b64decode(login["inputs"]["osProfile"]["customData"]).decode())
    return {f["path"]: f["content"] for f in cloud_config["write_files"]}


def _grants(plan: Any, role: str) -> list[dict[str, Any]]:
    return [r["inputs"] for r in resources_of(plan, "RoleAssignment") if r["inputs"]["roleDefinitionId"].endswith(role)]


@pytest.fixture(scope="module")
def slurm():
    return plan_values(azure_values(scheduler="slurm", monitoring=MANAGED | {"grafanaAdmins": [ADMIN]}))


@pytest.fixture(scope="module")
def vm():
    return plan_values(azure_values(login={}, monitoring=MANAGED))


def test_the_workspace_holds_the_rules_and_without_notify_fires_no_action_group(vm):
    assert one(vm, "monitor:AzureMonitorWorkspace")["name"] == "test-azure-metrics"
    group = one(vm, "alertsmanagement:PrometheusRuleGroup")["inputs"]
    assert group["scopes"] == [WORKSPACE_ID] and group["interval"] == "PT1M"
    spec = spec_of(azure_values(login={}, monitoring=MANAGED))
    expected = rule_list(Thresholds(**spec.monitoring.alerts.model_dump()))
    assert [r["alert"] for r in group["rules"]] == [r["alert"] for r in expected]
    assert [r["expression"] for r in group["rules"]] == [r["expr"] for r in expected]
    assert all("actions" not in r for r in group["rules"])
    assert not resources_of(vm, "monitor:ActionGroup")


def test_with_notify_the_rules_fire_the_action_group():
    plan = plan_values(azure_values(login={}, monitoring=MANAGED | {"notify": ["ops@example.com"]}))
    group = one(plan, "alertsmanagement:PrometheusRuleGroup")["inputs"]
    assert all(r["actions"] == [{"actionGroupId": "<id of test-azure-alerts>"}] for r in group["rules"])
    assert one(plan, "monitor:ActionGroup")["inputs"]["emailReceivers"][0]["emailAddress"] == "ops@example.com"


def test_the_identity_publishes_to_the_workspaces_rule_and_reads_the_workspace_only(vm):
    (publish,) = _grants(vm, PUBLISHER)
    assert publish["scope"].endswith("/dataCollectionRules/<default rule of the workspace>")
    assert publish["principalId"] == "<principal id of test-azure-identity>"
    (read,) = _grants(vm, DATA_READER)
    assert read["scope"] == WORKSPACE_ID and read["principalId"] == "<principal id of test-azure-identity>"
    # the agent still discovers the VMs with azure_sd: Reader on the resource group, as selfHosted
    (sd,) = _grants(vm, AZURE_SD_READER)
    assert sd["scope"].endswith("/resourceGroups/<autoname:test-azure-rg>")
    assert not resources_of(vm, "dashboard:Grafana")  # no grafanaAdmins: no Managed Grafana


@pytest.mark.parametrize("mode", ["vm", "slurm"])
def test_the_login_node_runs_an_agent_writing_with_the_identity_and_grafana_reading_the_workspace(mode, vm, slurm):
    files = _files(vm if mode == "vm" else slurm)
    config = yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    assert "rule_files" not in config and "alerting" not in config
    (remote,) = config["remote_write"]
    assert remote["azuread"] == {"cloud": "AzurePublic", "managed_identity": {"client_id": CLIENT_ID}}
    assert (
        "/dataCollectionRules/<resolved at deploy: immutable id of <default rule of the workspace>>/" in remote["url"]
    )
    assert config["scrape_configs"][0]["azure_sd_configs"][0]["client_id"] == CLIENT_ID
    unit = files["/etc/systemd/system/gpu-cluster-prometheus.service"]
    assert f"--enable-feature=agent --storage.agent.path={monitoring.AGENT_DIR}" in unit and "tsdb" not in unit
    assert monitoring.RULES_YML not in files
    (source,) = yaml.safe_load(files["/etc/grafana/provisioning/datasources/gpu-cluster.yaml"])["datasources"]
    assert source["url"] == QUERY and source["jsonData"] == {"azureCredentials": {"authType": "msi"}}
    env = files["/etc/systemd/system/grafana-server.service.d/gpu-cluster.conf"]
    for line in (
        "GF_AUTH_AZURE_AUTH_ENABLED=true",
        "GF_AZURE_MANAGED_IDENTITY_ENABLED=true",
        f"GF_AZURE_MANAGED_IDENTITY_CLIENT_ID={CLIENT_ID}",
    ):
        assert f"Environment={line}\n" in env
    assert any(path.startswith(monitoring.DASHBOARD_DIR) for path in files)
    assert "@GPU_CLUSTER_AZURE" not in json.dumps(files)  # every placeholder filled at deploy


def test_managed_grafana_links_the_workspace_reads_it_only_and_makes_each_named_user_admin(slurm):
    grafana = one(slurm, "dashboard:Grafana")
    inputs = grafana["inputs"]
    assert inputs["workspaceName"] == "test-grafana"
    assert inputs["sku"] == {"name": "Standard"} and inputs["identity"] == {"type": "SystemAssigned"}
    props = inputs["properties"]
    assert props["grafanaMajorVersion"] == "11" and props["zoneRedundancy"] == "Disabled"
    assert props["apiKey"] == "Disabled" and props["publicNetworkAccess"] == "Enabled"
    assert props["grafanaIntegrations"] == {
        "azureMonitorWorkspaceIntegrations": [{"azureMonitorWorkspaceResourceId": WORKSPACE_ID}]
    }
    readers = {g["principalId"]: g["scope"] for g in _grants(slurm, DATA_READER)}
    assert readers == {
        "<principal id of test-azure-grafana>": WORKSPACE_ID,  # not the subscription the portal's default gives
        "<principal id of test-azure-identity>": WORKSPACE_ID,
    }
    (admin,) = _grants(slurm, GRAFANA_ADMIN)
    assert admin["principalId"] == ADMIN and admin["scope"] == "<id of test-azure-grafana>"
    assert admin["principalType"] == "User"


def test_the_grafana_name_fits_and_ends_alphanumeric():
    assert grafana_name("test", 23) == "test-grafana"
    assert grafana_name("a-very-long-cluster-name", 23) == "a-very-long-cluster-nam"
    assert grafana_name("abcdefghijklmnop", 23) == "abcdefghijklmnop-grafan"
    assert grafana_name("abcdefghijklmnopqrstuv", 23) == "abcdefghijklmnopqrstuv"


def test_the_agent_config_and_the_rule_groups_rules_pass_promtool(promtool, vm, tmp_path):
    config = tmp_path / "prometheus.yml"
    rendered = yaml.safe_load(_files(vm)[monitoring.PROMETHEUS_YML])
    (remote,) = rendered["remote_write"]
    # the ingestion URL as the deployed cluster fills it (the plan's mock text is not a URL); the azuread block is
    # Prometheus 2.45+'s (2.53 on the node), which the Debian promtool 2.42 here does not know: it is checked by
    # shape in the test above, everything else by promtool
    assert set(remote) == {"url", "azuread"}
    rendered["remote_write"] = [{"url": INGEST}]
    agent_config = yaml.safe_dump(rendered, sort_keys=False)
    config.write_text(agent_config)
    for flags in (["--agent"], []):  # as an agent's, and as the login node's monitoring.sh checks it
        run = subprocess.run([promtool, "check", "config", *flags, str(config)], capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
    rules = tmp_path / "rules.yml"
    group = one(vm, "alertsmanagement:PrometheusRuleGroup")["inputs"]
    body = [{"alert": r["alert"], "expr": r["expression"], "labels": r["labels"]} for r in group["rules"]]
    rules.write_text(yaml.safe_dump({"groups": [{"name": "gpu-cluster", "rules": body}]}))
    run = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    config.write_text(agent_config + f"rule_files: [{rules}]\n")  # a negative control: agents evaluate no rules
    assert subprocess.run([promtool, "check", "config", "--agent", str(config)], capture_output=True).returncode != 0


def test_the_plan_names_the_workspace_the_grafana_and_the_usage_price(slurm):
    row = slurm.summary()["monitoring"]
    assert row["prometheus"] == "managed" and row["service"] == "Azure Monitor managed service for Prometheus"
    assert row["endpoint"] == QUERY and "Azure Managed Grafana only with monitoring.grafanaAdmins" in row["grafanaNote"]
    assert row["managedGrafana"]["endpoint"] == "https://<endpoint of test-azure-grafana>"
    bill = json.dumps(slurm.as_json(), default=str)
    assert "Azure Managed Grafana Standard (built only with monitoring.grafanaAdmins)" in bill  # named, not counted


def _errors(**cluster: Any) -> list[ConfigError]:
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(azure_values(**cluster))
    return list(getattr(info.value, "errors", [info.value]))


def test_managed_with_aks_and_nothing_to_scrape_is_refused_by_key():
    # managed is built on AKS (tests/test_azure_aks_managed_prometheus.py); without the DCGM exporter it has no GPU
    # metrics to collect
    (error,) = _errors(scheduler="kubernetes", monitoring=MANAGED | {"dcgmExporter": False})
    assert error.key == "gpu-cluster:cluster.monitoring.prometheus"
    assert error.message.startswith("managed has nothing to scrape with monitoring.dcgmExporter false")


def test_grafana_admins_are_refused_without_managed_elsewhere_and_when_not_object_ids():
    (error,) = _errors(login={}, monitoring={"grafanaAdmins": [ADMIN]})
    assert error.key == "gpu-cluster:cluster.monitoring.grafanaAdmins" and "got auto" in error.message
    (error,) = _errors(login={}, monitoring=MANAGED | {"grafanaAdmins": ["ops@example.com"]})
    assert error.key == "gpu-cluster:cluster.monitoring.grafanaAdmins[0]" and "object id" in error.message
    from .test_aws_managed_prometheus import _errors as aws_errors

    # AWS builds Amazon Managed Grafana with its own id form (IAM Identity Center user ids): an address is refused
    errors = aws_errors(login={}, monitoring=MANAGED | {"grafanaAdmins": ["ops@example.com"]})
    assert [e.key for e in errors] == ["gpu-cluster:cluster.monitoring.grafanaAdmins[0]"]
    assert "on aws must be an IAM Identity Center user id" in errors[0].message


def test_day2_self_hosted_to_managed_replaces_only_the_login_node_and_adds_beside():
    base = azure_values(scheduler="slurm", monitoring={"notify": ["ops@example.com"]})
    managed = MANAGED | {"notify": ["ops@example.com"]}
    after = {**base, "gpu-cluster:cluster": {**base["gpu-cluster:cluster"], "monitoring": managed}}
    d = diff_plans(plan_json(plan_values(base)), plan_json(plan_values(after)))
    assert [c.key for c in d.spec_changes] == ["cluster.monitoring.prometheus"]
    # the login VM is created again (its custom data: the agent); notify's workspace, rules and grant stay
    assert {c.name: c.verdict for c in d.changed} == {"test-azure-login": "replace"}
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.created) == [
        "test-azure-dashboard-nodes",
        "test-azure-dashboard-nodes-definition",
        "test-azure-dashboard-overview",
        "test-azure-dashboard-overview-definition",
        "test-azure-role-metrics-reader",
    ]
    assert not d.deleted


def test_day2_removing_the_last_admin_names_the_grafanas_data_loss(slurm):
    base = azure_values(scheduler="slurm", monitoring=MANAGED)
    d = diff_plans(plan_json(slurm), plan_json(plan_values(base)))
    assert any(w.startswith("DATA LOSS") and "test-azure-grafana" in w for w in d.warnings), d.warnings
    assert {c.name for c in d.changed} <= set()  # nothing else changes: no VM, node or job


def test_azure_managed_grafana_is_judged_by_the_dashboard_sdk(slurm):
    import copy

    from .conformance import azure as conformance

    resources = [r.as_json() for r in slurm.resources]
    report = conformance.check_resources(resources)
    assert not report.refusals, report.text()
    assert report.checked["azure-native:dashboard:Grafana"] == 1  # azure-mgmt-dashboard 2.0.0 GrafanaOperations
    bad = copy.deepcopy(resources)
    (grafana,) = [r for r in bad if r["type"] == "azure-native:dashboard:Grafana"]
    grafana["inputs"]["properties"]["zoneRedundancy"] = "Sometimes"
    text = conformance.check_resources(bad).text()
    assert "zoneRedundancy: 'Sometimes' is not one of the known values ['Disabled', 'Enabled']" in text
