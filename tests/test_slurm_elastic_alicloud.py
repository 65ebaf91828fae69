"""Elastic Slurm partitions on Alibaba Cloud (slurm.partitions): per partition the ECS launch template the head's
resume program runs nodes from (RunInstances), no scaling group and no GPU instance; the head's own RAM role, whose
policy is asserted statement by statement; the channel (the OOS parameter) naming each template. Then the hook
scripts against a stubbed curl (the metadata service and the ECS API, signatures checked), and the day-2 diffs of the
shipped stack."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from alibabacloud_ecs20140526 import models as ecs_models

from components import bootstrap
from components.bootstrap.slurm_conf import compute_config_files
from components.catalog.slurm import cloud_data
from components.diff import diff_plans
from components.errors import ConfigError
from components.layout import alicloud as ali
from components.layout.alicloud.partitions import launch_target

from .conftest import ROOT, one, plan_json, plan_stack_with, resources_of, spec_of
from .hook_helpers import (
    ALICLOUD_HARDENED_METADATA,
    alicloud_signature,
    assert_shellcheck_clean,
    run_hook,
    run_power_program,
    stub_bin,
)
from .test_alicloud_slurm import files_of

STACK = "alicloud-slurm-elastic"
BOOT = ROOT / "components" / "bootstrap"
NAME = "slurm-elastic-alicloud"
POWER = cloud_data("alicloud")["powerSave"]
ACCOUNT = "<resolved at deploy: the account id>"
HEAD_ROLE = "slurm-elastic-alicloud-slurm-elastic-head"
NODE_ROLE = "slurm-elastic-alicloud-slurm-elastic-nodes"


@pytest.fixture
def plan(stack_plan):
    return stack_plan(STACK)


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


# --- what is registered ---------------------------------------------------------------------------------------------


def test_each_partition_has_its_launch_template_and_no_group_or_gpu_instance_runs(plan):
    assert resources_of(plan, "ess/scalingGroup:ScalingGroup") == []
    assert sorted(by_name(plan, "ecs/instance:Instance")) == [f"{NAME}-head", f"{NAME}-login"]
    templates = by_name(plan, "EcsLaunchTemplate")
    assert sorted(templates) == [f"{NAME}-a10-template", f"{NAME}-ebmgn8v-template"]
    big, a10 = templates[f"{NAME}-ebmgn8v-template"], templates[f"{NAME}-a10-template"]
    assert (big["instanceType"], a10["instanceType"]) == ("ecs.ebmgn8v.48xlarge", "ecs.gn7i-c16g1.4xlarge")
    assert (big["spotStrategy"], a10["spotStrategy"]) == ("NoSpot", "SpotAsPriceGo")
    assert (big["launchTemplateName"], a10["launchTemplateName"]) == ("slurm-elastic-ebmgn8v", "slurm-elastic-a10")
    # the ebmgn8v nodes share one LowLatency deployment set; spot cannot be in one (the a10 partition gets none)
    sets = by_name(plan, "EcsDeploymentSet")
    assert sets == {
        f"{NAME}-ebmgn8v-ds": {
            "deploymentSetName": "slurm-elastic-ebmgn8v-ds",
            "description": "gpu-cluster slurm-elastic nodes",
            "strategy": "LowLatency",
        }
    }
    assert big["deploymentSetId"] == f"<id of {NAME}-ebmgn8v-ds>" and "deploymentSetId" not in a10
    # a10 (no ERI): the nodes' vSwitch and groups in its template; ebmgn8v: none there, its ERIs carry them in
    # RunInstances (NetworkInterface.1 Primary may not be given beside VSwitchId)
    assert a10["vswitchId"] == f"<id of {NAME}-nodes>" and a10["securityGroupIds"] == [f"<id of {NAME}-sg>"]
    assert "vswitchId" not in big and "securityGroupIds" not in big
    for template in (big, a10):
        assert template["ramRoleName"] == "slurm-elastic-alicloud-slurm-elastic-nodes"  # the nodes' role
        assert template["instanceChargeType"] == "PostPaid" and template["internetMaxBandwidthOut"] == 0
        assert template["systemDisk"] == {"category": "cloud_essd", "size": 200, "encrypted": True,
                                          "deleteWithInstance": True}  # fmt: skip
        assert [d["encrypted"] for d in template["dataDisks"]] == [True]
        assert "networkInterfaces" not in template  # the template cannot carry an ERI
        assert template["updateDefaultVersionNumber"] is True  # RunInstances launches the newest version
        assert template["tags"]["gpu-cluster:cluster"] == "slurm-elastic"
        files = files_of(template["userData"])
        assert files["/etc/gpu-cluster/slurm-compute.env"].count("NODE_NAME_HOOK=") == 1
        assert "instance/instance-name" in files["/etc/gpu-cluster/slurm-compute.env"]
        assert "/etc/systemd/system/gpu-cluster-slurm-leave.service" not in files  # a CLOUD node is powered down
        assert f"<private ip of {NAME}-head>" in files["/etc/gpu-cluster/slurm-compute.env"]
    assert resources_of(plan, "ecs/ecsNetworkInterface:EcsNetworkInterface") == []


def test_the_head_has_its_own_role_allowed_only_this_clusters_nodes(plan):
    roles = by_name(plan, "ram/role:Role")
    assert sorted(r["roleName"] for r in roles.values()) == [
        "slurm-elastic-alicloud-slurm-elastic-head",
        "slurm-elastic-alicloud-slurm-elastic-nodes",
    ]
    attached = by_name(plan, "ecs/ramRoleAttachment:RamRoleAttachment")
    assert attached[f"{NAME}-head-role"]["ramRoleName"] == HEAD_ROLE
    assert attached[f"{NAME}-login-role"]["ramRoleName"] == NODE_ROLE
    policies = by_name(plan, "rolePolicyAttachment:RolePolicyAttachment")
    head = sorted(n for n, p in policies.items() if p["roleName"] == HEAD_ROLE)
    assert head == [
        f"{NAME}-head-role-db-password",  # the shipped stack has slurm.accounting (test_alicloud_accounting.py)
        f"{NAME}-head-role-munge-key",
        f"{NAME}-head-role-slurm-conf",
        f"{NAME}-head-role-slurm-power",
    ]
    nodes = sorted(n for n, p in policies.items() if p["roleName"] == NODE_ROLE)
    # the nodes decrypt the key; only the head reads and launches; the login node (on the nodes' role) lists the
    # instances for its Prometheus (tests/test_alicloud_monitoring.py)
    assert nodes == [f"{NAME}-role-monitoring", f"{NAME}-role-munge-key"]
    document = json.loads(by_name(plan, "ram/policy:Policy")[f"{NAME}-head-slurm-power-policy"]["policyDocument"])
    assert document["Version"] == "1"
    launch, delete, find, pass_role = document["Statement"]
    # RunInstances: only with the cluster's tag in the request
    assert launch == {
        "Action": ["ecs:RunInstances"],
        "Condition": {"StringEquals": {"acs:RequestTag/gpu-cluster:cluster": ["slurm-elastic"]}},
        "Effect": "Allow",
        "Resource": ["*"],
    }
    # DeleteInstances: instances of this region and account, only those tagged as this cluster's
    assert delete == {
        "Action": ["ecs:DeleteInstances"],
        "Condition": {"StringEquals": {"acs:ResourceTag/gpu-cluster:cluster": ["slurm-elastic"]}},
        "Effect": "Allow",
        "Resource": [f"acs:ecs:cn-beijing:{ACCOUNT}:instance/*"],
    }
    assert find == {"Action": ["ecs:DescribeInstances"], "Effect": "Allow", "Resource": ["*"]}
    # PassRole: the nodes' role only
    assert pass_role == {
        "Action": ["ram:PassRole"],
        "Effect": "Allow",
        "Resource": [f"acs:ram:*:{ACCOUNT}:role/slurm-elastic-alicloud-slurm-elastic-nodes"],
    }


def test_the_channel_names_each_partitions_template_and_the_head_has_the_power_programs(plan):
    parameter = one(plan, "oos/parameter:Parameter")["inputs"]
    files = compute_config_files(parameter["value"])
    # ebmgn8v: its template, the nodes' vSwitch and groups, and its 2 ERIs on cards 0 and 1 (as the cluster's own
    # ebmgn8v instances get them); a10 (no ERI): its template only
    assert files["launch.env"] == (
        f"LAUNCH_ebmgn8v=<id of {NAME}-ebmgn8v-template> <id of {NAME}-nodes> <id of {NAME}-sg> 0,1\n"
        f"LAUNCH_a10=<id of {NAME}-a10-template>\n"
    )
    assert "NodeName=ebmgn8v-[0-1] CPUs=192" in files["nodes.conf"]
    assert "NodeName=a10-[0-3] CPUs=16" in files["nodes.conf"]
    assert len(parameter["value"]) <= cloud_data("alicloud")["computeConfig"]["maxValueChars"]
    head = files_of(by_name(plan, "ecs/instance:Instance")[f"{NAME}-head"]["userData"])
    for program in ("gpu-cluster-slurm-resume", "gpu-cluster-slurm-suspend", "gpu-cluster-slurm-resume-fail"):
        assert f"/usr/local/sbin/{program}" in head
    hook = head["/usr/local/lib/gpu-cluster/slurm_power_hook.sh"]
    assert hook == bootstrap.script("alicloud_slurm_power.sh") and "rpc_signature()" in hook  # the signer inlined
    env = head["/etc/gpu-cluster/slurm-power.env"]
    assert 'ECS_ENDPOINT="https://ecs-vpc.cn-beijing.aliyuncs.com"' in env and 'CLUSTER="slurm-elastic"' in env
    assert all("ebmgn8v-[0-1]" not in text for text in head.values())  # partitions reach the head by the channel


def test_the_plan_shows_the_partitions_power_saving_and_their_eris_wired(plan):
    summary = plan.summary()
    assert [(p["name"], p["instanceType"], p["maxNodes"], p["spot"]) for p in summary["partitions"]] == [
        ("ebmgn8v", "ecs.ebmgn8v.48xlarge", 2, False),
        ("a10", "ecs.gn7i-c16g1.4xlarge", 4, True),
    ]
    assert plan.run.outputs["slurm"]["powerSaving"].startswith("on: ebmgn8v 0..2, a10 0..4 nodes")
    assert not any("eRDMA interface(s), which its elastic nodes do not get" in w for w in plan.warnings())
    # counted back from the channel's launch line and the template's user data (both ERIs brought up)
    assert summary["fabric"] == "erdma" and summary["fabricGbpsPerNode"] == 160
    big = files_of(by_name(plan, "EcsLaunchTemplate")[f"{NAME}-ebmgn8v-template"]["userData"])
    assert "ERI_COUNT=2\n" in big["/etc/gpu-cluster/erdma.env"]
    assert not [v for v in plan.violations() if v.level == "mandatory"]


def test_the_proof_counts_a_partitions_eris_only_from_its_launch_line_and_its_user_data(plan):
    """The same records: without the cards on the launch line nothing is wired; without the bring-up part in the
    template's user data only the primary ERI counts."""
    records = [r.as_json() for r in plan.resources]
    per_eri = plan.spec.instance.gbps_per_fabric_device
    assert ali.count_wired_gbps(records, per_eri) == 160

    def changed(kind: str, key: str, edit: object) -> list[dict]:
        return [
            {**r, "inputs": {**r["inputs"], key: edit(r["inputs"][key])}} if r["type"].endswith(kind) else r
            for r in records
        ]

    no_cards = changed("oos/parameter:Parameter", "value", lambda v: v.replace(" 0,1\n", "\n"))
    assert ali.count_wired_gbps(no_cards, per_eri) == 0
    stripped = base64.b64encode(b"#cloud-config\n{}\n").decode()
    no_bring_up = changed("EcsLaunchTemplate", "userData", lambda _: stripped)
    assert ali.count_wired_gbps(no_bring_up, per_eri) == 80


# --- keyed refusals of the layout -----------------------------------------------------------------------------------


def elastic(**cluster: object) -> dict:
    base = {
        "name": "el",
        "instanceType": "ecs.gn7i-c16g1.4xlarge",
        "nodes": 0,
        "zone": "cn-beijing-l",
        "scheduler": "slurm",
        "slurm": {"partitions": [{"name": "a10", "maxNodes": 2}]},
        "network": {"cidr": "10.49.0.0/16", "egress": "nat"},
    }
    return {
        "gpu-cluster:cloud": "alicloud",
        "alicloud:region": "cn-beijing",
        "gpu-cluster:cluster": {**base, **cluster},
    }


def test_an_erdma_partition_gets_its_eris_only_when_the_fabric_is_wired():
    big = [{"name": "ebmgn8v", "instanceType": "ecs.ebmgn8v.48xlarge", "maxNodes": 2}]
    wired = ali.plan(spec_of(elastic(instanceType="ecs.ebmgn8v.48xlarge", slurm={"partitions": big})))
    assert [p.eri_cards for p in wired.partitions] == [(0, 1)]
    assert not any("elastic nodes do not get" in w for w in wired.warnings)
    unwired = ali.plan(spec_of(elastic(instanceType="ecs.ebmgn8v.48xlarge", fabric="none", slurm={"partitions": big})))
    assert [p.eri_cards for p in unwired.partitions] == [()]
    assert any(
        "slurm.partitions[0].instanceType: ecs.ebmgn8v.48xlarge has 2 eRDMA interface(s), which its elastic nodes do "
        "not get: the cluster's fabric is not wired" in w
        for w in unwired.warnings
    )
    assert launch_target("lt-1", "vsw-1", ["sg-1"], ()) == "lt-1"  # no ERI: the template id alone, as before
    assert launch_target("lt-1", "vsw-1", ["sg-1", "sg-2"], (0, 1)) == "lt-1 vsw-1 sg-1,sg-2 0,1"


def test_a_reservation_is_refused_with_partitions():
    with pytest.raises(ConfigError) as info:
        ali.plan(spec_of(elastic(reservation="eap-bp67acfmxazb4")))
    assert info.value.key == "gpu-cluster:cluster.reservation"
    assert "EcsLaunchTemplate takes no private pool" in info.value.message


def test_a_partition_above_the_deployment_set_cap_is_refused():
    values = elastic(placement="cluster", slurm={"partitions": [{"name": "a10", "maxNodes": 200}]})
    with pytest.raises(ConfigError) as info:
        ali.plan(spec_of(values))
    assert info.value.key == "gpu-cluster:cluster.placement"
    assert "LowLatency deployment set" in info.value.message


def test_the_head_role_and_hooks_exist_only_with_partitions():
    layout = ali.plan(spec_of(elastic()))
    assert layout.slurm is not None and layout.slurm.head_role_name == "el-test-head"
    assert [p.name for p in layout.partitions] == ["a10"]
    plain = elastic(nodes=2, slurm={})
    layout = ali.plan(spec_of(plain))
    assert layout.slurm is not None and layout.slurm.power is None and layout.slurm.head_role_name is None
    assert layout.partitions == ()


# --- the hooks with a stubbed curl ----------------------------------------------------------------------------------

TOOLS = ("cat", "sed", "head", "sort", "paste", "date", "openssl", "python3", "tr", "cut", "grep", "tail", "rm")
CREDS = (
    '{"AccessKeyId" : "STS.headid", "AccessKeySecret" : "head/secret+1", "SecurityToken" : "CAIS+head/tok==", '
    '"Code" : "Success"}'
)
ENDPOINT = "https://ecs-vpc.cn-beijing.aliyuncs.com"
# curl: the metadata service answers the role and its credentials; each ECS call's query is logged as JSON and
# answered from $ANSWERS (Action -> [status, body], or a list of them consumed in order), body then status as
# curl -w '\n%{http_code}' prints them
CURL = (
    ALICLOUD_HARDENED_METADATA
    + rf"""
url="${{@: -1}}"
case "$url" in
  */meta-data/ram/security-credentials/) echo slurm-elastic-head ;;
  */meta-data/ram/security-credentials/slurm-elastic-head) echo '{CREDS}' ;;
  */meta-data/instance/instance-name) echo "$INSTANCE_NAME" ;;
  {ENDPOINT}/*) exec python3 "$ECS_STUB" "$url" ;;
  *) exit 22 ;;
esac
"""
)
ECS_STUB = r"""
import json, os, sys
from urllib.parse import parse_qsl, urlsplit
query = dict(parse_qsl(urlsplit(sys.argv[1]).query, keep_blank_values=True))
with open(os.environ["LOG"], "a") as log:
    log.write(json.dumps(query) + "\n")
path = os.environ["ANSWERS"]
answers = json.load(open(path))
answer = answers.get(query["Action"], [404, {"Code": "NotStubbed", "Message": "no answer"}])
if isinstance(answer[0], list):
    answers[query["Action"]] = answer[1:] or answer[-1:]
    json.dump(answers, open(path, "w"))
    answer = answer[0]
print(json.dumps(answer[1]))
print(answer[0], end="")
"""
TEMPLATE = "lt-2ze1uxgdt8ra9dn1a0f5"


def run_power(
    tmp_path: Path, action: str, hostlist: str, answers: dict, launch: str = TEMPLATE
) -> tuple[int, list[dict], list[str], str]:
    """slurm_power.sh as `action` with Alibaba's hook: the ECS calls (their queries) and the scontrol calls;
    `launch`: the partition's launch line in the channel."""
    (tmp_path / "ecs_stub.py").write_text(ECS_STUB)
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    (tmp_path / "launch.env").write_text(f"LAUNCH_ebmgn8v={launch}\n")
    env = {
        "LOG": str(tmp_path / "calls"),
        "ECS_STUB": str(tmp_path / "ecs_stub.py"),
        "ANSWERS": str(tmp_path / "answers.json"),
        "LAUNCH_ENV": str(tmp_path / "launch.env"),
        "TMPDIR": str(tmp_path),
        "ECS_ENDPOINT": ENDPOINT,
        "ECS_API_VERSION": POWER["apiVersion"],
        "REGION": "cn-beijing",
        "CLUSTER": "slurm-elastic",
        "NAME_TAG": POWER["nameTag"],
        "CLUSTER_TAG": POWER["clusterTag"],
        "POLL_SECONDS": "0",
        "POLLS": "3",
    }
    proc = run_power_program(tmp_path, action, hostlist, BOOT / "alicloud_slurm_power.sh", {"curl": CURL}, env)
    lines = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    ecs = [json.loads(line) for line in lines if line.startswith("{")]
    scontrol = [line for line in lines if line.startswith("scontrol ")]
    return proc.returncode, ecs, scontrol, proc.stderr


def params(query: dict) -> dict:
    """The call's own parameters, without the common ones (checked once, with the signature)."""
    common = {"AccessKeyId", "Format", "SecurityToken", "SignatureMethod", "SignatureNonce", "SignatureVersion",
              "Timestamp", "Version", "Signature"}  # fmt: skip
    return {k: v for k, v in query.items() if k not in common}


CREATED = {"RequestId": "R1", "InstanceIdSets": {"InstanceIdSet": ["i-2zeelastic1"]}}
PENDING = {"Instances": {"Instance": [{"InstanceId": "i-2zeelastic1", "VpcAttributes": {}}]}}
RUNNING = {
    "Instances": {
        "Instance": [
            {"InstanceId": "i-2zeelastic1", "VpcAttributes": {"PrivateIpAddress": {"IpAddress": ["10.49.0.17"]}}}
        ]
    }
}


def test_launch_runs_the_node_from_its_template_by_name_and_tags_and_sets_its_address(tmp_path):
    answers = {"RunInstances": [200, CREATED], "DescribeInstances": [[200, PENDING], [200, RUNNING]]}
    code, ecs, scontrol, stderr = run_power(tmp_path, "resume", "ebmgn8v-1", answers)
    assert code == 0, stderr
    assert [params(q) for q in ecs] == [
        {
            "Action": "RunInstances",
            "RegionId": "cn-beijing",
            "LaunchTemplateId": TEMPLATE,
            "Amount": "1",
            "InstanceName": "slurm-elastic-ebmgn8v-1",
            "HostName": "slurm-elastic-ebmgn8v-1",
            "Tag.1.Key": "gpu-cluster:slurm-node",
            "Tag.1.Value": "ebmgn8v-1",
            "Tag.2.Key": "gpu-cluster:cluster",
            "Tag.2.Value": "slurm-elastic",
        },
        # polled until the instance has its private address
        {"Action": "DescribeInstances", "RegionId": "cn-beijing", "InstanceIds": '["i-2zeelastic1"]'},
        {"Action": "DescribeInstances", "RegionId": "cn-beijing", "InstanceIds": '["i-2zeelastic1"]'},
    ]
    # signed with the head role's STS credentials (RPC signature v1), the token sent as SecurityToken
    for query in ecs:
        assert (query["AccessKeyId"], query["SecurityToken"], query["Version"]) == (
            "STS.headid",
            "CAIS+head/tok==",
            "2014-05-26",
        )
        sent = query.pop("Signature")
        assert sent == alicloud_signature("head/secret+1", query)
    assert scontrol == ["scontrol update nodename=ebmgn8v-1 nodeaddr=10.49.0.17 nodehostname=slurm-elastic-ebmgn8v-1"]


def test_a_refused_launch_downs_the_node_with_the_apis_code_and_message(tmp_path):
    refused = {"Code": "OperationDenied.NoStock", "Message": "The requested resource is sold out in the zone."}
    code, ecs, scontrol, stderr = run_power(tmp_path, "resume", "ebmgn8v-0", {"RunInstances": [403, refused]})
    assert code == 1
    assert [q["Action"] for q in ecs] == ["RunInstances"]
    reason = "RunInstances: HTTP 403: OperationDenied.NoStock: The requested resource is sold out in the zone."
    assert reason in stderr
    assert scontrol == [
        f"scontrol update nodename=ebmgn8v-0 state=down reason=gpu-cluster launch failed: {reason}",
        "scontrol update nodename=ebmgn8v-0 state=power_down",
    ]


def test_a_launch_without_an_address_in_time_is_a_failed_launch(tmp_path):
    answers = {"RunInstances": [200, CREATED], "DescribeInstances": [200, PENDING]}
    code, ecs, scontrol, stderr = run_power(tmp_path, "resume", "ebmgn8v-0", answers)
    assert code == 1
    assert [q["Action"] for q in ecs] == ["RunInstances", *["DescribeInstances"] * 3]  # POLLS
    assert "slurm-elastic-ebmgn8v-0 (i-2zeelastic1) has no private address" in stderr
    assert scontrol[-1] == "scontrol update nodename=ebmgn8v-0 state=power_down"


def test_suspend_deletes_only_the_clusters_instance_of_the_node(tmp_path):
    answers = {"DescribeInstances": [200, RUNNING], "DeleteInstances": [200, {"RequestId": "R2"}]}
    code, ecs, _, stderr = run_power(tmp_path, "suspend", "ebmgn8v-1", answers)
    assert code == 0, stderr
    assert [params(q) for q in ecs] == [
        {
            "Action": "DescribeInstances",
            "RegionId": "cn-beijing",
            "Tag.1.Key": "gpu-cluster:slurm-node",
            "Tag.1.Value": "ebmgn8v-1",
            "Tag.2.Key": "gpu-cluster:cluster",
            "Tag.2.Value": "slurm-elastic",
        },
        {"Action": "DeleteInstances", "RegionId": "cn-beijing", "Force": "true", "InstanceId.1": "i-2zeelastic1"},
    ]


def test_deleting_a_node_without_an_instance_succeeds(tmp_path):
    code, ecs, _, _ = run_power(tmp_path, "resume-fail", "ebmgn8v-0", {"DescribeInstances": [200, {"Instances": {}}]})
    assert code == 0
    assert [q["Action"] for q in ecs] == ["DescribeInstances"]


def test_a_refused_delete_is_reported(tmp_path):
    denied = {"Code": "Forbidden.RAM", "Message": "User not authorized to operate on the specified resource."}
    answers = {"DescribeInstances": [200, RUNNING], "DeleteInstances": [403, denied]}
    code, _, _, stderr = run_power(tmp_path, "suspend", "ebmgn8v-1", answers)
    assert code == 1
    assert "DeleteInstances: HTTP 403: Forbidden.RAM: User not authorized" in stderr
    assert "could not delete ebmgn8v-1's instance (suspend)" in stderr


def test_the_node_reads_its_name_from_its_instance_name(tmp_path):
    script = BOOT / "alicloud_slurm_node_name.sh"
    bin_dir = stub_bin(tmp_path, {"curl": CURL})
    env = {"CLUSTER": "slurm-elastic", "INSTANCE_NAME": "slurm-elastic-a10-3"}
    proc = run_hook(script, bin_dir, env)
    assert (proc.returncode, proc.stdout) == (0, "a10-3\n")
    proc = run_hook(script, bin_dir, {**env, "INSTANCE_NAME": "slurm-elastic-login"})
    assert (proc.returncode, proc.stdout) == (0, "login\n")  # slurmd then fails: no such node (not a CLOUD name)
    proc = run_hook(script, bin_dir, {**env, "INSTANCE_NAME": "other-a10-3"})
    assert proc.returncode == 1 and proc.stdout == ""


def test_the_hooks_are_shellcheck_clean_and_the_head_gets_the_signer_inlined(tmp_path):
    assert_shellcheck_clean(BOOT / "alicloud_slurm_power.sh")
    assert_shellcheck_clean(BOOT / "alicloud_slurm_node_name.sh")
    text = bootstrap.script("alicloud_slurm_power.sh")
    assert 'alicloud_rpc.sh"' not in text and text.count("rpc_call() {") == 1


# --- day 2 ----------------------------------------------------------------------------------------------------------

SHIPPED = [
    {"name": "ebmgn8v", "maxNodes": 2},
    {"name": "a10", "instanceType": "ecs.gn7i-c16g1.4xlarge", "maxNodes": 4, "spot": True},
]


def _with_partitions(partitions: list[dict]) -> dict:
    return plan_json(plan_stack_with(STACK, slurm={"partitions": partitions}))


def test_adding_a_partition_is_in_place_and_growing_one_changes_only_the_channel():
    base = _with_partitions(SHIPPED)
    added = diff_plans(
        base, _with_partitions([*SHIPPED, {"name": "t4", "instanceType": "ecs.gn6i-c4g1.xlarge", "maxNodes": 1}])
    )
    assert [(c.key, c.policy) for c in added.spec_changes] == [("cluster.slurm.partitions", "in-place")]
    # its template, and its deployment set (on demand, placement cluster)
    assert {urn.rsplit("::", 1)[1] for urn in added.created} == {f"{NAME}-t4-template", f"{NAME}-t4-ds"}
    assert not [c for c in added.changed if c.name == f"{NAME}-head"]  # the head instance stays as it is
    grown = diff_plans(base, _with_partitions([{**SHIPPED[0], "maxNodes": 4}, SHIPPED[1]]))
    assert [(c.key, c.old, c.new, c.policy) for c in grown.spec_changes] == [
        ("cluster.slurm.partitions.maxNodes", {"ebmgn8v": 2}, {"ebmgn8v": 4}, "in-place")
    ]
    assert sorted(c.type.split(":")[-1] for c in grown.changed) == ["Parameter"]


def test_with_a_cluster_key_the_templates_encrypt_both_disks_with_it():
    plan = plan_stack_with(STACK, encryption={"key": "auto"})
    for template in by_name(plan, "EcsLaunchTemplate").values():
        key = template["systemDisk"]["kmsKeyId"]
        assert key.startswith("<") and key == template["dataDisks"][0]["kmsKeyId"]
        assert template["systemDisk"]["encrypted"] is True and template["dataDisks"][0]["encrypted"] is True
    # the head's and login node's system disks use the same key
    instances = by_name(plan, "ecs/instance:Instance")
    assert {i["systemDiskKmsKeyId"] for i in instances.values()} == {key}


def test_a_configuration_over_the_oos_parameters_limit_is_refused():
    users = [{"name": f"user{i:03d}", "uid": 20000 + i, "sshPublicKey": "ssh-ed25519 " + "A" * 68} for i in range(40)]
    values = elastic(slurm={"partitions": [{"name": "a10", "maxNodes": 2}], "users": users})
    with pytest.raises(ConfigError) as info:
        ali.plan(spec_of(values))
    assert info.value.key == "gpu-cluster:cluster.slurm"
    assert "over the 4096 of the OOS parameter it travels in" in info.value.message


def _flat(value: object, prefix: str = "") -> dict[str, str]:
    """A Tea request's map as RPC query parameters (lists as .N, 1-based; nested keys joined with '.')."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}{key}.").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value, 1) for k, v in _flat(item, f"{prefix}{i}.").items()}
    return {prefix[:-1]: str(value).lower() if isinstance(value, bool) else str(value)}


def run_request(node: str, **more: object) -> ecs_models.RunInstancesRequest:
    """RunInstances of `node` from the partition's template, as alibabacloud_ecs20140526's model has it."""
    tags = [ecs_models.RunInstancesRequestTag(key="gpu-cluster:slurm-node", value=node),
            ecs_models.RunInstancesRequestTag(key="gpu-cluster:cluster", value="slurm-elastic")]  # fmt: skip
    name = f"slurm-elastic-{node}"
    return ecs_models.RunInstancesRequest(
        region_id="cn-beijing",
        launch_template_id=TEMPLATE,
        amount=1,
        instance_name=name,
        host_name=name,
        tag=tags,
        **more,
    )


def test_every_call_the_hook_makes_is_a_request_alibabas_ecs_model_knows(tmp_path):
    """The hook's parameters are those of alibabacloud_ecs20140526's request models (the API 2014-05-26)."""
    ecs = ecs_models
    launched = tmp_path / "launch"
    launched.mkdir()
    answers = {"RunInstances": [200, CREATED], "DescribeInstances": [200, RUNNING]}
    _, ecs_calls, _, _ = run_power(launched, "resume", "ebmgn8v-1", answers)
    deleted = tmp_path / "delete"
    deleted.mkdir()
    answers = {"DescribeInstances": [200, RUNNING], "DeleteInstances": [200, {"RequestId": "R2"}]}
    _, delete_calls, _, _ = run_power(deleted, "suspend", "ebmgn8v-1", answers)
    sent = [params(q) for q in (*ecs_calls, *delete_calls)]
    expected = [
        run_request("ebmgn8v-1"),
        ecs.DescribeInstancesRequest(region_id="cn-beijing", instance_ids='["i-2zeelastic1"]'),
        ecs.DescribeInstancesRequest(
            region_id="cn-beijing",
            tag=[
                ecs.DescribeInstancesRequestTag(key="gpu-cluster:slurm-node", value="ebmgn8v-1"),
                ecs.DescribeInstancesRequestTag(key="gpu-cluster:cluster", value="slurm-elastic"),
            ],
        ),
        ecs.DeleteInstancesRequest(region_id="cn-beijing", force=True, instance_id=["i-2zeelastic1"]),
    ]
    assert [{k: v for k, v in q.items() if k != "Action"} for q in sent] == [_flat(r.to_map()) for r in expected]
    # and the answers the hook reads are the response models' fields
    assert ecs.RunInstancesResponseBody().from_map(CREATED).instance_id_sets.instance_id_set == ["i-2zeelastic1"]
    body = ecs.DescribeInstancesResponseBody().from_map(RUNNING)
    assert body.instances.instance[0].vpc_attributes.private_ip_address.ip_address == ["10.49.0.17"]


VSWITCH, GROUPS = "vsw-2zenodes", ("sg-2zenodes", "sg-2zeextra")


def test_a_partition_with_eris_launches_each_as_a_network_interface_alibabas_model_knows(tmp_path):
    """The channel's line `<template> <vswitch> <groups> <cards>` (layout/alicloud/partitions.py launch_target):
    RunInstances gets one NetworkInterface.N per card, HighPerformance, the first the Primary ENI, in the vSwitch and
    groups the template does not hold, each on its card index; checked against alibabacloud_ecs20140526's model."""
    ecs = ecs_models
    answers = {"RunInstances": [200, CREATED], "DescribeInstances": [200, RUNNING]}
    line = f"{TEMPLATE} {VSWITCH} {','.join(GROUPS)} 0,1"
    code, calls, _, stderr = run_power(tmp_path, "resume", "ebmgn8v-0", answers, launch=line)
    assert code == 0, stderr
    sent = {k: v for k, v in params(calls[0]).items() if k != "Action"}
    nics = [
        ecs.RunInstancesRequestNetworkInterface(
            instance_type=kind,
            network_interface_traffic_mode="HighPerformance",
            v_switch_id=VSWITCH,
            security_group_ids=list(GROUPS),
            network_card_index=card,
        )
        for kind, card in (("Primary", 0), ("Secondary", 1))
    ]
    assert sent == _flat(run_request("ebmgn8v-0", network_interface=nics).to_map())
    assert sent["NetworkInterface.1.InstanceType"] == "Primary" and sent["NetworkInterface.2.NetworkCardIndex"] == "1"
    # no VSwitchId or SecurityGroupId(s) beside the Primary interface's (RunInstances' model forbids both)
    assert not {"VSwitchId", "SecurityGroupId", "SecurityGroupIds.1"} & set(sent)


def test_one_eri_is_the_primary_interface_without_a_card_index(tmp_path):
    answers = {"RunInstances": [200, CREATED], "DescribeInstances": [200, RUNNING]}
    line = f"{TEMPLATE} {VSWITCH} {GROUPS[0]} 0"
    code, calls, _, stderr = run_power(tmp_path, "resume", "ebmgn8v-0", answers, launch=line)
    assert code == 0, stderr
    nics = {k: v for k, v in params(calls[0]).items() if k.startswith("NetworkInterface.")}
    assert nics == {
        "NetworkInterface.1.InstanceType": "Primary",
        "NetworkInterface.1.NetworkInterfaceTrafficMode": "HighPerformance",
        "NetworkInterface.1.VSwitchId": VSWITCH,
        "NetworkInterface.1.SecurityGroupIds.1": GROUPS[0],
    }  # as nodes.py gives a one-ERI type: card index only with several interfaces
