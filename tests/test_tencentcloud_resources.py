"""Tencent Cloud resources as registered with Pulumi's mocks: the inputs the engine would receive (camelCase)."""

import subprocess
import sys

import pytest

from components.diff.rules import load_rules
from components.policy import NODE_TYPES, Resource, evaluate

from .conftest import ROOT, one, plan_values, resources_of

STACKS = ("tencentcloud-hcc", "tencentcloud-dev")
INSTANCE = "tencentcloud:Instance/instance:Instance"


def tencent_values(**cluster):
    base = {"instanceType": "HCCG5v.24XLARGE384", "nodes": 2, "nodeGroup": "instances", "zone": "ap-guangzhou-3"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "tencentcloud", "tencentcloud:region": "ap-guangzhou", "gpu-cluster:cluster": base}


def nodes(plan):
    return [r for r in plan.as_json()["resources"] if r["type"] == INSTANCE and "-login" not in r["name"]]


@pytest.fixture(scope="module")
def hcc(stack_plan):
    return stack_plan("tencentcloud-hcc")


@pytest.fixture(scope="module")
def dev(stack_plan):
    return stack_plan("tencentcloud-dev")


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stacks_plan_cleanly(stack, stack_plan):
    doc = stack_plan(stack).as_json()
    assert doc["cloud"] == "tencentcloud"
    assert not [w for w in doc["warnings"] if w.startswith("offline plan:")]  # every invoke answered
    assert doc["policy"] == []
    assert doc["summary"]["fabricGbpsPerNode"] == doc["summary"]["fabricGbpsRated"]


def test_hcc_nodes_are_all_in_the_hpc_cluster(hcc):
    cluster = one(hcc, "hpcCluster:HpcCluster")
    assert cluster["inputs"]["zone"] == "ap-guangzhou-3"
    wired = nodes(hcc)
    assert len(wired) == 2
    assert {n["inputs"]["hpcClusterId"] for n in wired} == {f"<id of {cluster['name']}>"}
    assert all("placementGroupId" not in n["inputs"] for n in wired)
    assert not resources_of(hcc, "Placement/group:Group")
    doc = hcc.as_json()
    assert doc["summary"]["fabricGbpsPerNode"] == 200 == doc["summary"]["fabricGbpsRated"]
    assert doc["outputs"]["privateIps"]
    assert "not usable by NCCL" in doc["outputs"]["fabricUsable"] and "TCCL" in doc["outputs"]["fabricUsable"]


def test_hcc_node_inputs(hcc):
    node = nodes(hcc)[0]["inputs"]
    assert node["instanceChargeType"] == "POSTPAID_BY_HOUR"
    assert node["instanceType"] == "HCCG5v.24XLARGE384"
    assert node["availabilityZone"] == "ap-guangzhou-3"
    assert node.get("allocatePublicIp") in (None, False)
    assert node["systemDiskType"] == "CLOUD_SSD"
    assert node["camRoleName"] == "hcc-train-tencentcloud-hcc-nodes"
    assert node["keyIds"] and node["userData"]


def test_network_nat_and_security_group(hcc):
    eip = one(hcc, "Eip/instance:Instance")
    gateway = one(hcc, "Nat/gateway:Gateway")
    assert gateway["inputs"]["assignedEipSets"] == [f"<public ip of {eip['name']}>"]
    route = one(hcc, "Route/tableEntry:TableEntry")["inputs"]
    assert (route["destinationCidrBlock"], route["nextType"]) == ("0.0.0.0/0", "NAT")
    rules = [r for r in resources_of(hcc, "groupRuleSet:GroupRuleSet") if "-login" not in r["name"]]
    (node_rules,) = rules
    ingress = node_rules["inputs"]["ingresses"]
    assert ingress[0]["sourceSecurityId"].startswith("<id of") and ingress[0]["protocol"] == "ALL"
    assert all("cidrBlock" not in r for r in ingress)  # SSH lands on the login node only
    login = next(r for r in resources_of(hcc, "groupRuleSet:GroupRuleSet") if "-login" in r["name"])
    assert [r["cidrBlock"] for r in login["inputs"]["ingresses"]] == ["203.0.113.0/24"]


def test_single_inference_node(dev):
    (node,) = nodes(dev)
    inputs = node["inputs"]
    assert inputs["instanceType"] == "GN7.2XLARGE32"
    assert "hpcClusterId" not in inputs
    # one node keeps a placement group (docs/day2.md "Placement at one node")
    group = one(dev, "Placement/group:Group")
    assert group["inputs"]["type"] == "SW" and inputs["placementGroupId"] == f"<id of {group['name']}>"
    (disk,) = inputs["dataDisks"]
    assert disk["encrypt"] is True and disk["dataDiskType"] == "CLOUD_SSD" and disk["dataDiskSize"] == 200
    assert not resources_of(dev, "hpcCluster:HpcCluster")
    doc = dev.as_json()
    assert doc["summary"]["fabricGbpsPerNode"] == 0
    assert doc["summary"]["access"]["method"] == "ssh"
    assert doc["summary"]["identity"]["kind"] == "cam-role"


def test_multi_node_non_hcc_gets_a_placement_group():
    plan = plan_values(tencent_values(instanceType="GT4.41XLARGE948", fabric="auto"))
    group = one(plan, "Placement/group:Group")
    assert group["inputs"]["type"] == "SW"
    assert {n["inputs"]["placementGroupId"] for n in nodes(plan)} == {f"<id of {group['name']}>"}


def test_spot_is_spotpaid_with_a_cap():
    values = tencent_values(instanceType="GN7.2XLARGE32", nodes=1, spot=True)
    values["gpu-cluster:maxHourlyUsd"] = 2
    (node,) = nodes(plan_values(values))
    assert node["inputs"]["instanceChargeType"] == "SPOTPAID"
    assert (node["inputs"]["spotInstanceType"], node["inputs"]["spotMaxPrice"]) == ("ONE-TIME", "2.00")


def test_zone_lookup_when_unset():
    values = tencent_values(instanceType="GN7.2XLARGE32", nodes=1)
    del values["gpu-cluster:cluster"]["zone"]
    plan = plan_values(values)
    subnet = one(plan, "Subnet/instance:Instance")
    assert subnet["inputs"]["availabilityZone"].startswith("<first zone in ap-guangzhou")
    assert subnet["ignoreChanges"] == ["availabilityZone"]


def test_policies_cover_tencent_nodes():
    assert INSTANCE in NODE_TYPES
    bad = Resource(INSTANCE, {"allocatePublicIp": True, "dataDisks": [{"encrypt": False}]}, "urn:x", "x-node-0")
    rules = {v.rule for v in evaluate([bad], {})}
    assert {"no-public-ip", "encrypted-disks"} <= rules


def test_diff_rules_for_the_nodes():
    rule = load_rules().rule("tencentcloud:Instance/instance:Instance")
    assert rule.holds == "nodes"
    assert "availabilityZone" in rule.replace and "camRoleName" in rule.replace
    assert "imageId" in rule.restart


def test_tencent_plan_imports_only_the_tencent_sdk():
    code = (
        "import sys; from pathlib import Path; from components.plan import load_stack, make_plan; "
        "make_plan(Path('.'), load_stack(Path('.'), 'tencentcloud-dev')); "
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(('pulumi_', 'tencentcloud'))}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # pulumi_random (the Slurm MUNGE key, components/tencentcloud/slurm.py) is no cloud's SDK
    assert proc.stdout.strip().splitlines()[-1] == "['pulumi_random', 'tencentcloud_iac_pulumi']"


def test_bad_input_exits_2_naming_the_key(tmp_path):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(
        "config:\n  gpu-cluster:cloud: tencentcloud\n  tencentcloud:region: ap-guangzhou\n"
        "  gpu-cluster:cluster:\n    instanceType: HCCG5v.24XLARGE384\n    nodes: 2\n    nodeGroup: managed\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "components", "plan", "--config", str(bad)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "gpu-cluster:cluster.nodeGroup" in proc.stderr and "hpc_cluster_id" in proc.stderr
    assert "Traceback" not in proc.stderr
