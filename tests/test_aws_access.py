"""AWS identity and access as registered with the mocks: the node role, SSM, the login node, outputs."""

import json

import pulumi
import pytest

from components.cluster import GpuCluster
from components.errors import ConfigError
from components.layout import aws as aws_layout

from .conftest import aws_values, one, plan_values, resources_of, spec_of

BASE_POLICIES = [
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy",
]
S3_READ = "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"
MY_POLICY = "arn:aws:iam::123456789012:policy/team/datasets-read"


@pytest.fixture(scope="module")
def private():
    """SSM with no NAT (egress: none), nodes on an existing instance profile."""
    return plan_values(aws_values(network={"egress": "none"}, identity={"existing": "ml-nodes"}))


@pytest.fixture(scope="module")
def login():
    """A login node with a public IP, SSH from one range, extra grants."""
    return plan_values(
        aws_values(
            sshPublicKey="ssh-ed25519 AAAAC3Nza user@host",
            access="ssh",
            network={"sshCidrs": ["198.51.100.0/24"]},
            login={"publicIp": True},
            identity={"readStorage": True, "policies": [MY_POLICY]},
        )
    )


def policy_arns(plan):
    return sorted(r["inputs"]["policyArn"] for r in resources_of(plan, "RolePolicyAttachment"))


def test_nodes_get_a_role_ec2_assumes_with_exactly_the_base_policies(stack_plan):
    h100 = stack_plan("aws-h100")
    trust = json.loads(one(h100, "iam/role:Role")["inputs"]["assumeRolePolicy"])
    assert trust["Statement"] == [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ]
    assert policy_arns(h100) == sorted(BASE_POLICIES)
    profile = one(h100, "InstanceProfile")
    assert profile["inputs"]["role"] == "<autoname:llm-train-aws-node-role>"
    lt = one(h100, "LaunchTemplate")["inputs"]
    assert lt["iamInstanceProfile"] == {"name": "<autoname:llm-train-aws-node-profile>"}
    assert h100.run.outputs["identity"] == {
        "kind": "instance-profile",
        "name": "<autoname:llm-train-aws-node-profile>",
        "existing": False,
        "grants": BASE_POLICIES,
        # health.action replace (the managed default): exactly SetInstanceHealth on exactly this group
        "inline": [
            {"action": "autoscaling:SetInstanceHealth", "resource": "<arn of llm-train-aws-asg>"},
            # the drain hook (update:): complete the lifecycle action of its own group, find that group's name
            {
                "action": ["autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"],
                "resource": "<arn of llm-train-aws-asg>",
            },
            {"action": ["autoscaling:DescribeAutoScalingInstances"], "resource": "*"},
        ],
    }


def test_instances_mode_carries_the_profile_on_each_instance_not_the_template(stack_plan):
    # a new template version would replace running instances (they pin its latest version)
    pair = stack_plan("aws-a100-instances")
    assert "iamInstanceProfile" not in one(pair, "LaunchTemplate")["inputs"]
    nodes = [r for r in resources_of(pair, "ec2/instance:Instance")]
    assert [n["inputs"]["iamInstanceProfile"] for n in nodes] == ["<autoname:a100-pair-aws-node-profile>"] * 2


def test_read_storage_and_policies_add_grants_and_the_login_node_shares_the_profile(login):
    assert policy_arns(login) == sorted([*BASE_POLICIES, S3_READ, MY_POLICY])
    assert login.run.outputs["identity"]["grants"] == [*BASE_POLICIES, S3_READ, MY_POLICY]
    names = {r["name"] for r in resources_of(login, "RolePolicyAttachment")}
    assert "test-aws-node-role-123456789012-team-datasets-read" in names
    node = one(login, "ec2/instance:Instance")["inputs"]
    assert node["iamInstanceProfile"] == "<autoname:test-aws-node-profile>"


def test_existing_profile_creates_no_role(private):
    assert not resources_of(private, "iam/")
    assert one(private, "LaunchTemplate")["inputs"]["iamInstanceProfile"] == {"name": "ml-nodes"}
    assert private.run.outputs["identity"] == {
        "kind": "instance-profile",
        "name": "ml-nodes",
        "existing": True,
        "grants": [],
    }


@pytest.mark.parametrize("extra", [{"policies": [MY_POLICY]}, {"readStorage": True}])
def test_existing_profile_with_grants_is_refused(extra):
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(aws_values(identity={"existing": "ml-nodes", **extra})))
    assert info.value.key.startswith("gpu-cluster:cluster.identity.")
    assert "identity.existing" in info.value.message


def test_ssm_without_nat_gets_the_three_interface_endpoints(private):
    endpoints = {r["name"]: r["inputs"] for r in resources_of(private, "VpcEndpoint")}
    assert sorted(e["serviceName"] for e in endpoints.values()) == [
        "com.amazonaws.us-east-1.ec2messages",
        "com.amazonaws.us-east-1.ssm",
        "com.amazonaws.us-east-1.ssmmessages",
    ]
    for e in endpoints.values():
        assert (e["vpcEndpointType"], e["privateDnsEnabled"]) == ("Interface", True)
        assert e["subnetIds"] == ["<id of test-aws-nodes>"]
        assert e["securityGroupIds"] == ["<id of test-aws-endpoints-sg>"]
    ingress = [r["inputs"] for r in resources_of(private, "SecurityGroupIngressRule")]
    https = [r for r in ingress if r["securityGroupId"] == "<id of test-aws-endpoints-sg>"]
    assert https == [{**https[0], "cidrIpv4": "10.42.0.0/16", "fromPort": 443, "toPort": 443, "ipProtocol": "tcp"}]
    egress = [r["inputs"] for r in resources_of(private, "SecurityGroupEgressRule") if "cidrIpv4" in r["inputs"]]
    assert egress == [{**egress[0], "securityGroupId": "<id of test-aws-sg>", "cidrIpv4": "10.42.0.0/16"}]
    assert egress[0]["fromPort"] == 443


def test_ssm_default_opens_nothing_from_outside_the_vpc(stack_plan, private):
    for plan in (stack_plan("aws-h100"), stack_plan("aws-a100-instances"), private):
        vpc = one(plan, "ec2/vpc:Vpc")["inputs"]["cidrBlock"]
        outside = [
            r["name"]
            for r in resources_of(plan, "SecurityGroupIngressRule")
            if r["inputs"].get("cidrIpv4") not in (None, vpc)
        ]
        assert not outside
    assert not resources_of(stack_plan("aws-h100"), "VpcEndpoint")  # the NAT carries SSM there


def test_login_node_is_the_only_place_for_the_public_ip_and_ssh_cidrs(login):
    node = one(login, "ec2/instance:Instance")
    assert node["name"] == "test-aws-login"
    inputs = node["inputs"]
    assert inputs["instanceType"] == "m7i.large"
    assert (inputs["subnetId"], inputs["associatePublicIpAddress"]) == ("<id of test-aws-public>", True)
    assert inputs["vpcSecurityGroupIds"] == ["<id of test-aws-login-sg>"]
    assert inputs["keyName"] == "<autoname:test-aws-key>"
    assert inputs["metadataOptions"]["httpTokens"] == "required"
    assert inputs["rootBlockDevice"]["encrypted"] is True
    ubuntu = "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id"
    assert inputs["ami"] == f"<resolved at deploy: ssm:{ubuntu}>"
    ingress = {r["name"]: r["inputs"] for r in resources_of(login, "SecurityGroupIngressRule")}
    outside = {n: r for n, r in ingress.items() if "cidrIpv4" in r}
    assert list(outside) == ["test-aws-login-sg-ssh-198.51.100.0_24"]
    assert outside["test-aws-login-sg-ssh-198.51.100.0_24"]["securityGroupId"] == "<id of test-aws-login-sg>"
    from_login = ingress["test-aws-sg-ssh-from-login"]
    assert (from_login["securityGroupId"], from_login["referencedSecurityGroupId"]) == (
        "<id of test-aws-sg>",
        "<id of test-aws-login-sg>",
    )
    assert from_login["fromPort"] == from_login["toPort"] == 22
    nodes_subnet = next(r for r in resources_of(login, "ec2/subnet:Subnet") if r["name"] == "test-aws-nodes")
    assert nodes_subnet["inputs"]["mapPublicIpOnLaunch"] is False
    assert login.run.outputs["access"]["command"] == "ssh -i <private key> ubuntu@<public ip of test-aws-login>"
    assert login.run.outputs["loginNode"]["publicIp"] == "<public ip of test-aws-login>"


@pytest.mark.parametrize(
    ("cluster", "key"),
    [
        ({"login": {}, "network": {"publicIp": True}, "fabric": "none"}, "network.publicIp"),
        ({"login": {"publicIp": True}, "network": {"egress": "none"}}, "login.publicIp"),
    ],
)
def test_login_node_rules(cluster, key):
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(aws_values(**cluster)))
    assert info.value.key == f"gpu-cluster:cluster.{key}"


def test_access_output_says_how_to_log_in_and_list_the_nodes(stack_plan):
    h100 = stack_plan("aws-h100").run.outputs["access"]
    assert h100 == {
        "method": "ssm",
        "command": "aws ssm start-session --region us-east-1 --target <instance id>",
        "nodes": "aws ec2 describe-instances --region us-east-1 --filters "
        "Name=tag:aws:autoscaling:groupName,Values=<autoname:llm-train-aws-asg> "
        "Name=instance-state-name,Values=running "
        "--query 'Reservations[].Instances[].PrivateIpAddress' --output text",
    }
    pair = stack_plan("aws-a100-instances").run.outputs
    assert pair["access"]["command"] == "aws ssm start-session --region us-east-1 --target <id of a100-pair-aws-node-0>"
    filters = "Name=tag:gpu-cluster:cluster,Values=a100-pair 'Name=tag:Name,Values=a100-pair-node-*'"
    assert filters in pair["access"]["nodes"]
    assert pair["privateIps"] == ["<private ip of a100-pair-aws-node-0>", "<private ip of a100-pair-aws-node-1>"]
    assert "privateIps" not in stack_plan("aws-h100").run.outputs


def test_public_ip_with_efa_names_the_ways_in():
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(aws_values(network={"publicIp": True})))
    assert "bastion" not in info.value.message
    assert "access: auto" in info.value.message and "login: {publicIp: true}" in info.value.message


def test_ecdsa_key_is_refused_with_the_key_named():
    with pytest.raises(ConfigError) as info:
        spec_of(aws_values(sshPublicKey="ecdsa-sha2-nistp256 AAAAE2VjZHNh user@host"))
    assert info.value.key == "gpu-cluster:cluster.sshPublicKey"
    assert "ssh-rsa" in info.value.message and "ssh-ed25519" in info.value.message


class _Recording(pulumi.runtime.mocks.MockMonitor):
    """Plain mock monitor that also keeps each resource's ignoreChanges option."""

    def __init__(self, mocks):
        super().__init__(mocks)
        self.ignore_changes = {}

    def RegisterResource(self, request):
        self.ignore_changes[request.name] = list(request.ignoreChanges)
        return super().RegisterResource(request)


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.calls = []

    def new_resource(self, args):
        return f"{args.name}-id", {**args.inputs, "name": args.name, "latestVersion": 1}

    def call(self, args):
        self.calls.append((args.token, args.provider))
        return {"value": "ami-0abc", "names": ["us-east-1a"]}


def _build(zone):
    import pulumi_aws as aws

    mocks = _Mocks()
    monitor = _Recording(mocks)
    pulumi.runtime.set_mocks(mocks, monitor=monitor, preview=False)
    provider = aws.Provider("explicit", region="us-east-1")
    values = aws_values(zone=zone, nodeGroup="managed")
    cluster = GpuCluster("unit", spec_of(values), pulumi.ResourceOptions(providers={"aws": provider}))
    cloud = cluster.cloud
    # resolves once the subnets, the route table (NAT, public subnet) and the group are registered
    done = pulumi.Output.all(cloud.subnet.id, cloud.route_table.id, cloud.group.id, cloud.image_id)
    return mocks, monitor, done


@pulumi.runtime.test
def test_invokes_use_the_explicit_provider_and_a_defaulted_zone_is_pinned():
    mocks, monitor, done = _build(zone=None)

    def check(_):
        tokens = {token for token, _ in mocks.calls}
        # the pinned DLAMI by exact name and owner (issue 28: image auto is a release, not the SSM parameter's newest)
        assert {"aws:index/getAvailabilityZones:getAvailabilityZones", "aws:ec2/getAmi:getAmi"} <= tokens
        assert all("::explicit::" in (provider or "") for _, provider in mocks.calls), mocks.calls
        assert monitor.ignore_changes["unit-aws-nodes"] == ["availabilityZone"]
        assert monitor.ignore_changes["unit-aws-public"] == ["availabilityZone"]
        assert monitor.ignore_changes["unit-aws-vpc"] == []

    return done.apply(check)


@pulumi.runtime.test
def test_an_explicit_zone_is_not_ignored():
    _, monitor, done = _build(zone="us-east-1b")

    def check(_):
        assert monitor.ignore_changes["unit-aws-nodes"] == []

    return done.apply(check)


@pytest.mark.parametrize(
    ("token", "path", "verdict"),
    [
        ("aws:iam/role:Role", "name", "replace"),
        ("aws:iam/role:Role", "assumeRolePolicy", "update"),
        ("aws:iam/instanceProfile:InstanceProfile", "role", "update"),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "policyArn", "replace"),
        ("aws:ec2/vpcEndpoint:VpcEndpoint", "serviceName", "replace"),
        ("aws:ec2/vpcEndpoint:VpcEndpoint", "subnetIds", "update"),
        ("aws:ec2/instance:Instance", "iamInstanceProfile", "update"),  # attached to a running instance
    ],
)
def test_identity_and_access_types_have_replacement_rules(token, path, verdict):
    from components.diff.rules import classify, default_rules

    assert classify(default_rules().rule(token), path) == verdict
