"""The policy rules, pinned where mutation testing found them loose (README "Mutation testing").

Pure: crafted resources through `evaluate`, as the plan and the pack run them. A finding's words are
what the plan prints: each names the offending value (taken from the resource) and, grouped, the fix.
"""

from __future__ import annotations

import json

import pytest

from components.cidr import wide_public
from components.policy import Resource, evaluate, group_violations

TAGS = {"gpu-cluster:cluster": "c", "environment": "dev"}
LT = "aws:ec2/launchTemplate:LaunchTemplate"


def cluster(**facts):
    base = {"cloud": "aws", "publicIp": False, "spot": False, "hourlyUsd": 10.0, "maxHourlyUsd": None}
    return Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {**base, **facts}}, "urn:c", "c")


def res(kind, props, name="r"):
    return Resource(kind, props, f"urn:{name}", name)


def found(*resources, facts=None, config=None, rule=None) -> list[tuple[str, str]]:
    """(rule, the check's words) of every violation; resources are tagged unless they say otherwise."""
    return [
        (v.rule, v.detail)
        for v in evaluate([cluster(**(facts or {})), *resources], config)
        if rule is None or v.rule == rule
    ]


def summaries(*resources, facts=None) -> list[str]:
    return [g.summary for g in group_violations(evaluate([cluster(**(facts or {})), *resources]))]


# no-public-ip -------------------------------------------------------------------------------------


def test_each_way_to_a_public_address_is_named():
    assert found(
        res(LT, {"networkInterfaces": [{"associatePublicIpAddress": "True"}], "tags": TAGS}), rule="no-public-ip"
    ) == [("no-public-ip", "assigns a public IP to nodes")]
    assert found(res("aws:ec2/subnet:Subnet", {"mapPublicIpOnLaunch": True, "tags": TAGS})) == [
        ("no-public-ip", "assigns a public IP to nodes")
    ]
    assert found(
        res("gcp:compute/instance:Instance", {"networkInterfaces": [{"accessConfigs": [{}]}], "labels": TAGS}),
        rule="no-public-ip",
    ) == [("no-public-ip", "attaches a public IP address to node network interfaces")]
    ali = res("alicloud:ecs/instance:Instance", {"internetMaxBandwidthOut": 5.5, "tags": TAGS})
    assert found(ali, rule="no-public-ip") == [
        ("no-public-ip", "gives nodes public bandwidth (internetMaxBandwidthOut=5.5)")
    ]


def test_no_public_address_and_non_nodes_pass():
    quiet = {"internetMaxBandwidthOut": 0, "associatePublicIpAddress": False, "accessConfigs": [], "tags": TAGS}
    assert found(res("alicloud:ecs/instance:Instance", quiet), rule="no-public-ip") == []
    # a NAT gateway's elastic IP is not a node address
    assert found(res("aws:ec2/eip:Eip", {"associatePublicIpAddress": True, "tags": TAGS})) == []


def test_only_the_login_node_may_take_the_login_opt_in():
    props = {"networkInterfaces": [{"associatePublicIpAddress": "true"}], "tags": TAGS}
    login = res(LT, props, name="c-login-lt")
    node = res(LT, props, name="c-lt")
    assert found(login, facts={"loginPublicIp": True}, rule="no-public-ip") == []
    assert found(node, facts={"loginPublicIp": True}, rule="no-public-ip") != []
    assert found(login, rule="no-public-ip") != []


# no-open-ingress ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "props", "source"),
    [
        ("aws:ec2/securityGroupRule:SecurityGroupRule", {"type": "ingress", "cidrBlocks": ["0.0.0.0/0"]}, "0.0.0.0/0"),
        ("aws:ec2/securityGroup:SecurityGroup", {"ingress": [{"ipv6CidrBlocks": ["::/0"]}], "tags": TAGS}, "::/0"),
        (
            "azure-native:network:SecurityRule",
            {"properties": {"direction": "inbound", "access": "allow", "sourceAddressPrefixes": ["10.0.0.0/8", "*"]}},
            "*",
        ),
        ("gcp:compute/firewall:Firewall", {"direction": "ingress", "sourceRanges": ["any"], "allows": [{}]}, "any"),
        ("alicloud:ecs/securityGroupRule:SecurityGroupRule", {"type": "ingress", "ipv6CidrIp": "::/0"}, "::/0"),
        (
            "tencentcloud:Security/groupRuleSet:GroupRuleSet",
            {"ingresses": [{"action": "accept", "cidrBlock": "0.0.0.0/0"}]},
            "0.0.0.0/0",
        ),
    ],
)
def test_open_ingress_names_the_source_and_the_fix(kind, props, source):
    assert found(res(kind, props), rule="no-open-ingress") == [
        ("no-open-ingress", f"allows inbound traffic from {source}")
    ]
    assert (
        f"1 resource allows inbound traffic from {source}; remove {source} from gpu-cluster:cluster.network"
        ".sshCidrs" in summaries(res(kind, props))
    )


@pytest.mark.parametrize(
    ("kind", "props"),
    [
        ("aws:ec2/securityGroupRule:SecurityGroupRule", {"type": "egress", "cidrBlocks": ["0.0.0.0/0"]}),
        ("aws:ec2/securityGroup:SecurityGroup", {"egress": [{"cidrBlocks": ["0.0.0.0/0"]}], "tags": TAGS}),
        ("azure-native:network:SecurityRule", {"direction": "Inbound", "access": "Deny", "sourceAddressPrefix": "*"}),
        ("gcp:compute/firewall:Firewall", {"sourceRanges": ["0.0.0.0/0"]}),  # allows nothing
        ("alicloud:ecs/securityGroupRule:SecurityGroupRule", {"type": "egress", "cidrIp": "0.0.0.0/0"}),
        (
            "tencentcloud:Security/groupRuleSet:GroupRuleSet",
            {"ingresses": [{"action": "DROP", "cidrBlock": "0.0.0.0/0"}]},
        ),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv4": "10.0.0.0/8"}),
    ],
)
def test_closed_rules_are_not_open_ingress(kind, props):
    assert found(res(kind, props), rule="no-open-ingress") == []


@pytest.mark.parametrize(
    ("source", "is_open"),
    [
        ("8.0.0.0/8", True),
        ("8.0.0.0/9", False),
        ("2001::/16", True),
        ("2001::/17", False),
        ("ANY", True),
        ("not-a-cidr", False),
        ("10.0.0.0/8", False),
    ],
)
def test_wide_public_is_slash_8_or_wider_and_public(source, is_open):
    assert wide_public(source) is is_open


# encrypted-disks --------------------------------------------------------------------------------


def test_unencrypted_disks_are_named():
    lt = res(
        LT,
        {
            "blockDeviceMappings": [
                {"deviceName": "/dev/xvdb", "ebs": {"encrypted": "false"}},
                {"deviceName": "/dev/sdb", "virtualName": "ephemeral0"},
            ],
            "tags": TAGS,
        },
    )
    assert found(lt, rule="encrypted-disks") == [("encrypted-disks", "EBS volume /dev/xvdb is not encrypted")]
    instance = res("aws:ec2/instance:Instance", {"rootBlockDevice": {"encrypted": False}, "tags": TAGS})
    assert found(instance, rule="encrypted-disks") == [("encrypted-disks", "an EBS volume is not encrypted")]
    from_template = res("aws:ec2/instance:Instance", {"launchTemplate": {"id": "lt"}, "tags": TAGS})
    assert found(from_template, rule="encrypted-disks") == []  # the template's mappings are checked
    assert found(res("aws:ebs/volume:Volume", {"tags": TAGS})) == [("encrypted-disks", "EBS volume is not encrypted")]
    assert found(res("aws:ebs/volume:Volume", {"encrypted": True, "tags": TAGS})) == []


def test_alibaba_and_tencent_disks_are_named():
    ali = res(
        "alicloud:ecs/instance:Instance",
        {"systemDiskEncrypted": "true", "tags": TAGS, "dataDisks": [{"name": "d1"}, {"device": "/dev/xvdc"}, {}]},
    )
    assert found(ali, rule="encrypted-disks") == [
        ("encrypted-disks", "data disk d1 is not encrypted"),
        ("encrypted-disks", "data disk /dev/xvdc is not encrypted"),
        ("encrypted-disks", "data disk is not encrypted"),
    ]
    assert found(res("alicloud:ecs/ecsDisk:EcsDisk", {"tags": TAGS})) == [("encrypted-disks", "disk is not encrypted")]
    tencent = res(
        "tencentcloud:Instance/instance:Instance",
        {"dataDisks": [{"dataDiskName": "scratch"}, {"encrypt": True}], "tags": TAGS},
    )
    assert found(tencent, rule="encrypted-disks") == [("encrypted-disks", "data disk scratch is not encrypted")]


# node-login (IMDSv2, passwords, OS Login) --------------------------------------------------------


def test_login_rules_per_cloud():
    imds = "IMDSv2 is not required (metadataOptions.httpTokens must be 'required')"
    assert found(res(LT, {"tags": TAGS}), rule="node-login") == [("node-login", imds)]
    assert found(
        res("aws:ec2/instance:Instance", {"metadataOptions": {"httpTokens": "optional"}, "tags": TAGS}),
        rule="node-login",
    ) == [("node-login", imds)]
    assert (
        found(res("aws:ec2/instance:Instance", {"launchTemplate": {"id": "x"}, "tags": TAGS}), rule="node-login") == []
    )
    vm = {"osProfile": {"linuxConfiguration": {"disablePasswordAuthentication": True}, "adminPassword": "pw"}}
    assert found(res("azure-native:compute:VirtualMachine", {**vm, "tags": TAGS}), rule="node-login") == [
        ("node-login", "sets an admin password")
    ]
    assert found(res("azure-native:compute:VirtualMachine", {"tags": TAGS}), rule="node-login") == [
        ("node-login", "password authentication is not disabled (linuxConfiguration.disablePasswordAuthentication)")
    ]
    gcp = {"metadata": {"enable-oslogin": "true", "block-project-ssh-keys": "false"}, "labels": TAGS}
    assert found(res("gcp:compute/instance:Instance", gcp), rule="node-login") == [
        ("node-login", "project-wide SSH keys are not blocked (metadata block-project-ssh-keys=TRUE)")
    ]
    assert found(res("gcp:compute/instance:Instance", {"labels": TAGS}), rule="node-login")[0] == (
        "node-login",
        "OS Login is not enabled (metadata enable-oslogin=TRUE)",
    )
    for props in ({"kmsEncryptedPassword": "x"}, {"passwordInherit": "true"}):
        assert found(
            res(
                "alicloud:ess/scalingConfiguration:ScalingConfiguration",
                {**props, "tags": TAGS, "systemDiskEncrypted": True},
            ),
            rule="node-login",
        ) == [("node-login", "allows password login")]
    assert found(
        res("tencentcloud:Instance/instance:Instance", {"password": "pw", "tags": TAGS}), rule="node-login"
    ) == [("node-login", "allows password login")]


# required-tags ----------------------------------------------------------------------------------


def test_missing_tags_name_the_tag_and_the_setting():
    lt = res(LT, {"tags": {"gpu-cluster:cluster": "c"}, "metadataOptions": {"httpTokens": "required"}})
    assert found(lt) == [("required-tags", "is missing required tag(s): environment")]
    assert summaries(lt) == ["1 resource lacks environment; set gpu-cluster:cluster.tags.environment"]
    two = [res(LT, lt.props, name=f"n{i}") for i in range(2)]
    assert summaries(*two) == ["2 resources lack environment; set gpu-cluster:cluster.tags.environment"]
    owned_only = res("aws:ec2/subnet:Subnet", {"tags": {"environment": "dev"}})
    assert summaries(owned_only) == ["1 resource lacks gpu-cluster:cluster"]  # set by the toolkit: no fix to give


def test_tag_keys_are_compared_normalised_in_every_shape():
    asg = [{"key": "gpu-cluster:cluster", "value": "c"}, {"key": "Environment", "value": "dev"}]
    assert found(res("aws:ec2/subnet:Subnet", {"tags": asg})) == []
    assert found(res("gcp:compute/network:Network", {"labels": {"gpu-cluster_cluster": "c", "environment": "x"}})) == []
    untagged_node = res(
        "azure-native:compute:VirtualMachine",
        {"osProfile": {"linuxConfiguration": {"disablePasswordAuthentication": True}}},
    )
    assert found(untagged_node) == [("required-tags", "has no tags/labels")]
    assert summaries(untagged_node) == ["1 resource has no tags/labels"]
    assert found(res("aws:ec2/vpc:Vpc", {})) == []  # not a node: untaggable kinds are not judged
    assert found(res("aws:ec2/vpc:Vpc", {"tags": []})) == []


# spot-nodes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "props",
    [
        {"mixedInstancesPolicy": {"instancesDistribution": {"onDemandPercentageAboveBaseCapacity": 99}}},
        {"virtualMachineProfile": {"priority": "spot"}},
        {"scheduling": {"preemptible": True}},
        {"instanceChargeType": "SPOTPAID"},
        {"spotStrategy": "SpotWithPriceLimit"},
    ],
)
def test_every_spelling_of_spot_counts(props):
    node = res("aws:autoscaling/group:Group", {**props, "tags": TAGS})
    assert found(node, rule="spot-nodes") == [("spot-nodes", "runs spot nodes although the stack did not ask for spot")]
    assert found(node, facts={"spot": True}, rule="spot-nodes") == []
    assert found(node, facts={"spot": True}, config={"spot-nodes": {"allowSpot": False}}, rule="spot-nodes") == [
        ("spot-nodes", "runs spot nodes, which this policy does not allow (spot-nodes.allowSpot=false)")
    ]


@pytest.mark.parametrize(
    "props",
    [
        {"mixedInstancesPolicy": {"instancesDistribution": {"onDemandPercentageAboveBaseCapacity": 100}}},
        {"mixedInstancesPolicy": {"instancesDistribution": {}}},
        {"virtualMachineProfile": {"priority": "Regular"}},
        {"scheduling": {"preemptible": False}},
        {"spotStrategy": ""},
        {"instanceChargeType": "POSTPAID_BY_HOUR"},
    ],
)
def test_on_demand_is_not_spot(props):
    assert found(res("aws:autoscaling/group:Group", {**props, "tags": TAGS}), rule="spot-nodes") == []


def test_spot_refused_by_policy_says_which_setting_to_change():
    node = res("aws:autoscaling/group:Group", {"spotStrategy": "SpotAsPriceGo", "tags": TAGS})
    (group,) = group_violations(evaluate([cluster(spot=True), node], {"spot-nodes": {"allowSpot": False}}))
    assert group.summary == (
        "1 resource runs spot nodes, which this policy does not allow (spot-nodes.allowSpot=false); "
        "set gpu-cluster:cluster.spot to false"
    )


# cost-ceiling -----------------------------------------------------------------------------------


def test_cost_ceiling_message_and_boundary():
    assert found(facts={"hourlyUsd": 1234.5, "maxHourlyUsd": 1000}) == [
        ("cost-ceiling", "costs about $1,234.50/h, over the ceiling $1,000.00/h")
    ]
    (summary,) = summaries(facts={"hourlyUsd": 1234.5, "maxHourlyUsd": 1000})
    assert summary.endswith(
        "costs about $1,234.50/h, over the ceiling $1,000.00/h; lower gpu-cluster:cluster.maxNodes or raise "
        "gpu-cluster:maxHourlyUsd"
    )
    assert found(facts={"hourlyUsd": 1000.0, "maxHourlyUsd": 1000}) == []  # at the ceiling is under it
    assert found(facts={"hourlyUsd": 10.0, "hourlyUsdAtMaxNodes": 2000.0, "maxHourlyUsd": 1000}) != []


def test_an_unchecked_ceiling_without_a_type_says_its_instance_type():
    assert found(facts={"hourlyUsd": None, "maxHourlyUsd": 5}) == [
        (
            "cost-ceiling-unchecked",
            "has no reference price for its instance type: the cost ceiling $5.00/h cannot be checked",
        )
    ]
    assert found(
        res(LT, {"tags": TAGS, "metadataOptions": {"httpTokens": "required"}}),
        facts={"hourlyUsd": None, "maxHourlyUsd": 5},
        rule="cost-ceiling-unchecked",
    ) == [
        (
            "cost-ceiling-unchecked",
            "has no reference price for its instance type: the cost ceiling $5.00/h cannot be checked",
        )
    ]  # judged once, on the cluster


# no-admin-on-nodes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "props", "value"),
    [
        (
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            {"policyArn": "arn:aws:iam::aws:policy/IAMFullAccess"},
            "arn:aws:iam::aws:policy/IAMFullAccess",
        ),
        ("gcp:projects/iAMMember:IAMMember", {"role": "roles/editor"}, "roles/editor"),
        (
            "azure-native:authorization:RoleAssignment",
            {
                "roleDefinitionId": "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/"
                "b24988ac-6180-42a0-ab88-20f7382dd24c"
            },
            "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c",
        ),
    ],
)
def test_admin_grants_name_the_role(kind, props, value):
    assert found(res(kind, props)) == [("no-admin-on-nodes", f"grants the nodes {value}, an administrator role")]
    assert summaries(res(kind, props)) == [
        "1 resource grants admin rights; grant the nodes only what they need in gpu-cluster:cluster.identity.policies"
    ]


def test_a_read_only_grant_passes():
    assert found(res("gcp:projects/iAMMember:IAMMember", {"role": "roles/storage.objectViewer"})) == []
    assert found(res("aws:iam/rolePolicyAttachment:RolePolicyAttachment", {})) == []


@pytest.mark.parametrize(
    ("policy", "wildcard"),
    [
        (json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}), True),
        ({"Statement": {"Effect": "Allow", "Action": ["s3:GetObject", "*"], "Resource": ["*"]}}, True),
        ({"Statement": [{"Effect": "Deny", "Action": "*", "Resource": "*"}]}, False),
        ({"Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}, False),
        ({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::b/*"}]}, False),
        ({"Statement": ["not a statement", {"Effect": "Allow", "Action": "*", "Resource": "*"}]}, True),
        ("{not json", False),
        (["a list"], False),
    ],
)
def test_a_policy_allowing_everything_is_an_admin_grant(policy, wildcard):
    hit = found(res("aws:iam/rolePolicy:RolePolicy", {"policy": policy}))
    assert hit == ([("no-admin-on-nodes", 'allows "Action": "*" on "Resource": "*"')] if wildcard else [])
    if wildcard:
        assert summaries(res("aws:iam/rolePolicy:RolePolicy", {"policy": policy})) == [
            "1 resource allows every action; grant the nodes only what they need in "
            "gpu-cluster:cluster.identity.policies"
        ]


# what the first mutation run left (README "Mutation testing") -----------------------------------


def test_every_disk_of_an_instance_is_checked():
    instance = "aws:ec2/instance:Instance"
    extra = {"ebsBlockDevices": [{"deviceName": "/dev/sdf", "encrypted": False}], "tags": TAGS}
    assert found(res(instance, extra), rule="encrypted-disks") == [
        ("encrypted-disks", "an EBS volume is not encrypted")
    ]
    with_template = {**extra, "launchTemplate": {"id": "lt"}, "rootBlockDevice": {"encrypted": False}}
    assert len(found(res(instance, with_template), rule="encrypted-disks")) == 2
    # from a template, without its own root device: the template's mappings are judged, not these
    assert found(res(instance, {**extra, "launchTemplate": {"id": "lt"}}), rule="encrypted-disks") == []
    encrypted = {"rootBlockDevice": {"encrypted": True}, "ebsBlockDevices": [{"encrypted": "true"}], "tags": TAGS}
    assert found(res(instance, encrypted), rule="encrypted-disks") == []
    assert found(res("alicloud:ecs/ecsDisk:EcsDisk", {"encrypted": True, "tags": TAGS})) == []
    ess = res("alicloud:ess/scalingConfiguration:ScalingConfiguration", {"systemDiskEncrypted": False, "tags": TAGS})
    assert found(ess, rule="encrypted-disks") == [("encrypted-disks", "system disk is not encrypted")]
    tencent = res("tencentcloud:Instance/instance:Instance", {"dataDisks": [{"encrypt": False}], "tags": TAGS})
    assert found(tencent, rule="encrypted-disks") == [("encrypted-disks", "data disk is not encrypted")]


def test_more_public_address_spellings():
    assert found(
        res(
            "alicloud:ess/scalingConfiguration:ScalingConfiguration",
            {"allocatePublicIp": True, "tags": TAGS, "systemDiskEncrypted": True},
        ),
        rule="no-public-ip",
    ) == [("no-public-ip", "assigns a public IP to nodes")]
    nic = res(
        "azure-native:network:NetworkInterface",
        {"ipConfigurations": [{"publicIPAddress": {"id": "pip"}}], "tags": TAGS},
    )
    assert found(nic) == [("no-public-ip", "attaches a public IP address to node network interfaces")]
    ali = res("alicloud:ecs/instance:Instance", {"internetMaxBandwidthOut": 1, "tags": TAGS})
    assert found(ali, rule="no-public-ip") == [
        ("no-public-ip", "gives nodes public bandwidth (internetMaxBandwidthOut=1)")
    ]
    assert wide_public("8.8.8.8/8")  # host bits set: still the /8


def test_rules_without_a_direction_or_an_action_are_not_open():
    for rule in ({"access": "Allow", "sourceAddressPrefix": "*"}, {"direction": "Inbound", "sourceAddressPrefix": "*"}):
        assert found(res("azure-native:network:SecurityRule", rule)) == []
    nsg = {
        "securityRules": [{"direction": "INBOUND", "access": "ALLOW", "sourceAddressPrefix": "0.0.0.0/0"}],
        "tags": TAGS,
    }
    assert found(res("azure-native:network:NetworkSecurityGroup", nsg)) == [
        ("no-open-ingress", "allows inbound traffic from 0.0.0.0/0")
    ]
    tencent = "tencentcloud:Security/groupRuleSet:GroupRuleSet"
    assert found(res(tencent, {"ingresses": [{"cidrBlock": "0.0.0.0/0"}]})) == []
    assert found(res(tencent, {"ingresses": [{"action": "ACCEPT", "ipv6CidrBlock": "::/0"}]})) == [
        ("no-open-ingress", "allows inbound traffic from ::/0")
    ]


def test_grouped_kinds_read_right_for_several_resources():
    untagged = [
        res(
            "azure-native:compute:VirtualMachine",
            {"osProfile": {"linuxConfiguration": {"disablePasswordAuthentication": True}}},
            name=f"vm{i}",
        )
        for i in range(2)
    ]
    assert summaries(*untagged) == ["2 resources have no tags/labels"]
    admins = [res("gcp:projects/iAMMember:IAMMember", {"role": "roles/owner"}, name=f"m{i}") for i in range(2)]
    assert summaries(*admins)[0].startswith("2 resources grant admin rights; ")
    wildcard = {"policy": {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}}
    policies = [res("aws:iam/policy:Policy", wildcard, name=f"p{i}") for i in range(2)]
    assert summaries(*policies)[0].startswith("2 resources allow every action; ")
    spot = [
        res("aws:autoscaling/group:Group", {"spotStrategy": "SpotAsPriceGo", "tags": TAGS}, name=f"g{i}")
        for i in range(2)
    ]
    (group,) = group_violations(evaluate([cluster(spot=True), *spot], {"spot-nodes": {"allowSpot": False}}))
    assert group.summary.startswith(
        "2 resources run spot nodes, which this policy does not allow (spot-nodes.allowSpot=false); "
    )
    lacking = res("aws:ec2/subnet:Subnet", {"tags": {"team": "x"}})
    assert found(lacking) == [("required-tags", "is missing required tag(s): gpu-cluster:cluster, environment")]
    (summary,) = summaries(facts={"hourlyUsd": None, "maxHourlyUsd": 5})
    assert summary.endswith("; check the cloud's price for that type at maxNodes yourself")


def test_odd_documents_and_tags_do_not_crash_a_rule():
    for statement in ({"Effect": "Allow", "Resource": "*"}, {"Effect": "Allow", "Action": "*"}):
        assert found(res("aws:iam/rolePolicy:RolePolicy", {"policy": {"Statement": [statement]}})) == []
    asg = [{"value": "no key"}, {"key": "gpu-cluster:cluster"}, {"key": "environment"}]
    assert found(res("aws:autoscaling/group:Group", {"tags": asg})) == []
    # a password on something that is not a node is not a node login
    assert found(res("aws:ec2/vpc:Vpc", {"password": "x", "tags": TAGS})) == []
