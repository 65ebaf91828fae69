"""monitoring.logs with scheduler kubernetes on Azure (AKS), as registered with the mocks: Container Insights (the
ManagedCluster's omsagent add-on with managed identity auth) to the cluster's workspace, its own collection rule (the
pods' output, events and pod inventory, the nodes' syslog) associated with the cluster under the name the add-on reads,
the login VM's agent as in VM mode, and the day-2 diff on the shipped AKS stack (logs stay off as shipped)."""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog import monitoring as catalog_monitoring
from components.diff import diff_plans
from components.diff.spec_changes import mode_of
from components.layout import azure as azure_layout
from components.spec.updates import update_policies

from .conftest import one, plan_json, plan_stack_with, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

LOGS = {"logs": {"enabled": True, "retentionDays": 90}}
AKS = {"scheduler": "kubernetes", "nodeGroup": "managed", "login": {}, "kubernetes": {"systemNodes": 2}}
STREAMS = ["Microsoft-ContainerLogV2", "Microsoft-KubeEvents", "Microsoft-KubePodInventory"]


@pytest.fixture(scope="module")
def aks_plan() -> Any:
    return plan_values(azure_values(**AKS, monitoring=LOGS))


def _named(plan: Any, type_suffix: str, name: str) -> dict[str, Any]:
    return next(r for r in resources_of(plan, type_suffix) if r["name"] == name)


def test_the_cluster_enables_container_insights_to_the_workspace_with_managed_identity_auth(aks_plan):
    cluster = one(aks_plan, "containerservice:ManagedCluster")["inputs"]
    assert cluster["addonProfiles"] == {
        "omsagent": {
            "enabled": True,
            "config": {"logAnalyticsWorkspaceResourceID": "<id of test-azure-logs>", "useAADAuth": "true"},
        }
    }
    workspace = one(aks_plan, "operationalinsights:Workspace")["inputs"]
    assert workspace["retentionInDays"] == 90 and workspace["sku"] == {"name": "PerGB2018"}


def test_the_clusters_rule_sends_the_pod_logs_events_and_the_nodes_syslog_to_the_workspace(aks_plan):
    rule = _named(aks_plan, "monitor:DataCollectionRule", "test-azure-logs-aks-rule")["inputs"]
    assert rule["kind"] == "Linux"
    (extension,) = rule["dataSources"]["extensions"]
    assert extension == {
        "name": "ContainerInsightsExtension",
        "extensionName": "ContainerInsights",
        "streams": STREAMS,
        "extensionSettings": {
            "dataCollectionSettings": {"interval": "1m", "namespaceFilteringMode": "Off", "enableContainerLogV2": True}
        },
    }
    (syslog,) = rule["dataSources"]["syslog"]
    assert syslog["streams"] == ["Microsoft-Syslog"]
    # kubelet and containerd log under daemon, the kernel's Xid lines under kern
    assert {"daemon", "kern"} <= set(syslog["facilityNames"])
    assert syslog["facilityNames"] == catalog_monitoring.logs("azure")["syslogFacilities"]  # type: ignore[index]
    assert rule["destinations"] == {
        "logAnalytics": [{"name": "workspace", "workspaceResourceId": "<id of test-azure-logs>"}]
    }
    assert rule["dataFlows"] == [
        {"streams": STREAMS, "destinations": ["workspace"]},
        {"streams": ["Microsoft-Syslog"], "destinations": ["workspace"]},
    ]


def test_the_rule_is_associated_with_the_cluster_under_the_name_container_insights_reads(aks_plan):
    association = _named(aks_plan, "monitor:DataCollectionRuleAssociation", "test-azure-aks-logs")["inputs"]
    assert association["associationName"] == "ContainerInsightsExtension"
    assert association["resourceUri"] == "<id of test-azure-aks>"
    assert association["dataCollectionRuleId"] == "<id of test-azure-logs-aks-rule>"


def test_the_login_vm_ships_its_syslog_as_in_vm_mode_and_no_role_is_granted(aks_plan):
    agent = _named(aks_plan, "compute:VirtualMachineExtension", "test-azure-login-agent")["inputs"]
    assert agent["type"] == "AzureMonitorLinuxAgent"
    login = _named(aks_plan, "monitor:DataCollectionRuleAssociation", "test-azure-login-logs")["inputs"]
    assert login["dataCollectionRuleId"] == "<id of test-azure-logs-rule>"
    # managed identity auth: the association authorises the add-on's own identity; no role assignment of ours
    roles = [r["name"] for r in resources_of(aks_plan, "authorization:RoleAssignment")]
    assert not [n for n in roles if "logs" in n or "monitor" in n]


def test_without_logs_the_cluster_has_no_add_on_and_nothing_is_added():
    plan = plan_values(azure_values(**AKS))
    assert "addonProfiles" not in one(plan, "containerservice:ManagedCluster")["inputs"]
    assert not resources_of(plan, "operationalinsights:Workspace")
    assert not resources_of(plan, "monitor:DataCollectionRule")
    assert azure_layout.plan(spec_of(azure_values(**AKS))).logs is None


def test_the_plan_says_what_to_query(aks_plan):
    logs = aks_plan.as_json()["outputs"]["logs"]
    assert logs["kubernetes"].startswith("ContainerLogV2")


def _aks(monitoring: dict[str, Any] | None) -> dict[str, Any]:
    return plan_json(plan_stack_with("azure-aks-h100", monitoring=monitoring or {}))


@pytest.fixture(scope="module")
def shipped() -> dict[str, Any]:
    return _aks(None)


@pytest.fixture(scope="module")
def with_logs() -> dict[str, Any]:
    return _aks(LOGS)


def test_day2_turning_logs_on_updates_the_cluster_in_place_and_no_node_pool(shipped, with_logs):
    d = diff_plans(shipped, with_logs)
    said = {c.key: c.policy for c in d.spec_changes}
    policy = update_policies()["cluster.monitoring.logs.enabled"].effect(mode_of(with_logs))
    assert said["cluster.monitoring.logs.enabled"] == policy.policy == "in-place"
    # the ManagedCluster gains its add-on in place; the GPU pool, the login VM and the rest keep their inputs
    assert {c.name: c.verdict for c in d.changed} == {"llm-aks-azure-aks": "update"}
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.created) == [
        "llm-aks-azure-aks-logs",
        "llm-aks-azure-login-agent",
        "llm-aks-azure-login-logs",
        "llm-aks-azure-logs",
        "llm-aks-azure-logs-aks-rule",
        "llm-aks-azure-logs-rule",
    ]
    assert d.deleted == []
    assert not [w for w in d.warnings if "DATA LOSS" in w or "DISRUPTION" in w]


def test_day2_turning_logs_off_says_data_loss_for_the_workspace(shipped, with_logs):
    d = diff_plans(with_logs, shipped)
    assert {c.name: c.verdict for c in d.changed} == {"llm-aks-azure-aks": "update"}
    loss = [w for w in d.warnings if w.startswith("DATA LOSS: deletes")]
    assert len(loss) == 1 and "llm-aks-azure-logs" in loss[0]


def test_without_a_login_node_only_the_clusters_rule_is_made():
    no_login = {k: v for k, v in AKS.items() if k != "login"}
    plan = plan_values(azure_values(**no_login, monitoring=LOGS))
    assert [r["name"] for r in resources_of(plan, "monitor:DataCollectionRule")] == ["test-azure-logs-aks-rule"]
    assert not resources_of(plan, "compute:VirtualMachineExtension")
    associations = resources_of(plan, "monitor:DataCollectionRuleAssociation")
    assert [a["inputs"]["associationName"] for a in associations] == ["ContainerInsightsExtension"]
