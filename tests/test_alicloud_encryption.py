"""Customer-managed keys on Alibaba Cloud (`encryption.key`) as registered with Pulumi's mocks: the KMS key, its use
on every ESSD (ECS instances, the ESS scaling configuration, ACK pools, head and login nodes), an existing key used as
given, the General-purpose NAS on the key, what the plan says (the account's ECS role, NAS's service-linked role), SM4
refused, the diff's DATA LOSS."""

from __future__ import annotations

import pytest

from components.contract import contract
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout.alicloud.encryption import plan as encryption_plan
from components.spec import build_spec

from .conftest import (
    one,
    plan_json,
    plan_stack,
    plan_stack_with,
    plan_values,
    resources_of,
    resources_text,
    shipped_stacks,
    spec_of,
)

KEY_ID = "0b30658a-ed1a-4922-b8f7-a673ca9c1234"
ECS_ROLE = "ECS encrypts the disks with a customer key through the account's RAM role AliyunECSDiskEncryptDefaultRole"


def ali_values(**cluster):
    base = {"instanceType": "ecs.gn7e-c16g1.32xlarge", "nodes": 2, "nodeGroup": "instances", "zone": "cn-beijing-l"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-beijing", "gpu-cluster:cluster": base}


@pytest.fixture(scope="module")
def cmk():
    return plan_stack("alicloud-a100-cmk")


def cluster_keys(plan):
    return [k for k in resources_of(plan, "kms/key:Key") if k["name"].endswith("-alicloud-kms")]


def test_auto_creates_a_rotated_deletion_protected_key(cmk):
    (key,) = cluster_keys(cmk)
    assert key["inputs"] == {
        **key["inputs"],
        "keySpec": "Aliyun_AES_256",
        "keyUsage": "ENCRYPT/DECRYPT",
        "protectionLevel": "SOFTWARE",
        "automaticRotation": "Enabled",
        "rotationInterval": "365d",
        "pendingWindowInDays": 30,
        "deletionProtection": "Enabled",
    }
    assert key["protect"] is True and key["retainOnDelete"] is True


def test_the_scaling_configuration_head_and_login_disks_use_the_key(cmk):
    key = "<id of a100-cmk-alicloud-kms>"
    config = one(cmk, "ess/scalingConfiguration:ScalingConfiguration")["inputs"]
    assert config["systemDiskEncrypted"] is True and config["systemDiskKmsKeyId"] == key
    assert [(d["encrypted"], d["kmsKeyId"]) for d in config["dataDisks"]] == [(True, key)]
    instances = {i["name"]: i["inputs"] for i in resources_of(cmk, "ecs/instance:Instance")}
    assert {n: i["systemDiskKmsKeyId"] for n, i in instances.items()} == {
        "a100-cmk-alicloud-head": key,
        "a100-cmk-alicloud-login": key,
    }
    assert cmk.as_json()["outputs"]["encryption"] == {
        "key": key,
        "created": True,
        "keySpec": "Aliyun_AES_256",
        "rotation": "365d",
    }
    assert any(w.startswith(ECS_ROLE) for w in cmk.warnings())


NAS_ROLE = "storage.shared (General-purpose NAS) is encrypted with the cluster's KMS key (encrypt_type 2)"


def test_instances_disks_and_the_nas_use_the_key():
    plan = plan_values(ali_values(encryption={"key": "auto"}, storage={"scratch": "disk", "shared": {}}))
    key = "<id of test-alicloud-kms>"
    nodes = resources_of(plan, "ecs/instance:Instance")
    assert len(nodes) == 2
    assert all(n["inputs"]["systemDiskKmsKeyId"] == key for n in nodes)
    assert all([d["kmsKeyId"] for d in n["inputs"]["dataDisks"]] == [key] for n in nodes)
    nas = one(plan, "nas/fileSystem:FileSystem")["inputs"]
    # CreateFileSystem EncryptType 2 "Custom key. Supported when FileSystemType is set to standard or extreme"
    assert (nas["fileSystemType"], nas["encryptType"], nas["kmsKeyId"]) == ("standard", 2, key)
    assert any(w.startswith(NAS_ROLE) and "AliyunServiceRoleForNasEncryption" in w for w in plan.warnings())
    assert not any("SM4" in w for w in plan.warnings())
    # access stays the node vSwitch's CIDR, not the VPC's
    rule = one(plan, "nas/accessRule:AccessRule")["inputs"]
    vswitches = {v["inputs"]["cidrBlock"] for v in resources_of(plan, "vpc/switch:Switch")}
    vpc = one(plan, "vpc/network:Network")["inputs"]["cidrBlock"]
    assert rule["sourceCidrIp"] in vswitches and rule["sourceCidrIp"] != vpc


def test_an_existing_key_reaches_the_nas_as_given():
    plan = plan_values(ali_values(encryption={"key": KEY_ID}, storage={"scratch": "none", "shared": {}}))
    nas = one(plan, "nas/fileSystem:FileSystem")["inputs"]
    assert (nas["encryptType"], nas["kmsKeyId"]) == (2, KEY_ID)


def test_without_a_key_the_nas_keeps_the_nas_managed_key():
    plan = plan_values(ali_values(storage={"scratch": "none", "shared": {}}))
    nas = one(plan, "nas/fileSystem:FileSystem")["inputs"]
    assert nas["encryptType"] == 1 and "kmsKeyId" not in nas
    assert not any(w.startswith(NAS_ROLE) for w in plan.warnings())


def test_an_existing_filesystem_gets_no_nas_note():
    shared = {"kind": "existing", "existing": "0a1b2c3d4e-abc12.cn-beijing.nas.aliyuncs.com:/"}
    plan = plan_values(ali_values(encryption={"key": "auto"}, storage={"scratch": "none", "shared": shared}))
    assert not resources_of(plan, "nas/fileSystem:FileSystem")
    assert not any(w.startswith(NAS_ROLE) for w in plan.warnings())


def test_diff_names_data_loss_of_the_nas_when_the_key_comes():
    values = ali_values(storage={"scratch": "none", "shared": {}})
    old = plan_json(plan_values(values))
    keyed = {**values, "gpu-cluster:cluster": {**values["gpu-cluster:cluster"], "encryption": {"key": "auto"}}}
    new = plan_json(plan_values(keyed))
    d = diff_plans(old, new)
    assert any(w.startswith("DATA LOSS") and "nas/fileSystem:FileSystem" in w for w in d.warnings), d.warnings


def test_ack_pools_disks_use_the_key():
    values = ali_values(
        scheduler="kubernetes",
        nodeGroup="managed",
        encryption={"key": "auto"},
        storage={"scratch": "disk"},
        tags={"team": "ml", "environment": "dev"},
    )
    plan = plan_values(values)
    key = "<id of test-alicloud-kms>"
    pools = {p["name"]: p["inputs"] for p in resources_of(plan, "cs/nodePool:NodePool")}
    assert {n: p["systemDiskKmsKey"] for n, p in pools.items()} == {
        "test-alicloud-system": key,
        "test-alicloud-gpu": key,
    }
    assert [d["kmsKeyId"] for d in pools["test-alicloud-gpu"]["dataDisks"]] == [key]


def test_an_existing_key_is_used_as_given_and_nothing_is_created():
    plan = plan_values(ali_values(encryption={"key": KEY_ID}, storage={"scratch": "disk"}))
    assert not cluster_keys(plan)
    nodes = resources_of(plan, "ecs/instance:Instance")
    assert {n["inputs"]["systemDiskKmsKeyId"] for n in nodes} == {KEY_ID}
    assert {d["kmsKeyId"] for n in nodes for d in n["inputs"]["dataDisks"]} == {KEY_ID}
    assert plan.as_json()["outputs"]["encryption"]["created"] is False


def test_sm4_is_refused_by_its_key_with_the_source():
    with pytest.raises(ConfigErrors) as info:
        build_spec(ali_values(encryption={"key": "auto", "algorithm": "sm4"}), "test")
    # one line per problem: no KMS instance to make the key in, and a scratch disk no SM4 cipher reaches
    instance, scratch = info.value.errors
    assert instance.key == "gpu-cluster:cluster.encryption.kmsInstance"
    assert "Aliyun_AES_256 only" in instance.message and "kst-" in instance.message
    assert scratch.key == "gpu-cluster:cluster.storage.scratch" and "InstanceDataDiskArgs" in scratch.message


@pytest.mark.parametrize(
    "stack",
    [
        s
        for s in shipped_stacks("alicloud")
        if s not in ("alicloud-a100-cmk", "alicloud-mlps3-sm4", "alicloud-mlps3-nas")
    ],
)
def test_key_provider_plans_exactly_as_before(stack):
    shipped = plan_stack(stack)
    assert resources_text(plan_stack_with(stack, encryption={"key": "provider"})) == resources_text(shipped)
    assert "encryption" not in shipped.as_json()["outputs"]
    assert "KmsKey" not in resources_text(shipped) and "kmsKeyId" not in resources_text(shipped)


def test_diff_reports_data_loss_when_the_key_goes():
    old = plan_json(plan_stack("alicloud-a100-cmk"))
    new = plan_json(plan_stack_with("alicloud-a100-cmk", encryption={"key": "provider"}))
    d = diff_plans(old, new)
    assert any(urn.endswith("::a100-cmk-alicloud-kms") for urn in d.deleted)
    assert any("deletes alicloud:kms/key:Key `a100-cmk-alicloud-kms`" in w for w in d.warnings)
    first = next(w for w in d.warnings if w.startswith(("DATA LOSS", "DISRUPTION")))
    assert first.startswith("DATA LOSS")


@pytest.mark.parametrize("key", ["provider", "auto", KEY_ID])
def test_the_layout_plans_the_key(key):
    # the key is decided in the layout's plan() (a field of the layout); components/alicloud/encryption.py only reads
    # it, so any refusal of the key comes before the first resource
    spec = spec_of(ali_values(encryption={"key": key}))
    layout = contract("alicloud").plan(spec)
    assert layout.encryption == encryption_plan(spec)
    assert (layout.encryption is None) == (key == "provider")
    if key == KEY_ID:
        assert layout.encryption is not None and layout.encryption.key_id == KEY_ID and layout.encryption.create is None


def test_a_refused_config_with_a_key_registers_nothing(constructed):
    """A config the layout refuses (here a root disk over the ESSD system disk's 2,048 GB) registers no resource, not
    even the GpuCluster component or the KMS key: counted at pulumi.Resource construction under the plan's mocks (the
    runtime's Stack root aside)."""
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(ali_values(encryption={"key": "auto"}, storage={"rootGb": 4096}))
    assert "gpu-cluster:cluster.storage.rootGb" in str(info.value)
    assert constructed == []
    # the count sees what a plan registers: the same config with a root disk ESSD takes registers the key and more
    plan_values(ali_values(encryption={"key": "auto"}, storage={"rootGb": 200}))
    assert any(c.startswith("alicloud:kms/key:Key ") for c in constructed)


# --- SM4: an Aliyun_SM4 key in an existing KMS instance (encryption.kmsInstance) -------------------------------------

KST = "kst-bjj62f5ba3dnpb6v81234"
SM4 = {"key": "auto", "algorithm": "sm4", "kmsInstance": KST}


@pytest.fixture(scope="module")
def sm4_stack():
    return plan_stack("alicloud-mlps3-sm4")


def test_sm4_key_is_created_in_the_kms_instance(sm4_stack):
    (key,) = cluster_keys(sm4_stack)
    inputs = key["inputs"]
    assert (inputs["keySpec"], inputs["dkmsInstanceId"], inputs["keyUsage"]) == ("Aliyun_SM4", KST, "ENCRYPT/DECRYPT")
    # the instance decides the protection level, and hardware-protected keys do not rotate: neither is asked for
    assert "protectionLevel" not in inputs and "rotationInterval" not in inputs
    assert inputs["automaticRotation"] == "Disabled" and inputs["deletionProtection"] == "Enabled"
    assert key["protect"] is True and key["retainOnDelete"] is True
    assert sm4_stack.as_json()["outputs"]["encryption"] == {
        "key": f"<id of {key['name']}>",
        "created": True,
        "keySpec": "Aliyun_SM4",
        "rotation": None,
        "kmsInstance": KST,
    }


def test_every_system_disk_is_sm4_on_the_sm4_key(sm4_stack):
    (key,) = cluster_keys(sm4_stack)
    instances = resources_of(sm4_stack, "ecs/instance:Instance")
    assert {i["name"].rsplit("-", 2)[-2] for i in instances} >= {"node", "alicloud"}  # nodes, head and login
    assert len(instances) == 4
    for inst in instances:
        inputs = inst["inputs"]
        assert (inputs["systemDiskEncrypted"], inputs["systemDiskKmsKeyId"], inputs["systemDiskEncryptAlgorithm"]) == (
            True,
            f"<id of {key['name']}>",
            "sm4-128",
        ), inst["name"]
        assert "dataDisks" not in inputs  # no data disk: none could take an SM4 cipher


def test_sm4_on_a_managed_group_sets_the_ess_spelling():
    plan = plan_values(ali_values(nodeGroup="managed", encryption=SM4, storage={"scratch": "none"}))
    config = one(plan, "ess/scalingConfiguration:ScalingConfiguration")["inputs"]
    (key,) = cluster_keys(plan)
    assert (config["systemDiskKmsKeyId"], config["systemDiskEncryptAlgorithm"]) == (f"<id of {key['name']}>", "SM4-128")


def test_aes_stacks_send_no_disk_algorithm(cmk):
    for res in (*resources_of(cmk, "ecs/instance:Instance"), *resources_of(cmk, "ScalingConfiguration")):
        assert "systemDiskEncryptAlgorithm" not in res["inputs"], res["name"]
    (key,) = cluster_keys(cmk)
    assert "dkmsInstanceId" not in key["inputs"]
