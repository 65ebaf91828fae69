"""Customer-managed keys on AWS (`encryption.key`) as registered with Pulumi's mocks: the KMS key, its policy and
alias, its use on every EBS volume, filesystem and secret, an existing key used as given, the diff's DATA LOSS."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.contract import contract
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout import aws as aws_layout
from components.spec import build_spec

from .conftest import (
    aws_values,
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

KEY = "aws:kms/key:Key"
ARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.fixture  # per test: plan_stack caches it, except under mutmut
def cmk():
    return plan_stack("aws-h100-cmk")


def created_key(plan) -> dict[str, Any]:
    keys = [r for r in resources_of(plan, "kms/key:Key") if r["name"].endswith("-kms")]
    assert len(keys) == 1
    return keys[0]


def ebs_keys(plan) -> list[Any]:
    """kmsKeyId of every EBS volume the plan creates: launch templates' mappings and instances' root volumes."""
    found = [
        m["ebs"].get("kmsKeyId")
        for lt in resources_of(plan, "ec2/launchTemplate:LaunchTemplate")
        for m in lt["inputs"]["blockDeviceMappings"]
    ]
    found += [
        i["inputs"]["rootBlockDevice"].get("kmsKeyId")
        for i in resources_of(plan, "ec2/instance:Instance")
        if "rootBlockDevice" in i["inputs"]
    ]
    return found


def test_auto_creates_a_rotated_protected_key_and_its_alias(cmk):
    key = created_key(cmk)
    assert key["inputs"]["enableKeyRotation"] is True
    assert key["inputs"]["deletionWindowInDays"] == 30
    assert key["protect"] is True and key["retainOnDelete"] is True
    alias = one(cmk, "kms/alias:Alias")["inputs"]
    assert alias == {"name": "alias/gpu-cluster/h100-cmk-aws-h100-cmk", "targetKeyId": "<key id of h100-cmk-aws-kms>"}


def test_key_policy_lets_the_account_its_services_and_auto_scaling_use_it(cmk):
    policy = json.loads(created_key(cmk)["inputs"]["policy"])
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    account = "<account id>"
    assert by_sid["AccountAdministersTheKey"]["Principal"] == {
        "AWS": f"arn:<partition of us-east-1>:iam::{account}:root"
    }
    services = by_sid["AccountUsesTheKeyThroughItsServices"]["Condition"]["StringEquals"]
    assert services["kms:CallerAccount"] == account
    assert services["kms:ViaService"] == [
        f"{s}.us-east-1.amazonaws.com" for s in ("ec2", "fsx", "elasticfilesystem", "secretsmanager")
    ]
    role = (
        f"arn:<partition of us-east-1>:iam::{account}:role/aws-service-role/autoscaling.amazonaws.com/"
        "AWSServiceRoleForAutoScaling"
    )
    use, grant = by_sid["AutoScalingUsesTheKey"], by_sid["AutoScalingAttachesVolumes"]
    assert use["Action"] == ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"]
    assert use["Condition"] == {"ArnEquals": {"aws:PrincipalArn": role}}
    assert grant["Action"] == "kms:CreateGrant"
    assert grant["Condition"] == {
        "ArnEquals": {"aws:PrincipalArn": role},
        "Bool": {"kms:GrantIsForAWSResource": "true"},
    }


def test_every_volume_filesystem_and_secret_of_the_slurm_stack_uses_the_key(cmk):
    arn = "<arn of h100-cmk-aws-kms>"
    volumes = ebs_keys(cmk)
    assert len(volumes) == 3 and set(volumes) == {arn}  # the GPU nodes' template, the head and the login node
    assert one(cmk, "fsx/lustreFileSystem:LustreFileSystem")["inputs"]["kmsKeyId"] == arn
    assert one(cmk, "secretsmanager/secret:Secret")["inputs"]["kmsKeyId"] == arn
    assert cmk.as_json()["outputs"]["encryption"] == {
        "key": arn,
        "created": True,
        "alias": "alias/gpu-cluster/h100-cmk-aws-h100-cmk",
        "rotation": True,
    }
    # the NVMe scratch cannot take a KMS key: the plan says so
    assert any(w.startswith("scratch on the NVMe instance store takes no KMS key") for w in cmk.warnings())


def test_scratch_disk_and_efs_use_the_key():
    plan = plan_values(
        aws_values(encryption={"key": "auto"}, storage={"scratch": "disk", "shared": {"kind": "nfs"}}, nodes=1)
    )
    arn = "<arn of test-aws-kms>"
    lt = one(plan, "ec2/launchTemplate:LaunchTemplate")["inputs"]
    assert [m["ebs"]["kmsKeyId"] for m in lt["blockDeviceMappings"]] == [arn, arn]  # root and scratch
    efs = one(plan, "efs/fileSystem:FileSystem")["inputs"]
    assert efs["encrypted"] is True and efs["kmsKeyId"] == arn
    assert not [w for w in plan.warnings() if "instance store" in w]


def test_eks_node_groups_templates_use_the_key():
    values = aws_values(scheduler="kubernetes", encryption={"key": "auto"}, storage={"scratch": "disk"})
    values["gpu-cluster:cluster"]["network"] = {"egress": "nat"}
    plan = plan_values(values)
    arn = "<arn of test-aws-kms>"
    templates = {lt["name"]: lt["inputs"] for lt in resources_of(plan, "ec2/launchTemplate:LaunchTemplate")}
    assert {n: [m["ebs"]["kmsKeyId"] for m in t["blockDeviceMappings"]] for n, t in templates.items()} == {
        "test-aws-system-lt": [arn],
        "test-aws-gpu-lt": [arn, arn],
    }


def test_an_existing_key_is_used_as_given_and_nothing_is_created():
    plan = plan_values(aws_values(encryption={"key": ARN}, storage={"shared": {}}, nodeGroup="instances"))
    assert not resources_of(plan, "kms/key:Key") and not resources_of(plan, "kms/alias:Alias")
    assert set(ebs_keys(plan)) == {ARN}
    assert one(plan, "fsx/lustreFileSystem:LustreFileSystem")["inputs"]["kmsKeyId"] == ARN
    # instances launch from the template: their volumes are the template's
    assert all("launchTemplate" in i["inputs"] for i in resources_of(plan, "ec2/instance:Instance"))
    assert plan.as_json()["outputs"]["encryption"]["created"] is False


def test_a_malformed_key_arn_is_refused_by_its_key():
    with pytest.raises(ConfigErrors) as info:
        build_spec(aws_values(encryption={"key": "alias/my-key"}), "test")
    assert [e.key for e in info.value.errors] == ["gpu-cluster:cluster.encryption.key"]


@pytest.mark.parametrize("stack", [s for s in shipped_stacks("aws") if s != "aws-h100-cmk"])
def test_key_provider_plans_exactly_as_before(stack):
    """`encryption.key: provider` written out is the stack as shipped: no key, no kmsKeyId, same inputs."""
    shipped = plan_stack(stack)
    assert resources_text(plan_stack_with(stack, encryption={"key": "provider"})) == resources_text(shipped)
    assert "encryption" not in shipped.as_json()["outputs"]
    assert "kmsKeyId" not in resources_text(shipped)


def test_diff_reports_data_loss_when_the_key_goes():
    old = plan_json(plan_stack("aws-h100-cmk"))
    new = plan_json(plan_stack_with("aws-h100-cmk", encryption={"key": "provider"}))
    d = diff_plans(old, new)
    assert any(KEY in urn and urn.endswith("::h100-cmk-aws-kms") for urn in d.deleted)
    loss = [w for w in d.warnings if w.startswith("DATA LOSS")]
    assert any("deletes aws:kms/key:Key `h100-cmk-aws-kms`" in w for w in loss)
    # the filesystem re-keyed is replaced: its data is lost too, and data loss is reported before any disruption
    assert any("h100-cmk-aws-shared" in w for w in loss)
    levels = [w.split(":", 1)[0] for w in d.warnings if w.startswith(("DATA LOSS", "DISRUPTION"))]
    assert levels == sorted(levels, key=lambda w: w != "DATA LOSS")


def test_the_key_is_a_decision_of_the_layout():
    """contract("aws").plan decides the key (AwsLayout.encryption); components/aws/encryption.py only reads it."""
    auto = contract("aws").plan(spec_of(aws_values(encryption={"key": "auto"})))
    assert isinstance(auto, aws_layout.AwsLayout) and auto.encryption is not None
    assert auto.encryption.create is not None and auto.encryption.key_arn is None
    assert auto.encryption.create.alias.startswith("alias/gpu-cluster/")
    given = contract("aws").plan(spec_of(aws_values(encryption={"key": ARN})))
    assert isinstance(given, aws_layout.AwsLayout) and given.encryption is not None
    assert given.encryption.create is None and given.encryption.key_arn == ARN
    provider = contract("aws").plan(spec_of(aws_values()))
    assert isinstance(provider, aws_layout.AwsLayout) and provider.encryption is None


def test_a_refused_config_with_a_key_registers_nothing(constructed):
    """A config the layout refuses raises before the first resource, the key's included: nothing is constructed,
    not even the GpuCluster component (the key used to be planned in components/aws/encryption.py, after the
    GpuCluster and AWS components were constructed)."""
    refused = aws_values(encryption={"key": "auto"}, identity={"existing": "ml-nodes", "policies": [ARN]})
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(refused)
    assert "gpu-cluster:cluster.identity.policies" in str(info.value)
    assert constructed == []
    # the count sees what a plan registers: the same key without the refusal registers the key and the rest
    plan_values(aws_values(encryption={"key": "auto"}))
    assert any(c.startswith("aws:kms/key:Key ") for c in constructed)


def test_a_refused_key_plan_registers_nothing(monkeypatch, constructed):
    """A refusal of the key plan itself (none of today's configs raises there: the spec refuses a malformed ARN)
    comes from the layout's plan(), before any resource: components/aws builds from the layout field only."""

    def refusing(spec, *_):
        raise ConfigError("gpu-cluster:cluster.encryption.key", "refused by the key plan")

    monkeypatch.setattr(aws_layout, "encryption_plan", refusing)
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(aws_values(encryption={"key": "auto"}))
    assert "gpu-cluster:cluster.encryption.key" in str(info.value)
    assert constructed == []
