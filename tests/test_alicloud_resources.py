"""Alibaba Cloud resources as registered with Pulumi's mocks: the inputs the engine would receive (camelCase)."""

import base64
import gzip
import json

import pulumi
import pytest
import yaml
from rich.console import Console

from components.cluster import GpuCluster
from components.errors import ConfigError
from components.layout import alicloud as ali_layout
from components.plan import make_plan
from components.plan.render import render_json, render_markdown, render_table
from components.plan.stackfile import StackFile

from .conftest import ROOT, one, plan_values, resources_of, spec_of

STACKS = ("alicloud-dev", "alicloud-a100", "alicloud-erdma")


def alicloud_values(**cluster):
    base = {"instanceType": "ecs.gn8is-8x.32xlarge", "nodes": 2, "zone": "cn-hangzhou-k"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-hangzhou", "gpu-cluster:cluster": base}


def system_attachments(plan):
    return [a for a in resources_of(plan, "RolePolicyAttachment") if a["inputs"]["policyType"] == "System"]


def high_performance(nics):
    return [n for n in nics if n.get("networkInterfaceTrafficMode") == "HighPerformance"]


@pytest.fixture(scope="module")
def erdma(stack_plan):
    return stack_plan("alicloud-erdma")


@pytest.fixture(scope="module")
def a100(stack_plan):
    return stack_plan("alicloud-a100")


@pytest.fixture(scope="module")
def dev(stack_plan):
    return stack_plan("alicloud-dev")


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stacks_plan_cleanly(stack, stack_plan):
    plan = stack_plan(stack)
    doc = plan.as_json()
    assert doc["cloud"] == "alicloud"
    assert not [w for w in doc["warnings"] if w.startswith("offline plan:")]  # every invoke answered
    summary = doc["summary"]
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"]
    assert doc["outputs"]["gpuDriver"].startswith("NVIDIA 550.127.08")
    for key in ("vpcId", "subnetIds", "securityGroupId", "imageId", "placementGroup"):
        assert key in doc["outputs"], key


def test_ebmgn8v_instances_wire_two_eris_on_cards_0_and_1(erdma):
    nodes = resources_of(erdma, "ecs/instance:Instance")
    assert [n["name"] for n in nodes] == [f"erdma-train-alicloud-node-{i}" for i in range(4)]
    for node in nodes:
        inputs = node["inputs"]
        assert inputs["networkInterfaceTrafficMode"] == "HighPerformance"
        assert inputs["networkCardIndex"] == 0
        secondary = inputs["networkInterfaces"]
        assert secondary == {
            **secondary,
            "networkCardIndex": 1,
            "networkInterfaceTrafficMode": "HighPerformance",
            "vswitchId": "<id of erdma-train-alicloud-nodes>",
            "securityGroupIds": ["<id of erdma-train-alicloud-sg>"],
        }
        assert inputs["deploymentSetId"] == "<id of erdma-train-alicloud-ds>"
    assert erdma.summary()["fabricGbpsPerNode"] == 160


def node_user_data(node):
    return yaml.safe_load(gzip.decompress(base64.b64decode(node["inputs"]["userData"])).decode())


def test_erdma_user_data_installs_the_stack_then_the_driver(erdma):
    doc = node_user_data(resources_of(erdma, "ecs/instance:Instance")[0])
    runcmd = [" ".join(c) for c in doc["runcmd"]]
    env = {f["path"]: f["content"] for f in doc["write_files"]}["/etc/gpu-cluster/erdma.env"]
    assert "ERDMA_INSTALLER=http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh" in env  # run by the unit
    assert "auto_install_v4.0.sh" in runcmd[-1]


def test_gn8is_managed_scaling_configuration_carries_no_eri():
    # ESS through pulumi-alicloud 4.0.0 can take no ERI (managedGroupLimits fabric): the provider's Create refuses
    # interfaces without top-level groups, and ESS refuses top-level groups beside a primary ENI
    plan = plan_values(alicloud_values(nodeGroup="managed"))
    config = one(plan, "ess/scalingConfiguration:ScalingConfiguration")["inputs"]
    assert "networkInterfaces" not in config
    assert config["securityGroupIds"] == ["<id of test-alicloud-sg>"]
    assert plan.summary()["fabricGbpsPerNode"] == 0
    assert any("gets no eRDMA interface" in w for w in plan.warnings())
    # managed: the scaling configuration takes no deployment set, so none is created and the plan says so
    assert not resources_of(plan, "EcsDeploymentSet")
    assert any("no deployment set" in w for w in plan.warnings())


def test_gn8is_instances_use_an_eri_on_the_primary_eni_only():
    plan = plan_values(alicloud_values(nodeGroup="instances"))
    for node in resources_of(plan, "ecs/instance:Instance"):
        inputs = node["inputs"]
        assert inputs["networkInterfaceTrafficMode"] == "HighPerformance"
        assert "networkInterfaces" not in inputs and "networkCardIndex" not in inputs


def test_gn6i_has_no_eri_anywhere(dev):
    config = one(dev, "ess/scalingConfiguration:ScalingConfiguration")["inputs"]
    assert "networkInterfaces" not in config
    assert config["securityGroupIds"] == ["<id of ali-dev-alicloud-sg>"]
    assert "HighPerformance" not in str([r.inputs for r in dev.resources])
    assert dev.summary()["fabricGbpsPerNode"] == 0
    instances = plan_values(alicloud_values(instanceType="ecs.gn6i-c4g1.xlarge", nodeGroup="instances"))
    for node in resources_of(instances, "ecs/instance:Instance"):
        assert not high_performance([node["inputs"], node["inputs"].get("networkInterfaces") or {}])


def test_deployment_set_strategies():
    cluster = one(plan_values(alicloud_values(nodeGroup="instances")), "EcsDeploymentSet")["inputs"]
    assert cluster["strategy"] == "LowLatency"
    spread = one(plan_values(alicloud_values(nodeGroup="instances", placement="spread")), "EcsDeploymentSet")
    assert spread["inputs"]["strategy"] == "Availability"
    assert not resources_of(plan_values(alicloud_values(nodeGroup="instances", placement="none")), "EcsDeploymentSet")


def test_a100_stack_uses_a_low_latency_set_and_no_fabric(a100):
    ds = one(a100, "EcsDeploymentSet")
    assert ds["inputs"]["strategy"] == "LowLatency"
    for node in resources_of(a100, "ecs/instance:Instance"):
        inputs = node["inputs"]
        assert inputs["instanceType"] == "ecs.gn7e-c16g1.32xlarge"
        assert inputs["deploymentSetId"] == "<id of a100-ali-alicloud-ds>"
        assert "networkInterfaceTrafficMode" not in inputs
    assert a100.as_json()["outputs"]["placementGroup"] == "<id of a100-ali-alicloud-ds>"


def test_snat_path_nat_gateway_eip_and_entry(a100):
    nodes_vsw = next(r for r in resources_of(a100, "vpc/switch:Switch") if r["name"] == "a100-ali-alicloud-nodes")
    nat_vsw = next(r for r in resources_of(a100, "vpc/switch:Switch") if r["name"] == "a100-ali-alicloud-nat")
    assert (nodes_vsw["inputs"]["cidrBlock"], nat_vsw["inputs"]["cidrBlock"]) == ("10.44.0.0/17", "10.44.128.0/17")
    nat = one(a100, "vpc/natGateway:NatGateway")["inputs"]
    assert nat == {
        **nat,
        "natType": "Enhanced",
        "networkType": "internet",
        "vswitchId": "<id of a100-ali-alicloud-nat>",
    }
    assoc = one(a100, "EipAssociation")["inputs"]
    assert assoc == {
        "allocationId": "<id of a100-ali-alicloud-nat-eip>",
        "instanceId": "<id of a100-ali-alicloud-natgw>",
        "instanceType": "Nat",
    }
    snat = one(a100, "vpc/snatEntry:SnatEntry")
    assert snat["inputs"] == {
        **snat["inputs"],
        "snatTableId": "<snat table of a100-ali-alicloud-natgw>",
        "sourceVswitchId": "<id of a100-ali-alicloud-nodes>",
        "snatIp": "<public ip of a100-ali-alicloud-nat-eip>",
    }


def test_egress_none_has_no_nat():
    plan = plan_values(alicloud_values(network={"egress": "none"}))
    for token in ("NatGateway", "EipAddress", "EipAssociation", "SnatEntry"):
        assert not resources_of(plan, token), token
    assert [r["name"] for r in resources_of(plan, "vpc/switch:Switch")] == ["test-alicloud-nodes"]


def test_no_public_ips_unless_asked(a100, dev):
    for node in resources_of(a100, "ecs/instance:Instance"):
        assert node["inputs"]["internetMaxBandwidthOut"] == 0
        assert "internetChargeType" not in node["inputs"]
    assert one(dev, "ScalingConfiguration")["inputs"]["internetMaxBandwidthOut"] == 0
    public = plan_values(alicloud_values(nodeGroup="instances", network={"publicIp": True}))
    for node in resources_of(public, "ecs/instance:Instance"):
        assert (node["inputs"]["internetMaxBandwidthOut"], node["inputs"]["internetChargeType"]) == (
            100,
            "PayByTraffic",
        )


def test_security_group_self_rule_and_ssh_only_from_ssh_cidrs(dev, a100):
    rules = [r["inputs"] for r in resources_of(dev, "SecurityGroupRule")]
    assert all(r["type"] == "ingress" for r in rules)
    self_rules = [r for r in rules if r.get("sourceSecurityGroupId") == r["securityGroupId"]]
    assert self_rules == [{**self_rules[0], "ipProtocol": "all", "portRange": "-1/-1", "policy": "accept"}]
    ssh = [r for r in rules if "cidrIp" in r]
    assert ssh == [{**ssh[0], "cidrIp": "203.0.113.0/24", "ipProtocol": "tcp", "portRange": "22/22"}]
    assert len(rules) == 2  # nothing else inbound
    assert one(dev, "ecs/securityGroup:SecurityGroup")["inputs"]["innerAccessPolicy"] == "Accept"
    assert not [r for r in resources_of(a100, "SecurityGroupRule") if "cidrIp" in r["inputs"]]


def test_disks_are_encrypted_essd_with_the_configured_level(dev, a100):
    config = one(dev, "ScalingConfiguration")["inputs"]
    assert (config["systemDiskCategory"], config["systemDiskEncrypted"]) == ("cloud_essd", True)
    assert config["dataDisks"] == [
        {**config["dataDisks"][0], "category": "cloud_essd", "size": 200, "performanceLevel": "PL0", "encrypted": True}
    ]
    for node in resources_of(a100, "ecs/instance:Instance"):
        disk = node["inputs"]["dataDisks"][0]
        assert (disk["performanceLevel"], disk["size"], disk["encrypted"]) == ("PL2", 2000, True)
        assert node["inputs"]["systemDiskEncrypted"] is True


def test_retained_scratch_is_not_deleted_with_the_node():
    plan = plan_values(alicloud_values(nodeGroup="instances", storage={"retainScratch": True}))
    assert resources_of(plan, "ecs/instance:Instance")[0]["inputs"]["dataDisks"][0]["deleteWithInstance"] is False


def test_spot_managed_and_instances(dev):
    config = one(dev, "ScalingConfiguration")["inputs"]
    assert config["spotStrategy"] == "SpotAsPriceGo"
    group = one(dev, "ess/scalingGroup:ScalingGroup")["inputs"]
    assert group["spotInstanceRemedy"] is True
    assert (group["minSize"], group["maxSize"], group["desiredCapacity"]) == (1, 1, 1)
    assert group["vswitchIds"] == ["<id of ali-dev-alicloud-nodes>"]
    spot = plan_values(alicloud_values(nodeGroup="instances", spot=True))
    node = resources_of(spot, "ecs/instance:Instance")[0]["inputs"]
    assert (node["spotStrategy"], node["spotInterruptionBehavior"], node["instanceChargeType"]) == (
        "SpotAsPriceGo",
        "Terminate",
        "PostPaid",
    )


def test_private_pool_reservation():
    inst = plan_values(alicloud_values(nodeGroup="instances", reservation="eap-bp67acfmxazb4"))
    node = resources_of(inst, "ecs/instance:Instance")[0]["inputs"]
    assert (node["privatePoolOptionsMatchCriteria"], node["privatePoolOptionsId"]) == ("Target", "eap-bp67acfmxazb4")
    managed = plan_values(alicloud_values(nodeGroup="managed", reservation="eap-bp67acfmxazb4"))
    config = one(managed, "ScalingConfiguration")["inputs"]
    assert config["resourcePoolOptionsStrategy"] == "PrivatePoolOnly"
    assert config["resourcePoolOptionsPrivatePoolIds"] == ["eap-bp67acfmxazb4"]


def test_zone_auto_uses_get_zones(dev):
    vsw = next(r for r in resources_of(dev, "vpc/switch:Switch") if r["name"] == "ali-dev-alicloud-nodes")
    assert vsw["inputs"]["zoneId"] == "<first zone in cn-hangzhou selling ecs.gn6i-c4g1.xlarge>"
    pinned = plan_values(alicloud_values())
    assert {r["inputs"]["zoneId"] for r in resources_of(pinned, "vpc/switch:Switch")} == {"cn-hangzhou-k"}


def test_image_auto_and_explicit(erdma):
    image = resources_of(erdma, "ecs/instance:Instance")[0]["inputs"]["imageId"]
    assert image.startswith("<resolved at deploy: newest system image matching ^ubuntu_22_04_uefi_x64")
    explicit = plan_values(alicloud_values(nodeGroup="instances", image="m-bp1abcdef"))
    assert {r["inputs"]["imageId"] for r in resources_of(explicit, "ecs/instance:Instance")} == {"m-bp1abcdef"}
    assert explicit.as_json()["outputs"]["gpuDriver"] is None


def test_every_taggable_resource_is_tagged(a100, dev):
    for plan in (a100, dev):
        for res in plan.resources:
            if res.custom and "tags" in res.inputs:
                assert res.inputs["tags"]["gpu-cluster:cluster"] == plan.spec.name, res.name
        for token in ("vpc/network:Network", "Switch", "NatGateway", "EipAddress", "securityGroup:SecurityGroup"):
            for res in resources_of(plan, token):
                assert "tags" in res["inputs"], res["name"]
    for token in ("ScalingGroup", "ScalingConfiguration"):
        assert one(dev, token)["inputs"]["tags"]["team"] == "ml"


def test_ssh_key_becomes_a_key_pair():
    plan = plan_values(alicloud_values(nodeGroup="instances", sshPublicKey="ssh-ed25519 AAAAC3Nza user@host"))
    key = one(plan, "EcsKeyPair")["inputs"]
    assert key["publicKey"] == "ssh-ed25519 AAAAC3Nza user@host"
    assert {r["inputs"]["keyName"] for r in resources_of(plan, "ecs/instance:Instance")} == {key["keyPairName"]}


def test_scratch_nvme_is_rejected_before_planning():
    with pytest.raises(ConfigError) as info:
        plan_values(alicloud_values(storage={"scratch": "nvme"}))
    assert info.value.key == "gpu-cluster:cluster.storage.scratch"


@pulumi.runtime.test
def test_component_outputs_under_plain_mocks():
    """The component used directly, as a user's own unit test would, with the Output returned."""

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            return f"{args.name}-id", {**args.inputs, "snatTableIds": "stb-1", "ipAddress": "203.0.113.9"}

        def call(self, args):
            return {"ids": ["ubuntu_22_04_uefi_x64_20G_alibase_20240807.vhd"]}

    pulumi.runtime.set_mocks(Mocks(), preview=False)
    cluster = GpuCluster("unit", spec_of(alicloud_values(instanceType="ecs.ebmgn8v.48xlarge", nodeGroup="instances")))

    def check(values):
        vpc_id, fabric, image, placement = values
        assert vpc_id == "unit-alicloud-vpc-id"
        assert fabric == 160
        assert image == "ubuntu_22_04_uefi_x64_20G_alibase_20240807.vhd"
        assert placement == "unit-alicloud-ds-id"

    return pulumi.Output.all(
        cluster.outputs["vpcId"],
        cluster.outputs["fabricGbpsPerNode"],
        cluster.cloud.image_id,
        cluster.outputs["placementGroup"],
    ).apply(check)


# --- identity and access (issue 11) -------------------------------------------------------------


def test_every_node_assumes_a_ram_role_with_no_policy_by_default(a100, dev):
    for plan in (a100, dev):
        role = one(plan, "ram/role:Role")["inputs"]
        trust = json.loads(role["assumeRolePolicyDocument"])
        assert trust["Statement"] == [
            {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}}
        ]
        # least privilege: no system policy unless asked (the managed group's health grant is tested below)
        assert not system_attachments(plan)
        assert plan.as_json()["outputs"]["identity"] == {
            "kind": "ram-role",
            "name": role["roleName"],
            "grants": [],
            "existing": False,
        }
    # instances: one attachment per node (not ecs.Instance roleName, which is ForceNew and deprecated)
    attachments = resources_of(a100, "ecs/ramRoleAttachment:RamRoleAttachment")
    assert sorted(a["inputs"]["instanceId"] for a in attachments) == [
        "<id of a100-ali-alicloud-node-0>",
        "<id of a100-ali-alicloud-node-1>",
    ]
    assert {a["inputs"]["ramRoleName"] for a in attachments} == {one(a100, "ram/role:Role")["inputs"]["roleName"]}
    assert all("roleName" not in n["inputs"] for n in resources_of(a100, "ecs/instance:Instance"))
    # managed: the scaling configuration carries the role for every instance ESS launches
    assert one(dev, "ScalingConfiguration")["inputs"]["roleName"] == one(dev, "ram/role:Role")["inputs"]["roleName"]


def test_identity_policies_read_storage_and_an_existing_role():
    plan = plan_values(
        alicloud_values(nodeGroup="instances", identity={"policies": ["AliyunECSReadOnlyAccess"], "readStorage": True})
    )
    attached = [r["inputs"] for r in resources_of(plan, "RolePolicyAttachment")]
    assert sorted(a["policyName"] for a in attached) == ["AliyunECSReadOnlyAccess", "AliyunOSSReadOnlyAccess"]
    assert {a["policyType"] for a in attached} == {"System"}
    assert plan.as_json()["outputs"]["identity"]["grants"] == ["AliyunECSReadOnlyAccess", "AliyunOSSReadOnlyAccess"]
    existing = plan_values(
        alicloud_values(nodeGroup="managed", identity={"existing": "team-gpu-role", "readStorage": True})
    )
    assert not resources_of(existing, "ram/role:Role")
    # the read-storage grant and the managed group's health grant, both on the existing role
    assert {a["inputs"]["roleName"] for a in resources_of(existing, "RolePolicyAttachment")} == {"team-gpu-role"}
    assert len(system_attachments(existing)) == 1
    assert one(existing, "ScalingConfiguration")["inputs"]["roleName"] == "team-gpu-role"
    assert existing.as_json()["outputs"]["identity"]["name"] == "team-gpu-role"


def test_session_manager_is_the_default_and_opens_no_port(a100, erdma):
    for plan in (a100, erdma):
        status = one(plan, "EcsSessionManagerStatus")
        assert status["inputs"] == {"sessionManagerStatusName": "sessionManagerStatus", "status": "Enabled"}
        assert status["retainOnDelete"] is True  # account-wide: destroying one cluster never turns it off
        # nothing inbound from outside the VPC: only the group's own rule
        rules = [r["inputs"] for r in resources_of(plan, "SecurityGroupRule")]
        assert [r for r in rules if "cidrIp" in r] == []
        assert all(r["sourceSecurityGroupId"] == r["securityGroupId"] for r in rules)
        assert not resources_of(plan, "EcsKeyPair")
    access = erdma.as_json()["outputs"]["access"]
    assert access == {
        "method": "session-manager",
        "command": "ali-instance-cli session --instance <id of erdma-train-alicloud-node-0>",
        "nodes": "aliyun ecs DescribeInstances --RegionId cn-beijing --Tag.1.Key gpu-cluster:cluster "
        "--Tag.1.Value erdma-train",
    }
    assert erdma.as_json()["outputs"]["privateIps"] == [
        f"<private ip of erdma-train-alicloud-node-{i}>" for i in range(4)
    ]


def test_managed_access_command_names_the_unknown_instance(dev):
    outputs = dev.as_json()["outputs"]
    assert outputs["access"]["command"] == "ali-instance-cli session --instance <instance id>"
    assert "privateIps" not in outputs  # ESS: list them with the nodes command


def test_access_ssh_and_none_build_no_session_manager():
    ssh = plan_values(
        alicloud_values(access="ssh", sshPublicKey="ssh-ed25519 AAAAC3Nza user@host", network={"publicIp": True})
    )
    assert not resources_of(ssh, "EcsSessionManagerStatus")
    assert ssh.as_json()["outputs"]["access"]["command"] == "ssh -i <private key> root@<public ip>"
    none = plan_values(alicloud_values(access="none"))
    assert not resources_of(none, "EcsSessionManagerStatus") and not resources_of(none, "EcsKeyPair")
    assert none.as_json()["outputs"]["access"]["method"] == "none"


@pytest.fixture(scope="module")
def login():
    return plan_values(
        alicloud_values(
            nodeGroup="instances",
            access="ssh",
            sshPublicKey="ssh-ed25519 AAAAC3Nza user@host",
            network={"sshCidrs": ["203.0.113.0/24"], "publicIp": True},
            login={"publicIp": True},
        )
    )


def test_login_node_is_the_only_place_ssh_cidrs_and_a_public_ip_land(login):
    nodes = [n for n in resources_of(login, "ecs/instance:Instance") if "-node-" in n["name"]]
    host = next(n for n in resources_of(login, "ecs/instance:Instance") if n["name"] == "test-alicloud-login")
    assert all(n["inputs"]["internetMaxBandwidthOut"] == 0 for n in nodes)
    assert host["inputs"]["internetMaxBandwidthOut"] == 100
    assert host["inputs"]["instanceType"] == "ecs.g7.large"
    assert host["inputs"]["securityGroups"] == ["<id of test-alicloud-login-sg>"]
    assert host["inputs"]["vswitchId"] == "<id of test-alicloud-nodes>"
    assert host["inputs"]["keyName"] == one(login, "EcsKeyPair")["inputs"]["keyPairName"]
    assert "^ubuntu_22_04_x64_20G_alibase_" in host["inputs"]["imageId"]  # a CPU image, no GPU driver
    # VM mode: the login node's only user data is the self-hosted Prometheus (auto: a login node and NAT egress)
    assert login.layout.monitoring is not None
    assert host["inputs"]["userData"] == login.layout.user_data_b64_for(login.layout.monitoring.vm_user_data)
    rules = {r["name"]: r["inputs"] for r in resources_of(login, "SecurityGroupRule")}
    cidr_rules = [r for r in rules.values() if "cidrIp" in r]
    assert cidr_rules == [{**cidr_rules[0], "cidrIp": "203.0.113.0/24", "portRange": "22/22"}]
    assert cidr_rules[0]["securityGroupId"] == "<id of test-alicloud-login-sg>"
    from_login = rules["test-alicloud-sg-ssh-from-login"]
    assert (from_login["securityGroupId"], from_login["sourceSecurityGroupId"]) == (
        "<id of test-alicloud-sg>",
        "<id of test-alicloud-login-sg>",
    )
    role = [r["inputs"] for r in resources_of(login, "RamRoleAttachment")]
    assert {"instanceId": "<id of test-alicloud-login>", "ramRoleName": "test-test-nodes"} in role
    assert (
        login.as_json()["outputs"]["access"]["command"]
        == "ssh -i <private key> root@<public ip of test-alicloud-login>"
    )


SECRET_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAlicloudSecretMaterialNeverShown me@laptop"


def test_a_secure_ssh_key_never_reaches_any_output_on_alibaba(capsys):
    """Issue 13 item 2: a `secure:` sshPublicKey is secret in the key pair and in every rendering."""
    values = alicloud_values(nodeGroup="instances", sshPublicKey=SECRET_KEY)
    stack = StackFile("gpu-cluster", "secret", ROOT / "Pulumi.secret.yaml", values, ("gpu-cluster:cluster",))
    plan = make_plan(ROOT, stack)
    console = Console(record=True, width=200)
    render_table(plan, console)
    texts = [
        render_json(plan),
        render_markdown(plan),
        console.export_text(),
        json.dumps(plan.run.outputs),
        json.dumps([r.as_json() for r in plan.resources]),
        "\n".join(plan.warnings()),
        capsys.readouterr().out,
    ]
    assert all("AlicloudSecretMaterial" not in text for text in texts)
    assert one(plan, "EcsKeyPair")["inputs"]["publicKey"] == "[secret]"
    # the nodes still get the key pair by name
    assert {n["inputs"]["keyName"] for n in resources_of(plan, "ecs/instance:Instance")} == {"secret-secret"}


# --- what the nodes get (issue 13 items 8, 9, 14) -------------------------------------------------


def test_erdma_stack_claims_160_only_because_its_user_data_brings_both_eris_up(erdma):
    node = resources_of(erdma, "ecs/instance:Instance")[0]
    env = {f["path"]: f["content"] for f in node_user_data(node)["write_files"]}["/etc/gpu-cluster/erdma.env"]
    assert env.startswith("ERI_COUNT=2\nMTU=1400\n")
    assert erdma.summary()["fabricGbpsPerNode"] == 160
    # the same registered nodes without the bring-up part carry one ERI's worth
    stripped = base64.b64encode(b"#cloud-config\n{}\n").decode()
    nodes = [{**n, "inputs": {**n["inputs"], "userData": stripped}} for n in resources_of(erdma, "Instance")]
    assert ali_layout.count_wired_gbps(nodes, erdma.spec.instance.gbps_per_fabric_device) == 80


def test_managed_two_eri_group_reports_what_ess_wires():
    plan = plan_values(alicloud_values(instanceType="ecs.ebmgn8v.48xlarge", nodeGroup="managed", placement="cluster"))
    summary = plan.summary()
    assert (summary["fabricGbpsPerNode"], summary["fabricGbpsRated"]) == (0, 160)
    assert plan.layout.placement_applied == "none"
    assert plan.as_json()["outputs"]["placementApplied"] == "none"
    assert not resources_of(plan, "EcsDeploymentSet")


def test_spot_instances_are_planned_without_a_deployment_set():
    plan = plan_values(alicloud_values(nodeGroup="instances", spot=True))
    assert not resources_of(plan, "EcsDeploymentSet")
    nodes = resources_of(plan, "ecs/instance:Instance")
    assert all(n["inputs"]["spotStrategy"] == "SpotAsPriceGo" and "deploymentSetId" not in n["inputs"] for n in nodes)
    # placement auto resolves to none for spot on Alibaba (spec info); an explicit cluster is dropped with a warning
    assert any(f.message.startswith("auto resolves to none for spot nodes") for f in plan.spec.findings)
    forced = plan_values(alicloud_values(nodeGroup="instances", spot=True, placement="cluster"))
    assert not resources_of(forced, "EcsDeploymentSet")
    assert any("cannot create spot" in w for w in forced.warnings())


def test_more_than_20_nodes_in_a_deployment_set_is_refused_before_any_resource():
    with pytest.raises(ConfigError) as info:
        plan_values(alicloud_values(nodeGroup="instances", nodes=21))
    # raised by the layout inside the program: the key leads the one-line message
    assert str(info.value).startswith("gpu-cluster:cluster.placement: cluster is a LowLatency deployment set")


# --- issue 12: self-removal grant, metrics -------------------------------------------------------------------


def test_the_health_grant_is_exactly_set_instance_health_on_the_nodes_own_group(dev):
    policy = one(dev, "ram/policy:Policy")["inputs"]
    document = json.loads(policy["policyDocument"])
    group = one(dev, "ess/scalingGroup:ScalingGroup")["name"]
    assert document == {
        "Statement": [
            {
                "Action": ["ess:SetInstanceHealth"],
                "Effect": "Allow",
                "Resource": [f"acs:ess:cn-hangzhou:<resolved at deploy: the account id>:scalinggroup/<id of {group}>"],
            }
        ],
        "Version": "1",
    }
    custom = [a["inputs"] for a in resources_of(dev, "RolePolicyAttachment") if a["inputs"]["policyType"] == "Custom"]
    assert custom == [
        {
            "policyName": policy["policyName"],
            "policyType": "Custom",
            "roleName": one(dev, "ram/role:Role")["inputs"]["roleName"],
        }
    ]
    health = dev.as_json()["outputs"]["health"]
    assert health["action"] == "replace" and health["grant"]["resource"] == document["Statement"][0]["Resource"][0]


def test_instances_and_report_get_no_grant(a100, erdma):
    for plan in (a100, erdma, plan_values(alicloud_values(nodeGroup="managed", health={"action": "report"}))):
        assert not resources_of(plan, "ram/policy:Policy")
        assert not [a for a in resources_of(plan, "RolePolicyAttachment") if a["inputs"]["policyType"] == "Custom"]
        assert plan.as_json()["outputs"]["health"]["action"] == "report"


def _admits(rule, port):
    low, high = (int(p) for p in rule["portRange"].split("/"))
    return rule["ipProtocol"] in ("tcp", "all") and (low == high == -1 or low <= port <= high)


def test_metrics_ports_are_closed_to_everything_outside_the_nodes_group(a100, dev, erdma):
    login = plan_values(
        alicloud_values(nodeGroup="instances", login={"publicIp": True}, network={"sshCidrs": ["0.0.0.0/0"]})
    )
    for plan in (a100, dev, erdma, login):
        groups = {g["name"] for g in resources_of(plan, "ecs/securityGroup:SecurityGroup")}
        nodes_sg = f"<id of {plan.spec.name}-alicloud-sg>"
        assert f"{plan.spec.name}-alicloud-sg" in groups
        for res in resources_of(plan, "SecurityGroupRule"):
            rule = res["inputs"]
            if rule["type"] != "ingress" or rule["securityGroupId"] != nodes_sg:
                continue
            for port in (9400, 9100):
                if _admits(rule, port):
                    # only the group itself, or the login node's group when it runs Prometheus: never a CIDR
                    login_sg = f"<id of {plan.spec.name}-alicloud-login-sg>"
                    allowed = {nodes_sg, *([login_sg] if plan.layout.monitoring is not None else [])}
                    assert "cidrIp" not in rule and rule["sourceSecurityGroupId"] in allowed, (res["name"], port)
    metrics = dev.as_json()["outputs"]["metrics"]
    assert [(e["name"], e["port"], e["path"]) for e in metrics["endpoints"]] == [
        ("dcgm-exporter", 9400, "/metrics"),
        ("node-exporter", 9100, "/metrics"),
    ]
    assert "DescribeInstances" in metrics["scrape"] and "own security group" in metrics["scrape"]


def test_gzip_user_data_is_what_the_layout_rendered(erdma):
    node = resources_of(erdma, "ecs/instance:Instance")[0]
    assert gzip.decompress(base64.b64decode(node["inputs"]["userData"])).decode() == erdma.layout.user_data
