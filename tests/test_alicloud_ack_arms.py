"""monitoring.prometheus managed on ACK (alicloud-ack-arms): an ARMS container (CS) environment bound to the ACK
cluster, ARMS' Prometheus agent installed in it (metric-agent), a PodMonitor pointing it at NVIDIA's DCGM exporter
with the in-cluster stack's relabelling, VM mode's ARMS alert rules and notify path; no kube-prometheus-stack, no
login node, no federation; the refusal; what switching to it changes on a deployed cluster; the ARMS API models."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from components.catalog import monitoring as catalog_monitoring
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout import alicloud as ali
from components.layout.alicloud import ack_monitoring
from components.layout.alicloud import monitoring as ali_monitoring
from components.layout.kubernetes_monitoring import dcgm_scrape_job
from components.plan.render import monitoring_text
from components.spec import build_spec

from .conftest import plan_json, plan_stack, plan_stack_with, resources_of, spec_of
from .test_layout_alicloud import ali_values

STACK = "alicloud-ack-arms"


def ack(**monitoring):
    return ali_values(
        instanceType="ecs.gn7i-c8g1.2xlarge",
        nodes=1,
        nodeGroup="managed",
        zone="cn-beijing-h",
        scheduler="kubernetes",
        monitoring={"prometheus": "managed", **monitoring},
    )


@pytest.fixture(scope="module")
def shipped():
    return plan_stack(STACK)


def _registered(plan, suffix):
    found = [r for r in plan.resources if r.name.endswith(suffix)]
    assert len(found) == 1, suffix
    return found[0]


def _named(plan, suffix):
    return _registered(plan, suffix).as_json()


# --- the spec ------------------------------------------------------------------------------------------------------


def test_managed_is_built_on_ack_without_a_login_node():
    spec = spec_of(ack())
    assert spec.prometheus == "managed" and spec.login is None
    assert "kubernetesWhy" not in catalog_monitoring.managed("alicloud")  # no refusal left for ACK


def test_managed_on_ack_without_the_dcgm_exporter_is_refused_by_key():
    with pytest.raises((ConfigError, ConfigErrors)) as caught:
        build_spec(ack(dcgmExporter=False), "test")
    errors = {e.key: e.message for e in getattr(caught.value, "errors", [caught.value])}
    assert "nothing to scrape" in errors["gpu-cluster:cluster.monitoring.prometheus"]


# --- the layout ------------------------------------------------------------------------------------------------------


def test_the_layout_is_a_container_environment_with_the_agent_and_vm_modes_rules():
    spec = spec_of(ack(notify=["ops@example.com"]))
    plan = ali.plan(spec)
    assert plan.monitoring is None  # nothing on a login node
    arms = plan.kubernetes.arms
    entry = catalog_monitoring.managed("alicloud")["kubernetes"]
    assert (arms.environment_type, arms.environment_sub_type) == ("CS", "ManagedKubernetes")
    assert (arms.feature, arms.feature_version) == ("metric-agent", str(entry["featureVersion"]))
    assert arms.rules == ali_monitoring.arms_rules(spec)  # VM mode's rules, reused
    assert arms.notify == ali_monitoring.arms_notify(spec, arms.rules)
    assert arms.notify.emails == ("ops@example.com",)
    # kube-prometheus-stack is selfHosted's: not installed with managed
    assert [r.chart for r in plan.kubernetes.releases] == ["gpu-operator"]


@pytest.mark.parametrize(
    ("software", "label"),
    [("operator", {"app": "nvidia-dcgm-exporter"}), ("device-plugin", {"app.kubernetes.io/name": "dcgm-exporter"})],
)
def test_the_pod_monitor_selects_the_dcgm_exporter_of_the_clusters_release(software, label):
    values = ack()
    values["gpu-cluster:cluster"]["kubernetes"] = {"gpuSoftware": software}
    spec = spec_of(values)
    monitor = yaml.safe_load(ali.plan(spec).kubernetes.arms.pod_monitor)
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["kind"] == "PodMonitor"
    assert monitor["metadata"]["namespace"] == "arms-prom"
    assert monitor["metadata"]["annotations"] == {"arms.prometheus.io/discovery": "true"}
    assert monitor["spec"]["selector"] == {"matchLabels": label}
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["targetPort"] == 9400 and endpoint["path"] == "/metrics" and endpoint["interval"] == "30s"
    # the in-cluster stack's relabelling (node, cluster), in the operator's spelling, and the VM clusters' job name
    job = dcgm_scrape_job(spec.name)["relabel_configs"]
    assert len(endpoint["relabelings"]) == len(job) + 1
    assert {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"} in endpoint["relabelings"]
    assert {"targetLabel": "cluster", "replacement": spec.name} in endpoint["relabelings"]
    assert endpoint["relabelings"][-1] == {"targetLabel": "job", "replacement": "dcgm-exporter"}


def test_the_pod_monitors_relabelling_is_a_valid_prometheus_config(promtool, tmp_path):
    """The PodMonitor's relabelings back in Prometheus' own spelling, as the agent applies them."""
    endpoint = yaml.safe_load(ali.plan(spec_of(ack())).kubernetes.arms.pod_monitor)["spec"]["podMetricsEndpoints"][0]
    snake = {"sourceLabels": "source_labels", "targetLabel": "target_label"}
    relabel = [{snake.get(k, k): v for k, v in r.items()} for r in endpoint["relabelings"]]
    # static targets: Debian's promtool is built without Kubernetes discovery; the relabel configs are what is judged
    job = {"job_name": "dcgm", "static_configs": [{"targets": ["10.0.0.5:9400"]}], "relabel_configs": relabel}
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"scrape_configs": [job]}))
    result = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --- the resources registered with the mocks -----------------------------------------------------------------------


def test_the_environment_is_bound_to_the_ack_cluster(shipped):
    env = _named(shipped, "-alicloud-arms")["inputs"]
    assert env["environmentType"] == "CS" and env["environmentSubType"] == "ManagedKubernetes"
    assert env["bindResourceId"] == "<id of ack-arms-alicloud-ack>"
    assert env["environmentName"] == "gpu-cluster-ack-arms-alicloud-ack-arms"
    assert env["tags"]["gpu-cluster:cluster"] == "ack-arms"


def test_the_agent_waits_for_the_system_pool_and_the_pod_monitor_for_the_agent(shipped):
    agent = _named(shipped, "-alicloud-arms-agent")
    assert agent["inputs"] == {
        "environmentId": "<id of ack-arms-alicloud-arms>",
        "envFeatureName": "metric-agent",
        "featureVersion": str(catalog_monitoring.managed("alicloud")["kubernetes"]["featureVersion"]),
    }
    assert _registered(shipped, "-alicloud-system").urn in _registered(shipped, "-alicloud-arms-agent").dependencies
    assert agent["urn"] in _registered(shipped, "-alicloud-arms-dcgm").dependencies
    monitor = _named(shipped, "-alicloud-arms-dcgm")
    assert monitor["inputs"]["environmentId"] == "<id of ack-arms-alicloud-arms>"
    assert monitor["inputs"]["configYaml"] == shipped.layout.kubernetes.arms.pod_monitor


def test_the_rules_and_the_notify_path_are_vm_modes(shipped):
    rules = resources_of(shipped, "arms/prometheusAlertRule:PrometheusAlertRule")
    assert len(rules) == len(shipped.layout.kubernetes.arms.rules)
    for r in rules:
        assert r["inputs"]["clusterId"].startswith("<resolved at deploy: the Prometheus instance of")
        assert r["inputs"]["notifyType"] == "DISPATCH_RULE"
        assert r["inputs"]["dispatchRuleId"] == "<id of ack-arms-alicloud-arms-dispatch>"
    contacts = resources_of(shipped, "arms/alertContact:AlertContact")
    assert [c["inputs"]["email"] for c in contacts] == ["gpu-oncall@example.com"]


def test_no_login_node_no_federation_no_in_cluster_stack_and_no_grant(shipped):
    assert not resources_of(shipped, "arms/envCustomJob:EnvCustomJob")
    assert not [r for r in shipped.resources if r.name.endswith("-alicloud-login")]
    releases = [r.as_json()["inputs"]["chart"] for r in shipped.resources if r.type.endswith("helm.sh/v3:Release")]
    assert "kube-prometheus-stack" not in releases and "gpu-operator" in releases
    assert not [p for p in resources_of(shipped, "ram/policy:Policy") if "arms" in p["inputs"]["policyDocument"]]


def test_the_output_and_the_plan_name_the_environment_and_the_pod_monitor(shipped):
    out = shipped.run.outputs["monitoring"]
    assert out["prometheus"] == "managed" and out["environment"] == "<id of ack-arms-alicloud-arms>"
    assert out["grafana"] is None and out["notify"] == ["gpu-oncall@example.com"]
    text = monitoring_text(plan_json(shipped)["summary"])
    assert "container (CS) environment" in text and ack_monitoring.POD_MONITOR in text
    assert "metric-agent" in text and "7 alert rules" in text


def test_switching_from_self_hosted_replaces_the_release_and_leaves_the_cluster_alone(shipped):
    old = plan_json(plan_stack_with(STACK, monitoring={"prometheus": "selfHosted"}))
    d = diff_plans(old, plan_json(shipped))
    deleted = [urn.rsplit("::", 1)[1] for urn in d.deleted]
    assert deleted == ["ack-arms-alicloud-kube-prometheus-stack"]
    created = {urn.rsplit("::", 1)[1] for urn in d.created}
    assert {"ack-arms-alicloud-arms", "ack-arms-alicloud-arms-agent", "ack-arms-alicloud-arms-dcgm"} <= created
    assert [c.name for c in d.changed if c.verdict in {"replace", "may-replace", "restart", "refresh"}] == []
    assert {c.key: c for c in d.spec_changes}["cluster.monitoring.prometheus"].policy == "in-place"


# --- the ARMS API ----------------------------------------------------------------------------------------------------


def test_an_ack_environment_is_unmanaged_so_the_agent_is_installed_as_its_feature():
    from alibabacloud_arms20190808 import models as arms_models

    from .conformance import _tea

    assert (
        "none: unmanaged. Default for ACK clusters"
        in _tea.members(arms_models.InitEnvironmentRequest)["ManagedType"].doc
    )
    assert "metric-agent" in _tea.members(arms_models.InstallEnvironmentFeatureRequest)["FeatureName"].doc
    assert "CS" in _tea.members(arms_models.CreateEnvironmentRequest)["EnvironmentType"].doc


def test_the_ack_plan_is_what_the_arms_api_and_the_provider_accept(shipped):
    from .conformance import alicloud as conformance

    report = conformance.check([r.as_json() for r in shipped.resources], shipped.spec.region)
    apis = {call.api for _, call in report.calls}
    assert {"arms:CreateEnvironment", "arms:InitEnvironment", "arms:InstallEnvironmentFeature"} <= apis
    assert {"arms:CreateEnvPodMonitor", "arms:CreatePrometheusAlertRule", "arms:CreateDispatchRule"} <= apis
    assert report.problems == [] and report.untranslated == [] and report.unread == []
