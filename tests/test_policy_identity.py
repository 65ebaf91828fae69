"""The no-admin-on-nodes rule on every cloud, and the login node as the one place a public IP may land."""

from __future__ import annotations

import copy
import json

import pytest

from components.plan import load_stack
from components.policy import Resource, evaluate

from .conftest import ROOT, plan_stack, plan_values, shipped_stacks

ADMIN = {
    "aws-dev": "arn:aws:iam::aws:policy/AdministratorAccess",
    "gcp-dev": "roles/owner",
    "azure-dev": "/providers/Microsoft.Authorization/roleDefinitions/8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
    "alicloud-dev": "AdministratorAccess",
}
HARMLESS = {
    "aws-dev": "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess",
    "gcp-dev": "roles/storage.objectViewer",
    "azure-dev": "/providers/Microsoft.Authorization/roleDefinitions/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    "alicloud-dev": "AliyunOSSReadOnlyAccess",
}


def with_cluster(stack: str, **cluster):
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    values["gpu-cluster:cluster"].update(cluster)
    return plan_values(values, stack)


def rules_of(plan) -> list[str]:
    return [v.rule for v in plan.violations()]


@pytest.mark.parametrize("stack", sorted(ADMIN))
def test_an_admin_grant_on_the_nodes_is_a_violation_on_every_cloud(stack):
    plan = with_cluster(stack, identity={"policies": [ADMIN[stack]]})
    hits = [v for v in plan.violations() if v.rule == "no-admin-on-nodes"]
    assert len(hits) == 1 and hits[0].level == "mandatory"
    assert "administrator role" in hits[0].message


@pytest.mark.parametrize("stack", sorted(HARMLESS))
def test_a_scoped_grant_passes(stack):
    assert "no-admin-on-nodes" not in rules_of(with_cluster(stack, identity={"policies": [HARMLESS[stack]]}))


def test_every_shipped_stack_grants_no_admin(stack_plan):
    for name in shipped_stacks():
        assert "no-admin-on-nodes" not in rules_of(plan_stack(name)), name


@pytest.mark.parametrize(
    "document",
    [
        {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
        json.dumps({"Statement": {"Effect": "Allow", "Action": ["*"], "Resource": ["*"]}}),
    ],
)
def test_an_inline_wildcard_policy_is_a_violation(document):
    cluster = Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {}}, "urn:c", "c")
    policy = Resource("aws:iam/rolePolicy:RolePolicy", {"policy": document}, "urn:p", "p")
    assert [v.rule for v in evaluate([cluster, policy])] == ["no-admin-on-nodes"]


def test_a_scoped_inline_policy_or_a_deny_passes():
    cluster = Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {}}, "urn:c", "c")
    scoped = {"Statement": [{"Effect": "Allow", "Action": "autoscaling:SetInstanceHealth", "Resource": "*"}]}
    deny = {"Statement": [{"Effect": "Deny", "Action": "*", "Resource": "*"}]}
    for document in (scoped, deny, "not json"):
        policy = Resource("aws:iam/rolePolicy:RolePolicy", {"policy": document}, "urn:p", "p")
        assert evaluate([cluster, policy]) == []


@pytest.mark.parametrize("stack", ["aws-dev", "gcp-dev", "azure-dev", "alicloud-dev"])
def test_a_public_login_node_passes_no_public_ip_while_the_nodes_stay_private(stack):
    plan = with_cluster(
        stack, login={"publicIp": True}, access="ssh", network={"sshCidrs": ["203.0.113.0/24"], "egress": "nat"}
    )
    public = [v for v in plan.violations() if v.rule == "no-public-ip"]
    assert public == [], [v.message for v in public]


def test_a_public_ip_on_a_gpu_node_is_still_caught_with_a_login_node():
    cluster = Resource("gpu-cluster:index:GpuCluster", {"stackFacts": {"loginPublicIp": True}}, "urn:c", "c")
    node = Resource("aws:ec2/instance:Instance", {"associatePublicIpAddress": True}, "urn:n", "llm-aws-node-0")
    login = Resource("aws:ec2/instance:Instance", {"associatePublicIpAddress": True}, "urn:l", "llm-aws-login")
    assert [v.urn for v in evaluate([cluster, node, login]) if v.rule == "no-public-ip"] == ["urn:n"]


def test_the_pack_runs_the_new_rule():
    from policy.pack import stack_policies

    assert "no-admin-on-nodes" in {p.name for p in stack_policies()}
