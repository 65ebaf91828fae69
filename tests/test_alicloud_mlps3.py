"""MLPS level 3 (`compliance: mlps3`) on Alibaba Cloud: the shipped SM4 stacks (without and with a shared NAS) pass
every rule of the profile, the ActionTrail trail and its SLS project as registered with the mocks, the audit-trail
rule on the registered inputs, the NAS on the cluster's SM4 key and open to the node vSwitch only, and every rule of
the profile citing its GB/T 22239-2019 clause by number (and its text where one applies)."""

from __future__ import annotations

import re

import pytest
import yaml

from components.policy import CLUSTER_TYPE, PROFILES_FILE, Resource, evaluate

from .conftest import ROOT, one, plan_stack, plan_stack_with, resources_of

STACK = "alicloud-mlps3-sm4"
NAS_STACK = "alicloud-mlps3-nas"  # the same cluster with storage.shared: General-purpose NAS on the SM4 key
TRAIL = "actiontrail/trail:Trail"


@pytest.fixture(scope="module")
def plan():
    return plan_stack(STACK)


@pytest.fixture(scope="module")
def nas_plan():
    return plan_stack(NAS_STACK)


@pytest.mark.parametrize("stack", [STACK, NAS_STACK])
def test_the_shipped_stack_passes_every_rule_of_mlps3(stack):
    plan = plan_stack(stack)
    compliance = plan.summary()["compliance"]
    assert compliance["profile"] == "mlps3" and compliance["passed"]
    rows = {r["rule"]: r for r in compliance["rules"]}
    assert {r["result"] for r in rows.values()} == {"pass"}
    assert {"customer-managed-keys", "encrypted-disks", "metadata-protection", "audit-trail"} <= set(rows)
    assert rows["audit-trail"]["level"] == "mandatory"
    assert not plan.violations()


def test_the_nas_is_on_the_sm4_key_open_to_the_node_vswitch_only_and_kept(nas_plan):
    (key,) = [k for k in resources_of(nas_plan, "kms/key:Key") if k["name"] == "mlps3-nas-alicloud-kms"]
    assert key["inputs"]["keySpec"] == "Aliyun_SM4"
    fs = one(nas_plan, "nas/fileSystem:FileSystem")
    inputs = fs["inputs"]
    assert (inputs["fileSystemType"], inputs["encryptType"], inputs["kmsKeyId"]) == (
        "standard",
        2,
        "<id of mlps3-nas-alicloud-kms>",
    )
    assert fs["protect"] is True and fs["retainOnDelete"] is True  # deletion-protection (8.1.4.9)
    (nodes,) = [
        v["inputs"]["cidrBlock"] for v in resources_of(nas_plan, "vpc/switch:Switch") if v["name"].endswith("-nodes")
    ]
    assert one(nas_plan, "nas/accessGroup:AccessGroup")["inputs"]["accessGroupName"] == "mlps3-nas-shared"
    group = "<autoname:mlps3-nas-alicloud-shared-ag>"  # the mocks' stand-in for the group's output name
    (rule,) = resources_of(nas_plan, "nas/accessRule:AccessRule")
    assert rule["inputs"]["sourceCidrIp"] == nodes != "10.58.0.0/16"  # the vSwitch, not the VPC
    assert rule["inputs"]["accessGroupName"] == group  # the rule and the mount target use the cluster's own group
    assert one(nas_plan, "nas/mountTarget:MountTarget")["inputs"]["accessGroupName"] == group
    # every disk is on the same key too (SM4-128 system disks)
    for inst in resources_of(nas_plan, "ecs/instance:Instance"):
        assert inst["inputs"]["systemDiskKmsKeyId"] == "<id of mlps3-nas-alicloud-kms>", inst["name"]
        assert inst["inputs"]["systemDiskEncryptAlgorithm"] == "sm4-128", inst["name"]


def test_the_plan_says_what_the_nas_key_needs_and_what_is_unverified(nas_plan):
    warnings = " ".join(nas_plan.warnings())
    assert "AliyunServiceRoleForNasEncryption" in warnings and "ram:CreateServiceLinkedRole" in warnings
    assert "whether NAS accepts an SM4 key" in warnings and "not verified" in warnings


def test_the_nas_stack_keeps_the_sm4_stacks_resources_and_adds_the_nas(plan, nas_plan):
    def names(p, cluster):
        return {(r.type, r.name.replace(cluster, "X")) for r in p.resources}

    # a stack of its own: adding storage.shared to alicloud-mlps3-sm4 would drop the head node's NFS export rules
    added = names(nas_plan, "mlps3-nas") - names(plan, "mlps3-sm4")
    assert {kind for kind, _ in added} == {
        "alicloud:nas/fileSystem:FileSystem",
        "alicloud:nas/accessGroup:AccessGroup",
        "alicloud:nas/accessRule:AccessRule",
        "alicloud:nas/mountTarget:MountTarget",
    }


def test_the_trail_delivers_every_event_to_a_protected_sls_project(plan):
    trail = one(plan, TRAIL)["inputs"]
    project = one(plan, "log/project:Project")
    assert (trail["trailName"], trail["eventRw"], trail["status"]) == ("mlps3-sm4-audit", "All", "Enable")
    name = project["inputs"]["projectName"]
    assert trail["slsProjectArn"] == f"acs:log:cn-beijing:<resolved at deploy: the account id>:project/{name}"
    assert trail["slsWriteRoleArn"] == "<resolved at deploy: the ARN of role AliyunServiceRoleForActionTrail>"
    assert project["protect"] is True and project["retainOnDelete"] is True  # the audit records outlive the stack
    assert plan.as_json()["outputs"]["audit"]["logstore"] == "actiontrail_mlps3-sm4-audit"


def test_without_mlps3_no_trail_is_built():
    assert not [r for r in plan_stack_with(STACK, compliance="none").resources if r.type.endswith(TRAIL)]


def _cluster() -> Resource:
    return Resource(CLUSTER_TYPE, {"stackFacts": {"compliance": "mlps3", "cloud": "alicloud"}}, "urn:c", "c")


def test_the_audit_trail_rule_on_registered_inputs():
    def found(*resources: Resource) -> list[str]:
        return [v.fix for v in evaluate([_cluster(), *resources]) if v.rule == "audit-trail"]

    on = {"trailName": "t-audit", "slsProjectArn": "acs:log:cn-beijing:1:project/p", "status": "Enable"}
    assert found(Resource(f"alicloud:{TRAIL}", on, "urn:t", "t")) == []
    off = {**on, "status": "Disable"}
    assert found(Resource(f"alicloud:{TRAIL}", off, "urn:t", "t")) == [
        "set gpu-cluster:cluster.compliance mlps3 (the stack then builds the trail to an SLS project)"
    ]
    assert len(found()) == 1


def test_every_mlps3_control_names_its_clause_and_quotes_its_text():
    rules = yaml.safe_load(PROFILES_FILE.read_text())["profiles"]["mlps3"]["rules"]
    for rule, entry in rules.items():
        control = entry["control"]
        if control is None:
            continue  # the toolkit's baseline, no clause (required-tags)
        assert re.match(r"8\.[12](\.\d+)* \S+ \(", control), rule
        assert "应" in control, rule  # the requirement's own words, 应..., not a paraphrase


def test_the_stack_is_shipped_with_sm4_and_instances():
    cluster = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())["config"]["gpu-cluster:cluster"]
    assert cluster["compliance"] == "mlps3" and cluster["encryption"]["algorithm"] == "sm4"
    assert cluster["nodeGroup"] == "instances"  # token-only metadata on every node (an ESS configuration has none)


def test_the_bill_names_the_audit_trail_and_the_instance_key_as_not_counted(plan):
    costs = plan.summary()["costs"]
    not_counted = " ".join(costs["notCounted"])
    assert "audit trail (ActionTrail to SLS)" in not_counted
    assert "Aliyun_SM4 key in the existing KMS instance" in not_counted and "a default key" not in not_counted
    assert set(costs["totals"]) == {"CNY"}
