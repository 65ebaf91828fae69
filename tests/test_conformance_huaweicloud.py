"""Huawei Cloud conformance: every shipped huaweicloud stack's registered inputs, translated into the request bodies
the Terraform huaweicloud provider sends, judged by Huawei's SDK models (members and JSON types of the body models)
and by the constraints their documentation states (tests/conformance/huaweicloud_rules.yaml); and the judge itself,
fed known-bad bodies, refuses each."""

from __future__ import annotations

import base64
import copy
import json

import pytest
from huaweicloudsdkecs.v2 import model as ecs

from .conformance import _hwsdk, _rules
from .conformance import huaweicloud as conf
from .conftest import ROOT, load_stack, plan_stack, plan_values, shipped_stacks

RULES = _rules.load(conf.RULES)


def report_of(stack: str) -> conf.Report:
    return conf.check([r.as_json() for r in plan_stack(stack).resources])


def verdict(api: str, request: dict) -> list[str]:
    return conf.judge_call(conf.Call(api, MODELS[api], request, "test"), RULES, "test").problems


# --- the plans -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", shipped_stacks("huaweicloud"))
def test_every_shipped_stack_is_what_huawei_accepts(stack):
    report = report_of(stack)
    assert report.calls and report.problems == []
    assert report.untranslated == [] and report.unread == []


# name -> (shipped stack to start from, stack name, cluster keys over it): the stack name is part of what is judged
# (it is in the key pair's, agency's and key alias's names); a 31-character cluster name is the longest the spec takes
_LONG = "a" + "b" * 29 + "c"
FEATURES = {
    "long-names": ("huaweicloud-dev", "production-gpu-cluster-east.v2-long", {"name": _LONG}),
    "long-names-p3": ("huaweicloud-p3", "prod.p3-cluster", {"name": _LONG}),
    "shared-long-names": ("huaweicloud-shared", "production-shared-storage.v2", {"name": _LONG}),
    "cce-autoscaled": ("huaweicloud-cce", "prod.cce-2", {"name": _LONG, "minNodes": 1, "maxNodes": 4}),
    # nodeGroup managed: the AS configuration and group at the longest names, and with an EIP per node (no login
    # node, network.publicIp): the configuration's public_ip block
    "as-long-names": ("huaweicloud-as", "production-gpu-cluster-east.v2-long", {"name": _LONG}),
    "as-public-ip": (
        "huaweicloud-as",
        "huaweicloud-as",
        {"login": None, "network": {"publicIp": True, "sshCidrs": ["203.0.113.0/24"]}},
    ),
    # monitoring.notify (no shipped stack sends alerts): the SMN topic, its email subscriptions, the publish policy
    "notify": ("huaweicloud-dev", "huaweicloud-dev", {"monitoring": {"notify": ["ops@example.com", "ml@example.org"]}}),
    # monitoring.logs with CCE (LTS's CCE ingestion: a LABEL host group, a K8S_CCE access configuration) and with
    # Slurm (the head in the IP host group)
    "cce-logs": ("huaweicloud-cce", "huaweicloud-cce", {"monitoring": {"logs": {"enabled": True}}}),
    "cce-control-plane-logs": (
        "huaweicloud-cce",
        "huaweicloud-cce",
        {"monitoring": {"logs": {"enabled": True, "controlPlane": ["api", "audit", "controllerManager", "scheduler"]}}},
    ),
    "slurm-logs": ("huaweicloud-slurm", "huaweicloud-slurm", {"monitoring": {"logs": {"enabled": True}}}),
    # with an AS group (a LABEL host group of the stack's custom identifier, an AGENT access configuration), at the
    # longest names
    "as-logs": (
        "huaweicloud-as",
        "production-gpu-cluster-east.v2-long",
        {"name": _LONG, "monitoring": {"logs": {"enabled": True}}},
    ),
    # the Slurm secrets' and policies' names at their longest, with notify's policy beside the secrets'
    "slurm-notify-long-names": (
        "huaweicloud-slurm",
        "production-slurm-cluster.v2",
        {"name": _LONG, "monitoring": {"notify": ["ops@example.com"]}},
    ),
}
_FEATURE_PLANS: dict[str, object] = {}


def feature_plan(name: str):
    if name not in _FEATURE_PLANS:
        base, stack, cluster = FEATURES[name]
        values = copy.deepcopy(load_stack(ROOT, base).values)
        values["gpu-cluster:cluster"].update(cluster)
        _FEATURE_PLANS[name] = plan_values(values, stack)
    return _FEATURE_PLANS[name]


def _all_plans():
    return [plan_stack(stack) for stack in shipped_stacks("huaweicloud")] + [feature_plan(f) for f in sorted(FEATURES)]


# the body model of every API a rule names (the translations' calls carry the same)
MODELS = {
    call.api: call.model
    for plan in _all_plans()
    for _, call in conf.translate([r.as_json() for r in plan.resources]).calls
}


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_every_feature_config_is_what_huawei_accepts(feature):
    report = conf.check([r.as_json() for r in feature_plan(feature).resources])
    assert report.calls and report.problems == []
    assert report.untranslated == [] and report.unread == []


def test_the_shipped_stacks_and_feature_configs_reach_every_translation():
    seen = {r.type for plan in _all_plans() for r in plan.resources}
    assert set(conf.TRANSLATIONS) <= seen, set(conf.TRANSLATIONS) - seen


# --- the rules are the SDK's words -----------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.api}:{r.path}")
def test_every_rule_quotes_the_member_documentation_in_the_installed_sdk(rule):
    doc = _hwsdk.member(MODELS[rule.api], rule.doc_path or rule.path).doc
    assert _rules.folded(rule.quote) in _rules.folded(doc)


def test_no_rule_is_written_twice():
    keys = [(r.api, r.path, r.quote, r.when, r.pattern) for r in RULES]
    assert len(set(keys)) == len(keys)


# --- the judge refuses what Huawei refuses ---------------------------------------------------------------------------


def test_the_models_refuse_unknown_members_and_wrong_types_and_say_where():
    body = {
        "server": {
            "name": "n",
            "bogus": 1,
            "root_volume": {"volumetype": "GPSSD", "size": "200"},
            "data_volumes": [{"volumetype": "GPSSD", "size": 100, "nope": True}],
            "nics": ["subnet-1"],
        }
    }
    problems = _hwsdk.problems(ecs.CreateServersRequestBody, body)
    assert problems == [
        "server.bogus: not a member of PrePaidServer",
        "server.root_volume.size is str, the model says int",
        "server.data_volumes.1.nope: not a member of PrePaidServerDataVolume",
        "server.nics.1 is str, the model says PrePaidServerNic",
    ]
    # a bool is not an int in JSON; a deploy-time value is not judged
    assert _hwsdk.problems(ecs.CreateServersRequestBody, {"server": {"count": True}}) == [
        "server.count is bool, the model says int"
    ]
    assert _hwsdk.problems(ecs.CreateServersRequestBody, {"server": {"count": "<id of x>"}}) == []


_BIG = base64.b64encode(b"x" * 32769).decode()


@pytest.mark.parametrize(
    ("api", "request_", "expected"),
    [
        ("ecs:CreateServers", {"server": {"name": "n" * 65}}, "65 characters, allowed 1 to 64"),
        ("ecs:CreateServers", {"server": {"name": "gpu node"}}, "does not match"),
        ("ecs:CreateServers", {"server": {"user_data": _BIG}}, "32769 bytes before base64, at most 32768"),
        ("ecs:CreateServers", {"server": {"root_volume": {"volumetype": "gp3"}}}, "not one of SATA"),
        ("ecs:CreateServers", {"server": {"root_volume": {"size": 2048}}}, "outside 1 to 1024"),
        ("ecs:CreateServers", {"server": {"data_volumes": [{"size": 5}]}}, "outside 10 to 32768"),
        ("ecs:CreateServers", {"server": {"data_volumes": [{"metadata": {"__system__cmkid": "k"}}]}}, "allowed 36"),
        ("ecs:CreateServers", {"server": {"publicip": {"eip": {"bandwidth": {"size": 3000}}}}}, "outside 1 to 2000"),
        ("ecs:CreateServers", {"server": {"publicip": {"eip": {"bandwidth": {"chargemode": "bw"}}}}}, "not one of"),
        ("ecs:CreateServers", {"server": {"server_tags": [{"key": "k/v", "value": ""}]}}, "contains '/'"),
        (
            "ecs:CreateServers",
            {"server": {"server_tags": [{"key": f"k{n}", "value": ""} for n in range(11)]}},
            "11 items, at most 10",
        ),
        ("ecs:CreateServers", {"server": {"description": "a < b"}}, "contains '<'"),
        ("ecs:UpdateServer", {"server": {"hostname": "train--node-0"}}, "does not match"),
        ("ecs:NovaCreateKeypair", {"keypair": {"public_key": "ssh-rsa " + "A" * 1100}}, "at most 1024"),
        ("ecs:CreateServerGroup", {"server_group": {"policies": ["affinity"]}}, "not one of anti-affinity"),
        ("vpc:CreateVpc", {"vpc": {"cidr": "8.8.0.0/16"}}, "does not match"),
        ("vpc:CreateVpc", {"vpc": {"name": "v" * 65}}, "allowed 0 to 64"),
        ("vpc:CreateSubnet", {"subnet": {"cidr": "10.0.0.0/29"}}, "does not match"),
        ("vpc:CreateSecurityGroup", {"security_group": {"name": "a b"}}, "does not match"),
        ("vpc:CreateSecurityGroupRule", {"security_group_rule": {"direction": "in"}}, "not one of ingress"),
        ("vpc:CreateSecurityGroupRule", {"security_group_rule": {"multiport": "0-22"}}, "does not match"),
        ("vpc:CreateSecurityGroupRule", {"security_group_rule": {"multiport": "65536"}}, "does not match"),
        ("vpc:CreateSecurityGroupRule", {"security_group_rule": {"protocol": "all"}}, "does not match"),
        ("vpc:CreateSecurityGroupRule", {"security_group_rule": {"action": "accept"}}, "not one of allow"),
        ("vpc:CreateSecurityGroupRule", {"security_group_rule": {"priority": 0}}, "outside 1 to 100"),
        ("vpc:CreateSecurityGroupRule", {"security_group_rule": {"ethertype": "ipv4"}}, "not one of IPv4"),
        ("eip:CreatePublicip", {"publicip": {"type": "5_gbp"}}, "not one of 5_telcom"),
        ("eip:CreatePublicip", {"bandwidth": {"share_type": "PER", "size": 10}}, "bandwidth.name must be sent"),
        ("eip:CreatePublicip", {"bandwidth": {"charge_mode": "Traffic"}}, "not one of bandwidth"),
        ("eip:CreatePublicip", {"bandwidth": {"name": "nat gw"}}, "does not match"),
        ("nat:CreateNatGateway", {"nat_gateway": {"spec": "6"}}, "not one of 1"),
        ("nat:CreateNatGateway", {"nat_gateway": {"name": "nat.gw"}}, "does not match"),
        ("nat:CreateNatGatewaySnatRule", {"snat_rule": {"description": "d" * 256}}, "allowed 0 to 255"),
        ("kms:CreateKey", {"key_alias": "gpu cluster"}, "does not match"),
        ("kms:CreateKey", {"key_spec": "AES_128"}, "not one of AES_256"),
        ("kms:UpdateKeyRotationInterval", {"rotation_interval": 400}, "outside 30 to 365"),
        ("kms:DeleteKey", {"pending_days": "3"}, "outside 7 to 1096"),
        ("iam:CreateAgency", {"agency": {"name": "a" * 65}}, "allowed 1 to 64"),
        ("cce:CreateCluster", {"metadata": {"name": "ml"}}, "allowed 4 to 128"),
        ("cce:CreateCluster", {"metadata": {"name": "train-"}}, "does not match"),
        ("cce:CreateCluster", {"spec": {"flavor": "cce.s9.small"}}, "not one of cce.s1.small"),
        ("cce:CreateCluster", {"spec": {"containerNetwork": {"mode": "calico"}}}, "not one of overlay_l2"),
        ("cce:CreateCluster", {"spec": {"clusterTags": [{"key": "_sys_x", "value": ""}]}}, "starts with '_sys_'"),
        ("cce:CreateNodePool", {"metadata": {"name": "p" * 51}}, "allowed 1 to 50"),
        ("cce:CreateNodePool", {"spec": {"nodeTemplate": {"rootVolume": {"size": 20}}}}, "outside 40 to 1024"),
        (
            "cce:CreateNodePool",
            {"spec": {"nodeTemplate": {"taints": [{"key": "k", "value": "v", "effect": "NoEvict"}]}}},
            "not one of NoSchedule",
        ),
        (
            "cce:CreateNodePool",
            {"spec": {"nodeTemplate": {"taints": [{"key": "-k", "value": "v", "effect": "NoSchedule"}]}}},
            "does not match",
        ),
        (
            "cce:CreateNodePool",
            {"spec": {"nodeTemplate": {"userTags": [{"key": f"k{n}", "value": "v"} for n in range(9)]}}},
            "9 items, at most 8",
        ),
        (
            "cce:CreateNodePool",
            {"spec": {"nodeTemplate": {"userTags": [{"key": "CCE-owner", "value": "v"}]}}},
            "starts with 'cce-'",
        ),
        ("cce:CreateNodePool", {"spec": {"nodeTemplate": {"runtime": {"name": "crio"}}}}, "not one of docker"),
        ("cce:CreateAddonInstance", {"kind": "addon"}, "not one of Addon"),
        ("sfsturbo:CreateShare", {"share": {"name": "1fs"}}, "does not match"),
        ("sfsturbo:CreateShare", {"share": {"name": "fs"}}, "allowed 4 to 64"),
        ("sfsturbo:CreateShare", {"share": {"size": 100}}, "outside 500 to 32768"),
        ("sfsturbo:CreateShare", {"share": {"share_type": "HPC"}}, "not one of STANDARD"),
        ("iam:CreateCloudServiceCustomPolicy", {"role": {"type": "AA"}}, "not one of AX, XA"),
        ("iam:CreateCloudServiceCustomPolicy", {"role": {"policy": {"Version": "1.0"}}}, "not one of 1.1"),
        (
            "iam:CreateCloudServiceCustomPolicy",
            {"role": {"policy": {"Statement": [{"Action": ["CSMS:secretVersion:get"]}]}}},
            "does not match",
        ),
        (
            "iam:CreateCloudServiceCustomPolicy",
            {"role": {"policy": {"Statement": [{"Effect": "allow"}]}}},
            "not one of Allow, Deny",
        ),
        (
            "iam:CreateCloudServiceCustomPolicy",
            {"role": {"policy": {"Statement": [{"Resource": ["csms:secretName:munge"]}]}}},
            "does not match",
        ),
        ("csms:CreateSecret", {"name": "hw.slurm-munge-key"}, "does not match"),
        ("csms:CreateSecret", {"name": "s" * 65}, "65 characters, allowed 1 to 64"),
        ("csms:CreateSecret", {"description": "d" * 2049}, "2049 bytes, at most 2048"),
        ("csms:CreateSecret", {"secret_string": "x" * 32769}, "32769 bytes, at most 32768"),
        (
            "csms:BatchCreateOrDeleteTags",
            {"tags": [{"key": f"k{n}", "value": ""} for n in range(21)]},
            "21 items, at most 20",
        ),
        ("csms:BatchCreateOrDeleteTags", {"tags": [{"key": "_sys_owner", "value": ""}]}, "starts with '_sys_'"),
        ("csms:BatchCreateOrDeleteTags", {"tags": [{"key": "team ", "value": ""}]}, "does not match"),
        ("csms:BatchCreateOrDeleteTags", {"tags": [{"key": "team", "value": "a,b"}]}, "does not match"),
        ("smn:CreateTopic", {"name": "-alerts"}, "does not match"),
        ("smn:CreateTopic", {"name": "t" * 256}, "256 characters, allowed 1 to 255"),
        ("smn:CreateTopic", {"display_name": "告警" * 33}, "198 bytes, at most 192"),
        ("smn:BatchCreateOrDeleteResourceTags", {"tags": [{"key": "", "value": ""}]}, "0 characters, allowed 1"),
        ("smn:BatchCreateOrDeleteResourceTags", {"tags": [{"key": "k", "value": "v" * 257}]}, "allowed 0 to 256"),
        ("smn:AddSubscription", {"protocol": "mail"}, "not one of email"),
        ("smn:AddSubscription", {"protocol": "email", "endpoint": "ops.example.com"}, "does not match"),
        ("smn:AddSubscription", {"remark": "r" * 129}, "129 bytes, at most 128"),
        # nodeGroup managed: the AS configuration, group and its tags (huaweicloud_as.py)
        ("as:CreateScalingConfig", {"scaling_configuration_name": "hw.nodes"}, "does not match"),
        ("as:CreateScalingConfig", {"scaling_configuration_name": "n" * 65}, "65 characters, allowed 1 to 64"),
        (
            "as:CreateScalingConfig",
            {"instance_config": {"user_data": base64.b64encode(b"x" * 32769).decode()}},
            "32769 bytes before base64, at most 32768",
        ),
        (
            "as:CreateScalingConfig",
            {"instance_config": {"disk": [{"disk_type": "SYS", "size": 2000}]}},
            "outside 1 to 1024",
        ),
        (
            "as:CreateScalingConfig",
            {"instance_config": {"disk": [{"disk_type": "DATA", "size": 5}]}},
            "outside 10 to 32768",
        ),
        ("as:CreateScalingConfig", {"instance_config": {"disk": [{"disk_type": "ROOT"}]}}, "not one of DATA, SYS"),
        (
            "as:CreateScalingConfig",
            {"instance_config": {"disk": [{"disk_type": "SYS", "metadata": {"__system__encrypted": "1"}}]}},
            "has 1 items, at most 0",
        ),
        ("as:CreateScalingConfig", {"instance_config": {"disk": [{"volume_type": "ESSD"}]}}, "not one of SATA"),
        (
            "as:CreateScalingConfig",
            {"instance_config": {"public_ip": {"eip": {"ip_type": "5_gbp"}}}},
            "not one of 5_bgp",
        ),
        (
            "as:CreateScalingConfig",
            {"instance_config": {"public_ip": {"eip": {"bandwidth": {"size": 500, "charging_mode": "traffic"}}}}},
            "outside 1 to 300",
        ),
        (
            "as:CreateScalingConfig",
            {"instance_config": {"public_ip": {"eip": {"bandwidth": {"share_type": "per"}}}}},
            "not one of PER, WHOLE",
        ),
        (
            "as:CreateScalingConfig",
            {"instance_config": {"public_ip": {"eip": {"bandwidth": {"charging_mode": "Traffic"}}}}},
            "not one of bandwidth, traffic",
        ),
        ("as:CreateScalingGroup", {"scaling_group_name": "hw nodes"}, "does not match"),
        ("as:CreateScalingGroup", {"cool_down_time": 90000}, "outside 0 to 86400"),
        ("as:CreateScalingGroup", {"networks": [{"id": f"s{n}"} for n in range(6)]}, "6 items, at most 5"),
        ("as:CreateScalingGroup", {"health_periodic_audit_method": "ECS_AUDIT"}, "not one of ELB_AUDIT"),
        ("as:CreateScalingGroup", {"instance_terminate_policy": "OLDEST"}, "not one of OLD_CONFIG_OLD_INSTANCE"),
        (
            "as:CreateScalingTagInfo",
            {"tags": [{"key": f"k{n}", "value": ""} for n in range(11)]},
            "11 items, at most 10",
        ),
        ("as:CreateScalingTagInfo", {"tags": [{"key": "k" * 37, "value": ""}]}, "37 characters, allowed 1 to 36"),
        ("as:CreateScalingTagInfo", {"tags": [{"key": "k", "value": "v" * 44}]}, "44 characters, allowed 0 to 43"),
        ("as:CreateScalingTagInfo", {"action": "add"}, "not one of create, delete"),
    ],
)
def test_documented_constraints_are_refused(api, request_, expected):
    problems = verdict(api, request_)
    assert any(expected in p for p in problems), problems


def test_every_rule_has_a_refusal_case():
    # each (api, member) a rule judges is reached by a case above (the layer asserts something for every rule)
    cases = test_documented_constraints_are_refused.pytestmark[0].args[1]
    reached = {(api, path) for api, request_, _ in cases for path in _paths(request_)}
    missing = {(r.api, r.path) for r in RULES} - reached
    # left without a case: fixed values and limits no config of ours can reach (listed, so a new rule is seen)
    assert missing <= _UNCASED, sorted(missing - _UNCASED)


_UNCASED = {
    ("ecs:CreateServers", "server.nics"),
    ("ecs:CreateServers", "server.data_volumes"),
    ("ecs:CreateServers", "server.data_volumes.volumetype"),
    ("ecs:CreateServers", "server.root_volume.metadata.__system__cmkid"),
    ("ecs:CreateServers", "server.publicip.eip.bandwidth.sharetype"),
    ("ecs:CreateServers", "server.extendparam.chargingMode"),
    ("ecs:CreateServers", "server.metadata"),
    ("ecs:CreateServers", "server.server_tags.value"),
    ("ecs:CreateServerGroup", "server_group.name"),
    ("vpc:CreateVpc", "vpc.description"),
    ("vpc:CreateSubnet", "subnet.name"),
    ("vpc:CreateSubnet", "subnet.gateway_ip"),
    ("vpc:CreateSubnet", "subnet.description"),
    ("vpc:CreateSecurityGroup", "security_group.description"),
    ("vpc:CreateSecurityGroupRule", "security_group_rule.description"),
    ("eip:CreatePublicip", "publicip.alias"),
    ("eip:CreatePublicip", "bandwidth.size"),
    ("nat:CreateNatGateway", "nat_gateway.description"),
    ("nat:CreateNatGatewaySnatRule", "snat_rule.source_type"),
    ("kms:CreateKey", "key_description"),
    ("kms:CreateKey", "key_usage"),
    ("iam:CreateAgency", "agency.description"),
    ("cce:CreateCluster", "kind"),
    ("cce:CreateCluster", "apiVersion"),
    ("cce:CreateCluster", "spec.description"),
    ("cce:CreateCluster", "spec.billingMode"),
    ("cce:CreateCluster", "spec.clusterTags.value"),
    ("cce:CreateNodePool", "kind"),
    ("cce:CreateNodePool", "apiVersion"),
    ("cce:CreateNodePool", "spec.type"),
    ("cce:CreateNodePool", "spec.nodeTemplate.dataVolumes"),
    ("cce:CreateNodePool", "spec.nodeTemplate.taints"),
    ("cce:CreateNodePool", "spec.nodeTemplate.taints.value"),
    ("cce:CreateNodePool", "spec.nodeTemplate.k8sTags"),
    ("cce:CreateAddonInstance", "apiVersion"),
    ("sfsturbo:CreateShare", "share.share_proto"),
}


def _paths(node, prefix=""):
    if isinstance(node, list):
        for item in node:
            yield from _paths(item, prefix)
        return
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            yield from _paths(value, path)


def test_an_input_no_translation_reads_is_reported():
    resource = {"type": "huaweicloud:Vpc/vpc:Vpc", "name": "v", "inputs": {"name": "x", "cidr": "10.0.0.0/16", "x": 1}}
    assert conf.translate([resource]).unread == ["v huaweicloud:Vpc/vpc:Vpc: x"]


def test_a_type_no_translation_knows_is_reported():
    resource = {"type": "huaweicloud:Cbr/vault:Vault", "name": "g", "inputs": {}}
    assert conf.translate([resource]).untranslated == ["g: huaweicloud:Cbr/vault:Vault"]


# --- what it found, fixed (each refused before any resource, by key) ---------------------------------------------


def test_a_cce_cluster_name_under_four_characters_is_refused_by_key():
    from components.errors import ConfigError

    from .conftest import plan_stack_with

    with pytest.raises(ConfigError) as refused:
        plan_stack_with("huaweicloud-cce", name="abc")
    keys = [e.key for e in getattr(refused.value, "errors", [refused.value])]
    assert keys == ["gpu-cluster:cluster.name"]
    assert "4 to 128" in str(refused.value)
    # the same name plans without CCE (VM mode has no cluster of that name)
    assert plan_stack_with("huaweicloud-dev", name="abc").resources


def test_more_tags_than_a_cce_pool_takes_are_refused_by_key():
    from components.errors import ConfigError

    from .conftest import plan_stack_with

    tags = {"environment": "dev", "team": "ml", "a": "1", "b": "2", "c": "3"}  # + cluster, stack, Name = 8
    pools = [r for r in plan_stack_with("huaweicloud-cce", tags=tags).resources if r.type.endswith("nodePool:NodePool")]
    assert pools and all(len(p.as_json()["inputs"]["tags"]) == 8 for p in pools)
    with pytest.raises(ConfigError) as refused:
        plan_stack_with("huaweicloud-cce", tags={**tags, "d": "4"})
    (problem,) = str(refused.value).splitlines()
    assert problem.startswith("gpu-cluster:cluster.tags: 9 tags on each CCE node pool") and "at most 8" in problem


def test_the_provider_dropping_extend_params_beside_a_top_level_postinstall_is_a_problem():
    token = "huaweicloud:Cce/nodePool:NodePool"
    both = {"postinstall": "#!/bin/bash\n", "extendParams": {"agencyName": "nodes"}}
    (problem,) = conf.provider_problems(token, both)
    assert "extendParams agencyName dropped" in problem and "top-level postinstall" in problem
    # what the translation then sends: the script and no agency
    (call,) = conf.TRANSLATIONS[token](conf.Inputs({**both, "name": "p", "initialNodeCount": 1}))
    assert call.request["spec"]["nodeTemplate"]["extendParam"] == {
        "alpha.cce/postInstall": base64.b64encode(b"#!/bin/bash\n").decode()
    }
    inside = {"extendParams": {"agencyName": "nodes", "postinstall": "#!/bin/bash\n"}}
    assert conf.provider_problems(token, inside) == []
    (call,) = conf.TRANSLATIONS[token](conf.Inputs({**inside, "name": "p", "initialNodeCount": 1}))
    assert call.request["spec"]["nodeTemplate"]["extendParam"]["agency_name"] == "nodes"


def test_the_gpu_pool_keeps_its_agency_and_its_script():
    (gpu,) = [
        r.as_json()["inputs"]
        for r in plan_stack("huaweicloud-cce").resources
        if r.type == "huaweicloud:Cce/nodePool:NodePool" and r.name.endswith("-gpu")
    ]
    assert conf.provider_problems("huaweicloud:Cce/nodePool:NodePool", gpu) == []
    (call,) = conf.TRANSLATIONS["huaweicloud:Cce/nodePool:NodePool"](conf.Inputs(gpu))
    extend = call.request["spec"]["nodeTemplate"]["extendParam"]
    assert extend["agency_name"] == "hw-cce-huaweicloud-cce-nodes"
    assert base64.b64decode(extend["alpha.cce/postInstall"]).decode() == gpu["extendParams"]["postinstall"]


# --- the Slurm secrets' names (issue 34: CSMS takes no '.', and a long name once made both secrets one) ----------


def test_two_secrets_of_one_name_are_a_problem():
    secret = {"type": "huaweicloud:Dew/secret:Secret", "inputs": {"name": "s", "secretText": "x"}}
    report = conf.check([{**secret, "name": "a"}, {**secret, "name": "b"}])
    assert report.problems == ["csms:CreateSecret: name 's' sent 2 times"]


def test_the_longest_slurm_names_keep_two_secrets_apart_and_take_no_dot():
    names = sorted(
        r.as_json()["inputs"]["name"]
        for r in feature_plan("slurm-notify-long-names").resources
        if r.type == "huaweicloud:Dew/secret:Secret"
    )
    stem = _LONG + "-production-slurm-cluster-v2"  # the stack's '.' made '-'
    assert names == [stem[:45] + "-slurm-compute-conf", stem[:48] + "-slurm-munge-key"]
    assert all(len(n) <= 64 and "." not in n for n in names)


def test_the_shipped_slurm_stack_keeps_its_secret_names():
    names = sorted(
        r.as_json()["inputs"]["name"]
        for r in plan_stack("huaweicloud-slurm").resources
        if r.type == "huaweicloud:Dew/secret:Secret"
    )
    assert names == ["hw-slurm-huaweicloud-slurm-slurm-compute-conf", "hw-slurm-huaweicloud-slurm-slurm-munge-key"]


def test_a_policy_member_the_provider_drops_is_a_problem():
    token = "huaweicloud:Iam/role:Role"
    statement = {"Sid": "read", "Action": ["csms:secretVersion:get"], "Effect": "Allow", "Resource": ["csms:*:*:x:y"]}
    policy = {"Version": "1.1", "Id": "p", "Statement": [statement]}
    inputs = {"name": "r", "type": "XA", "description": "d", "policy": json.dumps(policy)}
    (problem,) = conf.provider_problems(token, inputs)
    assert "policy Id, Statement.1.Sid dropped" in problem
    (call,) = conf.TRANSLATIONS[token](conf.Inputs(inputs))
    assert call.request["role"]["policy"] == {
        "Version": "1.1",
        "Statement": [{k: statement[k] for k in statement if k != "Sid"}],
    }


def test_the_lts_ingestion_bodies_are_judged_and_a_bad_one_refused():
    report = report_of("huaweicloud-p3")
    bodies = {call.api: call for _, call in report.calls if call.api.startswith("lts:create_")}
    assert set(bodies) == {"lts:create_host_group", "lts:create_access_config"}
    group = bodies["lts:create_host_group"]
    assert group.request["host_group_type"] == "linux" and len(group.request["host_id_list"]) == 3
    bad = dict(group.request, host_id_list="not a list")
    assert conf.judge_call(conf.Call(group.api, group.model, bad, "test"), RULES, "test").problems


def test_a_disk_the_provider_drops_from_the_as_configuration_is_a_problem():
    # validateDiskSize: a system disk under 40 GB leaves the request without an error (huaweicloud_as.py)
    inputs = {
        "scalingConfigurationName": "n",
        "instanceConfig": {
            "flavor": "f",
            "image": "i",
            "disks": [{"diskType": "SYS", "size": 30, "volumeType": "GPSSD"}],
        },
    }
    report = conf.translate([{"type": "huaweicloud:As/configuration:Configuration", "name": "c", "inputs": inputs}])
    assert report.problems == [
        "c huaweicloud:As/configuration:Configuration: provider: the SYS disk of 30 GB is dropped from the request: "
        "40 to 32768 GB (resource_huaweicloud_as_configuration.go validateDiskSize)"
    ]


def test_the_as_configuration_sends_the_scratch_key_and_gzip_user_data_as_given():
    calls = dict(
        (call.api, call.request)
        for _, call in conf.translate([r.as_json() for r in plan_stack("huaweicloud-as").resources]).calls
    )
    config = calls["as:CreateScalingConfig"]["instance_config"]
    system, scratch = config["disk"]
    assert system == {"size": 200, "volume_type": "GPSSD", "disk_type": "SYS"}  # no key: AS cannot encrypt it
    assert scratch["disk_type"] == "DATA" and scratch["metadata"]["__system__encrypted"] == "1"
    assert base64.b64decode(config["user_data"])[:2] == b"\x1f\x8b"  # the gzip the provider passes on as it is
    group = calls["as:CreateScalingGroup"]
    assert group["iam_agency_name"] == "hw-as-huaweicloud-as-nodes" and group["max_instance_number"] == 4
    assert {t["key"] for t in calls["as:CreateScalingTagInfo"]["tags"]} >= {"gpu-cluster:cluster", "environment"}
