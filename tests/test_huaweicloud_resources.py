"""Huawei Cloud resources as registered with Pulumi's mocks: the inputs the engine would receive (camelCase)."""

import subprocess
import sys

import pytest

from components.errors import ConfigErrors
from components.policy import NODE_TYPES, Resource, evaluate

from .conftest import ROOT, one, plan_values, resources_of

INSTANCE = "huaweicloud:Ecs/instance:Instance"
RULE = "huaweicloud:Vpc/secgroupRule:SecgroupRule"


def huawei_values(**cluster):
    base = {"gpu": "T4:1", "nodes": 1, "nodeGroup": "instances", "zone": "cn-north-4a"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "huaweicloud", "huaweicloud:region": "cn-north-4", "gpu-cluster:cluster": base}


def nodes(plan):
    return [r for r in plan.as_json()["resources"] if r["type"] == INSTANCE and "-login" not in r["name"]]


def rules_named(plan, part):
    return [r["inputs"] for r in resources_of(plan, "Vpc/secgroupRule:SecgroupRule") if part in r["name"]]


@pytest.fixture(scope="module")
def dev(stack_plan):
    return stack_plan("huaweicloud-dev")


def test_shipped_stack_plans_cleanly(dev):
    doc = dev.as_json()
    assert doc["cloud"] == "huaweicloud"
    assert not [w for w in doc["warnings"] if w.startswith("offline plan:")]  # every invoke answered
    assert doc["policy"] == []
    assert doc["summary"]["access"]["method"] == "ssh"
    assert doc["summary"]["identity"]["kind"] == "iam-agency"


def test_training_stack_spreads_two_a100_nodes(stack_plan):
    p3 = stack_plan("huaweicloud-p3")
    doc = p3.as_json()
    assert doc["policy"] == [] and doc["summary"]["fabricGbpsPerNode"] == 0
    group = one(p3, "Ecs/servergroup:Servergroup")
    assert group["inputs"]["policies"] == ["anti-affinity"]
    wired = nodes(p3)
    assert [n["inputs"]["flavorId"] for n in wired] == ["p3.16xlarge.8"] * 2
    assert {n["inputs"]["schedulerHints"][0]["group"] for n in wired} == {f"<id of {group['name']}>"}
    assert [d["size"] for n in wired for d in n["inputs"]["dataDisks"]] == [2000, 2000]
    # readStorage, ICAgent's (monitoring.logs), then the Prometheus target list (test_huaweicloud_monitoring.py)
    roles = ["OBS ReadOnlyAccess", "APM Administrator", "ECS ReadOnlyAccess"]
    assert one(p3, "Iam/agency:Agency")["inputs"]["allResourcesRoles"] == roles
    assert one(p3, ":LtsIngestion")["inputs"]["hostIds"] == [f"<id of {n['name']}>" for n in wired] + [
        "<id of hw-p3-huaweicloud-login>"
    ]


def test_node_inputs(dev):
    (node,) = nodes(dev)
    inputs = node["inputs"]
    key = one(dev, "Dew/key:Key")
    assert inputs["flavorId"] == "pi2.2xlarge.4"
    assert inputs["chargingMode"] == "postPaid"
    assert inputs["networks"] == [{"uuid": f"<id of {one(dev, 'Vpc/subnet:Subnet')['name']}>"}]
    assert inputs["securityGroupIds"] == ["<id of hw-dev-huaweicloud-sg>"]
    assert "eipType" not in inputs and "bandwidth" not in inputs  # no public IP: the login node has it
    assert "adminPass" not in inputs
    assert inputs["systemDiskType"] == "GPSSD" and inputs["systemDiskKmsKeyId"] == f"<id of {key['name']}>"
    (disk,) = inputs["dataDisks"]
    assert disk == {"type": "GPSSD", "size": 200, "kmsKeyId": f"<id of {key['name']}>"}
    assert inputs["agencyName"] == "hw-dev-huaweicloud-dev-nodes"
    assert inputs["keyPair"] == "hw-dev-huaweicloud-dev"
    assert inputs["userData"].startswith("#cloud-config")
    # the bootstrap parts as on the other clouds: scratch, health check, DCGM exporter
    for part in ("gpu-cluster-scratch.service", "gpu-cluster-health.service", "gpu-cluster-dcgm-exporter.service"):
        assert f"/etc/systemd/system/{part}" in inputs["userData"]
    assert inputs["imageId"].startswith("<resolved at deploy: newest public image ^Ubuntu 22")
    assert node["ignoreChanges"] == ["imageId"]


def test_dew_key_is_rotated_and_kept(dev):
    key = one(dev, "Dew/key:Key")
    inputs = key["inputs"]
    assert (inputs["keyAlgorithm"], inputs["keyUsage"]) == ("AES_256", "ENCRYPT_DECRYPT")
    assert inputs["rotationEnabled"] is True and inputs["rotationInterval"] == 365 and inputs["pendingDays"] == "30"
    assert key["protect"] is True


def test_network_nat_and_security_groups(dev):
    vpc, subnet = one(dev, "Vpc/vpc:Vpc"), one(dev, "Vpc/subnet:Subnet")
    assert vpc["inputs"]["cidr"] == subnet["inputs"]["cidr"] == "10.63.0.0/16"
    assert subnet["inputs"]["gatewayIp"] == "10.63.0.1"
    gateway, eip, snat = one(dev, "Nat/gateway:Gateway"), one(dev, "Vpc/eip:Eip"), one(dev, "Nat/snatRule:SnatRule")
    assert gateway["inputs"]["spec"] == "1" and gateway["inputs"]["subnetId"] == f"<id of {subnet['name']}>"
    assert snat["inputs"]["natGatewayId"] == f"<id of {gateway['name']}>"
    assert snat["inputs"]["floatingIpId"] == f"<id of {eip['name']}>"
    assert all(g["inputs"]["deleteDefaultRules"] is True for g in resources_of(dev, "Vpc/secgroup:Secgroup"))
    ingress = [r for r in rules_named(dev, "") if r["direction"] == "ingress"]
    # every inbound rule names its source: a group, or the one SSH CIDR on the login node
    assert all(r.get("remoteGroupId") or r.get("remoteIpPrefix") == "203.0.113.0/24" for r in ingress)
    (ssh,) = rules_named(dev, "login-ssh")
    assert (ssh["protocol"], ssh["ports"], ssh["remoteIpPrefix"]) == ("tcp", "22", "203.0.113.0/24")
    (self_rule,) = rules_named(dev, "sg-self")
    assert self_rule["remoteGroupId"] == "<id of hw-dev-huaweicloud-sg>"


def test_login_node_has_the_public_ip(dev):
    login = next(r for r in dev.as_json()["resources"] if r["type"] == INSTANCE and r["name"].endswith("-login"))
    inputs = login["inputs"]
    assert inputs["flavorId"] == "s6.small.1" and inputs["eipType"] == "5_bgp"
    assert inputs["securityGroupIds"] == ["<id of hw-dev-huaweicloud-login-sg>"]
    assert dev.as_json()["summary"]["access"]["command"].startswith("ssh -i <private key> root@<public ip of")


def test_spread_is_an_anti_affinity_server_group():
    plan = plan_values(huawei_values(gpu="A100-80GB:8", nodes=3, placement="spread", fabric="none"))
    group = one(plan, "Ecs/servergroup:Servergroup")
    assert group["inputs"]["policies"] == ["anti-affinity"]
    assert {n["inputs"]["schedulerHints"][0]["group"] for n in nodes(plan)} == {f"<id of {group['name']}>"}
    assert {n["inputs"]["flavorId"] for n in nodes(plan)} == {"p3.16xlarge.8"}


def test_cluster_placement_is_warned_not_applied():
    plan = plan_values(huawei_values(gpu="V100:8", nodes=2, placement="cluster", fabric="none"))
    assert not resources_of(plan, "Ecs/servergroup:Servergroup")
    assert any("cluster placement is not applied on huaweicloud" in w for w in plan.as_json()["warnings"])


def test_provider_key_still_encrypts_with_a_dew_key():
    plan = plan_values(huawei_values())
    key = one(plan, "Dew/key:Key")
    (node,) = nodes(plan)
    assert node["inputs"]["systemDiskKmsKeyId"] == f"<id of {key['name']}>"
    assert any("encryption.key provider plans a DEW key" in w for w in plan.as_json()["warnings"])


def test_an_existing_key_and_agency_are_used_as_given():
    key_id = "0b30658a-ed1a-4922-b8f7-a673ca9c1234"
    plan = plan_values(huawei_values(encryption={"key": key_id}, identity={"existing": "my-agency"}))
    assert not resources_of(plan, "Dew/key:Key") and not resources_of(plan, "Iam/agency:Agency")
    (node,) = nodes(plan)
    assert node["inputs"]["systemDiskKmsKeyId"] == key_id and node["inputs"]["agencyName"] == "my-agency"


def test_read_storage_grants_the_agency_one_role():
    plan = plan_values(huawei_values(identity={"readStorage": True}))
    agency = one(plan, "Iam/agency:Agency")["inputs"]
    assert agency["delegatedServiceName"] == "op_svc_ecs"
    assert agency["allResourcesRoles"] == ["OBS ReadOnlyAccess"]


def test_zone_lookup_when_unset():
    values = huawei_values()
    del values["gpu-cluster:cluster"]["zone"]
    plan = plan_values(values)
    subnet = one(plan, "Vpc/subnet:Subnet")
    assert subnet["inputs"]["availabilityZone"] == "<first availability zone of cn-north-4>"
    assert subnet["ignoreChanges"] == ["availabilityZone"]


@pytest.mark.parametrize(
    ("cluster", "key"),
    [
        ({"spot": True}, "gpu-cluster:cluster.spot"),
        # nodeGroup managed is an AS group (tests/test_huaweicloud_as.py); with Slurm it is refused
        ({"nodeGroup": "managed", "scheduler": "slurm"}, "gpu-cluster:cluster.nodeGroup"),
        ({"scheduler": "slurm", "slurm": {"accounting": True}}, "gpu-cluster:cluster.slurm.accounting"),
        # storage.shared is built (SFS Turbo): tests/test_huaweicloud_storage.py; scheduler slurm too (static nodes):
        # tests/test_huaweicloud_slurm.py
    ],
)
def test_what_is_not_built_is_refused_by_key(cluster, key):
    with pytest.raises(ConfigErrors) as caught:
        plan_values(huawei_values(**cluster))
    assert str(caught.value).count(f"{key}:") == 1


def test_policies_cover_huawei_nodes_and_rules():
    assert INSTANCE in NODE_TYPES
    bad = Resource(INSTANCE, {"eipType": "5_bgp", "adminPass": "x", "dataDisks": [{"size": 1}]}, "urn:x", "x-node-0")
    rules = {v.rule for v in evaluate([bad], {})}
    assert {"encrypted-disks", "node-login"} <= rules
    open_rule = Resource(RULE, {"direction": "ingress", "protocol": "tcp", "ports": "22"}, "urn:y", "y-ssh")
    assert "no-open-ingress" in {v.rule for v in evaluate([open_rule], {})}
    from_group = Resource(RULE, {"direction": "ingress", "remoteGroupId": "<id of sg>"}, "urn:z", "z-self")
    assert "no-open-ingress" not in {v.rule for v in evaluate([from_group], {})}


def test_huawei_plan_imports_only_the_huawei_sdk():
    code = (
        "import sys; from pathlib import Path; from components.plan import load_stack, make_plan; "
        "make_plan(Path('.'), load_stack(Path('.'), 'huaweicloud-dev')); "
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(('pulumi_', 'tencentcloud'))}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # pulumi_random (the Slurm MUNGE key, components/huaweicloud/slurm.py) is no cloud's SDK
    assert proc.stdout.strip().splitlines()[-1] == "['pulumi_huaweicloud', 'pulumi_random']"
    assert "pkg_resources" not in proc.stderr  # the SDK's deprecation warning is silenced at its import


def test_other_clouds_do_not_load_the_huawei_sdk():
    code = (
        "import sys; from pathlib import Path; from components.plan import load_stack, make_plan; "
        "make_plan(Path('.'), load_stack(Path('.'), 'tencentcloud-dev')); "
        "print('pulumi_huaweicloud' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"
