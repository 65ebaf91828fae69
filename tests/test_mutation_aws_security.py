"""What mutation testing of the AWS security settings found unpinned (README "Mutation testing").

The node security group (components/aws/network.py `_security_group`: the self rules EFA needs, SSH only from
sshCidrs, egress only with a way out) and the launch template (components/aws/nodes.py `_launch_template`:
IMDSv2, encrypted volumes, a public IP only on a single interface), as registered with Pulumi's mocks
(camelCase inputs). Four small plans, each made once (`planned`).
"""

from __future__ import annotations

import base64
import gzip
import os
from functools import cache
from typing import Any

import yaml

from components.plan import Plan

from .conftest import aws_values, one, plan_values, resources_of

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGt3Y2x1c3Rlci10ZXN0LWtleS0xMjM0NTY3ODkwMTIz a@b"
SG = "<id of test-aws-sg>"
CLUSTER = "urn:pulumi:test::gpu-cluster::gpu-cluster:index:GpuCluster$gpu-cluster:aws:Cluster::test-aws"
RULES = ("vpc/securityGroupIngressRule:SecurityGroupIngressRule", "vpc/securityGroupEgressRule:SecurityGroupEgressRule")
IMDS_V2 = {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 2}

CLUSTERS: dict[str, dict[str, Any]] = {
    # p5 in a managed group behind the NAT: 32 interfaces, no SSH
    "default": {},
    # one interface, instances, spot, a retained scratch disk, reachable by SSH on its own public IP
    "public": {
        "gpu": None,
        "instanceType": "g4dn.xlarge",
        "nodeGroup": "instances",
        "spot": True,
        "placement": "spread",
        "storage": {"scratch": "disk", "scratchGb": 500, "retainScratch": True},
        "sshPublicKey": KEY,
        "access": "ssh",
        "network": {"publicIp": True, "egress": "none", "sshCidrs": ["198.51.100.0/24", "203.0.113.7/32"]},
    },
    # no way out (SSM through endpoints), a capacity block, an FSx the nodes mount, no EFA: one interface
    "closed": {
        "fabric": "none",
        "network": {"egress": "none"},
        "storage": {"shared": {}, "scratch": "disk", "scratchGb": 300},
        "reservation": "cr-0123456789abcdef0",
        "reservationType": "capacity-block",
    },
    # sshCidrs with a login node: they go to the login node's group, not the nodes'
    "login": {"login": {}, "network": {"sshCidrs": ["198.51.100.0/24"]}, "sshPublicKey": KEY, "spot": True},
}


@cache
def _cached(name: str) -> Plan:
    return plan_values(aws_values(**CLUSTERS[name]))


def planned(name: str) -> Plan:
    """Each plan once per session; under mutmut (which runs only the tests it saw reach a mutated function)
    every test plans for itself, or only the first test to use a plan would be run against the mutants."""
    if "MUTANT_UNDER_TEST" in os.environ:
        return plan_values(aws_values(**CLUSTERS[name]))
    return _cached(name)


def node_rules(name: str) -> dict[str, dict[str, Any]]:
    """The rules on the nodes' own group, by resource name, with their kind (in/out)."""
    rules = {}
    for kind, token in zip(("in", "out"), RULES, strict=True):
        for r in resources_of(planned(name), token):
            if r["inputs"]["securityGroupId"] == SG:
                rules[r["name"]] = {"kind": kind, "parent": r["parent"], **r["inputs"]}
    return rules


def template(name: str) -> dict[str, Any]:
    inputs: dict[str, Any] = one(planned(name), "ec2/launchTemplate:LaunchTemplate")["inputs"]
    return inputs


SELF = {"securityGroupId": SG, "referencedSecurityGroupId": SG, "ipProtocol": "-1"}


def test_nodes_allow_all_traffic_to_and_from_their_own_group_and_nothing_else_by_default():
    sg = one(planned("default"), "ec2/securityGroup:SecurityGroup")
    assert sg["name"] == "test-aws-sg" and sg["parent"] == CLUSTER
    assert sg["inputs"]["vpcId"] == "<id of test-aws-vpc>" and "test" in sg["inputs"]["description"]
    assert sg["inputs"]["tags"]["Name"] == "test-sg"
    rules = node_rules("default")
    assert set(rules) == {"test-aws-sg-self-in", "test-aws-sg-self-out", "test-aws-sg-egress"}
    for name, kind in (("test-aws-sg-self-in", "in"), ("test-aws-sg-self-out", "out")):
        assert rules[name] == {**rules[name], **SELF, "kind": kind}
        assert rules[name]["description"] == "all traffic between nodes (EFA, NCCL)" and "cidrIpv4" not in rules[name]
    assert {r["parent"] for r in rules.values()} == {CLUSTER}  # children of the cluster, as the group is
    egress = rules["test-aws-sg-egress"]
    assert egress == {**egress, "kind": "out", "cidrIpv4": "0.0.0.0/0", "ipProtocol": "-1"}
    assert "referencedSecurityGroupId" not in egress and egress["description"] == "outbound to the internet"


def test_ssh_is_open_only_from_each_ssh_cidr_on_port_22():
    rules = node_rules("public")
    ssh = {name: r for name, r in rules.items() if r.get("fromPort") == 22 or "-ssh-" in name}
    assert set(ssh) == {"test-aws-sg-ssh-198.51.100.0_24", "test-aws-sg-ssh-203.0.113.7_32"}
    for cidr in ("198.51.100.0/24", "203.0.113.7/32"):
        rule = ssh[f"test-aws-sg-ssh-{cidr.replace('/', '_')}"]
        assert rule == {**rule, "kind": "in", "cidrIpv4": cidr, "ipProtocol": "tcp", "fromPort": 22, "toPort": 22}
        assert (rule["description"], rule["parent"]) == ("SSH", CLUSTER)
    # the nodes' public IP is their way out (egress none)
    assert rules["test-aws-sg-egress"]["cidrIpv4"] == "0.0.0.0/0"


def test_without_a_way_out_the_nodes_get_no_internet_egress():
    rules = node_rules("closed")
    assert "test-aws-sg-egress" not in rules
    assert not [r for r in rules.values() if r.get("cidrIpv4") == "0.0.0.0/0"]


def test_with_a_login_node_ssh_cidrs_never_reach_the_nodes():
    rules = node_rules("login")
    assert not [r for r in rules.values() if r.get("cidrIpv4") == "198.51.100.0/24"]
    assert not [n for n in rules if n.startswith("test-aws-sg-ssh-1")]


def test_imds_v2_only_with_a_hop_limit_for_containers_everywhere():
    for name in CLUSTERS:
        assert template(name)["metadataOptions"] == IMDS_V2, name


def test_every_volume_is_encrypted_gp3_and_only_a_retained_scratch_disk_outlives_the_node():
    root = {"volumeType": "gp3", "volumeSize": 200, "encrypted": "true", "deleteOnTermination": "true"}
    assert template("default")["blockDeviceMappings"] == [{"deviceName": "/dev/sda1", "ebs": root}]
    scratch = {"volumeType": "gp3", "volumeSize": 500, "encrypted": "true", "deleteOnTermination": "false"}
    assert template("public")["blockDeviceMappings"] == [
        {"deviceName": "/dev/sda1", "ebs": root},
        {"deviceName": "/dev/sdf", "ebs": scratch},
    ]
    assert template("closed")["blockDeviceMappings"][1] == {  # not retained: it goes with the node
        "deviceName": "/dev/sdf",
        "ebs": {**scratch, "volumeSize": 300, "deleteOnTermination": "true"},
    }
    assert template("public")["ebsOptimized"] == "true"


def test_a_public_ip_only_on_a_single_interface_and_only_when_asked():
    (nic,) = template("public")["networkInterfaces"]
    assert nic == {
        "networkCardIndex": 0,
        "deviceIndex": 0,
        "interfaceType": "interface",
        "securityGroups": [SG],
        "subnetId": "<id of test-aws-nodes>",  # instances: the subnet is on the template
        "associatePublicIpAddress": "true",
        "deleteOnTermination": "true",
    }
    (private,) = template("closed")["networkInterfaces"]  # one interface, no public IP: says so explicitly
    assert (private["associatePublicIpAddress"], "subnetId" in private) == ("false", False)  # managed: the group's
    nics = template("default")["networkInterfaces"]
    assert len(nics) == 33 and not [n for n in nics if "associatePublicIpAddress" in n or "subnetId" in n]
    assert [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in nics[:3]] == [
        (0, 0, "interface"),
        (0, 1, "efa-only"),
        (1, 0, "efa-only"),
    ]
    assert all(n["securityGroups"] == [SG] and n["deleteOnTermination"] == "true" for n in nics)


def test_market_reservation_and_placement_on_the_template():
    spot = template("public")
    assert spot["instanceMarketOptions"] == {
        "marketType": "spot",
        "spotOptions": {"spotInstanceType": "one-time", "instanceInterruptionBehavior": "terminate"},
    }
    assert spot["placement"] == {"groupName": "<autoname:test-aws-pg>"}  # instances: the group is on the template
    assert "capacityReservationSpecification" not in spot
    block = template("closed")
    assert block["instanceMarketOptions"] == {"marketType": "capacity-block"}
    target = block["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0123456789abcdef0"}
    managed_spot = template("login")  # a managed group asks for spot itself: the template stays market-neutral
    assert "instanceMarketOptions" not in managed_spot and "placement" not in managed_spot


def test_the_template_names_type_image_key_profile_and_tags():
    managed, instances = template("login"), template("public")
    assert (managed["instanceType"], instances["instanceType"]) == ("p5.48xlarge", "g4dn.xlarge")
    assert managed["imageId"].startswith("<resolved at deploy: ami Deep Learning Base OSS Nvidia Driver GPU AMI")
    assert managed["keyName"] == instances["keyName"] == "<autoname:test-aws-key>"
    assert "keyName" not in template("default")
    assert managed["iamInstanceProfile"] == {"name": "<autoname:test-aws-node-profile>"}
    assert "iamInstanceProfile" not in instances  # instances carry it themselves
    assert managed["updateDefaultVersion"] is True and managed["tags"]["Name"] == "test-lt"
    specs = {s["resourceType"]: s["tags"]["Name"] for s in managed["tagSpecifications"]}
    assert specs == {"instance": "test-node", "volume": "test-volume", "network-interface": "test-eni"}
    assert all(s["tags"]["gpu-cluster:cluster"] == "test" for s in managed["tagSpecifications"])


def user_data(name: str) -> dict[str, str]:
    text = gzip.decompress(base64.b64decode(template(name)["userData"])).decode()
    assert text.startswith("#cloud-config\n")
    return {f["path"]: f["content"] for f in yaml.safe_load(text)["write_files"]}


def test_user_data_is_the_layouts_bootstrap_with_the_filesystems_mount_source_filled_in():
    assert "/usr/local/sbin/gpu-cluster-efa" in user_data("default")
    assert "/etc/gpu-cluster/mounts.env" not in user_data("default")
    source = "<dns name of test-aws-shared>@tcp:/<mount name of test-aws-shared>"  # the FSx mocks' answers
    assert f'MOUNT_SOURCE="{source}"\n' in user_data("closed")["/etc/gpu-cluster/mounts.env"]


def test_the_template_is_a_child_of_the_cluster():
    assert one(planned("default"), "ec2/launchTemplate:LaunchTemplate")["parent"] == CLUSTER
