"""monitoring.prometheus managed on Azure: the dashboards of bootstrap/monitoring/ as Azure Monitor dashboards with
Grafana, as registered with the mocks (a dashboard and its `default` definition each, in the cluster's resource
group, in VM, Slurm and AKS mode), their JSON (the login node's panels and queries, every Prometheus reference
naming the data source variable filtered to the workspace's name), their names, the SDK model's verdict, the day-2
rows and the plan's row."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from components.bootstrap.monitoring import dashboards
from components.diff import diff_plans
from components.layout.azure.portal_dashboards import WORKSPACE_PLACEHOLDER, dashboard_name, serialized
from components.plan.render import monitoring_text

from .conftest import plan_json, plan_values, resources_of
from .test_azure_resources import azure_values

MANAGED = {"prometheus": "managed"}
AKS = {"scheduler": "kubernetes", "nodeGroup": "managed", "kubernetes": {"systemNodes": 2}}
MODES = {
    "vm": {"login": {}},
    "slurm": {"scheduler": "slurm"},
    "aks": AKS,
}
WORKSPACE = "<autoname:test-azure-metrics>"  # the planner's answer for the workspace's name
RG = "<autoname:test-azure-rg>"
NAME_PATTERN = re.compile(r"^[a-zA-Z][a-z0-9A-Z-]{0,28}[a-z0-9A-Z]$")  # Microsoft.Dashboard/dashboards name


@pytest.fixture(scope="module", params=sorted(MODES))
def managed(request: Any) -> Any:
    return plan_values(azure_values(**MODES[request.param], monitoring=MANAGED))


def _definitions(plan: Any) -> dict[str, dict[str, Any]]:
    """The definitions' inputs by their dashboard's name."""
    return {r["inputs"]["dashboardName"]: r["inputs"] for r in resources_of(plan, "dashboard:DashboardDefinition")}


def _prometheus_refs(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node["datasource"]] if isinstance(node.get("datasource"), dict) else []
        return own + [ref for v in node.values() for ref in _prometheus_refs(v)]
    if isinstance(node, list):
        return [ref for v in node for ref in _prometheus_refs(v)]
    return []


def _exprs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return ([node["expr"]] if "expr" in node else []) + [e for v in node.values() for e in _exprs(v)]
    if isinstance(node, list):
        return [e for v in node for e in _exprs(v)]
    return []


def test_each_dashboard_is_a_dashboard_and_its_default_definition_in_the_resource_group(managed):
    boards = resources_of(managed, "dashboard:Dashboard")
    assert sorted(b["inputs"]["dashboardName"] for b in boards) == ["test-nodes", "test-overview"]
    for b in boards:
        assert b["inputs"]["resourceGroupName"] == RG and b["inputs"]["location"] == "eastus"
        assert b["inputs"]["tags"]["Name"].startswith("test-dashboard-")
    definitions = _definitions(managed)
    assert sorted(definitions) == ["test-nodes", "test-overview"]
    for d in definitions.values():
        assert d["definitionName"] == "default" and d["resourceGroupName"] == RG


def test_the_json_is_the_login_nodes_dashboard_pointed_at_the_workspaces_data_source(managed):
    shipped = {str(body["title"]): body for body in dashboards().values()}
    for d in _definitions(managed).values():
        model = json.loads(d["properties"]["serializedData"])
        body = shipped[model["title"]]
        assert _exprs(model) == _exprs(body) and _exprs(body)  # the same queries, none lost
        assert len(model["panels"]) == len(body["panels"])
        refs = _prometheus_refs(model)
        assert refs and all(r == {"type": "prometheus", "uid": "${datasource}"} for r in refs)
        variable, *rest = model["templating"]["list"]
        assert rest == [
            {**v, "datasource": {"type": "prometheus", "uid": "${datasource}"}} for v in body["templating"]["list"]
        ]
        assert variable["name"] == "datasource" and variable["type"] == "datasource"
        assert variable["query"] == "prometheus"
        # only the data source named as this cluster's workspace is offered (a literal, regex-escaped)
        assert variable["regex"] == f"/^{re.escape(WORKSPACE)}$/"
        assert re.fullmatch(variable["regex"][1:-1], WORKSPACE) and not re.fullmatch(variable["regex"][1:-1], "other")


def test_the_workspace_name_is_escaped_for_the_regex_and_the_json():
    template = json.dumps({"regex": f"/^{WORKSPACE_PLACEHOLDER}$/"})
    assert json.loads(serialized(template, "gc-a.b"))["regex"] == r"/^gc\-a\.b$/"


def test_no_dashboards_without_managed():
    plan = plan_values(azure_values(login={}, monitoring={"prometheus": "selfHosted"}))
    assert not resources_of(plan, "dashboard:Dashboard") and not resources_of(plan, "dashboard:DashboardDefinition")


def test_names_fit_the_pattern_keep_their_stem_and_stay_apart():
    long = "a" * 40
    names = {dashboard_name(long, f, 30) for f in dashboards()}
    assert len(names) == len(dashboards()) and all(NAME_PATTERN.match(n) for n in names)
    assert {n.rsplit("-", 1)[1] for n in names} == {"nodes", "overview"}
    assert dashboard_name("ab--", "dashboard-nodes.json", 10) == "ab-nodes"  # the cut part ends alphanumeric


def test_the_dashboard_is_judged_by_the_sdk_and_the_definition_is_named_uncovered(managed):
    from .conformance import azure as conformance

    resources = [r.as_json() for r in managed.resources]
    report = conformance.check_resources(resources)
    assert not report.refusals, report.text()
    assert report.checked["azure-native:dashboard:Dashboard"] == 2  # azure-mgmt-dashboard ManagedDashboardsOperations
    assert "azure-native:dashboard:DashboardDefinition" in conformance.NO_SDK_MODEL
    bad = copy.deepcopy(resources)
    board = next(r for r in bad if r["type"] == "azure-native:dashboard:Dashboard")
    board["inputs"]["tags"] = "not a map"
    assert conformance.check_resources(bad).refusals


def test_day2_adding_managed_creates_the_dashboards_and_a_json_change_updates_in_place():
    base = azure_values(scheduler="slurm", monitoring={"notify": ["ops@example.com"]})
    after = {
        **base,
        "gpu-cluster:cluster": {**base["gpu-cluster:cluster"], "monitoring": MANAGED | {"notify": ["ops@example.com"]}},
    }
    before_json, after_json = plan_json(plan_values(base)), plan_json(plan_values(after))
    created = sorted(urn.rsplit("::", 1)[1] for urn in diff_plans(before_json, after_json).created)
    assert [n for n in created if "dashboard" in n] == [
        "test-azure-dashboard-nodes",
        "test-azure-dashboard-nodes-definition",
        "test-azure-dashboard-overview",
        "test-azure-dashboard-overview-definition",
    ]
    edited = copy.deepcopy(after_json)
    for r in edited["resources"]:
        if r["type"] == "azure-native:dashboard:DashboardDefinition":
            r["inputs"]["properties"]["serializedData"] = "{}"
    d = diff_plans(after_json, edited)
    assert {c.name: c.verdict for c in d.changed} == {
        "test-azure-dashboard-nodes-definition": "update",
        "test-azure-dashboard-overview-definition": "update",
    }
    assert not any("DATA LOSS" in w for w in d.warnings)


def test_the_plan_row_names_the_dashboards(managed):
    summary = managed.summary()
    assert summary["monitoring"]["portalDashboards"] == ["test-nodes", "test-overview"]
    assert "Azure Monitor dashboards with Grafana: test-nodes, test-overview" in monitoring_text(summary)
