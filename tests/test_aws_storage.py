"""AWS storage.shared as registered with Pulumi's mocks: FSx for Lustre / EFS, its rules, the mount in user data."""

from __future__ import annotations

import pytest
import yaml

from components.bootstrap.mounts import SOURCE_PLACEHOLDER
from components.layout import aws as aws_layout

from .conftest import aws_values, one, plan_values, resources_of, spec_of
from .test_aws_resources import decode_user_data

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"


@pytest.fixture(scope="module")
def h100(stack_plan):
    return stack_plan("aws-h100")


@pytest.fixture(scope="module")
def efs():
    return plan_values(aws_values(storage={"shared": {"kind": "nfs", "retain": False}}))


def by_name(plan):
    return {r.name: r.as_json() for r in plan.resources}


def test_fsx_is_persistent_2_lz4_efa_in_the_node_subnet(h100):
    fs = one(h100, "fsx/lustreFileSystem:LustreFileSystem")
    inputs = fs["inputs"]
    assert inputs == {
        **inputs,
        "deploymentType": "PERSISTENT_2",
        "storageType": "SSD",
        "storageCapacity": 4800,
        "perUnitStorageThroughput": 1000,
        "dataCompressionType": "LZ4",
        "fileSystemTypeVersion": "2.15",
        "efaEnabled": True,
        "metadataConfiguration": {"mode": "AUTOMATIC"},
        "subnetIds": "<id of llm-train-aws-nodes>",
        "securityGroupIds": ["<id of llm-train-aws-shared-sg>"],
    }
    assert "kmsKeyId" not in inputs  # encrypted at rest with the AWS managed key (PERSISTENT_2 always is)


def test_retain_sets_protect_and_retain_on_delete(h100, efs):
    fs = one(h100, "fsx/lustreFileSystem:LustreFileSystem")
    assert fs["protect"] is True and fs["retainOnDelete"] is True
    efs_fs = one(efs, "efs/fileSystem:FileSystem")
    assert efs_fs["protect"] is False and efs_fs["retainOnDelete"] is False  # retain: false
    # nothing else in the stack is protected by storage.shared
    others = [r for r in h100.resources if r.type != FSX]
    assert not [r.name for r in others if r.as_json()["protect"]]


def test_security_rules_admit_only_the_cluster(h100):
    node_sg, shared_sg = "<id of llm-train-aws-sg>", "<id of llm-train-aws-shared-sg>"
    rules = [r["inputs"] for r in resources_of(h100, "SecurityGroupIngressRule")]
    rules += [r["inputs"] for r in resources_of(h100, "SecurityGroupEgressRule")]
    touching = [r for r in rules if shared_sg in (r["securityGroupId"], r.get("referencedSecurityGroupId"))]
    assert touching and all("cidrIpv4" not in r for r in touching)
    assert all({r["securityGroupId"], r["referencedSecurityGroupId"]} <= {node_sg, shared_sg} for r in touching)
    ingress = {
        (r["fromPort"], r["toPort"], r["referencedSecurityGroupId"])
        for r in resources_of(h100, "SecurityGroupIngressRule")
        for r in [r["inputs"]]
        if r["securityGroupId"] == shared_sg and r["ipProtocol"] == "tcp"
    }
    assert ingress == {(988, 988, node_sg), (1018, 1023, node_sg), (988, 988, shared_sg), (1018, 1023, shared_sg)}
    # EFA-enabled FSx: all traffic with the node group and itself, in and out
    efa = [r for r in touching if r["ipProtocol"] == "-1" and r["securityGroupId"] == shared_sg]
    assert len(efa) == 4


def test_nodes_may_reach_the_filesystem_even_without_egress(tmp_path):
    plan = plan_values(aws_values(network={"egress": "none"}, storage={"shared": {}}))
    egress = [r["inputs"] for r in resources_of(plan, "SecurityGroupEgressRule")]
    to_shared = [r for r in egress if r["securityGroupId"] == "<id of test-aws-sg>"
                 and r.get("referencedSecurityGroupId") == "<id of test-aws-shared-sg>"]  # fmt: skip
    assert {(r["fromPort"], r["toPort"]) for r in to_shared} == {(988, 988), (1018, 1023)}


def test_efs_is_encrypted_with_a_mount_target_in_the_node_subnet(efs):
    fs = one(efs, "efs/fileSystem:FileSystem")["inputs"]
    assert fs["encrypted"] is True and fs["throughputMode"] == "elastic"
    mt = one(efs, "efs/mountTarget:MountTarget")["inputs"]
    assert mt == {**mt, "subnetId": "<id of test-aws-nodes>", "securityGroups": ["<id of test-aws-shared-sg>"]}
    ingress = [r["inputs"] for r in resources_of(efs, "SecurityGroupIngressRule")]
    to_shared = [r for r in ingress if r["securityGroupId"] == "<id of test-aws-shared-sg>"]
    assert {(r["fromPort"], r["toPort"], r["ipProtocol"]) for r in to_shared} == {(2049, 2049, "tcp")}


def test_user_data_mounts_the_filesystem_and_the_health_check_expects_it(h100):
    user_data = decode_user_data(one(h100, "launchTemplate:LaunchTemplate")["inputs"]["userData"])
    doc = yaml.safe_load(user_data)  # valid cloud-init
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    env = files["/etc/gpu-cluster/mounts.env"]
    assert 'MOUNT_SOURCE="<dns name of llm-train-aws-shared>@tcp:/<mount name of llm-train-aws-shared>"' in env
    assert (
        'MOUNT_OPTIONS="relatime,flock"' in env and 'CLIENT="fsx-lustre-apt"' in env and 'MOUNT_PATH="/shared"' in env
    )
    assert SOURCE_PLACEHOLDER not in user_data
    assert 'EXPECTED_MOUNTS="/shared"' in files["/etc/gpu-cluster/health.env"]
    assert ["systemctl", "enable", "--now", "--no-block", "gpu-cluster-mounts.service"] in doc["runcmd"]


def test_without_shared_storage_the_bootstrap_has_no_mount(stack_plan):
    user_data = decode_user_data(one(stack_plan("aws-dev"), "launchTemplate:LaunchTemplate")["inputs"]["userData"])
    doc = yaml.safe_load(user_data)
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    assert not [p for p in files if "mounts" in p] and not [
        c for c in doc["runcmd"] if "gpu-cluster-mounts.service" in c
    ]
    assert "EXPECTED_MOUNTS" not in files["/etc/gpu-cluster/health.env"]


def test_outputs_name_the_filesystem(h100):
    assert h100.run.outputs["sharedFilesystem"] == {
        "kind": "lustre",
        "id": "<id of llm-train-aws-shared>",
        "mount": "<dns name of llm-train-aws-shared>@tcp:/<mount name of llm-train-aws-shared>",
        "path": "/shared",
    }


def test_efa_only_where_the_size_fits_efa_increments_and_a_warning_otherwise():
    layout = aws_layout.plan(spec_of(aws_values(storage={"shared": {"sizeGb": 4800, "throughput": 250}})))
    assert layout.shared is not None and layout.shared.efa is False
    assert layout.shared_note is not None and "19200 GiB" in layout.shared_note and "created" in layout.shared_note
    no_fabric = aws_layout.plan(
        spec_of(aws_values(fabric="none", storage={"shared": {"sizeGb": 4800, "throughput": 1000}}))
    )
    assert no_fabric.shared is not None and no_fabric.shared.efa is False and no_fabric.shared_note is None


def test_defaults_are_the_smallest_size_and_the_default_tier():
    layout = aws_layout.plan(spec_of(aws_values(storage={"shared": {}})))
    assert layout.shared is not None
    assert (layout.shared.size_gb, layout.shared.throughput, layout.shared.path) == (1200, 250, "/shared")
    assert layout.shared.retain is True


def test_an_existing_filesystem_is_mounted_and_nothing_is_created():
    source = "fs-0abc.fsx.us-east-1.amazonaws.com@tcp:/xyz"
    plan = plan_values(aws_values(storage={"shared": {"kind": "existing", "existing": source}}))
    assert not resources_of(plan, "fsx/lustreFileSystem:LustreFileSystem") and not resources_of(plan, "shared-sg")
    user_data = decode_user_data(one(plan, "launchTemplate:LaunchTemplate")["inputs"]["userData"])
    assert f'MOUNT_SOURCE="{source}"' in user_data and 'MOUNT_FSTYPE="lustre"' in user_data
    assert plan.run.outputs["sharedFilesystem"]["id"] is None
