"""MLPS level 3 (`compliance: mlps3`) on Tencent Cloud: the shipped stack passes every rule of the profile; the
cluster's KMS key on the CBS data disks, the CloudAudit tracking set and its protected CLS topic as registered with
the mocks; the customer-managed-keys and audit-trail rules on registered inputs; a given key id; the refusals (a
malformed key id, node logs kept under 180 days); the bill and the update policy."""

from __future__ import annotations

import pytest
import yaml

from components.errors import ConfigError
from components.layout.tencentcloud import plan as layout_plan
from components.policy import CLUSTER_TYPE, Resource, evaluate
from components.spec.updates import update_policies

from .conftest import ROOT, one, plan_stack, plan_stack_with, resources_of, spec_of
from .test_tencentcloud_resources import tencent_values

STACK = "tencentcloud-mlps3"
INSTANCE = "tencentcloud:Instance/instance:Instance"
TRACK = "Audit/track:Track"
KEY = "Kms/key:Key"
KEY_ID = "<id of tc-mlps3-tencentcloud-key>"
GIVEN = "23e80852-1e38-11e9-b129-5cb9019b4b01"


@pytest.fixture(scope="module")
def plan():
    return plan_stack(STACK)


def _gpu_nodes(plan):
    return [r for r in resources_of(plan, INSTANCE) if "-login" not in r["name"]]


def test_the_shipped_stack_passes_every_rule_of_mlps3(plan):
    compliance = plan.summary()["compliance"]
    assert compliance["profile"] == "mlps3" and compliance["passed"]
    rows = {r["rule"]: r for r in compliance["rules"]}
    assert {r["result"] for r in rows.values()} == {"pass"}
    assert {"customer-managed-keys", "encrypted-disks", "audit-trail", "deletion-protection"} <= set(rows)
    assert rows["audit-trail"]["level"] == rows["customer-managed-keys"]["level"] == "mandatory"
    assert not plan.violations()


def test_the_key_is_protected_rotated_and_on_every_scratch_disk(plan):
    key = one(plan, KEY)
    assert key["protect"] is True and key["retainOnDelete"] is True  # the disks are unreadable without it
    inputs = key["inputs"]
    assert (inputs["keyUsage"], inputs["keyRotationEnabled"], inputs["isEnabled"]) == ("ENCRYPT_DECRYPT", True, True)
    assert inputs["pendingDeleteWindowInDays"] == 30 and inputs["alias"] == "gpu-cluster-tc-mlps3-tencentcloud-mlps3"
    nodes = _gpu_nodes(plan)
    assert len(nodes) == 2
    for node in nodes:
        (disk,) = node["inputs"]["dataDisks"]
        assert (disk["encrypt"], disk["kmsKeyId"]) == (True, KEY_ID)
    assert plan.as_json()["outputs"]["kmsKeyId"] == KEY_ID


def test_the_plan_says_the_system_disks_do_not_take_the_key(plan):
    (warning,) = [w for w in plan.warnings() if "encryption.key" in w]
    assert "system disks" in warning and "SystemDisk.KmsKeyId" in warning and "storage.scratch: disk" in warning


def test_the_track_delivers_every_event_to_a_protected_cls_topic_kept_180_days(plan):
    track = one(plan, TRACK)["inputs"]
    assert (track["actionType"], track["resourceType"], track["eventNames"], track["status"]) == ("*", "*", ["*"], 1)
    assert track["name"] == "tc-mlps3-tencentcloud-mlps3-audit"
    assert track["storage"] == {
        "storageType": "cls",
        "storageName": "<id of tc-mlps3-tencentcloud-audit-topic>",
        "storagePrefix": "cloudaudit",
        "storageRegion": "ap-shanghai",
    }
    topics = {t["name"]: t for t in resources_of(plan, "Cls/topic:Topic")}
    audit = topics["tc-mlps3-tencentcloud-audit-topic"]
    assert audit["inputs"]["period"] == 180 and audit["inputs"]["logsetId"] == "<id of tc-mlps3-tencentcloud-audit>"
    logset = next(r for r in resources_of(plan, "Cls/logset:Logset") if r["name"] == "tc-mlps3-tencentcloud-audit")
    for kept in (audit, logset):  # the audit records outlive the stack (8.1.4.3 应对审计记录进行保护)
        assert kept["protect"] is True and kept["retainOnDelete"] is True
    assert topics["tc-mlps3-tencentcloud-logs-topic"]["inputs"]["period"] == 180  # the nodes' logs, as asked
    assert plan.as_json()["outputs"]["audit"]["retentionDays"] == 180


def test_no_grant_of_the_stack_reaches_the_audit_records(plan):
    # least privilege: the nodes' LogListener pushes to the nodes' topic only; nothing the stack grants names the audit
    # logset or topic (CloudAudit delivers with its own service authorization)
    documents = [r["inputs"]["document"] for r in resources_of(plan, "Cam/policy:Policy")]
    assert documents and not [d for d in documents if "audit" in d]
    push = next(d for d in documents if "cls:pushLog" in d)
    assert "topic/<id of tc-mlps3-tencentcloud-logs-topic>" in push
    assert not resources_of(plan, "Cam/rolePolicyAttachmentByName:RolePolicyAttachmentByName") or all(
        "Audit" not in r["inputs"]["policyName"]
        for r in resources_of(plan, "Cam/rolePolicyAttachmentByName:RolePolicyAttachmentByName")
    )


def test_without_mlps3_or_a_key_neither_is_built_and_the_rules_say_what_to_set():
    plan = plan_stack_with(STACK, compliance="none", encryption={"key": "provider"})
    assert not resources_of(plan, TRACK) and not resources_of(plan, KEY)
    for node in _gpu_nodes(plan):
        assert node["inputs"]["dataDisks"][0]["encrypt"] is True and "kmsKeyId" not in node["inputs"]["dataDisks"][0]
    failed = plan_stack_with(STACK, encryption={"key": "provider"})
    fixes = {v.rule: v.fix for v in failed.violations()}
    assert fixes == {"customer-managed-keys": "set gpu-cluster:cluster.encryption.key auto"}
    assert not failed.summary()["compliance"]["passed"]


def test_a_given_key_id_is_used_as_is_and_none_is_created():
    plan = plan_stack_with(STACK, encryption={"key": GIVEN})
    assert not resources_of(plan, KEY)
    assert {n["inputs"]["dataDisks"][0]["kmsKeyId"] for n in _gpu_nodes(plan)} == {GIVEN}
    assert plan.summary()["compliance"]["passed"]


def _cluster() -> Resource:
    return Resource(CLUSTER_TYPE, {"stackFacts": {"compliance": "mlps3", "cloud": "tencentcloud"}}, "urn:c", "c")


def test_the_audit_trail_rule_on_registered_inputs():
    def found(*resources: Resource) -> list[str]:
        return [v.fix for v in evaluate([_cluster(), *resources]) if v.rule == "audit-trail"]

    on = {"name": "t-audit", "status": 1, "storage": {"storageType": "cls", "storageName": "topic-id"}}
    assert found(Resource(f"tencentcloud:{TRACK}", on, "urn:t", "t")) == []
    closed = {**on, "status": 0}
    expected = ["set gpu-cluster:cluster.compliance mlps3 (the stack then builds the tracking set to a CLS topic)"]
    assert found(Resource(f"tencentcloud:{TRACK}", closed, "urn:t", "t")) == expected
    assert found() == expected


def test_the_customer_managed_keys_rule_on_registered_inputs():
    def found(disks: list[dict[str, object]]) -> list[str]:
        res = Resource(INSTANCE, {"dataDisks": disks}, "urn:i", "i")
        return [v.message for v in evaluate([_cluster(), res]) if v.rule == "customer-managed-keys"]

    assert found([{"encrypt": True, "kmsKeyId": GIVEN}]) == []
    assert found([]) == []  # no data disk: the system disk cannot take a key (capabilities systemDiskNote)
    (message,) = found([{"encrypt": True}])
    assert "a data disk has no kmsKeyId" in message


def test_a_malformed_key_id_is_refused_with_what_is_allowed():
    with pytest.raises(ConfigError) as err:
        layout_plan(spec_of(tencent_values(encryption={"key": "kms-1234"})))
    text = str(err.value)
    assert "gpu-cluster:cluster.encryption.key" in text and "a KMS key id such as" in text


@pytest.mark.parametrize("days", [30, 179])
def test_mlps3_refuses_node_logs_kept_under_six_months(days):
    logs = {"logs": {"enabled": True, "retentionDays": days}}
    with pytest.raises(ConfigError) as err:
        plan_stack_with(STACK, monitoring=logs)
    text = str(err.value)
    assert "monitoring.logs.retentionDays" in text and f"got {days}" in text and "第二十一条" in text
    spec = spec_of(tencent_values(monitoring=logs))  # without mlps3 the same retention is taken
    assert spec.monitoring.logs.retention_days == days


def test_the_bill_names_the_trail_and_the_key_as_not_counted(plan):
    costs = plan.summary()["costs"]
    not_counted = " ".join(costs["notCounted"])
    assert "audit trail (CloudAudit to CLS)" in not_counted and "0.06 USD/key/day" in not_counted


def test_compliance_changes_in_place_and_names_tencent():
    entry = yaml.safe_load((ROOT / "components" / "spec" / "updates.yaml").read_text())["keys"]["cluster.compliance"]
    assert entry["policy"] == "in-place" and "CloudAudit tracking set" in entry["jobs"]
    assert update_policies()["cluster.compliance"].policy == "in-place"
