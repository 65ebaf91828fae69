"""scheduler slurm on AWS, through the offline plan: head node, MUNGE secret, Slurm ports, the three bootstraps."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from components.bootstrap.mounts import SOURCE_PLACEHOLDER
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER

from .conftest import aws_values, one, plan_values, resources_of

STACK = "aws-slurm-h100"
HEAD_IP = "<private ip of slurm-h100-aws-head>"
MOCK_KEY = "<base64 of slurm-h100-aws-munge-key-bytes>"  # what the offline plan's random provider answers


def decoded(b64: str) -> str:
    return gzip.decompress(base64.b64decode(b64)).decode()


def env_of(user_data: str, name: str) -> dict[str, str]:
    """A part's settings file as cloud-init writes it."""
    import yaml

    doc = yaml.safe_load(user_data.removeprefix("#cloud-config\n"))
    for f in doc["write_files"]:
        if f["path"] == f"/etc/gpu-cluster/{name}.env":
            return {k: json.loads(v) for k, v in (line.split("=", 1) for line in f["content"].splitlines())}
    raise AssertionError(f"no {name}.env")


@pytest.fixture  # per test: plan_stack caches it, except under mutmut
def plan(stack_plan):
    return stack_plan(STACK)


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


def test_head_node_is_private_in_the_node_subnet_with_the_node_profile(plan):
    instances = by_name(plan, "ec2/instance:Instance")
    head = instances["slurm-h100-aws-head"]
    assert head["subnetId"] == "<id of slurm-h100-aws-nodes>"
    assert head["associatePublicIpAddress"] is False
    assert head["instanceType"] == "m7i.large"  # slurm.headInstanceType defaults to AWS's loginDefaultType
    assert head["iamInstanceProfile"] == instances["slurm-h100-aws-login"]["iamInstanceProfile"]
    assert head["vpcSecurityGroupIds"] == ["<id of slurm-h100-aws-head-sg>"]
    assert head["metadataOptions"]["httpTokens"] == "required"
    head_data = decoded(head["userDataBase64"])
    assert "gpu-cluster-slurm-head" in head_data and "SlurmctldParameters=enable_configless" in head_data
    # the GPU nodes are not in the head's user data (issue 28): it names the SSM parameter that has them
    assert (
        "Include nodes.conf" in head_data and "Gres=gpu:h100:8" not in head_data and "MaxNodeCount=4" not in head_data
    )
    assert "/gpu-cluster/aws-slurm-h100/slurm-h100/slurm-compute-conf" in head_data


def test_munge_key_is_a_secret_in_secrets_manager_readable_only_by_the_node_role(plan):
    key = one(plan, "randomBytes:RandomBytes")["inputs"]
    assert key == {"length": 128}
    secret = one(plan, "secretsmanager/secret:Secret")["inputs"]
    assert secret["name"] == "gpu-cluster/aws-slurm-h100/slurm-h100/munge-key"
    assert secret["recoveryWindowInDays"] == 0
    version = one(plan, "secretsmanager/secretVersion:SecretVersion")["inputs"]
    assert version == {"secretString": "[secret]", "secretId": "<id of slurm-h100-aws-munge-key>"}
    policies = by_name(plan, "iam/rolePolicy:RolePolicy")
    grant = json.loads(policies["slurm-h100-aws-node-role-munge-key"]["policy"])
    assert grant["Statement"] == [
        {
            "Sid": "ReadOwnMungeKey",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": "<arn of slurm-h100-aws-munge-key>",
        }
    ]
    assert policies["slurm-h100-aws-node-role-munge-key"]["role"] == "<autoname:slurm-h100-aws-node-role>"


def test_the_munge_key_never_appears_in_clear(plan):
    everything = json.dumps([r.as_json() for r in plan.resources]) + json.dumps(plan.run.outputs, default=str)
    user_data = [
        decoded(r["inputs"].get("userDataBase64") or r["inputs"]["userData"])
        for r in resources_of(plan, "")
        if r["inputs"].get("userDataBase64") or r["inputs"].get("userData")
    ]
    assert len(user_data) == 3  # head, login, launch template
    for text in [everything, *user_data]:
        assert MOCK_KEY not in text
    assert everything.count("[secret]") == 1  # only the secret version's string, masked
    assert plan.run.outputs["slurm"]["mungeKeySecret"] == "<arn of slurm-h100-aws-munge-key>"


def test_gpu_nodes_register_with_the_head_and_the_login_node_runs_sackd(plan):
    lt = decoded(one(plan, "LaunchTemplate")["inputs"]["userData"])
    assert HEAD_PLACEHOLDER not in lt
    compute = env_of(lt, "slurm-compute")
    assert compute["HEAD_ADDRESS"] == HEAD_IP
    assert compute["DYNAMIC_CONF"].startswith("Feature=gpu Gres=gpu:h100:8 RealMemory=")
    # one placement group: no topology, the node names no switch (docs/slurm.md, Topology)
    assert compute["DYNAMIC_CONF"] == "Feature=gpu Gres=gpu:h100:8 RealMemory=1992294"
    assert env_of(lt, "munge-key")["MUNGE_SECRET_ID"] == "gpu-cluster/aws-slurm-h100/slurm-h100/munge-key"
    # the GPU nodes keep every part they had: the Slurm parts come after the health check
    assert lt.index("/etc/gpu-cluster/health.env") < lt.index("/etc/gpu-cluster/slurm-compute.env")
    login = decoded(by_name(plan, "ec2/instance:Instance")["slurm-h100-aws-login"]["userDataBase64"])
    env = env_of(login, "slurm-login")
    assert env["HEAD_ADDRESS"] == HEAD_IP
    assert env["SLURM_PACKAGES"] == "slurm-smd slurm-smd-client slurm-smd-sackd"
    assert len(base64.b64decode(one(plan, "LaunchTemplate")["inputs"]["userData"])) < 16384  # EC2's raw limit


def test_slurm_ports_are_open_inside_the_cluster_only(plan):
    rules = by_name(plan, "SecurityGroupIngressRule")
    sg = {
        "nodes": "<id of slurm-h100-aws-sg>",
        "head": "<id of slurm-h100-aws-head-sg>",
        "login": "<id of slurm-h100-aws-login-sg>",
    }
    expected = {
        "head-sg-slurmctld-from-nodes": ("head", "nodes", 6817, 6817),
        "head-sg-slurmctld-from-login": ("head", "login", 6817, 6817),
        "head-sg-nfs-from-nodes": ("head", "nodes", 2049, 2049),
        "head-sg-nfs-from-login": ("head", "login", 2049, 2049),
        "sg-slurmd-from-head": ("nodes", "head", 6818, 6818),
        "sg-slurmd-from-login": ("nodes", "login", 6818, 6818),
        "login-sg-srun-from-head": ("login", "head", 60001, 63000),
        "login-sg-srun-from-nodes": ("login", "nodes", 60001, 63000),
        "head-sg-ssh-from-login": ("head", "login", 22, 22),
    }
    for suffix, (to, source, low, high) in expected.items():
        rule = rules[f"slurm-h100-aws-{suffix}"]
        assert (rule["securityGroupId"], rule["referencedSecurityGroupId"]) == (sg[to], sg[source]), suffix
        assert (rule["fromPort"], rule["toPort"], rule["ipProtocol"]) == (low, high, "tcp"), suffix
    # nothing reaches the head from an address range
    assert not [r for r in rules.values() if r["securityGroupId"] == sg["head"] and "cidrIpv4" in r]


def test_outputs_say_how_to_log_in_and_check(plan):
    out = plan.run.outputs["slurm"]
    assert out["login"] == plan.run.outputs["access"]["command"]
    assert out["check"] == "sinfo -N -l"
    assert out["headNode"] == {"instanceId": "<id of slurm-h100-aws-head>", "privateIp": HEAD_IP}
    assert out["slurmVersion"] == "25.11.5" and out["partition"] == "gpu"


def test_policies_pass(plan):
    assert plan.violations() == []


def test_shared_storage_is_mounted_on_the_head_and_login_with_its_source_filled_in():
    shared = plan_values(
        aws_values(scheduler="slurm", storage={"shared": {"kind": "nfs", "path": "/shared"}}), stack="slurm-efs"
    )
    instances = by_name(shared, "ec2/instance:Instance")
    for name in ("slurm-efs-aws-head", "slurm-efs-aws-login"):
        text = decoded(instances[name]["userDataBase64"])
        assert SOURCE_PLACEHOLDER not in text and HEAD_PLACEHOLDER not in text
        assert "/etc/gpu-cluster/mounts.env" in text, name
    # and on the GPU nodes (their template): the filesystem's source and the head's address both filled in
    gpu = decoded(one(shared, "LaunchTemplate")["inputs"]["userData"])
    assert "/etc/gpu-cluster/mounts.env" in gpu and "/etc/gpu-cluster/slurm-compute.env" in gpu
    assert SOURCE_PLACEHOLDER not in gpu and HEAD_PLACEHOLDER not in gpu
    assert "<private ip of slurm-efs-aws-head>" in gpu
    head = decoded(instances["slurm-efs-aws-head"]["userDataBase64"])
    assert env_of(head, "slurm-head")["SHARED_PATH"] == "/shared"
    assert "StateSaveLocation=/shared/slurm/state" in head
    # no NFS export from the head then: no 2049 rule
    assert not [n for n in by_name(shared, "SecurityGroupIngressRule") if "nfs-from" in n]


def test_scheduler_none_builds_no_slurm_resource(stack_plan):
    for stack in ("aws-h100", "aws-dev", "aws-a100-instances"):
        plan = stack_plan(stack)
        assert not resources_of(plan, "RandomBytes") and not resources_of(plan, "secretsmanager/")
        assert "slurm" not in plan.run.outputs
        assert not any(r.name.endswith("-head") for r in plan.resources)
        login = [r.as_json() for r in plan.resources if r.name.endswith("-aws-login")]
        assert all("userDataBase64" not in r["inputs"] for r in login)


def test_the_largest_gpu_bootstrap_with_slurm_stays_under_ec2s_16_kb():
    import yaml

    from .conftest import ROOT

    values = yaml.safe_load((ROOT / "stacks" / "Pulumi.aws-h100.yaml").read_text())["config"]
    values["gpu-cluster:cluster"]["scheduler"] = "slurm"  # p5, EFA, Lustre mount, health, metrics, Slurm
    plan = plan_values(values, stack="h100-slurm")
    lt = one(plan, "LaunchTemplate")["inputs"]["userData"]
    assert len(base64.b64decode(lt)) < 16384
    assert "/etc/gpu-cluster/mounts.env" in decoded(lt) and "/etc/gpu-cluster/slurm-compute.env" in decoded(lt)


def test_a_new_ubuntu_image_does_not_replace_the_head(plan):
    head = next(r for r in plan.resources if r.name == "slurm-h100-aws-head")
    assert head.ignore_changes == ("ami",)
