"""AWS resources as registered with Pulumi's mocks: the inputs the engine would receive (camelCase)."""

import base64
import gzip

import pulumi
import pytest
import yaml

from components.cluster import GpuCluster

from .conftest import aws_values, one, plan_values, resources_of, spec_of


def decode_user_data(b64: str) -> str:
    """The launch template's user data as the node reads it (Base64 of gzip: EC2's 16 KB limit)."""
    return gzip.decompress(base64.b64decode(b64)).decode()


@pytest.fixture(scope="module")
def h100(stack_plan):
    return stack_plan("aws-h100")


def test_p5_launch_template_wires_32_efa_on_32_cards(h100):
    lt = one(h100, "launchTemplate:LaunchTemplate")["inputs"]
    nics = lt["networkInterfaces"]
    efa = [n for n in nics if n["interfaceType"] == "efa-only"]
    assert len(efa) == 32
    assert sorted(n["networkCardIndex"] for n in efa) == list(range(32))
    assert nics[0] == {**nics[0], "networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    # EC2 rejects the flag, even "false", when a node launches with several interfaces
    assert not any("associatePublicIpAddress" in n for n in nics)
    assert all(n["securityGroups"] == ["<id of llm-train-aws-sg>"] for n in nics)
    assert "vpcSecurityGroupIds" not in lt  # not allowed beside per-interface groups


def test_launch_template_security_defaults(h100):
    lt = one(h100, "launchTemplate:LaunchTemplate")["inputs"]
    assert lt["metadataOptions"]["httpTokens"] == "required"
    root = lt["blockDeviceMappings"][0]
    assert root["deviceName"] == "/dev/sda1"
    assert root["ebs"] == {**root["ebs"], "encrypted": "true", "volumeType": "gp3", "volumeSize": 200}
    assert lt["instanceType"] == "p5.48xlarge"
    # image: auto boots the catalog's pinned DLAMI release, looked up by exact name and owner (aws.ec2.get_ami)
    dlami = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20260619"
    assert lt["imageId"] == f"<resolved at deploy: ami {dlami} of 898082745236>"
    assert {"instance", "volume", "network-interface"} == {t["resourceType"] for t in lt["tagSpecifications"]}


def test_user_data_mounts_scratch(h100):
    user_data = decode_user_data(one(h100, "launchTemplate:LaunchTemplate")["inputs"]["userData"])
    assert user_data.startswith("#cloud-config\n")
    files = {f["path"]: f for f in yaml.safe_load(user_data)["write_files"]}
    assert "mdadm --create" in files["/usr/local/sbin/gpu-cluster-scratch"]["content"]
    assert 'EXPECTED_DEVICES="8"' in files["/etc/gpu-cluster/scratch.env"]["content"]
    assert (
        "ExecStart=/usr/local/sbin/gpu-cluster-scratch"
        in files["/etc/systemd/system/gpu-cluster-scratch.service"]["content"]
    )


def test_cluster_placement_group_and_asg(h100):
    assert one(h100, "placementGroup:PlacementGroup")["inputs"]["strategy"] == "cluster"
    asg = one(h100, "autoscaling/group:Group")["inputs"]
    assert (asg["desiredCapacity"], asg["minSize"], asg["maxSize"]) == (4, 4, 4)
    assert asg["placementGroup"] == "<autoname:llm-train-aws-pg>"
    assert asg["vpcZoneIdentifiers"] == ["<id of llm-train-aws-nodes>"]
    tags = {t["key"]: t for t in asg["tags"]}
    assert tags["gpu-cluster:cluster"]["value"] == "llm-train" and tags["team"]["propagateAtLaunch"] is True


def test_security_group_allows_itself_and_no_ssh_by_default(h100):
    node_sg = "<id of llm-train-aws-sg>"  # the shared filesystem's group has its own rules (test_aws_storage.py)
    ingress = [r["inputs"] for r in resources_of(h100, "SecurityGroupIngressRule")]
    egress = [r["inputs"] for r in resources_of(h100, "SecurityGroupEgressRule")]
    ingress, egress = ([r for r in rules if r["securityGroupId"] == node_sg] for rules in (ingress, egress))
    self_in = [r for r in ingress if r.get("referencedSecurityGroupId") == r["securityGroupId"]]
    self_out = [r for r in egress if r.get("referencedSecurityGroupId") == r["securityGroupId"]]
    assert len(self_in) == 1 and self_in[0]["ipProtocol"] == "-1"
    assert len(self_out) == 1 and self_out[0]["ipProtocol"] == "-1"
    assert not [r for r in ingress if "cidrIpv4" in r]


def test_no_public_ip_and_nat_egress(h100):
    subnets = {r["name"]: r["inputs"] for r in resources_of(h100, "ec2/subnet:Subnet")}
    assert subnets["llm-train-aws-nodes"]["mapPublicIpOnLaunch"] is False
    assert subnets["llm-train-aws-nodes"]["availabilityZone"] == "us-east-1a"
    nodes_rt = next(r for r in resources_of(h100, "RouteTable") if r["name"] == "llm-train-aws-nodes-rt")
    assert nodes_rt["inputs"]["routes"] == [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "<id of llm-train-aws-nat>"}]


def test_every_taggable_resource_is_tagged(h100):
    for res in h100.resources:
        if res.custom and isinstance(res.inputs.get("tags"), dict):
            assert res.inputs["tags"]["gpu-cluster:cluster"] == "llm-train", res.name
    for token in ("Vpc", "Subnet", "SecurityGroup", "NatGateway", "Eip", "PlacementGroup", "LaunchTemplate"):
        for res in resources_of(h100, f":{token}"):
            assert "tags" in res["inputs"], res["name"]


def test_g4dn_xlarge_has_no_efa_and_a_one_member_placement_group(stack_plan):
    dev = stack_plan("aws-dev")
    nics = one(dev, "LaunchTemplate")["inputs"]["networkInterfaces"]
    assert [n["interfaceType"] for n in nics] == ["interface"]
    assert nics[0]["associatePublicIpAddress"] == "false"  # one interface: the flag is allowed and explicit
    # one node keeps its group, so a cluster shrunk to one node and grown back keeps its nodes (docs/day2.md)
    group = one(dev, "PlacementGroup")
    assert group["inputs"]["strategy"] == "cluster"
    asg = one(dev, "autoscaling/group:Group")["inputs"]
    assert asg["placementGroup"] == f"<autoname:{group['name']}>"
    dist = asg["mixedInstancesPolicy"]["instancesDistribution"]
    assert dist["onDemandPercentageAboveBaseCapacity"] == 0 and dist["spotAllocationStrategy"] == "capacity-optimized"
    assert "launchTemplate" not in asg
    ssh = [r["inputs"] for r in resources_of(dev, "SecurityGroupIngressRule") if "cidrIpv4" in r["inputs"]]
    assert ssh == [{**ssh[0], "cidrIpv4": "203.0.113.0/24", "fromPort": 22, "toPort": 22, "ipProtocol": "tcp"}]


def test_instances_mode_p4d_has_one_instance_per_node_and_4_efa(stack_plan):
    pair = stack_plan("aws-a100-instances")
    instances = resources_of(pair, "ec2/instance:Instance")
    assert [r["name"] for r in instances] == ["a100-pair-aws-node-0", "a100-pair-aws-node-1"]
    lt = one(pair, "LaunchTemplate")["inputs"]
    efa = [n for n in lt["networkInterfaces"] if n["interfaceType"] == "efa-only"]
    assert [(n["networkCardIndex"], n["deviceIndex"]) for n in efa] == [(0, 1), (1, 0), (2, 0), (3, 0)]
    assert all(n["subnetId"] == "<id of a100-pair-aws-nodes>" for n in lt["networkInterfaces"])
    assert lt["placement"]["groupName"] == "<autoname:a100-pair-aws-pg>"
    scratch = lt["blockDeviceMappings"][1]
    assert scratch["deviceName"] == "/dev/sdf"
    assert scratch["ebs"] == {**scratch["ebs"], "volumeSize": 2000, "encrypted": "true", "deleteOnTermination": "false"}
    assert not resources_of(pair, "autoscaling/group:Group")


@pytest.mark.parametrize(("itype", "efa"), [("p5en.48xlarge", 16), ("g6e.48xlarge", 4), ("p4d.24xlarge", 4)])
def test_efa_per_family(itype, efa):
    plan = plan_values(aws_values(gpu=None, instanceType=itype, nodes=2))
    nics = one(plan, "LaunchTemplate")["inputs"]["networkInterfaces"]
    assert sum(n["interfaceType"] == "efa-only" for n in nics) == efa
    assert plan.summary()["fabricGbpsPerNode"] == plan.summary()["fabricGbpsRated"]


def test_capacity_block_reservation_goes_into_the_launch_template():
    plan = plan_values(aws_values(reservation="cr-0123456789abcdef0", reservationType="capacity-block"))
    lt = one(plan, "LaunchTemplate")["inputs"]
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-0123456789abcdef0"
    }
    assert not resources_of(plan, "PlacementGroup")


def test_spot_instances_use_launch_template_market_options():
    plan = plan_values(aws_values(gpu="T4:1", nodes=1, nodeGroup="instances", spot=True))
    market = one(plan, "LaunchTemplate")["inputs"]["instanceMarketOptions"]
    assert market["marketType"] == "spot"
    assert market["spotOptions"]["instanceInterruptionBehavior"] == "terminate"


def test_ssh_key_becomes_a_key_pair():
    plan = plan_values(aws_values(sshPublicKey="ssh-ed25519 AAAAC3Nza user@host"))
    assert one(plan, "KeyPair")["inputs"]["publicKey"] == "ssh-ed25519 AAAAC3Nza user@host"
    assert one(plan, "LaunchTemplate")["inputs"]["keyName"] == "<autoname:test-aws-key>"


@pulumi.runtime.test
def test_component_outputs_under_plain_mocks():
    """The component used directly, as a user's own unit test would, with the Output returned."""

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            return f"{args.name}-id", {**args.inputs, "name": args.name, "latestVersion": 3}

        def call(self, args):
            # getParameter (SSM) answers value, getAmi (the pinned release image: auto boots) answers id
            return {"value": "ami-0abc", "id": "ami-0abc", "names": ["us-east-1a"]}

    pulumi.runtime.set_mocks(Mocks(), preview=False)
    cluster = GpuCluster("unit", spec_of(aws_values()))

    def check(values):
        vpc_id, fabric, lt_version, image = values
        assert vpc_id == "unit-aws-vpc-id"
        assert fabric == 3200
        assert lt_version == "3"
        assert image == "ami-0abc"

    cloud = cluster.cloud
    return pulumi.Output.all(
        cluster.outputs["vpcId"],
        cluster.outputs["fabricGbpsPerNode"],
        cloud.launch_template.latest_version.apply(str),
        cloud.image_id,
    ).apply(check)
