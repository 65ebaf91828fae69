"""Compliance profiles (components/policy/profiles.yaml) and encryption in transit (components/policy/transit.py).

- every shipped stack passes `cis` (planned with `compliance: cis` injected); the stacks with `encryption.key: auto`
  named in MLPS3_STACKS pass `mlps3`, a stack with provider-managed keys fails it (exit 3);
- the profile's levels override the rules' defaults, in the plan and in the policy pack; a policy config still wins;
- the rules the profiles add pass and fail on each cloud's registered inputs;
- the plan prints the profile as a table (rule, control, result) and says what is encrypted in transit.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy import PolicyResource, PolicyResourceOptions, StackValidationArgs
from typer.testing import CliRunner

from components.cli import app
from components.plan import Plan, load_stack
from components.policy import (
    CLUSTER_TYPE,
    PROFILES_FILE,
    RULES,
    Resource,
    evaluate,
    profile_levels,
    rule_levels,
)
from components.policy.transit import metrics_exposure
from policy.pack import stack_policies

from .conftest import ROOT, plan_values, shipped_stacks

SHIPPED = shipped_stacks()
# The shipped stacks with customer-managed keys (encryption.key auto), one per cloud that offers them (Tencent's
# tencentcloud-mlps3 sets mlps3 itself: its KMS key is on the data disks, its CloudAudit trail goes to CLS).
MLPS3_STACKS = [
    s
    for s in ("aws-h100-cmk", "gcp-h100-cmk", "azure-h100-cmk", "alicloud-a100-cmk", "tencentcloud-mlps3")
    if s in SHIPPED
]


def _with_profile(stack: str, profile: str) -> Plan:
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    values["gpu-cluster:cluster"]["compliance"] = profile
    return plan_values(values, stack)


@pytest.mark.parametrize("stack", SHIPPED)
def test_every_shipped_stack_passes_cis(stack: str) -> None:
    plan = _with_profile(stack, "cis")
    compliance = plan.summary()["compliance"]
    failed = [r for r in compliance["rules"] if r["result"] == "fail"]
    assert compliance["profile"] == "cis" and compliance["passed"], failed
    assert not [v for v in plan.violations() if v.level == "mandatory"]
    rules = {r["rule"] for r in compliance["rules"]}
    assert {"customer-managed-keys", "no-public-ip", "no-open-ingress", "node-login", "in-transit"} <= rules
    plan.policy_config = json.loads((ROOT / "policy" / "config.json").read_text())  # the shipped pack config too
    assert plan.summary()["compliance"]["passed"]


def test_the_mlps3_stacks_cover_the_clouds_that_offer_customer_managed_keys() -> None:
    clouds = {load_stack(ROOT, s).values["gpu-cluster:cloud"] for s in MLPS3_STACKS}
    assert {"aws", "gcp"} <= clouds  # the others as their stacks land (MLPS3_STACKS names them)
    assert len(clouds) == len(MLPS3_STACKS)  # one per cloud
    for stack in MLPS3_STACKS:
        assert load_stack(ROOT, stack).values["gpu-cluster:cluster"]["encryption"]["key"] == "auto", stack


@pytest.mark.parametrize("stack", MLPS3_STACKS)
def test_the_customer_managed_key_stacks_pass_mlps3(stack: str) -> None:
    compliance = _with_profile(stack, "mlps3").summary()["compliance"]
    rows = {r["rule"]: r for r in compliance["rules"]}
    assert compliance["passed"], [r for r in compliance["rules"] if r["result"] == "fail"]
    assert rows["customer-managed-keys"] == {
        "rule": "customer-managed-keys",
        "level": "mandatory",
        "control": rows["customer-managed-keys"]["control"],
        "result": "pass",
        "findings": 0,
    }
    assert rows["customer-managed-keys"]["control"].startswith("8.1.4.8 数据保密性")
    assert compliance["benchmark"] == "GB/T 22239-2019 第三级 (MLPS 2.0 level 3)"


def test_provider_managed_keys_fail_mlps3_with_exit_3_and_the_table(tmp_path: Path) -> None:
    values = copy.deepcopy(load_stack(ROOT, "aws-h100").values)
    values["gpu-cluster:cluster"]["compliance"] = "mlps3"
    stack_file = tmp_path / "Pulumi.mlps.yaml"
    stack_file.write_text(yaml.safe_dump({"config": values}, allow_unicode=True))
    runner = CliRunner()
    table = runner.invoke(app, ["plan", "--config", str(stack_file), "--format", "table"], terminal_width=250)
    assert table.exit_code == 3, table.output
    assert "compliance mlps3: GB/T 22239-2019" in table.output and "FAILED" in table.output
    line = next(x for x in table.output.splitlines() if "customer-managed-keys" in x and "8.1.4.8" in x)
    assert "fail" in line
    md = runner.invoke(app, ["plan", "--config", str(stack_file), "--format", "markdown"])
    assert md.exit_code == 3
    assert "| rule | control | result |" in md.output and "| `customer-managed-keys` | 8.1.4.8" in md.output
    out = runner.invoke(app, ["plan", "--config", str(stack_file), "--format", "json"])
    rules = {r["rule"]: r for r in json.loads(out.stdout)["summary"]["compliance"]["rules"]}
    assert rules["customer-managed-keys"]["result"] == "fail" and rules["customer-managed-keys"]["findings"] == 2
    assert rules["no-public-ip"]["result"] == "pass"


def test_without_a_profile_the_new_rules_stay_off_and_the_summary_says_none() -> None:
    levels = rule_levels({})
    assert {levels[r] for r in ("customer-managed-keys", "metadata-protection", "in-transit")} == {"disabled"}
    assert rule_levels({"all": "advisory"})["customer-managed-keys"] == "disabled"  # `all` turns on no profile rule
    assert rule_levels({"customer-managed-keys": "advisory"})["customer-managed-keys"] == "advisory"
    plan = _with_profile("aws-dev", "none")
    assert plan.summary()["compliance"] is None and plan.violations() == []


def test_the_profile_overrides_the_defaults_and_a_policy_config_overrides_the_profile() -> None:
    assert rule_levels({}, "mlps3")["customer-managed-keys"] == "mandatory"
    assert rule_levels({}, "cis")["customer-managed-keys"] == "advisory"
    # as the engine sets the pack's levels: the profile's policy `<rule>-<level>` by its own entry, else by `all`
    assert rule_levels({"customer-managed-keys-mandatory": "disabled"}, "mlps3")["customer-managed-keys"] == "disabled"
    assert rule_levels({"all": "mandatory"}, "cis")["customer-managed-keys"] == "mandatory"
    shipped = json.loads((ROOT / "policy" / "config.json").read_text())  # pins the profiles' advisory levels
    assert rule_levels(shipped, "cis")["customer-managed-keys"] == "advisory"
    assert rule_levels(shipped, "mlps3")["customer-managed-keys"] == "mandatory"
    assert rule_levels(shipped)["customer-managed-keys"] == "disabled"
    assert rule_levels({}, "mlps3")["spot-nodes"] == "mandatory"  # not in the profile: its default


def test_every_profile_rule_exists_with_a_level_and_every_cis_control_names_its_cloud_or_none() -> None:
    data = yaml.safe_load(PROFILES_FILE.read_text())
    names = {r.name for r in RULES}
    for profile, body in data["profiles"].items():
        assert set(profile_levels(profile)) <= names, profile
        for rule, entry in body["rules"].items():
            assert entry["level"] in ("mandatory", "advisory", "disabled"), (profile, rule)
            if profile == "cis":
                assert set(entry["controls"]) <= {"aws", "gcp", "azure", "alicloud", "tencentcloud"}, rule
            else:
                assert "control" in entry, rule
    assert data["benchmarks"]["cis"]["aws"] == "CIS Amazon Web Services Foundations Benchmark v3.0.0"


# --- the rules the profiles add, on each cloud's inputs (camelCase, as registered) ---


def _res(kind: str, props: dict[str, Any], name: str = "r", protect: bool = False) -> Resource:
    return Resource(kind, props, f"urn:{name}", name, protect)


def _cluster(profile: str) -> Resource:
    return _res(CLUSTER_TYPE, {"stackFacts": {"cloud": "aws", "compliance": profile}}, "c")


def _found(rule: str, res: Resource, profile: str = "mlps3") -> list[str]:
    return [v.message for v in evaluate([_cluster(profile), res]) if v.rule == rule]


KEY = "<arn of k>"
CMK_CASES = [
    (
        "aws:ec2/launchTemplate:LaunchTemplate",
        {"blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": {"encrypted": "true", "kmsKeyId": KEY}}]},
        {"blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": {"encrypted": "true"}}]},
    ),
    ("aws:efs/fileSystem:FileSystem", {"encrypted": True, "kmsKeyId": KEY}, {"encrypted": True}),
    ("aws:fsx/lustreFileSystem:LustreFileSystem", {"kmsKeyId": KEY}, {}),
    (
        "gcp:compute/instanceTemplate:InstanceTemplate",
        {"disks": [{"diskEncryptionKey": {"kmsKeySelfLink": KEY}}, {"type": "SCRATCH"}]},
        {"disks": [{"boot": True}]},
    ),
    ("gcp:filestore/instance:Instance", {"kmsKeyName": KEY}, {}),
    ("gcp:container/nodePool:NodePool", {"nodeConfig": {"bootDiskKmsKey": KEY}}, {"nodeConfig": {}}),
    (
        "azure-native:compute:VirtualMachineScaleSet",
        {
            "virtualMachineProfile": {
                "storageProfile": {"osDisk": {"managedDisk": {"diskEncryptionSet": {"id": KEY}}}, "dataDisks": []}
            }
        },
        {"virtualMachineProfile": {"storageProfile": {"osDisk": {"managedDisk": {}}}}},
    ),
    (
        "alicloud:ess/scalingConfiguration:ScalingConfiguration",
        {"systemDiskKmsKeyId": KEY, "dataDisks": [{"kmsKeyId": KEY}]},
        {"systemDiskKmsKeyId": KEY, "dataDisks": [{"encrypted": True}]},
    ),
    ("alicloud:nas/fileSystem:FileSystem", {"encryptType": 2, "kmsKeyId": KEY}, {"encryptType": 1}),
]


@pytest.mark.parametrize(("kind", "good", "bad"), CMK_CASES, ids=[c[0] for c in CMK_CASES])
def test_customer_managed_keys_per_cloud(kind: str, good: dict[str, Any], bad: dict[str, Any]) -> None:
    assert _found("customer-managed-keys", _res(kind, good)) == []
    assert len(_found("customer-managed-keys", _res(kind, bad))) == 1


def test_tencent_data_disks_without_the_key_fail_customer_managed_keys_and_name_the_key_setting() -> None:
    res = _res("tencentcloud:Instance/instance:Instance", {"dataDisks": [{"encrypt": True}]})
    [violation] = [v for v in evaluate([_cluster("mlps3"), res]) if v.rule == "customer-managed-keys"]
    assert violation.level == "mandatory" and violation.fix == "set gpu-cluster:cluster.encryption.key auto"


def test_a_nas_without_the_key_names_the_key_setting() -> None:
    # General-purpose NAS takes the cluster's key (encryptType 2 + kmsKeyId: capabilities/alicloud.yaml encryption.nas)
    for props in ({"encryptType": 1}, {"encryptType": 2}):  # the NAS-managed key; a KMS key type without the key
        nas = _res("alicloud:nas/fileSystem:FileSystem", props)
        [violation] = [v for v in evaluate([_cluster("mlps3"), nas]) if v.rule == "customer-managed-keys"]
        assert violation.fix == "set gpu-cluster:cluster.encryption.key auto", props
    disk = _res("alicloud:ecs/instance:Instance", {"systemDiskEncrypted": True})
    [violation] = [v for v in evaluate([_cluster("mlps3"), disk]) if v.rule == "customer-managed-keys"]
    assert violation.fix == "set gpu-cluster:cluster.encryption.key auto"


def test_a_cpfs_fails_customer_managed_keys_whatever_its_inputs_and_the_fix_names_kind_nfs() -> None:
    # CreateFileSystem takes EncryptType 1 and 2 on standard and extreme only (catalog/storage/alicloud.yaml): the key
    # cannot fix a CPFS, even one sent with encryptType 2 and a key; General-purpose NAS can
    for fs_type in ("cpfs", "cpfsse"):
        for props in ({}, {"encryptType": 2, "kmsKeyId": KEY}):
            cpfs = _res("alicloud:nas/fileSystem:FileSystem", {"fileSystemType": fs_type, **props})
            [violation] = [v for v in evaluate([_cluster("mlps3"), cpfs]) if v.rule == "customer-managed-keys"]
            assert violation.level == "mandatory", (fs_type, props)
            assert violation.fix.startswith("set gpu-cluster:cluster.storage.shared.kind nfs"), (fs_type, props)
            assert "is a CPFS" in violation.message, violation.message
    nas = _res("alicloud:nas/fileSystem:FileSystem", {"fileSystemType": "standard", "encryptType": 2, "kmsKeyId": KEY})
    assert _found("customer-managed-keys", nas) == []


def test_metadata_protection_on_alibaba_and_gke() -> None:
    assert _found("metadata-protection", _res("alicloud:ecs/instance:Instance", {"httpTokens": "required"})) == []
    assert _found("metadata-protection", _res("alicloud:ecs/instance:Instance", {"httpTokens": "optional"}))
    template = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
    assert _found("metadata-protection", _res(template, {"httpTokens": "required"})) == []
    assert _found("metadata-protection", _res(template, {}))
    ack = "alicloud:cs/nodePool:NodePool"
    assert _found("metadata-protection", _res(ack, {"instanceMetadataOptions": {"httpTokens": "required"}})) == []
    assert _found("metadata-protection", _res(ack, {}))
    # an ESS configuration cannot be hardened (no http_tokens in the SDK): always found, the fix names nodeGroup
    ess = _res("alicloud:ess/scalingConfiguration:ScalingConfiguration", {"httpEndpoint": "enabled"})
    [violation] = [v for v in evaluate([_cluster("mlps3"), ess]) if v.rule == "metadata-protection"]
    assert "nodeGroup to instances" in violation.fix
    pool = "gcp:container/nodePool:NodePool"
    assert (
        _found("metadata-protection", _res(pool, {"nodeConfig": {"workloadMetadataConfig": {"mode": "GKE_METADATA"}}}))
        == []
    )
    assert _found("metadata-protection", _res(pool, {"nodeConfig": {}}))


def test_in_transit_and_deletion_protection() -> None:
    account = "azure-native:storage:StorageAccount"
    assert _found("in-transit", _res(account, {"minimumTlsVersion": "TLS1_2"})) == []
    assert _found("in-transit", _res(account, {"minimumTlsVersion": "TLS1_0"})) == [
        "r (azure-native:storage:StorageAccount) accepts TLS below 1.2 (minimumTlsVersion 'TLS1_0')"
    ]
    efs = "aws:efs/fileSystem:FileSystem"
    # EFS refuses plain NFS only with a file system policy denying aws:SecureTransport false (transit.yaml)
    assert _found("in-transit", _res(efs, {})) == [
        "r (aws:efs/fileSystem:FileSystem) accepts NFS without TLS: no file system policy denies requests where "
        "aws:SecureTransport is false"
    ]
    deny = {"Effect": "Deny", "Action": "*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    policy = _res("aws:efs/fileSystemPolicy:FileSystemPolicy", {"policy": json.dumps({"Statement": [deny]})}, "p")
    assert [v for v in evaluate([_cluster("mlps3"), _res(efs, {}), policy]) if v.rule == "in-transit"] == []
    assert _found("deletion-protection", _res(efs, {}, protect=True)) == []
    assert _found("deletion-protection", _res(efs, {}))


# --- the policy pack applies the same profile ---


def _pack(resources: list[Resource]) -> dict[str, list[str | None]]:
    reported: dict[str, list[str | None]] = {}
    for policy in stack_policies():
        args = StackValidationArgs(
            [
                PolicyResource(
                    r.type,
                    r.props,
                    r.urn,
                    r.name,
                    PolicyResourceOptions(r.protect, [], False, [], None, []),
                    None,
                    None,
                    [],
                    {},
                )
                for r in resources
            ],
            config={},
        )
        policy.validate(args, lambda message, urn=None, name=policy.name: reported.setdefault(name, []).append(urn))
    return reported


def test_the_pack_reports_a_rule_under_the_level_the_stacks_profile_gives_it() -> None:
    levels = {p.name: p.enforcement_level.value for p in stack_policies()}
    assert "customer-managed-keys" not in levels  # only profiles use it: `all` in a pack config cannot turn it on
    assert levels["customer-managed-keys-mandatory"] == "mandatory"
    assert levels["customer-managed-keys-advisory"] == "advisory"
    disk = _res("aws:fsx/lustreFileSystem:LustreFileSystem", {"tags": {}}, "fs", protect=True)
    assert _pack([_cluster("mlps3"), disk]).get("customer-managed-keys-mandatory") == ["urn:fs"]
    cis = _pack([_cluster("cis"), disk])
    assert cis.get("customer-managed-keys-advisory") == ["urn:fs"] and "customer-managed-keys-mandatory" not in cis
    assert "deletion-protection-mandatory" not in _pack([_cluster("mlps3"), disk])  # protected: passes
    # without a profile, only the rule's own policy may report (the engine keeps it disabled unless configured)
    none = _pack([_res(CLUSTER_TYPE, {"stackFacts": {"cloud": "aws"}}, "c"), disk])
    assert not {k for k in none if k.startswith("customer-managed-keys-")}


# --- in transit ---


@pytest.mark.parametrize("stack", SHIPPED)
def test_the_metrics_ports_are_reachable_only_from_the_cluster(stack: str) -> None:
    transit = _with_profile(stack, "none").summary()["inTransit"]
    assert transit["metrics"] == {
        "ports": [9400, 9100],
        "insideClusterNetwork": True,
        "note": transit["metrics"]["note"],
    }
    assert "reachable only from the cluster's own network" in transit["metrics"]["note"]
    assert transit["slurmRestApi"].startswith("not built")


def test_a_rule_opening_a_metrics_port_beyond_the_cluster_is_named() -> None:
    subnet = _res("aws:ec2/subnet:Subnet", {"cidrBlock": "10.42.0.0/20"}, "sn")
    inside = _res(
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        {"ipProtocol": "tcp", "fromPort": 9400, "toPort": 9400, "cidrIpv4": "10.42.1.0/24"},
        "in",
    )
    outside = _res(
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        {"ipProtocol": "tcp", "fromPort": 9000, "toPort": 9500, "cidrIpv4": "198.51.100.0/24"},
        "out",
    )
    ssh = _res(
        "gcp:compute/firewall:Firewall",
        {"direction": "INGRESS", "allows": [{"protocol": "tcp", "ports": ["22"]}], "sourceRanges": ["0.0.0.0/0"]},
        "ssh",
    )
    nsg = _res(
        "azure-native:network:NetworkSecurityGroup",
        {
            "securityRules": [
                {
                    "direction": "Inbound",
                    "access": "Allow",
                    "destinationPortRange": "*",
                    "sourceAddressPrefix": "VirtualNetwork",
                }
            ]
        },
        "nsg",
    )
    assert metrics_exposure([subnet, inside, ssh, nsg]) == []
    assert metrics_exposure([subnet, inside, outside]) == ["out admits 198.51.100.0/24 on a metrics port"]


def test_the_shared_filesystem_and_the_kubernetes_api_are_stated() -> None:
    lustre = _with_profile("aws-h100", "none").summary()["inTransit"]
    assert lustre["sharedStorage"]["kind"] == "lustre" and lustre["sharedStorage"]["inTransit"] == "automatic"
    assert lustre["kubernetesApi"] is None
    azure = _with_profile("azure-h100", "none").summary()["inTransit"]
    assert azure["sharedStorage"]["inTransit"] == "not offered"
    eks = _with_profile("aws-eks-h100", "none").summary()["inTransit"]
    assert eks["kubernetesApi"]["tls"] == "TLS 1.2 or later" and eks["sharedStorage"] is None


def test_a_policy_config_turning_a_profile_rule_off_shows_in_the_table(tmp_path: Path) -> None:
    values = copy.deepcopy(load_stack(ROOT, "aws-h100").values)
    values["gpu-cluster:cluster"]["compliance"] = "mlps3"
    stack_file = tmp_path / "Pulumi.mlps.yaml"
    stack_file.write_text(yaml.safe_dump({"config": values}, allow_unicode=True))
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps({"customer-managed-keys-mandatory": "disabled"}))
    out = CliRunner().invoke(
        app, ["plan", "--config", str(stack_file), "--format", "json", "--policy-config", str(levels)]
    )
    assert out.exit_code == 0, out.output
    rules = {r["rule"]: r for r in json.loads(out.stdout)["summary"]["compliance"]["rules"]}
    assert rules["customer-managed-keys"]["level"] == "disabled"
    assert rules["customer-managed-keys"]["result"].startswith("not checked")
