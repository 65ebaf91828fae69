"""Tencent Cloud with its defaults (issue 33): a stack with only cloud, gpu and sshPublicKey either plans a cluster
someone can log in to or is refused with one keyed line saying what to set; the way in that works."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.diff.rules import load_rules
from components.errors import ConfigError
from components.layout import tencentcloud as tc
from components.policy import NODE_TYPES, Resource, evaluate

from .conftest import ROOT, one, plan_json, plan_values, spec_of
from .test_tencentcloud_resources import nodes

KEY = next(
    line.split("sshPublicKey: ", 1)[1]
    for line in Path(ROOT / "stacks" / "Pulumi.tencentcloud-dev.yaml").read_text().splitlines()
    if "sshPublicKey: " in line
)


def defaults(**cluster: Any) -> dict[str, Any]:
    """Only what a user must set: the cloud and its region, the GPU and the key (plus `cluster`)."""
    return {
        "gpu-cluster:cloud": "tencentcloud",
        "tencentcloud:region": "ap-guangzhou",
        "gpu-cluster:cluster": {"name": "tc-defaults", "gpu": "T4:1", "sshPublicKey": KEY, **cluster},
    }


def test_defaults_without_an_address_are_refused_saying_what_to_set():
    with pytest.raises(ConfigError) as err:
        tc.plan(spec_of(defaults(nodeGroup="instances")))
    assert err.value.key == "gpu-cluster:cluster.network.sshCidrs"
    assert "set network.sshCidrs" in str(err.value) and "login: {publicIp: true}" in str(err.value)


def test_the_way_in_the_refusal_names_plans_a_reachable_login_node():
    plan = plan_values(
        defaults(nodeGroup="instances", network={"sshCidrs": ["203.0.113.0/24"]}, login={"publicIp": True})
    )
    resources = plan.as_json()["resources"]
    login = next(r for r in resources if r["type"].endswith("Instance/instance:Instance") and "-login" in r["name"])
    assert login["inputs"]["allocatePublicIp"] is True
    rules = next(r for r in resources if r["name"].endswith("-login-sg-rules"))
    assert [(i["cidrBlock"], i["port"]) for i in rules["inputs"]["ingresses"] if i.get("cidrBlock")] == [
        ("203.0.113.0/24", "22")
    ]
    (node,) = nodes(plan)
    assert node["inputs"].get("allocatePublicIp") in (None, False)
    doc = plan_json(plan)
    assert doc["outputs"]["access"]["command"].startswith("ssh -i <private key> ubuntu@<public ip of")
    assert doc["outputs"]["gpuDriver"].startswith("NVIDIA 580-server")


@pytest.mark.parametrize(
    "cluster",
    [
        {"access": "none"},  # no way in asked for
        {"sshPublicKey": None},  # no key: the spec warns that nobody can log in
        {"network": {"sshCidrs": ["10.0.0.0/8"]}},  # a private path (VPN, peering): warned, not refused
    ],
)
def test_what_is_not_refused(cluster):
    values = defaults(nodeGroup="instances", **cluster)
    if cluster.get("sshPublicKey", KEY) is None:
        del values["gpu-cluster:cluster"]["sshPublicKey"]
    assert tc.plan(spec_of(values)).spec.cloud == "tencentcloud"


# --- nodeGroup: managed (the default) ----------------------------------------------------------------------------

CONFIG = "tencentcloud:As/scalingConfig:ScalingConfig"
GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"
REACHABLE = {"network": {"sshCidrs": ["203.0.113.0/24"]}, "login": {"publicIp": True}}


def test_defaults_plan_a_managed_group_with_the_driver_and_a_reachable_login_node():
    plan = plan_values(defaults(**REACHABLE))
    assert nodes(plan) == []  # no instance per node: the group launches them
    config = one(plan, "As/scalingConfig:ScalingConfig")["inputs"]
    assert config["instanceTypes"] == ["GN7.2XLARGE32"]
    assert config["instanceChargeType"] == "POSTPAID_BY_HOUR" and "spotInstanceType" not in config
    assert config["systemDiskType"] == "CLOUD_SSD" and config["systemDiskSize"] == 200
    assert "dataDisks" not in config  # no scratch disk: it could not be encrypted
    assert config["publicIpAssigned"] is False
    assert config["keyIds"] == ["<id of tc-defaults-tencentcloud-key>"]
    assert config["camRoleName"] == "tc-defaults-test-nodes"
    assert config["securityGroupIds"] == ["<id of tc-defaults-tencentcloud-sg>"]
    assert config["disasterRecoverGroupIds"] == ["<id of tc-defaults-tencentcloud-pg>"]
    assert config["hostNameSettings"] == {"hostName": "tc-defaults-node", "hostNameStyle": "UNIQUE"}
    assert config["instanceTags"]["gpu-cluster:cluster"] == "tc-defaults"
    assert config["userData"] and config["imageId"].startswith("<resolved at deploy: newest public image Ubuntu")
    group = one(plan, "As/scalingGroup:ScalingGroup")["inputs"]
    assert (group["minSize"], group["maxSize"], group["desiredCapacity"]) == (1, 1, 1)
    assert group["configurationId"] == "<id of tc-defaults-tencentcloud-config>"
    assert group["subnetIds"] == ["<id of tc-defaults-tencentcloud-nodes>"]
    assert group["vpcId"] == "<id of tc-defaults-tencentcloud-vpc>"
    doc = plan_json(plan)
    assert doc["outputs"]["nodeGroup"] == "<id of tc-defaults-tencentcloud-group>"
    assert "instanceIds" not in doc["outputs"] and doc["outputs"]["privateIps"] is None
    assert doc["outputs"]["gpuDriver"].startswith("NVIDIA 580-server")
    assert doc["policy"] == []
    warnings = doc["warnings"]
    assert any(w.startswith("gpu-cluster:cluster.storage.scratch: auto is none in a managed group") for w in warnings)
    (rolling,) = [w for w in warnings if w.startswith("gpu-cluster:cluster.update:")]
    assert "only nodes launched from now on get it" in rolling and "StartInstanceRefresh" in rolling


def test_a_managed_group_takes_its_bounds_spot_and_the_image_held():
    values = defaults(nodes=2, minNodes=1, maxNodes=4, spot=True, fabric="none", **REACHABLE)
    values["gpu-cluster:maxHourlyUsd"] = 8
    plan = plan_values(values)
    group = one(plan, "As/scalingGroup:ScalingGroup")
    assert (group["inputs"]["minSize"], group["inputs"]["maxSize"], group["inputs"]["desiredCapacity"]) == (1, 4, 2)
    config = one(plan, "As/scalingConfig:ScalingConfig")
    assert config["inputs"]["instanceChargeType"] == "SPOTPAID"
    assert (config["inputs"]["spotInstanceType"], config["inputs"]["spotMaxPrice"]) == ("one-time", "2.00")
    # a newer public image must not change the launch configuration on an unrelated `pulumi up`
    assert config["ignoreChanges"] == ["imageId"]
    explicit = one(
        plan_values({**values, "gpu-cluster:cluster": {**values["gpu-cluster:cluster"], "image": "img-9qrfy1xt"}}),
        "As/scalingConfig:ScalingConfig",
    )
    assert explicit["inputs"]["imageId"] == "img-9qrfy1xt" and not explicit.get("ignoreChanges")


@pytest.mark.parametrize(
    ("cluster", "key", "words"),
    [
        ({"storage": {"scratch": "disk"}}, "storage.scratch", "take no encrypt argument"),
        ({"storage": {"rootGb": 501}}, "storage.rootGb", "50 to 500 GB"),
        ({"scaling": {"metric": "gpuUtilization", "target": 60}, "maxNodes": 3}, "scaling", "not wired"),
        ({"tags": {f"t{n}": "x" for n in range(8)}}, "tags", "at most 10"),
    ],
)
def test_what_a_tencent_auto_scaling_group_cannot_take_is_refused(cluster, key, words):
    with pytest.raises(ConfigError) as err:
        tc.plan(spec_of(defaults(**REACHABLE, **cluster)))
    assert err.value.key == f"gpu-cluster:cluster.{key}" and words in str(err.value)


def test_hcc_types_stay_instances_by_default_and_managed_is_refused_for_them():
    values = defaults(instanceType="HCCG5v.24XLARGE384", nodes=2, **REACHABLE)
    del values["gpu-cluster:cluster"]["gpu"]
    assert tc.plan(spec_of(values)).group is None  # the spec's default keeps the HPC cluster's RDMA
    values["gpu-cluster:cluster"]["nodeGroup"] = "managed"
    with pytest.raises(ConfigError) as err:
        tc.plan(spec_of(values))
    assert err.value.key == "gpu-cluster:cluster.nodeGroup" and "hpc_cluster_id" in str(err.value)


def test_the_new_resources_change_in_place():
    rules = load_rules()
    config, group = rules.rule(CONFIG), rules.rule(GROUP)
    assert config.holds == "none" and not config.replace and {"imageId", "userData"} <= set(config.update)
    assert group.holds == "nodes" and not group.replace and {"maxSize", "desiredCapacity"} <= set(group.update)


def test_the_launch_configuration_is_judged_as_a_node():
    assert CONFIG in NODE_TYPES
    bad = Resource(CONFIG, {"publicIpAssigned": True, "dataDisks": [{"diskSize": 10}]}, "urn:x", "x-config")
    assert {"no-public-ip", "encrypted-disks"} <= {v.rule for v in evaluate([bad], {})}
