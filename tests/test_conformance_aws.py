"""AWS conformance: every shipped AWS stack and a set of feature-rich configs, translated into the API requests the
Terraform AWS provider makes (tests/conformance/aws_translate.py, aws_services.py) and judged by botocore's service
models (tests/conformance/aws_api.py); and the checker itself, proven on requests AWS refuses."""

from __future__ import annotations

import ast
import base64
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from components.errors import ConfigError

from .conformance import aws
from .conformance.aws_api import Request, doc_rules, tag_rules, validate
from .conformance.aws_translate import RANDOM
from .conftest import ROOT, aws_values, plan_stack, plan_values, shipped_stacks

ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEjYt1vA9h7s2cN5mJ3p0qXl8kR4fWbT6uYz1oPdGhQx user@host"
LONGEST_NAME = "abcdefghij-abcdefghij-abcdefghi"  # spec NAME_PATTERN allows 31 characters: the longest autonames


def _config(name: str, **cluster: Any) -> dict[str, Any]:
    values = aws_values(name=name, **cluster)
    if "instanceType" in cluster:
        values["gpu-cluster:cluster"].pop("gpu")
    return values


# Configs that together register every AWS resource type the components can build (see the coverage test below).
FEATURES: dict[str, dict[str, Any]] = {
    # Slurm head + public login node, FSx for Lustre (EFA), one KMS key for everything, SSH with an imported key; the
    # stack name holds a period (Pulumi allows it, a KMS alias name does not)
    "team.slurm-fsx-cmk-ssh": _config(
        "feat-slurm",
        scheduler="slurm",
        slurm={"partition": "gpu", "accounting": True},  # RDS for MySQL with the cluster's key
        encryption={"key": "auto"},
        storage={"shared": {"kind": "lustre", "sizeGb": 4800, "throughput": 1000, "path": "/shared"}},
        access="ssh",
        sshPublicKey=ED25519,
        login={"instanceType": "m7i.large", "publicIp": True},
        network={"cidr": "10.50.0.0/16", "egress": "nat", "sshCidrs": ["203.0.113.0/24"]},
        tags={"team": "ml"},
    ),
    # EFS with its TLS-only policy, a customer key, no egress: SSM through interface endpoints; a budget with a
    # forecast alert emailed to two addresses
    "efs-cmk-private": _config(
        "feat-efs",
        gpu="L40S:1",
        nodes=1,
        budget={"monthly": 2500.5, "forecast": 100, "notify": ["ops@example.com", "ml@example.com"]},
        encryption={"key": "auto"},
        storage={"shared": {"kind": "nfs", "path": "/shared"}},
        network={"cidr": "10.51.0.0/16", "egress": "none"},
    ),
    # EKS with secrets encryption and a system pool, under the longest cluster name the spec allows; the GPU group
    # scales from zero to 4 (the Cluster Autoscaler's Pod Identity, its add-on and policy under the longest names)
    "eks-cmk-longest-name": _config(
        LONGEST_NAME,
        scheduler="kubernetes",
        encryption={"key": "auto"},
        kubernetes={"systemNodes": 2},
        minNodes=0,
        maxNodes=4,
    ),
    # EKS with monitoring.logs under a key and the longest name: the CloudWatch Observability add-on (pinned, its
    # configuration values), the three Container Insights groups and the node role's grant on them
    "eks-cmk-logs-longest-name": _config(
        LONGEST_NAME,
        scheduler="kubernetes",
        encryption={"key": "auto"},
        kubernetes={"systemNodes": 2},
        monitoring={"logs": {"enabled": True, "retentionDays": 3653}},
    ),
    # monitoring.logs.controlPlane under a key with the longest EKS name EKS takes (100): the cluster's
    # logging.clusterLogging with every type, its /aws/eks/<name>/cluster group (CreateLogGroup's 512-character name)
    "eks-cmk-control-plane-logs-longest-name": _config(
        LONGEST_NAME,
        scheduler="kubernetes",
        encryption={"key": "auto"},
        kubernetes={"systemNodes": 2, "clusterName": "e" * 100},
        monitoring={
            "logs": {
                "enabled": True,
                "retentionDays": 3653,
                "controlPlane": ["api", "audit", "authenticator", "controllerManager", "scheduler"],
            }
        },
    ),
    # Slurm with EFS and a customer key: the largest user data (15.5 KB of EC2's 16 KB after gzip; measured)
    "slurm-efs-cmk-longest-name": _config(
        LONGEST_NAME,
        scheduler="slurm",
        storage={"shared": {"kind": "nfs"}},
        encryption={"key": "auto"},
        login={"instanceType": "m7i.large"},
    ),
    # monitoring.logs and .notify under a key and the longest name: the CloudWatch Logs group, the SNS topic and its
    # email subscriptions, the agent on every node and Alertmanager on the login node (the largest login user data)
    "slurm-efs-cmk-logs-notify-longest-name": _config(
        LONGEST_NAME,
        scheduler="slurm",
        storage={"shared": {"kind": "nfs"}},
        encryption={"key": "auto"},
        login={"instanceType": "m7i.large"},
        slurm={"accounting": True},
        monitoring={"logs": {"enabled": True, "retentionDays": 3653}, "notify": ["ops@example.com", "ml@example.com"]},
    ),
    # the inference fleet: Spot above an On-Demand base, queue-depth scaling on its own SQS queue, a schedule
    "fleet-queue": _config(
        "feat-fleet",
        instanceType="g6e.xlarge",
        nodes=1,
        minNodes=0,
        maxNodes=8,
        placement="none",
        spot={"enabled": True, "onDemandBase": 1, "fallback": "none"},
        scaling={
            "metric": "queueDepth",
            "target": 5,
            "queue": "auto",
            "timeZone": "Europe/Berlin",
            "schedule": [{"cron": "0 22 * * *", "nodes": 0}, {"cron": "0 7 * * 1-5", "nodes": 1}],
        },
    ),
    # serve: an internet-facing endpoint with TLS on the NAT's public subnet, the longest cluster name (the load
    # balancer's and target group's names fall back to a name prefix)
    "fleet-serve-public-tls-longest-name": _config(
        LONGEST_NAME,
        instanceType="g6e.xlarge",
        nodes=1,
        maxNodes=4,
        placement="none",
        serve={
            "port": 8000,
            "public": True,
            "certificate": "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
            "allowedCidrs": ["203.0.113.0/24", "198.51.100.0/24"],
        },
    ),
    # serve.requestsPerNode: an internet-facing Application Load Balancer with TLS and its idle timeout, its second
    # subnet in another zone, the target-tracking policy on its requests per target; the longest cluster name
    "fleet-serve-requests-public-tls-longest-name": _config(
        LONGEST_NAME,
        instanceType="g6e.xlarge",
        nodes=1,
        maxNodes=4,
        placement="none",
        serve={
            "port": 8000,
            "public": True,
            "certificate": "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
            "allowedCidrs": ["203.0.113.0/24"],
            "requestsPerNode": 4,
            "idleTimeoutSeconds": 900,
        },
    ),
    # serve over tcp with the listener's idle timeout, in a network that exists
    "fleet-serve-tcp-existing-network": _config(
        "feat-serve-tcp",
        instanceType="g6e.xlarge",
        nodes=1,
        maxNodes=2,
        placement="none",
        network={"existing": {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0"]}},
        serve={"port": 9000, "protocol": "tcp", "idleTimeoutSeconds": 3600},
    ),
    # monitoring.prometheus managed: the AMP workspace under the cluster's key, its rules, its alert manager to the
    # SNS topic and the topic's policy for AMP; with grafanaAdmins Amazon Managed Grafana, its role association (an
    # Identity Center id with and without its identity store prefix), service account and token
    "slurm-amp-cmk-notify": _config(
        "feat-amp",
        scheduler="slurm",
        encryption={"key": "auto"},
        monitoring={
            "prometheus": "managed",
            "notify": ["ops@example.com"],
            "grafanaAdmins": [
                "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
                "90670a1b2c-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5c",
            ],
        },
    ),
    # instances mode into a Capacity Block, EFS, a customer key, the longest cluster name
    "instances-efs-capacity-block": _config(
        LONGEST_NAME,
        nodeGroup="instances",
        reservation="cr-0123456789abcdef0",
        reservationType="capacity-block",
        storage={"shared": {"kind": "nfs"}},
        encryption={"key": "auto"},
    ),
}

# What AWS would refuse and the spec must refuse first, by its key, before anything is registered (issue 26 defect 3:
# the tags rule reads catalog/tags.yaml); were the spec to let one through, the AWS check below would name the refusal.
SPEC_GAPS: dict[str, tuple[dict[str, Any], str, str]] = {
    "fifty-user-tags": (
        _config("feat-tags", tags={f"k{i:02d}": f"v{i}" for i in range(50)}),
        "gpu-cluster:cluster.tags",
        "50 user tags + environment, Name, gpu-cluster:cluster, gpu-cluster:stack = 54 tags on every AWS resource; "
        "AWS allows 50 per resource (IAM tagListType max 50; the general limit botocore states in eks TagMap)",
    ),
    "tag-characters-iam-refuses": (
        _config("feat-tagchars", tags={"owner": "O'Brien [ml]"}),
        "gpu-cluster:cluster.tags",
        "IAM (role, instance profile), FSx and EFS tag values must match [\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*: "
        "' and [ ] are refused (iam tagValueType, fsx/efs TagValue)",
    ),
}


@pytest.fixture(scope="module")
def feature_plan():
    cache: dict[str, Any] = {}

    def plan(name: str) -> Any:
        if name not in cache:
            cache[name] = plan_values(FEATURES[name], stack=name)
        return cache[name]

    return plan


def _assert_conforms(report: aws.Report) -> None:
    assert report.requests, "nothing was translated"
    assert report.ok, "AWS would refuse:\n" + "\n".join(report.lines())


@pytest.mark.parametrize("stack", shipped_stacks("aws"))
def test_every_shipped_aws_stack_is_accepted_by_the_aws_api_models(stack):
    _assert_conforms(aws.check_plan(plan_stack(stack)))


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_feature_configs_are_accepted_by_the_aws_api_models(name, feature_plan):
    _assert_conforms(aws.check_plan(feature_plan(name)))


@pytest.mark.parametrize("name", sorted(SPEC_GAPS))
def test_the_spec_refuses_what_aws_would_refuse(name):
    values, key, _ = SPEC_GAPS[name]
    try:
        plan = plan_values(values, stack=name)
    except ConfigError as refused:  # refused before any resource is registered: what the spec must do
        keys = [e.key for e in getattr(refused, "errors", [refused])]
        assert any(k == key or k.startswith(f"{key}.") for k in keys), str(refused)
        return
    _assert_conforms(aws.check_plan(plan))


def _registrable_tokens() -> set[str]:
    """The Pulumi type token of every pulumi_aws resource class components/aws/ constructs, read from the SDK's source
    (`pulumi_aws/<module>/<snake_case class>.py`) without importing it (importing pulumi_aws.ec2 takes seconds)."""
    spec = importlib.util.find_spec("pulumi_aws")
    assert spec is not None and spec.origin is not None
    sdk = Path(spec.origin).parent
    tokens = set()
    for path in sorted((ROOT / "components" / "aws").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            parts = ast.unparse(node.func).split(".")
            if len(parts) != 3 or parts[0] != "aws" or parts[2].endswith("Args") or not parts[2][0].isupper():
                continue
            module, cls = parts[1], parts[2]
            source = (sdk / module / (re.sub(r"(?<!^)(?=[A-Z])", "_", cls).lower() + ".py")).read_text()
            found = re.search(rf"super\({cls}, __self__\).__init__\(\s*'(aws:[^']+)'", source)
            assert found, f"no type token for pulumi_aws.{module}.{cls}"
            tokens.add(found.group(1))
    return tokens


def test_every_aws_resource_type_the_components_build_is_translated():
    tokens = _registrable_tokens()
    assert len(tokens) >= 30  # the walk found the classes (a broken walk must not pass)
    assert tokens - aws.covered_types() == set()


def test_the_feature_configs_register_every_translated_type(feature_plan):
    registered = {r.type for name in FEATURES for r in feature_plan(name).resources}
    registered |= {r.type for stack in shipped_stacks("aws") for r in plan_stack(stack).resources}
    assert aws.covered_types() - registered == set()
    assert registered - aws.covered_types() - set(aws.NOT_AWS_REQUESTS) == set()


# ---------------------------------------------------------------------------------------------------------------
# The checker refuses what AWS refuses


def _problems(service: str, operation: str, params: dict[str, Any]) -> list[str]:
    return [f"{r.path}: {r.message}" for r in validate(Request(service, operation, params, "urn:test", "test"))]


def _ingress(description: str, source: str = "group") -> dict[str, Any]:
    if source == "group":
        where = {"UserIdGroupPairs": [{"GroupId": "<id of sg>", "Description": description}]}
    else:
        where = {"IpRanges": [{"CidrIp": "10.0.0.0/16", "Description": description}]}
    return {"GroupId": "<id of sg>", "IpPermissions": [{"IpProtocol": "tcp", "FromPort": 988, "ToPort": 988, **where}]}


def test_an_apostrophe_in_a_rule_description_is_refused():
    problems = _problems("ec2", "AuthorizeSecurityGroupIngress", _ingress("lustre 988 from the cluster's nodes"))
    assert len(problems) == 1 and "UserIdGroupPairs[0].Description" in problems[0] and '"\'"' in problems[0]
    assert _problems("ec2", "AuthorizeSecurityGroupIngress", _ingress("lustre 988 from the cluster nodes")) == []


def test_description_character_sets_are_each_shapes_own():
    # botocore: IpRange.Description allows '&', UserIdGroupPair.Description does not
    assert _problems("ec2", "AuthorizeSecurityGroupIngress", _ingress("a & b", source="cidr")) == []
    assert len(_problems("ec2", "AuthorizeSecurityGroupIngress", _ingress("a & b"))) == 1
    assert len(_problems("ec2", "AuthorizeSecurityGroupIngress", _ingress("x" * 256))) == 1


def _vpc(tags: int) -> dict[str, Any]:
    pairs = [{"Key": f"k{i}", "Value": "v"} for i in range(tags)]
    return {"CidrBlock": "10.0.0.0/16", "TagSpecifications": [{"ResourceType": "vpc", "Tags": pairs}]}


def test_more_than_50_tags_are_refused():
    assert _problems("ec2", "CreateVpc", _vpc(50)) == []
    (problem,) = _problems("ec2", "CreateVpc", _vpc(51))
    assert "51 tags, at most 50" in problem


def test_tag_keys_and_values_are_judged():
    spec = {"ResourceType": "vpc", "Tags": [{"Key": "aws:owner", "Value": "v"}, {"Key": "k" * 128, "Value": "v" * 257}]}
    problems = _problems("ec2", "CreateVpc", {"CidrBlock": "10.0.0.0/16", "TagSpecifications": [spec]})
    assert any("aws:" in p for p in problems)
    assert any("128 characters" in p for p in problems)  # EC2's Tag.Key: "a maximum of 127 Unicode characters"
    assert any("257 characters" in p for p in problems)
    role = {"RoleName": "r", "AssumeRolePolicyDocument": "{}", "Tags": [{"Key": "owner", "Value": "O'Brien"}]}
    (problem,) = _problems("iam", "CreateRole", role)
    assert "Tags[0].Value" in problem and "pattern" in problem


def test_a_missing_required_member_is_refused():
    (problem,) = _problems("ec2", "CreateSecurityGroup", {"GroupName": "g", "VpcId": "<id of vpc>"})
    assert "Missing required parameter" in problem and "Description" in problem


def test_a_value_outside_an_enum_is_refused():
    (problem,) = _problems("ec2", "CreatePlacementGroup", {"GroupName": "g", "Strategy": "clustered"})
    assert "'clustered' is not a value of PlacementStrategy" in problem
    data = {"NetworkInterfaces": [{"DeviceIndex": 0, "InterfaceType": "efa-plus"}]}
    (problem,) = _problems("ec2", "CreateLaunchTemplate", {"LaunchTemplateName": "lt", "LaunchTemplateData": data})
    assert "'efa-plus' is not one of interface, efa, efa-only" in problem  # an enum stated only in the text


def test_names_are_judged_by_pattern_and_length():
    (problem,) = _problems("iam", "CreateRole", {"RoleName": "my role", "AssumeRolePolicyDocument": "{}"})
    assert "pattern" in problem
    (problem,) = _problems("iam", "CreateRole", {"RoleName": "r" * 65, "AssumeRolePolicyDocument": "{}"})
    assert "at most 64" in problem
    (problem,) = _problems("ec2", "CreateSecurityGroup", {"GroupName": "sg-1", "Description": "d"})
    assert "must not start with 'sg-'" in problem


def test_user_data_over_16_kb_is_refused_on_templates_and_instances():
    big = base64.b64encode(b"x" * (16 * 1024 + 1)).decode()
    template = {"LaunchTemplateName": "lt", "LaunchTemplateData": {"UserData": big}}
    assert "16385 bytes decoded" in _problems("ec2", "CreateLaunchTemplate", template)[0]
    run = {"MinCount": 1, "MaxCount": 1, "UserData": big}
    assert "16385 bytes decoded" in _problems("ec2", "RunInstances", run)[0]


def test_values_known_only_at_deploy_are_present_but_not_judged():
    assert _problems("iam", "AttachRolePolicy", {"RoleName": "<autoname:role>", "PolicyArn": "<arn of p>"}) == []
    (problem,) = _problems("iam", "AttachRolePolicy", {"RoleName": "<autoname:role>"})
    assert "PolicyArn" in problem


def _resource(kind: str, name: str, **inputs: Any) -> dict[str, Any]:
    return {"urn": f"urn:pulumi:s::p::{kind}::{name}", "type": kind, "name": name, "inputs": inputs}


def test_a_pulumi_autoname_longer_than_the_maximum_is_refused():
    role = _resource("aws:iam/role:Role", "r" * 57, assumeRolePolicy="{}")  # 57 + "-" + 7 = 65 > 64
    report = aws.check_resources([role])
    assert [r.operation for r in report.refusals] == ["autoname", "CreateRole"]
    assert report.requests[0].params["RoleName"] == f"{'r' * 57}-{RANDOM}"


def test_an_input_no_translator_reads_is_reported():
    vpc = _resource("aws:ec2/vpc:Vpc", "v", cidrBlock="10.0.0.0/16", ipv6CidrBlock="2001:db8::/56")
    assert aws.check_resources([vpc]).untranslated == [
        "urn:pulumi:s::p::aws:ec2/vpc:Vpc::v: input ipv6CidrBlock is not translated"
    ]
    unknown = _resource("aws:ec2/flowLog:FlowLog", "f")
    assert "no translation for aws:ec2/flowLog:FlowLog" in aws.check_resources([unknown]).untranslated[0]


def test_the_documentation_constraints_are_read_from_botocore():
    """The text constraints come from the installed botocore, not from this file: they exist and say what EC2 says."""
    pair = doc_rules("ec2", "UserIdGroupPair", "Description")
    assert any("Allowed characters" in r.text for r in pair)
    assert tag_rules().count == 50 and tag_rules().reserved_prefix == "aws:"


def test_grafana_admin_ids_and_the_token_life_are_judged_by_the_grafana_model():
    """The spec's Identity Center id pattern (catalog managed.aws.managedGrafana adminIdPattern) is botocore's SsoId
    pattern, and the token's 30 days its secondsToLive maximum."""
    from components.catalog import monitoring as catalog_monitoring

    grafana = (catalog_monitoring.managed("aws") or {})["managedGrafana"]
    assert grafana["tokenSecondsToLive"] == 2592000

    def permissions(user: str) -> list[str]:
        batch = [{"action": "ADD", "role": "ADMIN", "users": [{"id": user, "type": "SSO_USER"}]}]
        return _problems(
            "grafana", "UpdatePermissions", {"workspaceId": "g-0123456789", "updateInstructionBatch": batch}
        )

    assert permissions("90670a1b2c-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b") == []
    assert permissions("ops@example.com")  # what the spec refuses by key, botocore refuses too
    token = {"name": "t", "secondsToLive": 2592001, "serviceAccountId": "1", "workspaceId": "g-0123456789"}
    assert _problems("grafana", "CreateWorkspaceServiceAccountToken", token)


def test_a_budget_name_and_a_notification_are_judged_by_the_budgets_model():
    """BudgetName's pattern (no ':', no '/action/', its case-insensitive <script> clause) and a notification over
    the model's limits (NotificationThreshold max 1.5e13; ThresholdType's enum)."""
    budget = {"BudgetName": "dev:budget", "BudgetType": "COST", "TimeUnit": "MONTHLY",
              "BudgetLimit": {"Amount": "100", "Unit": "USD"}}  # fmt: skip
    (problem,) = _problems("budgets", "CreateBudget", {"AccountId": "123456789012", "Budget": budget})
    assert "BudgetName" in problem
    assert not _problems("budgets", "CreateBudget", {"AccountId": "123456789012", "Budget": {**budget,
                         "BudgetName": "dev-budget"}})  # fmt: skip
    note = {"NotificationType": "ACTUAL", "ComparisonOperator": "GREATER_THAN", "Threshold": 2e13,
            "ThresholdType": "PERCENT"}  # fmt: skip
    params = {"AccountId": "123456789012", "BudgetName": "dev-budget", "Notification": note,
              "Subscribers": [{"SubscriptionType": "EMAIL", "Address": "ops@example.com"}]}  # fmt: skip
    problems = " | ".join(_problems("budgets", "CreateNotification", params))
    assert "Threshold" in problems and "'PERCENT'" in problems
