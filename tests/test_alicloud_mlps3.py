"""MLPS level 3 (`compliance: mlps3`) on Alibaba Cloud: the shipped SM4 stack passes every rule of the profile, the
ActionTrail trail and its SLS project as registered with the mocks, the audit-trail rule on the registered inputs,
and every rule of the profile citing its GB/T 22239-2019 clause by number (and its text where one applies)."""

from __future__ import annotations

import re

import pytest
import yaml

from components.policy import CLUSTER_TYPE, PROFILES_FILE, Resource, evaluate

from .conftest import ROOT, one, plan_stack, plan_stack_with

STACK = "alicloud-mlps3-sm4"
TRAIL = "actiontrail/trail:Trail"


@pytest.fixture(scope="module")
def plan():
    return plan_stack(STACK)


def test_the_shipped_stack_passes_every_rule_of_mlps3(plan):
    compliance = plan.summary()["compliance"]
    assert compliance["profile"] == "mlps3" and compliance["passed"]
    rows = {r["rule"]: r for r in compliance["rules"]}
    assert {r["result"] for r in rows.values()} == {"pass"}
    assert {"customer-managed-keys", "encrypted-disks", "metadata-protection", "audit-trail"} <= set(rows)
    assert rows["audit-trail"]["level"] == "mandatory"
    assert not plan.violations()


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
