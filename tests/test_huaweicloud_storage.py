"""Huawei Cloud storage.shared as registered with Pulumi's mocks: SFS Turbo, its security group, the nodes' mount."""

from __future__ import annotations

import copy

import pytest
import yaml

from components.catalog import storage
from components.diff import diff_plans
from components.errors import ConfigErrors
from components.policy import Resource
from components.policy.rules.data import key_missing

from .conftest import one, plan_json, plan_values, resources_of, spec_of

KEY = "gpu-cluster:cluster.storage.shared"
TURBO = "huaweicloud:Sfs/turbo:Turbo"


def huawei_values(**cluster):
    base = {"gpu": "T4:1", "nodes": 2, "fabric": "none", "nodeGroup": "instances", "zone": "cn-north-4a"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "huaweicloud", "huaweicloud:region": "cn-north-4", "gpu-cluster:cluster": base}


@pytest.fixture(scope="module")
def turbo():
    return plan_values(huawei_values(storage={"shared": {"retain": True}}))


def user_data_files(plan, index=0):
    inst = next(r for r in plan_json(plan)["resources"] if r["name"].endswith(f"-node-{index}"))
    return {f["path"]: f["content"] for f in yaml.safe_load(inst["inputs"]["userData"])["write_files"]}


def test_turbo_is_in_the_nodes_subnet_on_the_cluster_key(turbo):
    fs = one(turbo, "Sfs/turbo:Turbo")
    inputs = fs["inputs"]
    assert inputs == {
        **inputs,
        "shareProto": "NFS",
        "shareType": "STANDARD",
        "size": 500,  # the smallest Standard size (catalog sizes: 500 to 32,768 GB)
        "vpcId": "<id of test-huaweicloud-vpc>",
        "subnetId": "<id of test-huaweicloud-nodes>",
        "availabilityZone": "cn-north-4a",
        "cryptKeyId": "<id of test-huaweicloud-key>",  # the DEW key of the EVS disks
        "name": "test-shared",
    }
    assert fs["protect"] is True and fs["retainOnDelete"] is True


def test_only_the_nodes_group_reaches_the_nfs_ports(turbo):
    fs = one(turbo, "Sfs/turbo:Turbo")["inputs"]
    groups = {r["name"]: r for r in resources_of(turbo, "Vpc/secgroup:Secgroup")}
    assert fs["securityGroupId"] == "<id of test-huaweicloud-shared-sg>"
    assert groups["test-huaweicloud-shared-sg"]["inputs"]["deleteDefaultRules"] is True
    rules = [r["inputs"] for r in resources_of(turbo, "Vpc/secgroupRule:SecgroupRule") if "-shared-" in r["name"]]
    assert sorted(r["ports"] for r in rules) == ["111", "20048", "2049", "2051-2052"]
    for rule in rules:
        assert rule["securityGroupId"] == "<id of test-huaweicloud-shared-sg>"
        assert rule["remoteGroupId"] == "<id of test-huaweicloud-sg>" and "remoteIpPrefix" not in rule
        assert rule["direction"] == "ingress" and rule["protocol"] == "tcp"


def test_every_node_mounts_the_export_over_nfs3(turbo):
    for index in (0, 1):
        files = user_data_files(turbo, index)
        env = files["/etc/gpu-cluster/mounts.env"]
        assert 'MOUNT_SOURCE="<export location of test-huaweicloud-shared>"' in env
        assert 'MOUNT_FSTYPE="nfs"' in env and 'CLIENT_PACKAGES="nfs-common"' in env
        assert 'MOUNT_OPTIONS="vers=3,timeo=600,noresvport,nolock,tcp"' in env
        assert 'EXPECTED_MOUNTS="/shared"' in files["/etc/gpu-cluster/health.env"]
    assert turbo.run.outputs["sharedFilesystem"]["mount"] == "<export location of test-huaweicloud-shared>"


def test_the_plan_names_the_service_and_no_invented_price(turbo):
    doc = plan_json(turbo)
    shared = doc["summary"]["sharedStorage"]
    assert shared["service"] == "Huawei Cloud SFS Turbo (Standard, NFS)" and shared["sizeGb"] == 500
    assert shared["monthlyUsd"] is None and "sfs_billing_0006" in shared["priceSource"]
    assert doc["summary"]["inTransit"]["sharedStorage"]["inTransit"] == "not offered"
    assert doc["policy"] == []


def test_a_turbo_without_its_key_fails_the_encryption_rule(turbo):
    fs = one(turbo, "Sfs/turbo:Turbo")
    bare = {k: v for k, v in fs["inputs"].items() if k != "cryptKeyId"}
    assert list(key_missing(Resource(TURBO, fs["inputs"], fs["urn"], fs["name"]))) == []
    assert list(key_missing(Resource(TURBO, bare, fs["urn"], fs["name"]))) == [
        "is not encrypted with a DEW key (no cryptKeyId)"
    ]


def test_sizes_are_refused_with_the_key_and_the_range():
    with pytest.raises(ConfigErrors) as info:
        spec_of(huawei_values(storage={"shared": {"sizeGb": 400, "throughput": 250}}))
    found = {e.key: e.message for e in info.value.errors}
    assert "takes 500 to 32768 in steps of 1 GiB" in found[f"{KEY}.sizeGb"]
    assert "has no throughput tiers" in found[f"{KEY}.throughput"]
    with pytest.raises(ConfigErrors) as info:
        spec_of(huawei_values(storage={"shared": {"kind": "lustre"}}))
    assert "huaweicloud offers nfs here" in {e.key: e.message for e in info.value.errors}[f"{KEY}.kind"]


def test_an_existing_filesystem_is_mounted_and_nothing_created():
    plan = plan_values(huawei_values(storage={"shared": {"kind": "existing", "existing": "192.168.0.9:/"}}))
    assert not resources_of(plan, "Sfs/turbo:Turbo")
    assert 'MOUNT_SOURCE="192.168.0.9:/"' in user_data_files(plan)["/etc/gpu-cluster/mounts.env"]


def test_without_shared_storage_the_nodes_user_data_has_no_mount():
    plan = plan_values(huawei_values())
    assert not resources_of(plan, "Sfs/turbo:Turbo")
    assert "/etc/gpu-cluster/mounts.env" not in user_data_files(plan)


def test_a_share_type_change_replaces_the_filesystem_first_as_data_loss(turbo):
    old = plan_json(turbo)
    new = copy.deepcopy(old)
    fs = next(r for r in new["resources"] if r["type"] == TURBO)
    fs["inputs"]["shareType"] = "PERFORMANCE"
    first = diff_plans(old, new).warnings[0]
    assert first.startswith(f"DATA LOSS: replaces {TURBO} `test-huaweicloud-shared`")


def test_growing_the_filesystem_is_in_place(turbo):
    old = plan_json(turbo)
    new = copy.deepcopy(old)
    next(r for r in new["resources"] if r["type"] == TURBO)["inputs"]["size"] = 1000
    assert not [w for w in diff_plans(old, new).warnings if w.startswith("DATA LOSS")]


def test_catalog_facts_match_the_sdk_docstrings():
    svc = storage.load("huaweicloud").service("auto")
    assert svc.resource == TURBO and svc.sizes.min == 500 and svc.sizes.max == 32768
    assert "NFS v3 only" in svc.mount_source and svc.fstype == "nfs"


def test_the_mount_script_mounts_the_turbo_export_with_nfs3_on_stubs(tmp_path, turbo):
    """mounts.sh run for real (stubbed mount, apt and systemd) with the env the Huawei nodes get."""
    from .test_mounts_script import run

    env_text = user_data_files(turbo)["/etc/gpu-cluster/mounts.env"]
    env = dict(line.split("=", 1) for line in env_text.splitlines() if "=" in line)
    env = {k: v.strip('"') for k, v in env.items() if k.startswith(("MOUNT_", "CLIENT"))}
    env["MOUNT_SOURCE"] = "192.168.0.9:/"  # what export_location answers at deploy ("IP address:/")
    env["MOUNT_PATH"] = str(tmp_path / "shared")
    proc, calls = run(tmp_path, installed=False, **env)
    assert proc.returncode == 0, proc.stderr
    assert any(c.startswith("apt-get install") and c.endswith("nfs-common") for c in calls)
    assert [c for c in calls if c.startswith("mount ")] == [
        f"mount -t nfs -o vers=3,timeo=600,noresvport,nolock,tcp 192.168.0.9:/ {tmp_path}/shared"
    ]
    unit = (tmp_path / "units" / "shared.mount").read_text()
    assert "Type=nfs" in unit and "Options=vers=3,timeo=600,noresvport,nolock,tcp,_netdev" in unit


def test_the_shipped_stack_shares_a_turbo_between_two_nodes_and_passes_every_policy(stack_plan):
    plan = stack_plan("huaweicloud-shared")
    doc = plan.as_json()
    assert doc["policy"] == [] and doc["summary"]["sharedStorage"]["retain"] is True
    assert one(plan, "Sfs/turbo:Turbo")["inputs"]["cryptKeyId"] == "<id of hw-shared-huaweicloud-key>"
    for index in (0, 1):
        env = user_data_files(plan, index)["/etc/gpu-cluster/mounts.env"]
        assert 'MOUNT_SOURCE="<export location of hw-shared-huaweicloud-shared>"' in env
    # plain user data (no gzip on Huawei): the mount keeps the nodes' boot document under the 32 KB limit
    assert all(len(r["inputs"]["userData"].encode()) <= 32768 for r in doc["resources"] if "userData" in r["inputs"])
