"""`monitoring.logs` with `scheduler: kubernetes` on Tencent Cloud (TKE): the cluster's log agent, one topic and one
LogConfig per source in the cluster's CLS logset, as registered with the mocks (camelCase); LogListener only on a
login node; the warning for a KMS key CLS does not take; the day-2 diffs on tencentcloud-tke."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from components.diff import diff_plans
from components.errors import ConfigError
from components.layout.tencentcloud.tke_logs import gpu_namespaces

from .conftest import one, plan_json, plan_stack, plan_stack_with, plan_values, resources_of, spec_of
from .test_tencentcloud_kubernetes import tke_values

STACK = "tencentcloud-tke"
LOGS = {"logs": {"enabled": True, "retentionDays": 180}}


@pytest.fixture(scope="module")
def plan():
    return plan_values(tke_values(monitoring=LOGS))  # no login node: TKE's agent alone ships


def _configs(plan) -> dict[str, dict]:
    return {r["inputs"]["logConfigName"]: r["inputs"] for r in resources_of(plan, "Kubernetes/logConfig:LogConfig")}


def _topics(plan) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, "Cls/topic:Topic")}


def test_the_cluster_turns_on_tkes_log_agent(plan):
    assert one(plan, "Kubernetes/cluster:Cluster")["inputs"]["logAgent"] == {"enabled": True}
    off = plan_values(tke_values())
    assert "logAgent" not in one(off, "Kubernetes/cluster:Cluster")["inputs"]  # unchanged without logs


def test_one_topic_per_source_kept_the_logs_retention_in_the_clusters_logset(plan):
    logset = one(plan, "Cls/logset:Logset")
    assert logset["inputs"]["logsetName"] == "tc-k8s-test-logs"
    topics = _topics(plan)
    assert sorted(t["topicName"] for t in topics.values()) == ["tke-stdout-gpu-operator", "tke-syslog"]
    for topic in topics.values():
        assert topic["period"] == 180 and topic["logsetId"] == "<id of tc-k8s-tencentcloud-logs>"


def test_the_nodes_syslog_is_collected_from_the_host(plan):
    config = _configs(plan)["tc-k8s-syslog"]
    assert config["clusterId"] == "<id of tc-k8s-tencentcloud-tke>" and config["clusterType"] == "tke"
    assert config["logsetId"] == "<id of tc-k8s-tencentcloud-logs>"
    doc = json.loads(config["logConfig"])
    assert doc["apiVersion"] == "cls.cloud.tencent.com/v1" and doc["kind"] == "LogConfig"
    assert doc["metadata"] == {"name": "tc-k8s-syslog"}
    assert doc["spec"]["inputDetail"] == {
        "type": "host_file",
        "hostFile": {"logPath": "/var/log", "filePattern": "syslog"},
    }
    cls = doc["spec"]["clsDetail"]
    # its own topic: TKE takes no topic another collection config uses
    assert cls == {"topicId": "<id of tc-k8s-tencentcloud-logs-tke-syslog>", "logType": "minimalist_log",
                   "region": "ap-guangzhou"}  # fmt: skip


def test_the_gpu_softwares_stdout_is_collected_per_namespace(plan):
    doc = json.loads(_configs(plan)["tc-k8s-stdout-gpu-operator"]["logConfig"])
    assert doc["spec"]["inputDetail"] == {
        "type": "container_stdout",
        "containerStdout": {"namespace": "gpu-operator", "allContainers": True},
    }
    assert doc["spec"]["clsDetail"]["topicId"] == "<id of tc-k8s-tencentcloud-logs-tke-stdout-gpu-operator>"
    assert gpu_namespaces(spec_of(tke_values(monitoring=LOGS))) == ("gpu-operator",)


def test_without_a_login_node_no_loglistener_no_key_and_no_grant(plan):
    types = {r.type for r in plan.resources}
    assert not {t for t in types if t.startswith(("tencentcloud:Cam/user", "tencentcloud:Ssm/"))}
    assert "tencentcloud:Cls/machineGroup:MachineGroup" not in types and "tencentcloud:Cls/config:Config" not in types
    assert not resources_of(plan, "Cam/policy:Policy")  # TKE's log components write with TKE_QCSRole
    out = plan.as_json()["outputs"]["logs"]
    assert out["tke"]["writer"] == "TKE's log components with the service role TKE_QCSRole"
    assert set(out["tke"]["logConfigs"]) == {"tc-k8s-syslog", "tc-k8s-stdout-gpu-operator"}
    assert "machineGroup" not in out and out["retentionDays"] == 180


def test_the_node_pools_get_no_boot_data(plan):
    for pool in resources_of(plan, "Kubernetes/nodePool:NodePool"):
        assert "userData" not in pool["inputs"]["autoScalingConfig"]
        assert "userScript" not in json.dumps(pool["inputs"])


def test_the_shipped_stacks_login_node_runs_loglistener_beside_tkes_agent():
    plan = plan_stack(STACK)
    login = one(plan, "Instance/instance:Instance")["inputs"]
    text = gzip.decompress(base64.b64decode(login["userData"])).decode()
    assert "gpu-cluster-loglistener" in text
    assert one(plan, "Cls/machineGroup:MachineGroup") and len(resources_of(plan, "Cls/config:Config")) == 3
    names = sorted(t["topicName"] for t in _topics(plan).values())
    assert names == ["nodes", "tke-stdout-gpu-operator", "tke-syslog"]


def test_a_kms_key_cls_does_not_take_is_said():
    plan = plan_values(tke_values(monitoring=LOGS, storage={"scratch": "none"}, encryption={"key": "auto"}))
    warning = [w for w in plan.as_json()["warnings"] if w.startswith("gpu-cluster:cluster.monitoring.logs:")]
    assert len(warning) == 1 and "CLS's default storage, not the cluster's KMS key" in warning[0]


def test_retention_outside_the_topics_range_is_refused_with_its_key():
    with pytest.raises(ConfigError) as info:
        plan_values(tke_values(monitoring={"logs": {"enabled": True, "retentionDays": 3640}}))
    assert "gpu-cluster:cluster.monitoring.logs.retentionDays:" in str(info.value) and "1 to 3600" in str(info.value)


# --- day 2 on the shipped stack -----------------------------------------------------------------------------------


def _diff(old, new):
    return diff_plans(plan_json(old), plan_json(new))


def test_day2_logs_on_turns_the_agent_on_in_place_and_replaces_nothing():
    d = _diff(plan_stack_with(STACK, monitoring={}), plan_stack(STACK))
    assert not d.deleted and not d.may_replace
    changed = {c.name: (c.verdict, {x.path for x in c.changes}) for c in d.changed}
    assert changed["tc-tke-tencentcloud-tke"] == ("update", {"logAgent"})
    assert not [n for n in changed if n.endswith(("-system", "-gpu"))]  # the node pools are untouched
    created = [urn.split("::")[-2].split("$")[-1] for urn in d.created]
    assert created.count("tencentcloud:Kubernetes/logConfig:LogConfig") == 2


def test_day2_logs_off_says_data_loss_for_the_topics():
    d = _diff(plan_stack(STACK), plan_stack_with(STACK, monitoring={}))
    assert any(w.startswith("DATA LOSS: deletes") and "logs-tke-syslog" in w for w in d.warnings), d.warnings
    assert {c.name: c.verdict for c in d.changed}["tc-tke-tencentcloud-tke"] == "update"
