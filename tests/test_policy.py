"""Every policy rule with passing and failing resources, per cloud; the pulumi-policy wrapper; the plan's use."""

import copy

import pytest
from pulumi_policy import PolicyResource, StackValidationArgs

from components.policy import PROFILE_ONLY, PolicyConfigError, Resource, evaluate, policy_names, rule_levels
from policy.pack import stack_policies

from .conftest import ROOT, aws_values, plan_values, shipped_stacks

TAGS = {"gpu-cluster:cluster": "c", "environment": "dev"}


def cluster(**facts):
    base = {"cloud": "aws", "publicIp": False, "spot": False, "hourlyUsd": 10.0, "maxHourlyUsd": None}
    return Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {**base, **facts}}, "urn:c", "c")


def res(kind, props, name="r"):
    return Resource(kind, props, f"urn:{name}", name)


def rules_hit(resources, config=None):
    return sorted({v.rule for v in evaluate(resources, config)})


AWS_LT = {
    "networkInterfaces": [{"associatePublicIpAddress": "false"}],
    "blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": {"encrypted": "true"}}],
    "metadataOptions": {"httpTokens": "required"},
    "tags": TAGS,
}
AZURE_VMSS = {
    "virtualMachineProfile": {
        "osProfile": {"linuxConfiguration": {"disablePasswordAuthentication": True}},
        "networkProfile": {"networkInterfaceConfigurations": [{"ipConfigurations": [{"name": "ip"}]}]},
    },
    "tags": TAGS,
}
GCP_TEMPLATE = {
    "metadata": {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"},
    "networkInterfaces": [{"network": "n"}],
    "labels": {"gpu-cluster_cluster": "c", "environment": "dev"},
    "scheduling": {"provisioningModel": "STANDARD"},
}
ALI_INSTANCE = {
    "internetMaxBandwidthOut": 0,
    "systemDiskEncrypted": True,
    "dataDisks": [{"encrypted": True}],
    "keyName": "k",
    "spotStrategy": "NoSpot",
    "tags": TAGS,
}
GOOD_NODES = [
    ("aws:ec2/launchTemplate:LaunchTemplate", AWS_LT),
    ("azure-native:compute:VirtualMachineScaleSet", AZURE_VMSS),
    ("gcp:compute/instanceTemplate:InstanceTemplate", GCP_TEMPLATE),
    ("alicloud:ecs/instance:Instance", ALI_INSTANCE),
]


@pytest.mark.parametrize(("kind", "props"), GOOD_NODES)
def test_secure_nodes_pass_every_rule(kind, props):
    assert rules_hit([cluster(), res(kind, props)]) == []


def mutate(props, path, value):
    props = copy.deepcopy(props)
    target = props
    for key in path[:-1]:
        target = target[key]
    if value is ...:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return props


@pytest.mark.parametrize(
    ("kind", "props", "path", "value", "rule"),
    [
        (
            "aws:ec2/launchTemplate:LaunchTemplate",
            AWS_LT,
            ("networkInterfaces", 0, "associatePublicIpAddress"),
            "true",
            "no-public-ip",
        ),
        (
            "aws:ec2/launchTemplate:LaunchTemplate",
            AWS_LT,
            ("blockDeviceMappings", 0, "ebs", "encrypted"),
            "false",
            "encrypted-disks",
        ),
        ("aws:ec2/launchTemplate:LaunchTemplate", AWS_LT, ("metadataOptions", "httpTokens"), "optional", "node-login"),
        ("aws:ec2/launchTemplate:LaunchTemplate", AWS_LT, ("tags",), {"team": "x"}, "required-tags"),
        (
            "aws:ec2/launchTemplate:LaunchTemplate",
            AWS_LT,
            ("instanceMarketOptions",),
            {"marketType": "spot"},
            "spot-nodes",
        ),
        (
            "azure-native:compute:VirtualMachineScaleSet",
            AZURE_VMSS,
            (
                "virtualMachineProfile",
                "networkProfile",
                "networkInterfaceConfigurations",
                0,
                "ipConfigurations",
                0,
                "publicIPAddressConfiguration",
            ),
            {"name": "pip"},
            "no-public-ip",
        ),
        (
            "azure-native:compute:VirtualMachineScaleSet",
            AZURE_VMSS,
            ("virtualMachineProfile", "osProfile", "linuxConfiguration", "disablePasswordAuthentication"),
            False,
            "node-login",
        ),
        ("azure-native:compute:VirtualMachineScaleSet", AZURE_VMSS, ("priority",), "Spot", "spot-nodes"),
        ("azure-native:compute:VirtualMachineScaleSet", AZURE_VMSS, ("tags",), ..., "required-tags"),
        (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            GCP_TEMPLATE,
            ("networkInterfaces", 0, "accessConfigs"),
            [{}],
            "no-public-ip",
        ),
        (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            GCP_TEMPLATE,
            ("metadata", "enable-oslogin"),
            "FALSE",
            "node-login",
        ),
        (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            GCP_TEMPLATE,
            ("metadata", "block-project-ssh-keys"),
            ...,
            "node-login",
        ),
        (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            GCP_TEMPLATE,
            ("scheduling", "provisioningModel"),
            "SPOT",
            "spot-nodes",
        ),
        (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            GCP_TEMPLATE,
            ("labels",),
            {"environment": "x"},
            "required-tags",
        ),
        ("alicloud:ecs/instance:Instance", ALI_INSTANCE, ("internetMaxBandwidthOut",), 100, "no-public-ip"),
        ("alicloud:ecs/instance:Instance", ALI_INSTANCE, ("systemDiskEncrypted",), False, "encrypted-disks"),
        ("alicloud:ecs/instance:Instance", ALI_INSTANCE, ("dataDisks", 0, "encrypted"), False, "encrypted-disks"),
        ("alicloud:ecs/instance:Instance", ALI_INSTANCE, ("password",), "hunter2", "node-login"),
        ("alicloud:ecs/instance:Instance", ALI_INSTANCE, ("spotStrategy",), "SpotAsPriceGo", "spot-nodes"),
    ],
)
def test_each_rule_fails_on_its_mistake(kind, props, path, value, rule):
    assert rules_hit([cluster(), res(kind, mutate(props, path, value))]) == [rule]


@pytest.mark.parametrize(
    ("kind", "props"),
    [
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv4": "0.0.0.0/0", "ipProtocol": "tcp"}),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv6": "::/0", "ipProtocol": "-1"}),
        ("aws:ec2/securityGroup:SecurityGroup", {"ingress": [{"cidrBlocks": ["0.0.0.0/0"]}], "tags": TAGS}),
        (
            "azure-native:network:NetworkSecurityGroup",
            {"securityRules": [{"direction": "Inbound", "access": "Allow", "sourceAddressPrefix": "*"}], "tags": TAGS},
        ),
        (
            "azure-native:network:SecurityRule",
            {"direction": "Inbound", "access": "Allow", "sourceAddressPrefix": "Internet"},
        ),
        ("gcp:compute/firewall:Firewall", {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp"}]}),
        ("alicloud:ecs/securityGroupRule:SecurityGroupRule", {"type": "ingress", "cidrIp": "0.0.0.0/0"}),
    ],
)
def test_open_ingress_is_caught_on_every_cloud(kind, props):
    assert rules_hit([cluster(), res(kind, props)]) == ["no-open-ingress"]


@pytest.mark.parametrize(
    ("kind", "props"),
    [
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv4": "203.0.113.0/24"}),
        ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", {"cidrIpv4": "0.0.0.0/0"}),
        (
            "azure-native:network:NetworkSecurityGroup",
            {
                "securityRules": [
                    {"direction": "Inbound", "access": "Deny", "sourceAddressPrefix": "Internet"},
                    {"direction": "Outbound", "access": "Allow", "sourceAddressPrefix": "*"},
                ],
                "tags": TAGS,
            },
        ),
        ("gcp:compute/firewall:Firewall", {"direction": "EGRESS", "sourceRanges": ["0.0.0.0/0"], "allows": [{}]}),
        ("gcp:compute/firewall:Firewall", {"sourceRanges": ["0.0.0.0/0"], "denies": [{"protocol": "all"}]}),
        (
            "alicloud:ecs/securityGroupRule:SecurityGroupRule",
            {"type": "ingress", "cidrIp": "0.0.0.0/0", "policy": "drop"},
        ),
    ],
)
def test_closed_or_egress_rules_pass(kind, props):
    assert rules_hit([cluster(), res(kind, props)]) == []


def test_gcp_network_tags_are_not_mistaken_for_labels():
    template = {**GCP_TEMPLATE, "tags": ["gpu-node"]}
    assert rules_hit([cluster(), res("gcp:compute/instanceTemplate:InstanceTemplate", template)]) == []
    unlabelled = {k: v for k, v in template.items() if k != "labels"}
    assert rules_hit([cluster(), res("gcp:compute/instanceTemplate:InstanceTemplate", unlabelled)]) == ["required-tags"]


def test_opt_ins_allow_public_ip_and_spot():
    public = res(
        "aws:ec2/launchTemplate:LaunchTemplate",
        mutate(AWS_LT, ("networkInterfaces", 0, "associatePublicIpAddress"), "true"),
    )
    assert rules_hit([cluster(publicIp=True), public]) == []
    spot = res("alicloud:ecs/instance:Instance", mutate(ALI_INSTANCE, ("spotStrategy",), "SpotAsPriceGo"))
    assert rules_hit([cluster(spot=True), spot]) == []
    assert rules_hit([cluster(spot=True), spot], {"spot-nodes": {"allowSpot": False}}) == ["spot-nodes"]


def test_cost_ceiling_from_stack_or_policy_config():
    assert rules_hit([cluster(hourlyUsd=220.0, maxHourlyUsd=200.0)]) == ["cost-ceiling"]
    assert rules_hit([cluster(hourlyUsd=220.0)]) == []
    assert rules_hit([cluster(hourlyUsd=220.0)], {"cost-ceiling": {"maxHourlyUsd": 100}}) == ["cost-ceiling"]


def test_a_ceiling_without_a_price_is_an_advisory_finding_never_a_silent_pass():
    (found,) = evaluate([cluster(hourlyUsd=None, maxHourlyUsd=10.0, instanceType="ecs.x")])
    assert (found.rule, found.level) == ("cost-ceiling-unchecked", "advisory")
    assert found.message.endswith("has no reference price for ecs.x: the cost ceiling $10.00/h cannot be checked")
    assert rules_hit([cluster(hourlyUsd=None)], {"cost-ceiling": {"maxHourlyUsd": 5}}) == ["cost-ceiling-unchecked"]
    assert rules_hit([cluster(hourlyUsd=None)]) == []  # no ceiling: nothing to check
    assert evaluate([cluster(hourlyUsd=None, maxHourlyUsd=10.0)], {"cost-ceiling-unchecked": "disabled"}) == []


def test_the_pack_reports_an_unchecked_ceiling_from_the_stack_or_its_own_config():
    policies = {p.name: p for p in stack_policies()}
    for facts, config in (({"maxHourlyUsd": 10.0}, {}), ({}, {"maxHourlyUsd": 10.0})):
        reported = []
        policies["cost-ceiling-unchecked"].validate(
            StackValidationArgs([policy_resource(cluster(hourlyUsd=None, **facts))], config=config),
            lambda message, urn=None, seen=reported: seen.append((message, urn)),
        )
        assert [urn for _, urn in reported] == ["urn:c"] and "cannot be checked" in reported[0][0]


def test_enforcement_levels_are_configurable():
    defaults = rule_levels({})
    assert {n: level for n, level in defaults.items() if level != "mandatory" and n not in PROFILE_ONLY} == {
        "cost-ceiling-unchecked": "advisory"  # a ceiling it cannot judge informs, it does not block
    }
    levels = rule_levels(
        {"all": "advisory", "no-public-ip": "disabled", "spot-nodes": {"enforcementLevel": "mandatory"}}
    )
    assert levels["no-public-ip"] == "disabled" and levels["spot-nodes"] == "mandatory"
    assert levels["required-tags"] == "advisory"
    bad = res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv4": "0.0.0.0/0"})
    assert [v.level for v in evaluate([cluster(), bad], {"no-open-ingress": "advisory"})] == ["advisory"]
    assert evaluate([cluster(), bad], {"no-open-ingress": "disabled"}) == []
    with pytest.raises(PolicyConfigError, match="unknown policy"):
        rule_levels({"no-such-rule": "mandatory"})
    with pytest.raises(
        PolicyConfigError, match=r"^all: enforcement level 'strict'; allowed: mandatory, advisory, disabled"
    ):
        rule_levels({"all": "strict"})


def policy_resource(r):
    return PolicyResource(r.type, r.props, r.urn, r.name, None, None, None, [], {})


def test_pulumi_policy_pack_runs_the_same_rules():
    policies = {p.name: p for p in stack_policies()}
    assert set(policies) == policy_names()  # each rule, and its levels under a compliance profile
    bad = res(
        "azure-native:network:NetworkSecurityGroup",
        {"securityRules": [{"direction": "Inbound", "access": "Allow", "sourceAddressPrefix": "*"}], "tags": TAGS},
    )
    reported = []
    policies["no-open-ingress"].validate(
        StackValidationArgs([policy_resource(cluster()), policy_resource(bad)]),
        lambda message, urn=None: reported.append((message, urn)),
    )
    assert reported == [("r (azure-native:network:NetworkSecurityGroup) allows inbound traffic from *", "urn:r")]
    spot = res(
        "aws:ec2/launchTemplate:LaunchTemplate", mutate(AWS_LT, ("instanceMarketOptions",), {"marketType": "spot"})
    )
    reported.clear()
    policies["spot-nodes"].validate(
        StackValidationArgs([policy_resource(cluster(spot=True)), policy_resource(spot)], config={"allowSpot": False}),
        lambda message, urn=None: reported.append(urn),
    )
    assert reported == ["urn:r"]


SHIPPED = shipped_stacks()


@pytest.mark.parametrize("stack", SHIPPED)
def test_every_shipped_stack_passes_every_policy(stack, stack_plan):
    assert stack_plan(stack).violations() == []


def test_cost_ceiling_is_judged_at_max_nodes_and_its_level_is_configurable():
    cheap_now = plan_values(
        aws_values(nodes=1, maxNodes=50, tags={"environment": "dev"}) | {"gpu-cluster:maxHourlyUsd": 100}
    )
    (violation,) = cheap_now.violations()
    assert violation.rule == "cost-ceiling" and "$2,752.00/h, over the ceiling $100.00/h" in violation.message
    cheap_now.policy_config = {"cost-ceiling": "advisory"}
    assert [v.level for v in cheap_now.violations()] == ["advisory"]


def test_the_plan_reports_violations():
    open_ssh = plan_values(aws_values(network={"sshCidrs": ["0.0.0.0/0"]}, tags={"environment": "dev"}))
    assert [v.rule for v in open_ssh.violations()] == ["no-open-ingress"]
    assert open_ssh.as_json()["policy"][0]["level"] == "mandatory"
    no_tags = plan_values(aws_values())  # environment defaults to the stack name: a minimal config passes
    assert no_tags.violations() == []


def test_cli_exits_3_on_a_mandatory_violation_and_levels_come_from_a_file(tmp_path):
    from typer.testing import CliRunner

    from components.cli import app

    stack = tmp_path / "Pulumi.open.yaml"
    stack.write_text((ROOT / "stacks" / "Pulumi.aws-dev.yaml").read_text().replace("203.0.113.0/24", "0.0.0.0/0"))
    runner = CliRunner()
    strict = runner.invoke(app, ["plan", "--config", str(stack), "--format", "markdown"])
    assert strict.exit_code == 3 and "`no-open-ingress` (mandatory)" in strict.stdout
    relaxed = tmp_path / "policy.json"
    relaxed.write_text('{"no-open-ingress": "advisory"}')
    advisory = runner.invoke(app, ["plan", "--config", str(stack), "--policy-config", str(relaxed)])
    assert advisory.exit_code == 0 and "policy no-open-ingress (advisory)" in advisory.stdout
    relaxed.write_text('{"no-such-policy": "advisory"}')
    bad = runner.invoke(app, ["plan", "--config", str(stack), "--policy-config", str(relaxed)])
    assert bad.exit_code == 2 and "unknown policy" in bad.stderr


def test_the_rules_need_only_the_standard_library():
    """The pack's own venv has pulumi-policy only (policy/requirements.txt): the rules must not need more
    than the standard library and PyYAML, which the pulumi SDK itself requires (so the pack has it)."""
    import ast
    import sys
    from importlib.metadata import requires
    from pathlib import Path

    def source(module: str) -> Path:
        path = ROOT.joinpath(*module.split("."))
        return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")

    todo, seen, imported = ["components.policy"], set(), set()
    while todo:  # the pack's modules and every module of ours they read (relative imports), transitively
        module = todo.pop()
        seen.add(module)
        package = module if source(module).name == "__init__.py" else module.rpartition(".")[0]
        for n in ast.walk(ast.parse(source(module).read_text())):
            if isinstance(n, ast.ImportFrom) and n.level:
                base = package.rsplit(".", n.level - 1)[0] if n.level > 1 else package
                target = f"{base}.{n.module}" if n.module else base
                todo.extend(m for m in [target] if m not in seen)
            elif isinstance(n, ast.ImportFrom) and n.module:
                imported.add(n.module)
            elif isinstance(n, ast.Import):
                imported |= {a.name for a in n.names}
    assert "components.policy.transit" in seen  # the in-transit rule's EFS check reads it
    # outside the policy package: only leaves (the standard library and PyYAML, nothing of ours above them)
    assert {m for m in seen if not m.startswith("components.policy")} <= {"components.cidr", "components.datafile"}
    assert {m.split(".")[0] for m in imported} <= set(sys.stdlib_module_names) | {"__future__", "yaml"}
    assert any(r.lower().startswith("pyyaml") for r in requires("pulumi") or [])
    assert any(r.startswith("pulumi") for r in requires("pulumi-policy") or [])


@pytest.mark.parametrize("cidrs", [["0.0.0.0/1", "128.0.0.0/1"], ["0.0.0.0/0"], ["8.0.0.0/6"], ["::/1"]])
def test_wide_public_ranges_count_as_open(cidrs):
    rules = [res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv4": c}, f"r{i}")
             for i, c in enumerate(cidrs)]  # fmt: skip
    assert {v.rule for v in evaluate([cluster(), *rules])} == {"no-open-ingress"}
    spec = plan_values(aws_values(network={"sshCidrs": [c for c in cidrs if ":" not in c] or ["0.0.0.0/0"]}))
    assert any("opens SSH" in w for w in spec.spec.warnings)


@pytest.mark.parametrize("cidr", ["10.0.0.0/8", "203.0.113.0/24", "100.64.0.0/10", "fd00::/8"])
def test_narrow_or_private_ranges_are_not_open(cidr):
    rule = res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", {"cidrIpv4": cidr})
    assert evaluate([cluster(), rule]) == []
