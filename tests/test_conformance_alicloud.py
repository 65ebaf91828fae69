"""Conformance, Alibaba Cloud: every shipped stack and the feature configs, translated into the OpenAPI requests the
Terraform alicloud provider sends, judged by Alibaba's Tea SDK models (unknown parameters, validate(), required
members) and by the constraints their documentation states (tests/conformance/alicloud_rules.yaml); and the judge
itself, fed known-bad requests, refuses each."""

from __future__ import annotations

import base64
import importlib
import json

import pytest
from alibabacloud_cs20151215 import models as cs
from alibabacloud_ecs20140526 import models as ecs
from alibabacloud_vpc20160428 import models as vpc

from components.errors import ConfigError, ConfigErrors
from components.layout import alicloud as ali_layout

from .conformance import _rules, _tea
from .conformance import alicloud as conf
from .conformance.alicloud_requests import Call, Inputs
from .conftest import one, plan_stack, plan_values, shipped_stacks, spec_of

SDK = {
    "ecs": "alibabacloud_ecs20140526",
    "vpc": "alibabacloud_vpc20160428",
    "ess": "alibabacloud_ess20220222",
    "ram": "alibabacloud_ram20150501",
    "kms": "alibabacloud_kms20160120",
    "nas": "alibabacloud_nas20170626",
    "cs": "alibabacloud_cs20151215",
    "slb": "alibabacloud_slb20140515",
    "rds": "alibabacloud_rds20140815",
    "sls": "alibabacloud_sls20201230",
}
RULES = _rules.load(conf.RULES)
_FEATURE_PLANS: dict[str, object] = {}


def feature_plan(name: str):
    if name not in _FEATURE_PLANS:
        _FEATURE_PLANS[name] = plan_values(conf.FEATURES[name], stack=f"conformance-{name}")
    return _FEATURE_PLANS[name]


def report_of(plan) -> conf.Report:
    return conf.check([r.as_json() for r in plan.resources], plan.spec.region)


def verdict(call: Call) -> list[str]:
    return conf.judge_call(call, RULES, "test").problems


# --- the plans -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", shipped_stacks("alicloud"))
def test_every_shipped_stack_is_what_alibaba_and_the_provider_accept(stack):
    report = report_of(plan_stack(stack))
    assert report.calls
    assert report.problems == []
    # every registered resource has a translation, and every input it registers is read by one
    assert report.untranslated == [] and report.unread == []


@pytest.mark.parametrize("feature", sorted(conf.FEATURES))
def test_every_feature_config_is_what_alibaba_and_the_provider_accept(feature):
    report = report_of(feature_plan(feature))
    assert report.calls and report.problems == []
    assert report.untranslated == [] and report.unread == []


def test_the_features_reach_every_translation():
    seen = {r.type for name in conf.FEATURES for r in feature_plan(name).resources}
    seen |= {r.type for stack in shipped_stacks("alicloud") for r in plan_stack(stack).resources}
    assert set(conf.TRANSLATIONS) <= seen, set(conf.TRANSLATIONS) - seen


# --- the rules are the SDK's words -----------------------------------------------------------------------------------


def _model(api: str) -> type:
    service, action = api.split(":")
    return getattr(importlib.import_module(f"{SDK[service]}.models"), f"{action}Request")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.api}:{r.path}")
def test_every_rule_quotes_the_parameter_documentation_in_the_installed_sdk(rule):
    doc = _tea.member(_model(rule.api), rule.doc_path or rule.path).doc
    assert _rules.folded(rule.quote) in _rules.folded(doc)


def test_the_tea_models_name_what_the_provider_sends():
    # from_map keeps only what the model declares: the round trip is the unknown-parameter test
    request = {"RegionId": "cn-beijing", "SystemDisk": {"Category": "cloud_essd"}, "Tag": [{"Key": "a", "Value": ""}]}
    assert _tea.lost(ecs.RunInstancesRequest, request) == []
    member = _tea.member(ecs.RunInstancesRequest, "SystemDisk.Category")
    assert "cloud_essd" in member.doc and member.model is None
    assert _tea.member(vpc.CreateVSwitchRequest, "ZoneId").required


# --- the judge refuses what Alibaba refuses --------------------------------------------------------------------------


def run(**request):
    return Call("ecs:RunInstances", ecs.RunInstancesRequest, {"RegionId": "cn-beijing", **request}, "test")


def test_unknown_parameters_are_refused_nested_ones_too():
    problems = verdict(run(Bogus=1, SystemDisk={"Category": "cloud_essd", "Nope": 2}, DataDisk=[{"Size": 40, "X": 1}]))
    assert problems == [
        "test: Bogus is not a parameter of ecs:RunInstances",
        "test: SystemDisk.Nope is not a parameter of ecs:RunInstances",
        "test: DataDisk.1.X is not a parameter of ecs:RunInstances",
    ]


def test_a_required_member_left_out_is_refused():
    call = Call("vpc:CreateVSwitch", vpc.CreateVSwitchRequest, {"CidrBlock": "10.0.0.0/17", "VpcId": "vpc-1"}, "t")
    assert verdict(call) == ["test: ZoneId is required by vpc:CreateVSwitch"]


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ({"HostName": "node--0"}, "HostName = 'node--0': does not match"),
        ({"HostName": "-node"}, "HostName = '-node': does not match"),
        ({"InstanceName": "n"}, "InstanceName = 'n': 1 characters, allowed 2 to 128"),
        ({"Tag": [{"Key": "aliyun-team", "Value": "x"}]}, "Tag.1.Key = 'aliyun-team': starts with 'aliyun'"),
        ({"Tag": [{"Key": f"k{i}", "Value": ""} for i in range(21)]}, "Tag has 21 items, at most 20"),
        ({"UserData": base64.b64encode(b"x" * 40000).decode()}, "40000 bytes before base64, at most 32768"),
        ({"SpotStrategy": "Spot"}, "SpotStrategy = 'Spot': not one of NoSpot"),
        (
            {"DataDisk": [{"Category": "cloud_essd", "PerformanceLevel": "PL3", "Size": 1000}]},
            "DataDisk.1.Size = '1000': outside 1261 to 65536",
        ),
        (
            {"SecurityGroupIds": ["sg-1"], "NetworkInterface": [{"InstanceType": "Primary", "VSwitchId": "vsw"}]},
            "SecurityGroupIds must be left out where NetworkInterface.InstanceType is Primary",
        ),
    ],
)
def test_documented_constraints_are_refused(request_, expected):
    problems = verdict(run(**request_))
    assert any(expected in p for p in problems), problems


def test_values_known_only_at_deploy_are_listed_not_judged():
    result = conf.judge_call(run(HostName="<id of x>", InstanceName="node-0"), RULES, "test")
    assert result.problems == [] and result.not_judged == ["test: HostName = '<id of x>'"] * 2


def test_json_bodies_match_keys_without_case_and_still_refuse_unknown_ones():
    body = {"nodepool_info": {"name": "gpu"}, "scaling_group": {"tags": [{"Key": "a", "Value": "b"}], "Bogus": 1}}
    call = Call("cs:CreateClusterNodePool", cs.CreateClusterNodePoolRequest, body, "t", roa=True)
    problems = [p for p in verdict(call) if "is not a parameter" in p]
    assert problems == ["test: scaling_group.Bogus is not a parameter of cs:CreateClusterNodePool"]


def test_the_provider_refuses_an_ess_configuration_without_top_level_groups():
    token = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
    nics = [{"instanceType": "Primary", "networkInterfaceTrafficMode": "HighPerformance", "securityGroupIds": ["sg"]}]
    assert conf.refusals(token, {"networkInterfaces": nics}) == [
        "provider: security_group_id or security_group_ids must be assigned"
    ]
    assert conf.refusals(token, {"securityGroupIds": ["sg"]}) == []


def test_an_input_no_translation_reads_is_reported():
    resource = {"type": "alicloud:vpc/network:Network", "name": "v", "inputs": {"vpcName": "x", "newArgument": 1}}
    assert conf.translate([resource], "cn-beijing").unread == ["v alicloud:vpc/network:Network: newArgument"]
    assert conf.translate([{"type": "alicloud:ecs/unknown:Unknown", "name": "u", "inputs": {}}], "r").untranslated


def test_inputs_remember_what_was_read():
    inputs = Inputs({"a": 0, "b": "x"})
    assert inputs.ok("a") is None and inputs.get("b") == "x" and inputs.read == {"a", "b"}


# --- the refusals it found, fixed ------------------------------------------------------------------------------------


def test_nas_descriptions_are_in_the_nas_character_set():
    # was "gpu-cluster <name> shared filesystem" and "gpu-cluster <name>: the node vSwitch only": NAS descriptions
    # start with a letter and hold letters, digits, ':', '_' and '-' only
    plan = feature_plan("ess-fleet-nas")
    assert one(plan, "nas/fileSystem:FileSystem")["inputs"]["description"] == "gpu-cluster:ess-fleet:shared-filesystem"
    assert (
        one(plan, "nas/accessGroup:AccessGroup")["inputs"]["description"] == "gpu-cluster:ess-fleet:node-vswitch-only"
    )
    old = Call("nas:CreateFileSystem", _model("nas:CreateFileSystem"), {"Description": "gpu-cluster x shared"}, "t")
    assert any("does not match" in p for p in verdict(old))


def test_a_nas_on_the_cluster_key_sends_encrypt_type_2_with_the_key_and_the_rules_judge_it():
    plan = feature_plan("slurm-nas-cmk")  # encryption.key auto with storage.shared
    fs = one(plan, "nas/fileSystem:FileSystem")["inputs"]
    assert (fs["fileSystemType"], fs["encryptType"], fs["kmsKeyId"]) == (
        "standard",
        2,
        "<id of slurm-nas-alicloud-kms>",
    )
    model = _model("nas:CreateFileSystem")
    base = {"FileSystemType": "standard", "ProtocolType": "NFS", "StorageType": "Performance", "EncryptType": "2"}
    ok = Call("nas:CreateFileSystem", model, {**base, "KmsKeyId": "0b30658a-ed1a-4922-b8f7-a673ca9c1234"}, "t")
    assert verdict(ok) == []
    assert "test: KmsKeyId must be sent where EncryptType is 2" in verdict(
        Call("nas:CreateFileSystem", model, base, "t")
    )
    cpfs = {**base, "FileSystemType": "cpfs", "ProtocolType": "cpfs", "StorageType": "advance_100", "KmsKeyId": "k"}
    assert any(
        "FileSystemType = 'cpfs': not one of standard, extreme" in p
        for p in verdict(Call("nas:CreateFileSystem", model, cpfs, "t"))
    )


def test_ack_cluster_tags_are_kubernetes_labels():
    # ACK puts the cluster's tags on its nodes as labels: gpu-cluster:cluster (':' is no label character) is refused
    inputs = one(plan_stack("alicloud-ack-erdma"), "managedKubernetes:ManagedKubernetes")["inputs"]
    assert inputs["tags"] == {
        "gpu-cluster_cluster": "ack-train",
        "gpu-cluster_stack": "alicloud-ack-erdma",
        "environment": "prod",
        "team": "llm",
    }
    old = {"tags": [{"key": "gpu-cluster:cluster", "value": "ack-train"}], "name": "ack-train", "region_id": "r"}
    assert any("tags.1.key" in p for p in verdict(Call("cs:CreateCluster", cs.CreateClusterRequest, old, "t")))
    # the node pools' tags are ECS tags: they keep the toolkit's own keys
    pools = [r for r in plan_stack("alicloud-ack-erdma").resources if r.type.endswith("nodePool:NodePool")]
    assert all("gpu-cluster:cluster" in p.inputs["tags"] for p in pools)


def _ack_values(**cluster):
    base = {"instanceType": "ecs.gn6i-c4g1.xlarge", "nodes": 1, "zone": "cn-hangzhou-k", "scheduler": "kubernetes"}
    return {
        "gpu-cluster:cloud": "alicloud",
        "alicloud:region": "cn-hangzhou",
        "gpu-cluster:cluster": {**base, **cluster},
    }


def test_a_tag_ack_cannot_take_as_a_label_is_refused_with_its_key():
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        ali_layout.plan(spec_of(_ack_values(tags={"owner": "Jane Doe", "cost center": "42"})))
    errors = info.value.errors if isinstance(info.value, ConfigErrors) else [info.value]
    assert sorted(e.key for e in errors) == ["gpu-cluster:cluster.tags.cost center", "gpu-cluster:cluster.tags.owner"]
    assert all("Kubernetes label" in e.message for e in errors)
    # without ACK the same tags stay (ECS takes them)
    plain = _ack_values(tags={"owner": "Jane Doe"})
    del plain["gpu-cluster:cluster"]["scheduler"]
    assert ali_layout.plan(spec_of(plain)).tags["owner"] == "Jane Doe"


def test_an_erdma_type_in_a_managed_group_registers_no_eri_and_top_level_groups():
    # the provider refused the scaling configuration (ENIs and no top-level groups); ESS refuses groups beside a
    # primary ENI: a managed group now carries no ERI (managedGroupLimits fabric)
    config = one(feature_plan("erdma-managed"), "ess/scalingConfiguration:ScalingConfiguration")["inputs"]
    assert "networkInterfaces" not in config and config["securityGroupIds"]
    token = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
    assert conf.refusals(token, config) == []


def test_no_rule_is_written_twice():
    keys = [(r.api, r.path, r.quote, r.when, r.absent_if, r.present_if, r.pattern) for r in RULES]
    assert len(set(keys)) == len(keys)


# --- what the spec lets through today is refused here (spec rules are issue 26's defects 3 and 4, elsewhere) --------


@pytest.mark.parametrize(
    ("cluster", "expected", "key"),
    [
        # 18 user tags + environment, gpu-cluster:cluster, gpu-cluster:stack and Name: 22 on an ECS instance (max 20)
        ({"tags": {f"t{i}": "x" for i in range(18)}}, "Tag has 22 items, at most 20", "gpu-cluster:cluster.tags"),
        # a name ending in '-' makes host names with "--", which ECS refuses
        ({"name": "train-"}, "HostName = 'train--node-0': does not match", "gpu-cluster:cluster.name"),
    ],
)
def test_a_config_alibaba_would_refuse_never_plans_clean(cluster, expected, key):
    values = {
        "gpu-cluster:cloud": "alicloud",
        "alicloud:region": "cn-beijing",
        "gpu-cluster:cluster": {
            "instanceType": "ecs.gn7e-c16g1.32xlarge",
            "nodes": 1,
            "nodeGroup": "instances",
            "zone": "cn-beijing-l",
            **cluster,
        },
    }
    try:
        plan = plan_values(values)
    except ConfigError as refused:  # the spec (or a layout) refuses it first, for that key: as good
        assert any(e.key.startswith(key) for e in getattr(refused, "errors", [refused]))
        return
    assert any(expected in p for p in report_of(plan).problems), report_of(plan).problems


# --- slurm.accounting: the RDS requests ------------------------------------------------------------------------------


def _rds_calls(plan) -> dict[str, Call]:
    return {call.api: call for name, call in report_of(plan).calls if call.api.startswith("rds:")}


def test_the_accounting_database_is_created_intranet_only_whitelisting_the_vswitch():
    calls = _rds_calls(plan_stack("alicloud-slurm-elastic"))
    assert sorted(calls) == [
        "rds:CreateAccount",
        "rds:CreateDBInstance",
        "rds:CreateDatabase",
        "rds:GrantAccountPrivilege",
        "rds:ModifyBackupPolicy",
        "rds:ModifyParameter",
        "rds:ModifySecurityIps",
        "rds:TagResources",
    ]
    create = calls["rds:CreateDBInstance"].request
    assert (create["DBInstanceNetType"], create["InstanceNetworkType"], create["SecurityIPList"]) == (
        "Intranet",
        "VPC",
        "10.49.0.0/17",
    )
    assert (create["Engine"], create["EngineVersion"], create["Category"], create["PayType"]) == (
        "MySQL",
        "8.0",
        "Basic",
        "Postpaid",
    )
    assert json.loads(calls["rds:ModifyParameter"].request["Parameters"]) == {"innodb_lock_wait_timeout": "900"}
    assert calls["rds:CreateDatabase"].request["CharacterSetName"] == "utf8"  # the provider's default
    grant = calls["rds:GrantAccountPrivilege"].request
    assert (grant["AccountName"], grant["DBName"], grant["AccountPrivilege"]) == ("slurm", "slurm_acct_db", "ReadWrite")


@pytest.mark.parametrize(
    ("api", "request_", "expected"),
    [
        (
            "rds:CreateDatabase",
            {"DBName": "Slurm_DB", "CharacterSetName": "utf8"},
            "DBName = 'Slurm_DB': does not match",
        ),
        ("rds:CreateDatabase", {"DBName": "slurm", "CharacterSetName": "utf16"}, "not one of utf8"),
        ("rds:CreateAccount", {"AccountName": "slurm", "AccountPassword": "x" * 33}, "33 characters, allowed 8 to 32"),
        ("rds:ModifyBackupPolicy", {"BackupRetentionPeriod": "3"}, "outside 7 to 730"),
        ("rds:CreateDBInstance", {"DBInstanceNetType": "Internet"}, "not one of Intranet"),
        ("rds:CreateDatabase", {"DBName": "slurm"}, "CharacterSetName is required by rds:CreateDatabase"),
    ],
)
def test_rds_constraints_are_refused(api, request_, expected):
    call = Call(api, _model(api), {"RegionId": "cn-beijing", "DBInstanceId": "rm-1", **request_}, "t")
    problems = verdict(call)
    assert any(expected in p for p in problems), problems
