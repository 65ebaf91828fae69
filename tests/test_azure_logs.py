"""Azure monitoring.logs (issue 30): the Log Analytics workspace, its data collection rule, the Azure Monitor Agent on
every VM and scale set with the identity that VM carries, the rule's association, refusals and the day-2 diff."""

from __future__ import annotations

import pytest

from components.catalog import monitoring as catalog_monitoring
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout import azure as azure_layout

from .conftest import one, plan_json, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

LOGS = {"logs": {"enabled": True, "retentionDays": 90}}
AGENT_SETTINGS = {
    "authentication": {
        "managedIdentity": {"identifier-name": "mi_res_id", "identifier-value": "<id of test-azure-identity>"}
    }
}


@pytest.fixture(scope="module")
def scale_set():
    return plan_values(azure_values(monitoring=LOGS))


@pytest.fixture(scope="module")
def instances():
    return plan_values(azure_values(nodeGroup="instances", login={}, monitoring=LOGS))


@pytest.fixture(scope="module")
def slurm():
    return plan_values(azure_values(scheduler="slurm", slurm={"accounting": True}, monitoring=LOGS))


def _agent(ext: dict) -> None:
    assert ext["publisher"] == "Microsoft.Azure.Monitor"
    assert ext["type"] == "AzureMonitorLinuxAgent"
    assert ext["typeHandlerVersion"] == "1.36"
    assert ext["autoUpgradeMinorVersion"] is True
    assert ext["enableAutomaticUpgrade"] is True


def test_the_workspace_keeps_the_logs_for_retention_days_per_gb(scale_set):
    ws = one(scale_set, "operationalinsights:Workspace")
    assert ws["name"] == "test-azure-logs"
    assert ws["inputs"]["sku"] == {"name": "PerGB2018"}
    assert ws["inputs"]["retentionInDays"] == 90
    assert ws["inputs"]["location"] == "eastus"


def test_the_rule_sends_syslog_from_info_up_to_the_workspace_only(scale_set):
    rule = one(scale_set, "monitor:DataCollectionRule")["inputs"]
    assert rule["kind"] == "Linux"
    (source,) = rule["dataSources"]["syslog"]
    assert source["streams"] == ["Microsoft-Syslog"]
    assert set(source["facilityNames"]) == {"auth", "authpriv", "daemon", "kern", "syslog", "user"}
    assert source["logLevels"][0] == "Info" and "Debug" not in source["logLevels"]
    assert rule["destinations"] == {
        "logAnalytics": [{"name": "workspace", "workspaceResourceId": "<id of test-azure-logs>"}]
    }
    assert rule["dataFlows"] == [{"streams": ["Microsoft-Syslog"], "destinations": ["workspace"]}]


def test_the_scale_set_runs_the_agent_after_the_health_extension_and_is_associated(scale_set):
    profile = one(scale_set, "compute:VirtualMachineScaleSet")["inputs"]["virtualMachineProfile"]
    names = [e["name"] for e in profile["extensionProfile"]["extensions"]]
    assert names[-1] == "AzureMonitorLinuxAgent"
    agent = profile["extensionProfile"]["extensions"][-1]
    _agent(agent)
    assert agent["settings"] == AGENT_SETTINGS
    (assoc,) = resources_of(scale_set, "monitor:DataCollectionRuleAssociation")
    assert assoc["inputs"]["resourceUri"] == "<id of test-azure-vmss>"
    assert assoc["inputs"]["dataCollectionRuleId"] == "<id of test-azure-logs-rule>"
    assert not resources_of(scale_set, "compute:VirtualMachineExtension")  # the profile carries it


def test_every_single_vm_gets_its_own_agent_and_association(instances):
    exts = {r["name"]: r["inputs"] for r in resources_of(instances, "compute:VirtualMachineExtension")}
    assert set(exts) == {"test-azure-login-agent", "test-azure-node-0-agent", "test-azure-node-1-agent"}
    for role, ext in exts.items():
        _agent(ext)
        assert ext["vmExtensionName"] == "AzureMonitorLinuxAgent"
        assert ext["settings"] == AGENT_SETTINGS  # the nodes' identity, which every one of these VMs carries
        assert ext["vmName"] == f"<autoname:{role.removesuffix('-agent')}>"
    uris = {r["inputs"]["resourceUri"] for r in resources_of(instances, "monitor:DataCollectionRuleAssociation")}
    assert uris == {"<id of test-azure-login>", "<id of test-azure-node-0>", "<id of test-azure-node-1>"}


def test_the_head_authenticates_with_the_identity_it_carries(slurm):
    exts = {r["name"]: r["inputs"] for r in resources_of(slurm, "compute:VirtualMachineExtension")}
    head = exts["test-azure-head-agent"]["settings"]["authentication"]["managedIdentity"]
    assert head["identifier-value"] == "<id of test-azure-head-identity>"  # accounting: the head's own identity
    login = exts["test-azure-login-agent"]["settings"]["authentication"]["managedIdentity"]
    assert login["identifier-value"] == "<id of test-azure-identity>"


def test_the_nodes_identity_gets_no_role_for_the_logs(scale_set):
    # the agent sends what the associated rule names; nothing is granted on the workspace
    assert not resources_of(scale_set, "authorization:RoleAssignment")


def test_the_logs_output_names_the_workspace_and_what_is_not_collected(scale_set):
    out = scale_set.run.outputs["logs"]
    assert out["retentionDays"] == 90
    assert out["query"].startswith("Syslog")
    assert "/var/log/slurm/*.log" in out["notCollected"]


def test_no_logs_by_default(stack_plan):
    h100 = stack_plan("azure-h100")
    assert not resources_of(h100, "operationalinsights:Workspace")
    assert not resources_of(h100, "monitor:DataCollectionRule")
    assert "logs" not in h100.run.outputs


def test_adding_logs_to_single_vms_replaces_nothing_and_keeps_their_custom_data():
    base = azure_values(nodeGroup="instances", login={})
    before = plan_values(base)
    after = plan_values({**base, "gpu-cluster:cluster": {**base["gpu-cluster:cluster"], "monitoring": LOGS}})
    d = diff_plans(plan_json(before), plan_json(after))
    assert not d.may_replace
    assert not d.changed  # every VM is untouched: the agent and its association are new child resources
    for kind in (
        "azure-native:operationalinsights:Workspace::",
        "azure-native:monitor:DataCollectionRule::",
        "azure-native:compute:VirtualMachineExtension::",
        "azure-native:monitor:DataCollectionRuleAssociation::",
    ):
        assert any(kind in urn for urn in d.created), kind


def test_adding_logs_to_a_scale_set_updates_its_model_in_place():
    base = azure_values()
    before = plan_values(base)
    after = plan_values({**base, "gpu-cluster:cluster": {**base["gpu-cluster:cluster"], "monitoring": LOGS}})
    d = diff_plans(plan_json(before), plan_json(after))
    assert not d.may_replace
    (vmss,) = d.changed
    assert vmss.type == "azure-native:compute:VirtualMachineScaleSet"
    assert all(c.path.startswith("virtualMachineProfile.extensionProfile") for c in vmss.changes)


def test_a_customer_managed_key_refuses_the_logs_naming_the_dedicated_cluster():
    with pytest.raises((ConfigError, ConfigErrors)) as err:
        azure_layout.plan(spec_of(azure_values(encryption={"key": "auto"}, monitoring=LOGS)))
    text = str(err.value)
    assert "cluster.monitoring.logs.enabled" in text
    assert "dedicated" in text and "100 GB" in text


@pytest.mark.parametrize("days", [7, 731])
def test_a_retention_outside_30_to_730_is_refused(days):
    with pytest.raises((ConfigError, ConfigErrors)) as err:
        spec_of(azure_values(monitoring={"logs": {"enabled": True, "retentionDays": days}}))
    assert "cluster.monitoring.logs.retentionDays" in str(err.value)
    assert "30 to 730" in str(err.value)


def test_the_catalog_entry_is_sourced():
    entry = catalog_monitoring.logs("azure")
    assert entry is not None
    assert entry["retentionDays"] == {"min": 30, "max": 730}
    assert "azure-policy" in entry["agent"]["source"]
    assert "dedicated" in entry["cmk"]["source"]
