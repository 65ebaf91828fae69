"""Elastic Slurm partitions (slurm.partitions, power saving): the spec's keyed refusals, the rendered nodes.conf, and on
AWS the registered resources (per partition a launch template and placement group, no group, the head's own role
scoped to those templates and this cluster's instances, the channel holding the templates' ids). The real slurmctld
runs the power-saving program in tests/test_slurm_power_real.py; the program with a stubbed AWS CLI is below."""

from __future__ import annotations

import base64
import copy
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from components.bootstrap.slurm_conf import compute_config_files
from components.catalog import slurm as slurm_catalog
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout.slurm import slurm_layout
from components.plan import load_stack
from components.spec import build_spec

from .conftest import ROOT, aws_values, one, plan_json, plan_stack_with, resources_of, spec_of
from .hook_helpers import run_power_program

STACK = "aws-slurm-elastic"
BOOT = ROOT / "components" / "bootstrap"


def elastic_values(**slurm: object) -> dict:
    partitions = [{"name": "h100", "maxNodes": 2}, {"name": "l40s", "instanceType": "g6e.12xlarge", "maxNodes": 4}]
    return aws_values(
        gpu=None,
        instanceType="p5.48xlarge",
        nodes=0,
        scheduler="slurm",
        slurm={"partitions": partitions, **slurm},
        network={"cidr": "10.47.0.0/16", "egress": "nat"},
    )


def errors_of(values: dict) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(values, "test")
    return [(e.key, e.message) for e in info.value.errors]


def _clean(values: dict) -> dict:
    values["gpu-cluster:cluster"] = {k: v for k, v in values["gpu-cluster:cluster"].items() if v is not None}
    return values


# --- the spec ---------------------------------------------------------------------------------------------------------


def test_every_partition_problem_is_keyed_and_reported_at_once():
    values = _clean(elastic_values())
    cluster = values["gpu-cluster:cluster"]
    cluster["nodes"] = 2
    cluster["slurm"]["partitions"] = [
        {"name": "h100", "maxNodes": 2, "minNodes": 3, "default": True},
        {"name": "h100", "instanceType": "p9.nothing", "maxNodes": 1, "default": True},
        {"name": "default", "maxNodes": 1},
    ]
    got = errors_of(values)
    k = "gpu-cluster:cluster."
    assert got == [
        (f"{k}nodes", "2 with slurm.partitions: the partitions' minNodes..maxNodes size the cluster and Slurm launches "
         "their nodes; set nodes: 0"),
        (f"{k}slurm.partitions[0].minNodes", "3 is above maxNodes 2; use 0..2"),
        (f"{k}slurm.partitions[1].name", "'h100' names two partitions; each needs its own name"),
        (f"{k}slurm.partitions[1].instanceType",
         "p9.nothing is not a GPU type of the aws catalog; `gpu-cluster compare` lists them"),
        (f"{k}slurm.partitions[2].name",
         "got 'default'; PartitionName=DEFAULT is slurm.conf's defaults record"),
        (f"{k}slurm.partitions", "h100, h100 are all default; mark one (or none: the first)"),
    ]  # fmt: skip


def test_power_saving_keys_without_partitions_and_scaling_with_them_are_refused():
    plain = aws_values(scheduler="slurm", slurm={"suspendAfterSeconds": 900})
    assert errors_of(plain) == [
        ("gpu-cluster:cluster.slurm.suspendAfterSeconds", "set, but there are no slurm.partitions to power save")
    ]
    scaled = _clean(elastic_values())
    scaled["gpu-cluster:cluster"]["scaling"] = {"metric": "gpuUtilization", "target": 70}
    scaled["gpu-cluster:cluster"]["maxNodes"] = 2
    assert (
        "gpu-cluster:cluster.scaling",
        "set with slurm.partitions: Slurm launches and deletes the nodes for its queue; drop scaling",
    ) in errors_of(scaled)


def test_the_resume_program_is_built_on_every_cloud_that_runs_slurm_and_a_not_built_note_refuses(monkeypatch):
    clouds = slurm_catalog.data()["clouds"]
    noted_clouds = sorted(c for c, d in clouds.items() if "powerSave" in d)
    assert noted_clouds == ["alicloud", "aws", "azure", "gcp", "huaweicloud", "tencentcloud"]
    # Tencent and Huawei run Slurm on static nodes only: their entries say why (tests/test_<cloud>_slurm.py)
    refused = sorted(c for c in clouds if slurm_catalog.power_save_refusal(c) is not None)
    assert refused == ["huaweicloud", "tencentcloud"]
    # a cloud whose catalog entry says why it is not built (the next cloud's first step) is refused with that reason
    noted = copy.deepcopy(slurm_catalog.data())
    noted["clouds"]["alicloud"]["powerSave"] = {"notBuilt": "the resume program is not written yet"}
    monkeypatch.setattr(slurm_catalog, "data", lambda: noted)
    values = copy.deepcopy(load_stack(ROOT, "alicloud-slurm-elastic").values)
    got = [e for e in errors_of(values) if e[0] == "gpu-cluster:cluster.slurm.partitions"]
    assert got[0][1].startswith("elastic partitions are not built on alicloud: the resume program is not written yet")


def test_partitions_resolve_their_rows_and_the_first_is_the_default():
    spec = spec_of(_clean(elastic_values()))
    assert [(p.name, p.instance.instanceType, p.default, p.hostlist) for p in spec.partitions] == [
        ("h100", "p5.48xlarge", True, "h100-[0-1]"),
        ("l40s", "g6e.12xlarge", False, "l40s-[0-3]"),
    ]
    # at the partitions' minNodes (0) nothing runs; at maxNodes 2 x p5 and 4 x g6e.12xlarge
    h100, l40s = (p.instance.hourlyUsd for p in spec.partitions)
    assert spec.hourly_usd == 0.0
    assert spec.max_hourly_usd_at_scale == round(2 * h100 + 4 * l40s, 2)


# --- the rendered configuration ---------------------------------------------------------------------------------------


def test_nodes_conf_has_cloud_nodes_per_partition_and_the_power_saving_programs():
    values = _clean(elastic_values(suspendAfterSeconds=900))
    values["gpu-cluster:cluster"]["slurm"]["partitions"][1]["minNodes"] = 1
    layout = slurm_layout(spec_of(values))
    assert layout is not None
    lines = layout.nodes_conf.splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        "ResumeProgram=/usr/local/sbin/gpu-cluster-slurm-resume",
        "SuspendProgram=/usr/local/sbin/gpu-cluster-slurm-suspend",
        "ResumeFailProgram=/usr/local/sbin/gpu-cluster-slurm-resume-fail",
        "SuspendTime=900",
        "ResumeTimeout=1800",  # catalog/slurm.yaml powerSave: ParallelCluster's and CycleCloud's boot timeout
        "SuspendTimeout=600",
        "SuspendExcNodes=l40s-0",  # minNodes 1: never suspended
        "NodeName=h100-[0-1] CPUs=192 RealMemory=1992294 Gres=gpu:h100:8 Feature=h100 State=CLOUD",
        "PartitionName=h100 Nodes=h100-[0-1] Default=YES MaxTime=INFINITE State=UP DefCpuPerGPU=24 DefMemPerGPU=249036",
        "NodeName=l40s-[0-3] CPUs=48 RealMemory=373555 Gres=gpu:l40s:4 Feature=l40s State=CLOUD",
        "PartitionName=l40s Nodes=l40s-[0-3] Default=NO MaxTime=INFINITE State=UP DefCpuPerGPU=12 DefMemPerGPU=93388",
    ]
    assert "MaxNodeCount" not in layout.nodes_conf  # no dynamic nodes
    assert "SlurmctldParameters=enable_configless,idle_on_node_suspend\n" in layout.slurm_conf
    files = compute_config_files(layout.compute_config)
    assert files["launch.env"] == (
        "LAUNCH_h100=@@GPU_CLUSTER_SLURM_LAUNCH_h100@@\nLAUNCH_l40s=@@GPU_CLUSTER_SLURM_LAUNCH_l40s@@\n"
    )


def test_a_cluster_without_partitions_keeps_its_slurm_conf():
    layout = slurm_layout(spec_of(aws_values(scheduler="slurm")))
    assert layout is not None and not layout.elastic
    assert "SlurmctldParameters=enable_configless\n" in layout.slurm_conf
    assert "State=CLOUD" not in layout.nodes_conf and "launch.env" not in layout.compute_files()


# --- AWS: what is registered ------------------------------------------------------------------------------------------


@pytest.fixture
def plan(stack_plan):
    return stack_plan(STACK)


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


def decoded(b64: str) -> str:
    return gzip.decompress(base64.b64decode(b64)).decode()


def test_each_partition_has_its_launch_template_and_no_group_or_instance_runs(plan):
    assert resources_of(plan, "autoscaling/group:Group") == []
    instances = by_name(plan, "ec2/instance:Instance")
    assert sorted(instances) == ["slurm-elastic-aws-head", "slurm-elastic-aws-login"]
    lts = by_name(plan, "LaunchTemplate")
    h100, l40s = lts["slurm-elastic-aws-h100-lt"], lts["slurm-elastic-aws-l40s-lt"]
    assert (h100["instanceType"], l40s["instanceType"]) == ("p5.48xlarge", "g6e.12xlarge")
    assert len(h100["networkInterfaces"]) == 33 and len(l40s["networkInterfaces"]) == 2  # each type's EFA scheme
    assert h100["placement"] == {"groupName": "<autoname:slurm-elastic-aws-h100-pg>"}
    assert l40s["placement"] == {"groupName": "<autoname:slurm-elastic-aws-l40s-pg>"}
    assert "instanceMarketOptions" not in h100
    assert l40s["instanceMarketOptions"]["marketType"] == "spot"
    for lt in (h100, l40s):
        # the node reads its Slurm name from its tags in the instance metadata
        assert lt["metadataOptions"] == {
            "httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 2,
            "instanceMetadataTags": "enabled",
        }  # fmt: skip
        assert lt["iamInstanceProfile"] == {"name": "<autoname:slurm-elastic-aws-node-profile>"}
        assert lt["networkInterfaces"][0]["subnetId"] == "<id of slurm-elastic-aws-nodes>"
        user_data = decoded(lt["userData"])
        assert "NODE_NAME_HOOK=" in user_data and "gpu-cluster:slurm-node" in user_data
        assert "gpu-cluster-slurm-leave" not in user_data  # a CLOUD node is powered down, never deleted
    assert {r["inputs"]["strategy"] for r in resources_of(plan, "PlacementGroup")} == {"cluster"}


def test_the_head_has_its_own_role_scoped_to_the_templates_and_this_clusters_instances(plan):
    instances = by_name(plan, "ec2/instance:Instance")
    assert instances["slurm-elastic-aws-head"]["iamInstanceProfile"] == "<autoname:slurm-elastic-aws-head-node-profile>"
    assert instances["slurm-elastic-aws-login"]["iamInstanceProfile"] == "<autoname:slurm-elastic-aws-node-profile>"
    policies = by_name(plan, "iam/rolePolicy:RolePolicy")
    power = json.loads(policies["slurm-elastic-aws-head-role-slurm-power"]["policy"])
    assert policies["slurm-elastic-aws-head-role-slurm-power"]["role"] == "<autoname:slurm-elastic-aws-head-node-role>"
    statements = {s["Sid"]: s for s in power["Statement"]}
    templates = ["<arn of slurm-elastic-aws-h100-lt>", "<arn of slurm-elastic-aws-l40s-lt>"]
    assert statements["LaunchFromOwnTemplates"]["Condition"] == {"ArnLike": {"ec2:LaunchTemplate": templates}}
    assert statements["TagOnLaunch"]["Condition"] == {"StringEquals": {"ec2:CreateAction": "RunInstances"}}
    assert statements["TerminateOwnNodes"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/gpu-cluster:cluster": "slurm-elastic"}
    }
    assert statements["PassNodeRole"]["Resource"] == "<arn of slurm-elastic-aws-node-role>"
    assert statements["FindOwnNodes"] == {
        "Sid": "FindOwnNodes", "Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"
    }  # fmt: skip
    # the GPU nodes (and the login node) keep the node role: the MUNGE key and nothing to launch with
    assert policies["slurm-elastic-aws-node-role-munge-key"]["role"] == "<autoname:slurm-elastic-aws-node-role>"
    head_grants = {n for n, p in policies.items() if p["role"] == "<autoname:slurm-elastic-aws-head-node-role>"}
    assert head_grants == {
        "slurm-elastic-aws-head-role-munge-key",
        "slurm-elastic-aws-head-role-slurm-compute-conf",
        "slurm-elastic-aws-head-role-slurm-power",
        "slurm-elastic-aws-head-role-db-password",  # the shipped stack has slurm.accounting (test_aws_accounting.py)
        "slurm-elastic-aws-head-role-logs",  # and monitoring.logs: its agent ships to the cluster's group
    }


def test_the_channel_names_each_partitions_template_and_the_head_has_the_power_programs(plan):
    parameter = one(plan, "ssm/parameter:Parameter")["inputs"]
    files = compute_config_files(parameter["insecureValue"])
    assert (
        files["launch.env"]
        == "LAUNCH_h100=<id of slurm-elastic-aws-h100-lt>\nLAUNCH_l40s=<id of slurm-elastic-aws-l40s-lt>\n"
    )
    assert "NodeName=h100-[0-1]" in files["nodes.conf"]
    assert len(parameter["insecureValue"].encode()) <= 4096  # an SSM Standard parameter's limit
    head = decoded(by_name(plan, "ec2/instance:Instance")["slurm-elastic-aws-head"]["userDataBase64"])
    doc = yaml.safe_load(head.removeprefix("#cloud-config\n"))
    paths = {f["path"] for f in doc["write_files"]}
    assert {
        "/usr/local/sbin/gpu-cluster-slurm-resume",
        "/usr/local/sbin/gpu-cluster-slurm-suspend",
        "/usr/local/sbin/gpu-cluster-slurm-resume-fail",
        "/usr/local/lib/gpu-cluster/slurm_power_hook.sh",
    } <= paths
    assert "/usr/local/sbin/gpu-cluster-slurm-cleanup" not in paths  # CLOUD nodes are not deleted from Slurm
    assert "h100-[0-1]" not in head  # the partitions reach the head through the channel only


def test_the_plan_shows_the_partitions_and_their_cost_range(plan):
    summary = plan.summary()
    assert [(p["name"], p["minNodes"], p["maxNodes"], p["spot"]) for p in summary["partitions"]] == [
        ("h100", 0, 2, False),
        ("l40s", 0, 4, True),
    ]
    assert plan.run.outputs["slurm"]["powerSaving"].startswith("on: h100 0..2, l40s 0..4 nodes")
    usd = summary["costs"]["totals"]["USD"]
    gpu = {i["partition"]: i["hourly"] for i in summary["costs"]["items"] if i["item"] == "gpuNode"}
    assert usd["hourly"]["minNodes"] == usd["fixedHourly"]  # nothing but the head, login and NAT at rest
    assert usd["hourly"]["maxNodes"] > usd["fixedHourly"] + 2 * gpu["h100"] + 4 * gpu["l40s"] - 0.01
    assert not [v for v in plan.violations() if v.level == "mandatory"]  # the l40s Spot template is asked for


def test_a_tag_key_with_a_slash_is_refused_on_aws_elastic_partitions():
    values = _clean(elastic_values())
    values["gpu-cluster:cluster"]["tags"] = {"team/owner": "ml"}
    from components.layout.aws import plan as aws_plan

    with pytest.raises(ConfigError) as info:
        aws_plan(spec_of(values))
    assert info.value.key == "gpu-cluster:cluster.tags"
    assert info.value.message.startswith("team/owner: elastic partitions' nodes read their Slurm name")


# --- the power-saving program with a stubbed AWS CLI and scontrol -----------------------------------------------------


def run_power(tmp_path: Path, action: str, hostlist: str, aws_script: str) -> tuple[int, list[str]]:
    """slurm_power.sh as `action` with AWS's hook; `aws`, `scontrol` and `curl` are stubs logging their arguments."""
    log = tmp_path / "calls"
    stubs = {
        "aws": aws_script + "\n",
        "curl": 'case "$*" in *api/token*) echo token ;; *region*) echo us-east-1 ;; esac\n',
    }
    (tmp_path / "launch.env").write_text("LAUNCH_h100=lt-0abc\nLAUNCH_l40s=lt-0def\n")
    env = {
        "LAUNCH_ENV": str(tmp_path / "launch.env"),
        "LOG": str(log),
        "NAME_TAG": "gpu-cluster:slurm-node",
        "CLUSTER_TAG": "gpu-cluster:cluster",
        "CLUSTER": "slurm-elastic",
    }
    hook = (
        (BOOT / "aws_slurm_power.sh")
        .read_text()
        .replace('. "${BASH_SOURCE[0]%/*}/aws_cli.sh"', (BOOT / "aws_cli.sh").read_text())
    )
    (tmp_path / "hook.sh").write_text(hook)
    proc = run_power_program(tmp_path, action, hostlist, tmp_path / "hook.sh", stubs, env)
    calls = sorted(log.read_text().splitlines()) if log.exists() else []
    return proc.returncode, calls


LAUNCHING_AWS = """echo "aws $*" >>"$LOG"
case "$*" in *run-instances*) echo "10.47.1.$RANDOM ip-10-47-1-9.ec2.internal" ;; esac"""


def test_resume_launches_each_node_from_its_partitions_template_and_sets_its_address(tmp_path):
    code, calls = run_power(tmp_path, "resume", "h100-0,l40s-3", LAUNCHING_AWS)
    assert code == 0
    launches = [c for c in calls if "run-instances" in c]
    assert len(launches) == 2
    assert any("LaunchTemplateId=lt-0abc,Version=$Default" in c and "Value=h100-0}" in c for c in launches)
    assert any("LaunchTemplateId=lt-0def,Version=$Default" in c and "Value=l40s-3}" in c for c in launches)
    assert all("--region us-east-1" in c and "Key=gpu-cluster:slurm-node" in c for c in launches)
    updates = [c for c in calls if c.startswith("scontrol update")]
    assert len(updates) == 2 and all("nodehostname=ip-10-47-1-9.ec2.internal" in c for c in updates)
    assert any(c.startswith("scontrol update nodename=h100-0 nodeaddr=10.47.1.") for c in updates)


def test_a_failed_launch_sets_the_node_down_with_the_clouds_reason_and_powers_it_down(tmp_path):
    failing = 'echo "aws $*" >>"$LOG"\necho "An error occurred (InsufficientInstanceCapacity)" >&2\nexit 254'
    code, calls = run_power(tmp_path, "resume", "h100-1", failing)
    assert code == 1
    scontrol = [c for c in calls if c.startswith("scontrol")]
    assert scontrol == [
        "scontrol update nodename=h100-1 state=down reason=gpu-cluster launch failed: An error occurred "
        "(InsufficientInstanceCapacity)",
        "scontrol update nodename=h100-1 state=power_down",
    ]


def test_suspend_terminates_only_this_clusters_instance_of_the_node(tmp_path):
    aws = """echo "aws $*" >>"$LOG"
case "$*" in *describe-instances*) echo "i-0aaa" ;; esac"""
    code, calls = run_power(tmp_path, "suspend", "l40s-2", aws)
    assert code == 0
    describe = next(c for c in calls if "describe-instances" in c)
    assert "Name=tag:gpu-cluster:slurm-node,Values=l40s-2" in describe
    assert "Name=tag:gpu-cluster:cluster,Values=slurm-elastic" in describe
    assert "aws ec2 terminate-instances --region us-east-1 --instance-ids i-0aaa --output text" in calls


def test_suspend_of_a_node_without_an_instance_succeeds_without_terminating(tmp_path):
    code, calls = run_power(tmp_path, "resume-fail", "h100-0", 'echo "aws $*" >>"$LOG"')
    assert code == 0
    assert not [c for c in calls if "terminate-instances" in c]


def test_the_node_reads_its_name_from_its_instance_metadata_tag(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text(
        '#!/bin/bash\ncase "$*" in *api/token*) echo tok ;; '
        '*"X-aws-ec2-metadata-token: tok"*/meta-data/tags/instance/gpu-cluster:slurm-node) echo h100-1 ;; '
        "*) exit 22 ;; esac\n"
    )
    (bin_dir / "curl").chmod(0o755)
    proc = subprocess.run(
        ["bash", str(BOOT / "aws_slurm_node_name.sh")],
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (proc.returncode, proc.stdout) == (0, "h100-1\n")


# --- day 2: what the review says ------------------------------------------------------------------------------------


def _with_partitions(partitions: list[dict]) -> dict:
    return plan_json(plan_stack_with(STACK, slurm={"partitions": partitions}))


SHIPPED = [
    {"name": "h100", "maxNodes": 2},
    {"name": "l40s", "instanceType": "g6e.12xlarge", "maxNodes": 4, "spot": True},
]


def test_renaming_or_removing_a_partition_is_refused_and_adding_one_is_in_place():
    base = _with_partitions(SHIPPED)
    renamed = diff_plans(base, _with_partitions([SHIPPED[0], {**SHIPPED[1], "name": "l40"}]))
    assert [(c.key, c.policy) for c in renamed.spec_changes] == [
        ("cluster.slurm.partitions.name", "refused"),
        ("cluster.slurm.partitions", "in-place"),
    ]
    assert "let its jobs finish and its nodes power down" in renamed.spec_changes[0].how
    added = diff_plans(
        base, _with_partitions([*SHIPPED, {"name": "a100", "instanceType": "p4d.24xlarge", "maxNodes": 1}])
    )
    assert [(c.key, c.policy) for c in added.spec_changes] == [("cluster.slurm.partitions", "in-place")]
    # the head instance's inputs stay as they were (its role may now launch from the new template too)
    assert [c.name for c in added.changed if "head" in c.name] == ["slurm-elastic-aws-head-role-slurm-power"]
    assert {urn.rsplit("::", 1)[1] for urn in added.created} >= {
        "slurm-elastic-aws-a100-lt",
        "slurm-elastic-aws-a100-pg",
    }
    grown = diff_plans(base, _with_partitions([{**SHIPPED[0], "maxNodes": 4}, SHIPPED[1]]))
    assert [(c.key, c.old, c.new, c.policy) for c in grown.spec_changes] == [
        ("cluster.slurm.partitions.maxNodes", {"h100": 2}, {"h100": 4}, "in-place")
    ]
    # in place: only the channel (nodes.conf) is updated (and the component's own facts); no instance changes
    assert sorted(c.type.split(":")[-1] for c in grown.changed) == ["GpuCluster", "Parameter"]
