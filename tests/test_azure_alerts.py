"""Azure monitoring.notify (issue 30): the action group, the Azure Monitor workspace and its rule group with the login
node's rules, the login node's remote write with the nodes' identity, its one grant, and the day-2 diff."""

from __future__ import annotations

import base64
import re

import pytest
import yaml

from components.bootstrap.monitoring import PROMETHEUS_YML, Thresholds, rule_list
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout.azure.alerts import iso_minutes, short_name

from .conftest import one, plan_json, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

EMAILS = ["ops@example.com", "oncall@example.com"]
PUBLISHER = "/providers/Microsoft.Authorization/roleDefinitions/3913510d-42f4-4e42-8a64-420c390055eb"
RULE_ID = (
    "/subscriptions/<subscription>/resourceGroups/<managed group of the workspace>/providers/Microsoft.Insights/"
    "dataCollectionRules/<default rule of the workspace>"
)


@pytest.fixture(scope="module")
def slurm():
    return plan_values(azure_values(scheduler="slurm", monitoring={"notify": EMAILS}))


def _login_prometheus(plan) -> dict:
    login = next(r for r in resources_of(plan, "compute:VirtualMachine") if r["name"].endswith("-login"))
    text = base64.b64decode(login["inputs"]["osProfile"]["customData"]).decode()
    cloud_config = yaml.safe_load(text)
    (config,) = [f["content"] for f in cloud_config["write_files"] if f["path"] == PROMETHEUS_YML]
    return yaml.safe_load(config)


def test_the_action_group_mails_every_address(slurm):
    group = one(slurm, "monitor:ActionGroup")["inputs"]
    assert group["location"] == "Global"
    assert group["enabled"] is True
    assert group["groupShortName"] == "test"
    assert group["emailReceivers"] == [
        {"name": "email-0", "emailAddress": "ops@example.com", "useCommonAlertSchema": True},
        {"name": "email-1", "emailAddress": "oncall@example.com", "useCommonAlertSchema": True},
    ]


def test_the_rule_group_evaluates_the_login_nodes_rules_on_the_workspace_and_fires_the_group(slurm):
    group = one(slurm, "alertsmanagement:PrometheusRuleGroup")["inputs"]
    assert group["scopes"] == ["<id of test-azure-metrics>"]
    assert group["interval"] == "PT1M"
    spec = spec_of(azure_values(scheduler="slurm", monitoring={"notify": EMAILS}))
    expected = rule_list(Thresholds(**spec.monitoring.alerts.model_dump()))
    assert [r["alert"] for r in group["rules"]] == [r["alert"] for r in expected]
    for sent, rule in zip(group["rules"], expected, strict=True):
        assert sent["expression"] == rule["expr"]
        assert sent["annotations"] == rule["annotations"]
        assert sent["severity"] == {"critical": 0, "warning": 2}[rule["labels"]["severity"]]
        assert sent.get("for") == iso_minutes(rule["for"])
        assert sent["actions"] == [{"actionGroupId": "<id of test-azure-alerts>"}]


def test_the_login_node_remote_writes_with_the_nodes_identity(slurm):
    (remote,) = _login_prometheus(slurm)["remote_write"]
    assert remote["azuread"] == {
        "cloud": "AzurePublic",
        "managed_identity": {"client_id": "<client id of test-azure-identity>"},
    }
    url = remote["url"]
    assert url.startswith("https://<resolved at deploy: metrics ingestion host of <default endpoint of the workspace>>")
    assert "/dataCollectionRules/<resolved at deploy: immutable id of <default rule of the workspace>>/" in url
    assert url.endswith("/streams/Microsoft-PrometheusMetrics/api/v1/write?api-version=2021-11-01-preview")


def test_the_only_new_grant_is_publishing_to_the_workspaces_own_rule(slurm):
    grants = [
        r["inputs"]
        for r in resources_of(slurm, "RoleAssignment")
        if r["inputs"]["roleDefinitionId"].endswith(PUBLISHER)
    ]
    (grant,) = grants
    assert grant["scope"] == RULE_ID
    assert grant["principalId"] == "<principal id of test-azure-identity>"


def test_without_notify_the_login_node_writes_nowhere(stack_plan):
    plan = plan_values(azure_values(scheduler="slurm"))
    assert "remote_write" not in _login_prometheus(plan)
    assert not resources_of(plan, "monitor:ActionGroup")
    assert not resources_of(plan, "monitor:AzureMonitorWorkspace")


def test_notify_replaces_only_the_login_node_and_adds_the_alerting_resources():
    base = azure_values(scheduler="slurm")
    before = plan_values(base)
    after = plan_values(
        {**base, "gpu-cluster:cluster": {**base["gpu-cluster:cluster"], "monitoring": {"notify": EMAILS}}}
    )
    d = diff_plans(plan_json(before), plan_json(after))
    assert {c.name for c in d.changed} == {"test-azure-login"}  # its prometheus.yml (custom data) gains remote_write
    for kind in ("monitor:ActionGroup::", "monitor:AzureMonitorWorkspace::", "alertsmanagement:PrometheusRuleGroup::"):
        assert any(kind in urn for urn in d.created), kind


def test_notify_without_the_login_nodes_prometheus_is_refused():
    with pytest.raises((ConfigError, ConfigErrors)) as err:
        spec_of(azure_values(monitoring={"prometheus": "none", "notify": EMAILS}))
    assert "cluster.monitoring.notify" in str(err.value)


def test_the_short_name_fits_twelve_characters():
    assert short_name("a-very-long-cluster-name", 12) == "a-very-long"
    assert len(short_name("abcdefghijklmnop", 12)) == 12


@pytest.mark.parametrize(("given", "iso"), [("5m", "PT5M"), ("60m", "PT60M"), ("0m", None)])
def test_prometheus_for_becomes_iso_8601(given, iso):
    assert iso_minutes(given) == iso


def test_the_rule_group_is_within_what_azure_takes(slurm):
    # no Azure SDK for Python models PrometheusRuleGroup (tests/conformance/azure.py NO_SDK_MODEL): the SDK source's
    # docstrings are the rules (interval "between 1 and 15 minutes", severity "between 0 and 4", ISO 8601 durations)
    group = one(slurm, "alertsmanagement:PrometheusRuleGroup")["inputs"]
    assert 1 <= int(group["interval"].removeprefix("PT").removesuffix("M")) <= 15
    for rule in group["rules"]:
        assert 0 <= rule["severity"] <= 4
        assert rule.get("for") is None or re.fullmatch(r"PT\d+M", rule["for"])
        assert rule["alert"] and rule["expression"]


def test_changing_the_addresses_updates_only_the_action_group():
    base = azure_values(scheduler="slurm", monitoring={"notify": EMAILS})
    before = plan_values(base)
    cluster = {**base["gpu-cluster:cluster"], "monitoring": {"notify": ["ops@example.com"]}}
    d = diff_plans(plan_json(before), plan_json(plan_values({**base, "gpu-cluster:cluster": cluster})))
    assert [c.type for c in d.changed] == ["azure-native:monitor:ActionGroup"]
    assert not d.may_replace and not d.created and not d.deleted
