"""Bring your own network (`network.existing`): the cluster joins a VPC / VNet / Shared VPC it does not own.

BYO plans register no network resources (no VPC, subnet, NAT, route, router), put the nodes into the given
subnets, and say in warnings what the network must provide; bad ids exit 2 naming the key.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from components.cli import app
from components.errors import ConfigError
from components.plan import load_stack

from .conftest import ROOT, aws_values, plan_values, spec_of

runner = CliRunner()

NETWORK_TYPES = {
    "aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/natGateway:NatGateway", "aws:ec2/eip:Eip",
    "aws:ec2/internetGateway:InternetGateway", "aws:ec2/routeTable:RouteTable",
    "aws:ec2/routeTableAssociation:RouteTableAssociation", "aws:ec2/vpcEndpoint:VpcEndpoint",
    "gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork", "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "alicloud:vpc/network:Network", "alicloud:vpc/switch:Switch", "alicloud:vpc/natGateway:NatGateway",
    "alicloud:ecs/eipAddress:EipAddress", "alicloud:ecs/eipAssociation:EipAssociation",
    "alicloud:vpc/snatEntry:SnatEntry",
    "azure-native:network:VirtualNetwork", "azure-native:network:Subnet", "azure-native:network:NatGateway",
    "azure-native:network:PublicIPAddress", "azure-native:network:NetworkSecurityGroup",
    "azure-native:network:BastionHost",
}  # fmt: skip

AWS_NET = {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0"]}
GCP_SUBNETS = [
    f"projects/host-prj/regions/us-central1/subnetworks/{n}" for n in ["nodes", *(f"gpu-{i}" for i in range(8))]
]
GCP_NET = {"vpcId": "projects/host-prj/global/networks/shared", "subnetIds": GCP_SUBNETS}
VNET = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net-rg"
    "/providers/Microsoft.Network/virtualNetworks/hub"
)
OTHER_VNET = VNET.replace("/hub", "/spoke")
AZ_NET = {"vpcId": VNET, "subnetIds": [VNET + "/subnets/gpu"]}
ALI_NET = {"vpcId": "vpc-bp1abc234def567gh890i", "subnetIds": ["vsw-bp1abc234def567gh890i"]}


def stack_with(stack: str, network: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    values["gpu-cluster:cluster"]["network"] = network
    values["gpu-cluster:cluster"].update(cluster)
    return values


def azure_byo() -> dict[str, Any]:
    values = stack_with("azure-h100", {"existing": AZ_NET}, access="ssh")
    values["gpu-cluster:cluster"].get("storage", {}).pop("shared", None)  # Managed Lustre needs its own subnet
    return values


CASES = {
    "azure": azure_byo(),
    "aws": aws_values(network={"existing": {**AWS_NET, "securityGroupIds": ["sg-0123456789abcdef0"]}}),
    "gcp": stack_with("gcp-a3mega", {"cidr": "10.8.0.0/20", "existing": GCP_NET}),
    "alicloud": stack_with(
        "alicloud-erdma",
        {"existing": {**ALI_NET, "securityGroupIds": ["sg-bp1abc234def567gh890i"]}},
        zone="cn-beijing-i",
    ),
}


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_a_byo_network_plan_registers_no_network_resources(cloud: str) -> None:
    plan = plan_values(CASES[cloud])
    types = {r.type for r in plan.resources}
    assert not types & NETWORK_TYPES
    warnings = plan.warnings()
    assert any("network.existing" in w and "outbound access" in w for w in warnings)
    assert any("network.existing" in w and "all traffic between the nodes" in w for w in warnings)  # fabric wired
    assert plan.run.outputs["vpcId"] == CASES[cloud]["gpu-cluster:cluster"]["network"]["existing"]["vpcId"]


def test_aws_nodes_use_the_given_subnet_and_groups_beside_the_clusters_own() -> None:
    plan = plan_values(CASES["aws"])
    group = next(r for r in plan.resources if r.type == "aws:autoscaling/group:Group")
    assert group.inputs["vpcZoneIdentifiers"] == ["subnet-0123456789abcdef0"]
    template = next(r for r in plan.resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate")
    for nic in template.inputs["networkInterfaces"]:
        assert nic["securityGroups"] == ["<id of test-aws-sg>", "sg-0123456789abcdef0"]
    sg = next(r for r in plan.resources if r.type == "aws:ec2/securityGroup:SecurityGroup")
    assert sg.inputs["vpcId"] == "vpc-0123456789abcdef0"
    self_rules = [r for r in plan.resources if r.name.startswith("test-aws-sg-self-")]
    assert len(self_rules) == 2  # the EFA self-referencing rule, in and out


def test_gcp_nics_use_the_given_subnetworks_in_nic_order() -> None:
    plan = plan_values(CASES["gcp"])
    template = next(r for r in plan.resources if r.type == "gcp:compute/instanceTemplate:InstanceTemplate")
    assert [nic["subnetwork"] for nic in template.inputs["networkInterfaces"]] == GCP_SUBNETS
    firewall = next(r for r in plan.resources if r.name.endswith("-host-internal"))
    assert firewall.inputs["network"] == GCP_NET["vpcId"] and firewall.inputs["sourceRanges"] == ["10.8.0.0/20"]


def test_alicloud_nodes_use_the_given_vswitch() -> None:
    plan = plan_values(CASES["alicloud"])
    nodes = [r for r in plan.resources if r.type == "alicloud:ecs/instance:Instance"]
    assert nodes and all(n.inputs["vswitchId"] == ALI_NET["subnetIds"][0] for n in nodes)
    assert all("sg-bp1abc234def567gh890i" in n.inputs["securityGroups"] for n in nodes)


def test_azure_nodes_join_the_given_subnet_whose_nsg_applies() -> None:
    plan = plan_values(CASES["azure"])
    vmss = next(r for r in plan.resources if r.type == "azure-native:compute:VirtualMachineScaleSet")
    (config,) = vmss.inputs["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"]
    assert config["ipConfigurations"][0]["subnet"]["id"] == AZ_NET["subnetIds"][0]
    assert plan.run.outputs["securityGroupId"] is None  # the subnet's own NSG
    assert any("the subnet's NSG is the nodes' only one" in w for w in plan.warnings())


def test_aws_shared_storage_goes_into_the_existing_subnet() -> None:
    values = aws_values(storage={"shared": {"kind": "lustre"}}, network={"existing": AWS_NET})
    plan = plan_values(values)
    fsx = next(r for r in plan.resources if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem")
    assert fsx.inputs["subnetIds"] == AWS_NET["subnetIds"][0]
    assert not {r.type for r in plan.resources} & NETWORK_TYPES


def test_without_existing_the_plans_are_unchanged() -> None:
    assert spec_of(aws_values()).network.existing is None


def write(tmp_path: Any, values: dict[str, Any]) -> str:
    path = tmp_path / "Pulumi.byo.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    return str(path)


@pytest.mark.parametrize(
    ("network", "key"),
    [
        ({"existing": {**AWS_NET, "vpcId": "vpc-xyz"}}, "gpu-cluster:cluster.network.existing.vpcId: got 'vpc-xyz'"),
        ({"existing": {**AWS_NET, "subnetIds": ["sn-1"]}}, "gpu-cluster:cluster.network.existing.subnetIds[0]"),
        ({"existing": {**AWS_NET, "securityGroupIds": ["group"]}}, "network.existing.securityGroupIds[0]"),
        (
            {"existing": {**AWS_NET, "subnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]}},
            "gpu-cluster:cluster.network.existing.subnetIds: 2 subnets",
        ),
        ({"existing": {"vpcId": AWS_NET["vpcId"]}}, "gpu-cluster:cluster.network.existing.subnetIds"),
        ({"existing": {**AWS_NET, "subnetsIds": []}}, "did you mean subnetIds?"),
        ({"existing": AWS_NET, "egress": "none"}, "gpu-cluster:cluster.network.egress: with network.existing"),
        ({"existing": AWS_NET, "cidr": "10.1.0.0/16"}, "gpu-cluster:cluster.network.cidr: with network.existing"),
        ({"existing": AWS_NET, "publicIp": True}, "gpu-cluster:cluster.network.publicIp: with network.existing"),
    ],
)
def test_bad_existing_networks_exit_2_naming_the_key(tmp_path: Any, network: dict[str, Any], key: str) -> None:
    result = runner.invoke(app, ["plan", "--config", write(tmp_path, aws_values(network=network))])
    assert result.exit_code == 2, result.output
    assert key in result.stderr
    assert "Traceback" not in result.output + result.stderr


@pytest.mark.parametrize(
    ("values", "key"),
    [
        (
            stack_with("gcp-a3mega", {"cidr": "10.8.0.0/20", "existing": {**GCP_NET, "subnetIds": GCP_SUBNETS[:1]}}),
            "network.existing.subnetIds: 1 subnetworks; a3-megagpu-8g has 9 NICs",
        ),
        (
            stack_with("gcp-a3mega", {"existing": GCP_NET}),
            "gpu-cluster:cluster.network.cidr: required with network.existing on gcp",
        ),
        (
            stack_with(
                "gcp-a3mega",
                {
                    "cidr": "10.8.0.0/20",
                    "existing": {
                        **GCP_NET,
                        "subnetIds": [s.replace("us-central1", "europe-west4") for s in GCP_SUBNETS],
                    },
                },
            ),
            "network.existing.subnetIds[0]: got 'projects/host-prj/regions/europe-west4/subnetworks/nodes'",
        ),
        (
            stack_with("gcp-a3mega", {"cidr": "10.8.0.0/20", "existing": {**GCP_NET, "securityGroupIds": ["x"]}}),
            "network.existing.securityGroupIds: not on gcp",
        ),
        (
            stack_with("alicloud-erdma", {"existing": ALI_NET}),
            "gpu-cluster:cluster.zone: required with network.existing",
        ),
        (
            stack_with("tencentcloud-dev", {"existing": {"vpcId": "vpc-12345678", "subnetIds": ["subnet-12345678"]}}),
            "gpu-cluster:cluster.network.existing: tencentcloud cannot join an existing network yet",
        ),
        (
            stack_with("azure-h100", {"existing": {"vpcId": "x", "subnetIds": ["y"]}}, access="ssh"),
            "gpu-cluster:cluster.network.existing.vpcId: got 'x'; expected a VNet resource id",
        ),
        (
            stack_with("azure-h100", {"existing": {"vpcId": VNET, "subnetIds": [OTHER_VNET + "/subnets/gpu"]}}),
            "network.existing.subnetIds[0]: '" + OTHER_VNET + "/subnets/gpu' is not a subnet of vpcId",
        ),
        (
            stack_with("azure-h100", {"existing": AZ_NET}),
            "gpu-cluster:cluster.access: bastion (the cloud's default) needs a subnet of its own in the VNet",
        ),
        (
            stack_with("azure-h100", {"existing": AZ_NET}, access="ssh", login={}),
            "gpu-cluster:cluster.login: needs a subnet of its own in the VNet",
        ),
    ],
)
def test_bad_existing_networks_per_cloud(values: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        plan_values(values)
    assert key in str(info.value)
