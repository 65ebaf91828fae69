"""monitoring.prometheus managed on Alibaba Cloud: the ARMS ECS environment bound to the cluster's VPC (admitted to
the login node's Prometheus port from the VPC's CIDR only), the federation job naming the login node's address, one
ARMS alert rule per rule of bootstrap/monitoring.py, monitoring.notify as ARMS contacts, a contact group and a
dispatch rule; no AccessKey and no new RAM grant; the refusals; what turning it on changes in a deployed stack."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest
import yaml

from components.bootstrap import monitoring
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout import alicloud as ali
from components.layout.alicloud import monitoring as ali_monitoring
from components.spec import build_spec

from .conftest import ROOT, load_stack, plan_json, plan_stack_with, plan_values, resources_of, spec_of
from .test_alicloud_slurm import files_of
from .test_layout_alicloud import ali_values

EMAILS = ["ops@example.com", "gpu@example.com"]


def managed(**cluster):
    return ali_values(login={}, network={"egress": "nat"}, monitoring={"prometheus": "managed", **cluster})


@pytest.fixture(scope="module")
def elastic():
    return plan_stack_with("alicloud-slurm-elastic", monitoring={"prometheus": "managed", "notify": EMAILS})


@pytest.fixture(scope="module")
def vm():
    return plan_values(managed(), "vm")


def _named(plan, suffix):
    found = [r.as_json() for r in plan.resources if r.name.endswith(suffix)]
    assert len(found) == 1, suffix
    return found[0]["inputs"]


def _errors(values):
    with pytest.raises((ConfigError, ConfigErrors)) as caught:
        build_spec(values, "test")
    errors = getattr(caught.value, "errors", [caught.value])
    return {e.key.removeprefix("gpu-cluster:"): e.message for e in errors}


# --- the spec ------------------------------------------------------------------------------------------------------


def test_managed_is_accepted_with_a_login_node_and_nat_and_auto_never_picks_it():
    assert spec_of(managed()).prometheus == "managed"
    assert spec_of(ali_values(login={}, network={"egress": "nat"})).prometheus == "selfHosted"


def test_managed_without_a_login_node_is_refused():
    values = ali_values(network={"egress": "nat"}, monitoring={"prometheus": "managed"})
    assert "add a login node" in _errors(values)["cluster.monitoring.prometheus"]


def test_notify_needs_managed_on_alibaba():
    values = ali_values(login={}, network={"egress": "nat"}, monitoring={"notify": EMAILS})
    message = _errors(values)["cluster.monitoring.notify"]
    assert "set it to managed" in message and "ARMS" in message
    assert list(spec_of(managed(notify=EMAILS)).monitoring.notify) == EMAILS


# --- the layout ------------------------------------------------------------------------------------------------------


def test_the_rules_are_the_rule_list_with_whole_minutes_of_at_least_one():
    spec = spec_of(managed())
    rules = ali_monitoring.arms_rules(spec)
    source = monitoring.rule_list(monitoring.Thresholds(**spec.monitoring.alerts.model_dump()))
    assert [r.alert for r in rules] == [r["alert"] for r in source]
    for rule, src in zip(rules, source, strict=True):
        assert rule.expression == src["expr"] and rule.message == src["annotations"]["summary"]
        assert rule.duration == f"{max(1, int(src['for'].removesuffix('m')))}m"
        assert dict(rule.labels) == {**src["labels"], "cluster": spec.name}
        assert rule.name == f"{spec.name}-{src['alert']}"
    assert {r.alert: r.duration for r in rules}["GpuXidError"] == "1m"  # "for: 0m" in Prometheus, ARMS' least is 1m


def test_the_federation_job_takes_every_series_of_the_cluster_from_the_login_node():
    layout = ali.plan(spec_of(managed()))
    assert layout.monitoring is not None and layout.monitoring.managed is not None
    job = yaml.safe_load(layout.monitoring.managed.federate_job)["scrape_configs"]
    assert len(job) == 1
    assert job[0]["metrics_path"] == "/federate" and job[0]["honor_labels"] is True
    assert job[0]["params"] == {"match[]": ['{cluster!=""}']}
    assert job[0]["static_configs"][0]["targets"] == [f"{ali_monitoring.LOGIN_PLACEHOLDER}:9090"]


def test_the_login_nodes_prometheus_listens_on_the_vpc_only_when_managed(vm):
    files = files_of(_named(vm, "-alicloud-login")["userData"])
    unit = files["/etc/systemd/system/gpu-cluster-prometheus.service"]
    assert "--web.listen-address=0.0.0.0:9090" in unit
    # it stays a server (local storage for the dashboards), not an agent; ARMS evaluates the rules, so none here
    assert monitoring.RULES_YML not in files and "--enable-feature=agent" not in unit
    assert "rule_files" not in yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    hosted = plan_values(ali_values(login={}, network={"egress": "nat"}), "hosted")
    hosted_files = files_of(_named(hosted, "-alicloud-login")["userData"])
    assert "--web.listen-address=127.0.0.1:9090" in hosted_files["/etc/systemd/system/gpu-cluster-prometheus.service"]


def test_the_federation_job_passes_promtool(promtool, tmp_path):
    job = ali.plan(spec_of(managed())).monitoring.managed.federate_job
    config = tmp_path / "prometheus.yml"
    config.write_text(job.replace(ali_monitoring.LOGIN_PLACEHOLDER, "10.0.0.5"))
    result = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --- the resources registered with the mocks -----------------------------------------------------------------------


def test_the_environment_is_an_ecs_environment_bound_to_the_clusters_vpc(vm):
    env = _named(vm, "-alicloud-arms")
    assert env["environmentType"] == "ECS" and env["environmentSubType"] == "ECS"
    assert env["bindResourceId"] == "<id of vm-alicloud-vpc>"
    assert env["environmentName"] == "gpu-cluster-vm-vm" and env["tags"]["gpu-cluster:cluster"] == "vm"
    # not CreatePrometheusInstance's cluster_type ecs, which the ARMS API no longer takes (conformance judges it)
    assert not resources_of(vm, "arms/prometheus:Prometheus")


def test_only_the_vpc_reaches_the_login_nodes_prometheus(vm):
    rules = [r["inputs"] for r in resources_of(vm, "SecurityGroupRule") if "<id of vm-alicloud-login-sg>" in str(r)]
    federate = [r for r in rules if r["portRange"] == "9090/9090"]
    assert len(federate) == 1
    assert federate[0]["cidrIp"] == vm.layout.spec.network.cidr and "sourceSecurityGroupId" not in federate[0]
    assert federate[0]["type"] == "ingress" and federate[0]["policy"] == "accept"
    assert federate[0]["nicType"] == "intranet"


def test_the_custom_job_federates_the_login_nodes_address(vm):
    job = _named(vm, "-alicloud-arms-federate")
    assert job["environmentId"] == "<id of vm-alicloud-arms>" and job["status"] == "run"
    assert job["envCustomJobName"] == ali_monitoring.FEDERATE_JOB
    config = yaml.safe_load(job["configYaml"])
    assert config["scrape_configs"][0]["static_configs"][0]["targets"] == ["<private ip of vm-alicloud-login>:9090"]


def test_one_arms_rule_per_rule_in_the_alert_center_without_notify(vm):
    rules = resources_of(vm, "arms/prometheusAlertRule:PrometheusAlertRule")
    spec = vm.layout.spec
    assert len(rules) == len(ali_monitoring.arms_rules(spec))
    for r in rules:
        inputs = r["inputs"]
        assert inputs["clusterId"].startswith("<resolved at deploy: the Prometheus instance of")
        assert inputs["notifyType"] == "ALERT_MANAGER" and "dispatchRuleId" not in inputs
        assert inputs["type"] == "101" and inputs["duration"].endswith("m")
    assert not resources_of(vm, "arms/dispatchRule:DispatchRule")
    assert not resources_of(vm, "arms/alertContact:AlertContact")


def test_notify_mails_a_contact_group_through_a_dispatch_rule_the_rules_name(elastic):
    contacts = resources_of(elastic, "arms/alertContact:AlertContact")
    assert sorted(c["inputs"]["email"] for c in contacts) == sorted(EMAILS)
    group = _named(elastic, "-alicloud-arms-contacts")
    assert sorted(group["contactIds"]) == sorted(f"<id of {c['name']}>" for c in contacts)
    dispatch = _named(elastic, "-alicloud-arms-dispatch")
    assert dispatch["dispatchType"] == "CREATE_ALERT" and dispatch["isRecover"] is True
    notify = dispatch["notifyRules"][0]
    assert notify["notifyChannels"] == ["email"]
    assert notify["notifyObjects"] == [
        {
            "notifyObjectId": "<id of slurm-elastic-alicloud-arms-contacts>",
            "notifyType": "ARMS_CONTACT_GROUP",
            "name": group["alertContactGroupName"],
        }
    ]
    assert dispatch["groupRules"][0]["repeatInterval"] >= 61  # arms.DispatchRule: "The minimum value is 61"
    match = dispatch["labelMatchExpressionGrids"][0]["labelMatchExpressionGroups"][0]["labelMatchExpressions"][0]
    rules = resources_of(elastic, "arms/prometheusAlertRule:PrometheusAlertRule")
    assert match["key"] == "_aliyun_arms_alert_name" and match["operator"] == "re"
    assert set(match["value"].split("|")) == {r["inputs"]["prometheusAlertRuleName"] for r in rules}
    for r in rules:
        assert r["inputs"]["notifyType"] == "DISPATCH_RULE"
        assert r["inputs"]["dispatchRuleId"] == "<id of slurm-elastic-alicloud-arms-dispatch>"


def test_no_accesskey_and_no_new_grant(elastic):
    policies = resources_of(elastic, "ram/policy:Policy")
    monitoring_policies = [p for p in policies if p["name"].endswith("-monitoring-policy")]
    assert len(monitoring_policies) == 1  # the target list's ecs:DescribeInstances, as selfHosted
    assert json.loads(monitoring_policies[0]["inputs"]["policyDocument"])["Statement"][0]["Action"] == [
        "ecs:DescribeInstances"
    ]
    assert not any("arms:" in p["inputs"]["policyDocument"] for p in policies)
    login = files_of(_named(elastic, "-alicloud-login")["userData"])
    assert not any("basic_auth" in text or "access_key" in text for text in login.values())


def test_the_output_names_the_instance_and_keeps_the_grafana_path(elastic):
    out = elastic.run.outputs["monitoring"]
    assert out["prometheus"] == "managed" and out["service"].startswith("Managed Service for Prometheus (ARMS)")
    assert out["environment"] == "<id of slurm-elastic-alicloud-arms>"
    assert out["grafana"]["url"] == "http://localhost:3000" and out["prometheusListen"] == "0.0.0.0:9090"
    assert out["notify"] == EMAILS


def test_turning_it_on_restarts_only_the_login_node_and_adds_the_arms_resources():
    shipped = load_stack(ROOT, "alicloud-slurm-elastic").values["gpu-cluster:cluster"]["monitoring"]
    old = plan_json(plan_stack_with("alicloud-slurm-elastic", monitoring=shipped))
    new = plan_json(plan_stack_with("alicloud-slurm-elastic", monitoring={**shipped, "prometheus": "managed"}))
    d = diff_plans(old, new)
    assert [(c.name, c.verdict, sorted({x.path for x in c.changes})) for c in d.changed] == [
        ("slurm-elastic-alicloud-login", "restart", ["userData"])
    ]
    assert d.deleted == []
    created = sorted(urn.rsplit("::", 1)[1] for urn in d.created)
    assert created[:4] == [
        "slurm-elastic-alicloud-arms",
        "slurm-elastic-alicloud-arms-federate",
        "slurm-elastic-alicloud-arms-rule-DiskNearlyFull",
        "slurm-elastic-alicloud-arms-rule-FabricLinkDown",
    ]
    assert "slurm-elastic-alicloud-login-sg-federate-from-arms" in created
    assert {c.key: c for c in d.spec_changes}["cluster.monitoring.prometheus"].policy == "in-place"


def test_the_login_nodes_user_data_stays_under_16_kb(elastic):
    login = _named(elastic, "-alicloud-login")
    assert len(base64.b64decode(login["userData"])) < 16 * 1024


def test_the_arms_api_no_longer_takes_prometheus_for_ecs_so_the_environment_is_used():
    # why arms.Environment and not arms.Prometheus(cluster_type="ecs"): the ARMS API model says so
    from alibabacloud_arms20190808 import models as arms_models

    from .conformance import _tea

    cluster_type = _tea.members(arms_models.CreatePrometheusInstanceRequest)["ClusterType"].doc
    assert "ecs (no longer supported)" in cluster_type
    environment = _tea.members(arms_models.CreateEnvironmentRequest)
    assert "ECS" in environment["EnvironmentType"].doc and "VPC ID" in environment["BindResourceId"].doc


def test_the_managed_plan_is_what_the_arms_api_and_the_provider_accept(elastic):
    from .conformance import alicloud as conformance

    report = conformance.check([r.as_json() for r in elastic.resources], elastic.spec.region)
    apis = {call.api for _, call in report.calls}
    assert {"arms:CreateEnvironment", "arms:CreateEnvCustomJob", "arms:CreatePrometheusAlertRule"} <= apis
    assert {"arms:CreateAlertContact", "arms:CreateAlertContactGroup", "arms:CreateDispatchRule"} <= apis
    assert report.problems == [] and report.untranslated == [] and report.unread == []
