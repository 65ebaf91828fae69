"""monitoring.logs with scheduler kubernetes on Alibaba Cloud (ACK), as registered with the mocks: the cluster's SLS
project and logstore, the ACK nodes' machine group (k8s-group-<cluster id>), the two plugin configurations attached to
it (containers' stdout and stderr, the nodes' journal), ACK's logtail-ds add-on naming the project, no Logtail part in
the node pools' boot data, and the day-2 diff on the shipped ACK stack (logs stay off as shipped)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.diff import diff_plans
from components.diff.spec_changes import mode_of
from components.layout.alicloud.logs import data
from components.spec.updates import update_policies

from .conftest import plan_json, plan_stack_with, plan_values, resources_of
from .test_layout_alicloud import ali_values, layout_of

LOGS = {"logs": {"enabled": True, "retentionDays": 60}}
ACK = {"scheduler": "kubernetes", "nodeGroup": "managed"}
PROJECT = "test-logs-<suffix of test-alicloud-logs-suffix>"


@pytest.fixture(scope="module")
def ack_plan() -> Any:
    return plan_values(ali_values(**ACK, monitoring=LOGS))


def _named(plan: Any, type_suffix: str, name: str) -> dict[str, Any]:
    return next(r for r in resources_of(plan, type_suffix) if r["name"] == name)


def test_the_logtail_ds_add_on_writes_to_the_clusters_project(ack_plan):
    addon = _named(ack_plan, "cs/kubernetesAddon:KubernetesAddon", "test-alicloud-logtail-ds")["inputs"]
    assert addon["name"] == "logtail-ds"
    assert addon["clusterId"] == "<id of test-alicloud-ack>"
    assert json.loads(addon["config"]) == {"sls_project_name": PROJECT}
    store = _named(ack_plan, "log/store:Store", "test-alicloud-logs-store")["inputs"]
    assert (store["projectName"], store["retentionPeriod"]) == (PROJECT, 60)


def test_the_ack_nodes_machine_group_is_their_custom_identifier(ack_plan):
    group = _named(ack_plan, "log/machineGroup:MachineGroup", "test-alicloud-logs-ack-group")["inputs"]
    assert group["name"] == "k8s-group-<id of test-alicloud-ack>"
    assert group["identifyType"] == "userdefined"
    assert group["identifyLists"] == ["k8s-group-<id of test-alicloud-ack>"]
    # no login node: no file set to ship, so no machine group of the VM mode
    assert [r["name"] for r in resources_of(ack_plan, "log/machineGroup:MachineGroup")] == [
        "test-alicloud-logs-ack-group"
    ]


def test_stdout_and_the_journal_are_collected_by_plugin_configurations_on_that_group(ack_plan):
    configs = {r["name"]: r["inputs"] for r in resources_of(ack_plan, "log/logTailConfig:LogTailConfig")}
    assert sorted(configs) == ["test-alicloud-logs-k8s-journal", "test-alicloud-logs-k8s-stdout"]
    stdout = configs["test-alicloud-logs-k8s-stdout"]
    assert (stdout["inputType"], stdout["outputType"], stdout["logstore"]) == ("plugin", "LogService", "nodes")
    assert json.loads(stdout["inputDetail"]) == {
        "plugin": {"inputs": [{"type": "service_docker_stdout", "detail": {"Stdout": True, "Stderr": True}}]}
    }
    journal = json.loads(configs["test-alicloud-logs-k8s-journal"]["inputDetail"])
    (source,) = journal["plugin"]["inputs"]
    assert source["type"] == "service_journal"
    # logtail-ds mounts the host's root at /logtail_host: kubelet, containerd and the kernel are in its journal
    assert source["detail"]["JournalPaths"] == ["/logtail_host/var/log/journal"]
    attachments = resources_of(ack_plan, "log/logTailAttachment:LogTailAttachment")
    assert sorted((a["inputs"]["logtailConfigName"], a["inputs"]["machineGroupName"]) for a in attachments) == [
        ("k8s-journal", "k8s-group-<id of test-alicloud-ack>"),
        ("k8s-stdout", "k8s-group-<id of test-alicloud-ack>"),
    ]


def test_the_node_pools_boot_data_does_not_change_with_logs():
    on, off = layout_of(**ACK, monitoring=LOGS), layout_of(**ACK)
    assert on.kubernetes is not None and off.kubernetes is not None
    assert on.kubernetes.user_data_b64 == off.kubernetes.user_data_b64
    assert on.logs is not None and on.logs.sources == ()


def test_a_login_node_ships_its_files_as_in_vm_mode():
    plan = plan_values(ali_values(**ACK, login={}, monitoring=LOGS))
    groups = {r["name"] for r in resources_of(plan, "log/machineGroup:MachineGroup")}
    assert groups == {"test-alicloud-logs-group", "test-alicloud-logs-ack-group"}
    sources = {s["name"] for s in data()["sources"] if s.get("when") is None}
    configs = {r["inputs"]["name"] for r in resources_of(plan, "log/logTailConfig:LogTailConfig")}
    assert configs == sources | {"k8s-stdout", "k8s-journal"}


def test_the_output_names_the_add_on_and_its_group(ack_plan):
    logs = ack_plan.as_json()["outputs"]["logs"]
    assert (
        logs["kubernetes"]
        == "logtail-ds on every ACK node, machine group k8s-group-<cluster id>: k8s-stdout, k8s-journal"
    )
    assert logs["machineGroup"] is None and logs["files"] == []


def _ack(monitoring: dict[str, Any] | None) -> dict[str, Any]:
    return plan_json(plan_stack_with("alicloud-ack-erdma", monitoring=monitoring or {}))


@pytest.fixture(scope="module")
def shipped() -> dict[str, Any]:
    return _ack(None)


@pytest.fixture(scope="module")
def with_logs() -> dict[str, Any]:
    return _ack(LOGS)


def test_day2_turning_logs_on_changes_no_cluster_or_node_pool(shipped, with_logs):
    d = diff_plans(shipped, with_logs)
    said = {c.key: c.policy for c in d.spec_changes}
    policy = update_policies()["cluster.monitoring.logs.enabled"].effect(mode_of(with_logs))
    assert said["cluster.monitoring.logs.enabled"] == policy.policy == "in-place"
    assert {c.name: c.verdict for c in d.changed} == {}
    assert d.deleted == []
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.created) == [
        "ack-train-alicloud-logs",
        "ack-train-alicloud-logs-ack-group",
        "ack-train-alicloud-logs-k8s-journal",
        "ack-train-alicloud-logs-k8s-journal-attachment",
        "ack-train-alicloud-logs-k8s-stdout",
        "ack-train-alicloud-logs-k8s-stdout-attachment",
        "ack-train-alicloud-logs-store",
        "ack-train-alicloud-logs-suffix",
        "ack-train-alicloud-logtail-ds",
    ]


def test_day2_turning_logs_off_says_data_loss_for_the_logstore(shipped, with_logs):
    d = diff_plans(with_logs, shipped)
    loss = [w for w in d.warnings if w.startswith("DATA LOSS: deletes")]
    assert loss and any("ack-train-alicloud-logs-store" in w for w in loss)
