"""Alibaba storage.shared as registered with Pulumi's mocks: General-purpose NAS, its permission group, the mount."""

from __future__ import annotations

import base64
import copy
import gzip

import pytest
import yaml

from components.diff import diff_plans
from components.errors import ConfigErrors

from .conftest import one, plan_json, plan_values, spec_of

KEY = "gpu-cluster:cluster.storage.shared"
NAS = "alicloud:nas/fileSystem:FileSystem"


def ali_values(**cluster):
    base = {"instanceType": "ecs.gn7e-c16g1.32xlarge", "nodes": 2, "nodeGroup": "instances"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-beijing", "gpu-cluster:cluster": base}


@pytest.fixture(scope="module")
def nas():
    return plan_values(ali_values(storage={"shared": {}}))


def test_nas_is_encrypted_and_protected(nas):
    fs = one(nas, "nas/fileSystem:FileSystem")
    inputs = fs["inputs"]
    assert inputs == {**inputs, "fileSystemType": "standard", "protocolType": "NFS", "storageType": "Performance"}
    assert inputs["encryptType"] == 1
    assert fs["protect"] is True and fs["retainOnDelete"] is True


def test_only_the_node_vswitch_may_mount(nas):
    rule = one(nas, "nas/accessRule:AccessRule")["inputs"]
    assert rule["sourceCidrIp"] == "10.42.0.0/17" and rule["rwAccessType"] == "RDWR"
    target = one(nas, "nas/mountTarget:MountTarget")["inputs"]
    assert target["vswitchId"] == "<id of test-alicloud-nodes>"
    assert target["accessGroupName"] == rule["accessGroupName"] == "<autoname:test-alicloud-shared-ag>"


def test_user_data_mounts_the_nas(nas):
    inst = next(r.as_json() for r in nas.resources if r.type == "alicloud:ecs/instance:Instance")
    data = gzip.decompress(base64.b64decode(inst["inputs"]["userData"])).decode()
    files = {f["path"]: f["content"] for f in yaml.safe_load(data)["write_files"]}
    env = files["/etc/gpu-cluster/mounts.env"]
    assert 'MOUNT_SOURCE="<mount target domain of test-alicloud-shared-mt>:/"' in env
    assert 'MOUNT_FSTYPE="nfs4"' in env and 'CLIENT_PACKAGES="nfs-common"' in env
    assert "hard,timeo=600,retrans=2,noresvport" in env
    assert 'EXPECTED_MOUNTS="/shared"' in files["/etc/gpu-cluster/health.env"]
    assert nas.run.outputs["sharedFilesystem"]["mount"] == "<mount target domain of test-alicloud-shared-mt>:/"


def test_lustre_and_sizes_are_refused_with_the_key():
    with pytest.raises(ConfigErrors) as info:
        spec_of(ali_values(storage={"shared": {"kind": "lustre", "throughput": 250}}))
    found = {e.key: e.message for e in info.value.errors}
    assert "alicloud offers nfs here" in found[f"{KEY}.kind"]


@pytest.mark.parametrize(
    "cluster",
    [
        {},
        {"encryption": {"key": "auto"}},
        {"compliance": "mlps3", "encryption": {"key": "auto"}},
    ],
    ids=["plain", "key", "mlps3"],
)
def test_cpfs_is_refused_once_on_the_kind_with_both_reasons_and_kind_nfs(cluster):
    # CPFS (kind lustre): no key reaches it and no mount is sourced (catalog/storage/alicloud.yaml notBuilt)
    with pytest.raises(ConfigErrors) as info:
        spec_of(ali_values(storage={"shared": {"kind": "lustre"}}, **cluster))
    [line] = [e.message for e in info.value.errors if e.key.startswith(KEY)]
    assert [e.key for e in info.value.errors if e.key.startswith(KEY)] == [f"{KEY}.kind"]
    assert "EncryptType 1 or 2) on standard and extreme" in line and "mlps3 could not pass" in line
    assert "gives no export domain" in line and "Ubuntu 20.04 and older" in line
    assert line.endswith(
        "use kind nfs, General-purpose NAS, encrypted with the cluster's key when encryption.key is set"
    )


def test_a_storage_type_change_replaces_the_nas_first_as_data_loss(nas):
    old = plan_json(nas)
    new = copy.deepcopy(old)
    fs = next(r for r in new["resources"] if r["type"] == NAS)
    fs["inputs"]["storageType"] = "Capacity"
    first = diff_plans(old, new).warnings[0]
    assert first.startswith(f"DATA LOSS: replaces {NAS} `test-alicloud-shared`, the shared filesystem (elastic size")
