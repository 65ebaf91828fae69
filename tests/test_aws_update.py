"""Drain-first replacements on AWS (`update:`): the Auto Scaling group's instance refresh, its termination lifecycle
hook and the node role's grant on exactly that group, the EKS node group's update_config, as registered with the
mocks; the spec's refusals; and the diff of an image bump on a managed group (an in-place update that rolls)."""

import json

import pytest

from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.spec import build_spec

from .conftest import aws_values, one, plan_json, plan_stack_with, plan_values, resources_of

ASG = "aws:autoscaling/group:Group"
HOOK = "autoscaling/lifecycleHook:LifecycleHook"


def refusals(values) -> dict[str, str]:
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        build_spec(values, "test")
    errors = info.value.errors if isinstance(info.value, ConfigErrors) else [info.value]
    return {e.key: e.message for e in errors}


@pytest.mark.parametrize("stack", ["aws-h100", "aws-slurm-h100", "aws-inference-fleet", "aws-dev"])
def test_every_managed_group_rolls_a_template_change_drain_first(stack_plan, stack):
    plan = stack_plan(stack)
    asg = one(plan, "autoscaling/group:Group")
    refresh = asg["inputs"]["instanceRefresh"]
    assert refresh == {
        "strategy": "Rolling",
        "preferences": {
            "minHealthyPercentage": 90,  # the AWS default (catalog/update.yaml)
            "maxHealthyPercentage": 100,  # maxSurge 0: no node above the count
            "skipMatching": True,
            "autoRollback": True,
        },
    }
    # the refresh starts on a change of the version the group pins: a number, never $Latest
    version = (asg["inputs"].get("launchTemplate") or {}).get("version") or asg["inputs"]["mixedInstancesPolicy"][
        "launchTemplate"
    ]["launchTemplateSpecification"]["version"]
    assert version != "$Latest"
    hook = one(plan, HOOK)
    assert hook["parent"] == asg["parent"]
    assert hook["inputs"] == {
        "name": "gpu-cluster-drain",
        "autoscalingGroupName": f"<autoname:{asg['name']}>",
        "lifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
        "heartbeatTimeout": 3600,  # the drain budget: the hook's own default (botocore)
        "defaultResult": "CONTINUE",
    }


def test_the_node_role_completes_the_lifecycle_action_of_its_own_group_only(stack_plan):
    plan = stack_plan("aws-h100")
    asg = one(plan, "autoscaling/group:Group")
    drain = next(r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"].endswith("node-role-drain"))
    doc = json.loads(drain["inputs"]["policy"])
    assert doc["Statement"] == [
        {
            "Sid": "DrainOwnGroup",
            "Effect": "Allow",
            "Action": ["autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"],
            "Resource": f"<arn of {asg['name']}>",
        },
        # the handler finds its group's name from its instance id: a Describe action has no resource type
        {
            "Sid": "FindOwnGroup",
            "Effect": "Allow",
            "Action": ["autoscaling:DescribeAutoScalingInstances"],
            "Resource": "*",
        },
    ]
    granted = plan.run.outputs["identity"]["inline"]
    assert {"action": doc["Statement"][0]["Action"], "resource": f"<arn of {asg['name']}>"} in granted
    assert {"action": ["autoscaling:DescribeAutoScalingInstances"], "resource": "*"} in granted


def test_the_fleets_scaling_waits_for_the_drain_hook():
    # no scale-in before the hook exists: the target-tracking policy and the schedules depend on it
    plan = plan_stack_with("aws-inference-fleet")
    hook_urn = one(plan, HOOK)["urn"]
    movers = [
        r for r in plan.resources if r.type in ("aws:autoscaling/policy:Policy", "aws:autoscaling/schedule:Schedule")
    ]
    assert movers and all(hook_urn in r.dependencies for r in movers)


def test_the_update_block_sets_the_refresh_and_the_drain_budget():
    plan = plan_values(aws_values(nodes=4, update={"minHealthyPercent": 50, "maxSurge": 1, "drainTimeoutSeconds": 900}))
    prefs = one(plan, "autoscaling/group:Group")["inputs"]["instanceRefresh"]["preferences"]
    assert (prefs["minHealthyPercentage"], prefs["maxHealthyPercentage"]) == (50, 125)
    assert one(plan, HOOK)["inputs"]["heartbeatTimeout"] == 900


def test_manual_keeps_the_drain_hook_but_starts_no_refresh():
    plan = plan_values(aws_values(update={"strategy": "manual"}))
    assert "instanceRefresh" not in one(plan, "autoscaling/group:Group")["inputs"]
    assert one(plan, HOOK)["inputs"]["heartbeatTimeout"] == 3600  # a scale-in still drains


def test_instances_get_no_refresh_and_no_hook(stack_plan):
    plan = stack_plan("aws-a100-instances")
    assert resources_of(plan, HOOK) == []
    assert not any(r["name"].endswith("node-role-drain") for r in resources_of(plan, "iam/rolePolicy:RolePolicy"))


def test_the_eks_gpu_node_group_drains_one_node_at_a_time(stack_plan):
    plan = stack_plan("aws-eks-h100")
    groups = {r["name"]: r["inputs"] for r in resources_of(plan, "eks/nodeGroup:NodeGroup")}
    gpu = next(v for k, v in groups.items() if k.endswith("-gpu"))
    system = next(v for k, v in groups.items() if k.endswith("-system"))
    # 4 nodes, minHealthyPercent 90: ceil(3.6) = 4 kept, so one at a time (at least one: the update must progress)
    assert gpu["updateConfig"] == {"maxUnavailable": 1}
    assert "updateConfig" not in system  # the update block is about the GPU nodes
    assert resources_of(plan, HOOK) == []  # EKS drains its nodes itself


def test_refusals_name_the_key_and_what_is_allowed():
    k = "gpu-cluster:cluster.update"
    got = refusals(aws_values(update={"minHealthyPercent": 100, "drainTimeoutSeconds": 10}))
    assert "no node can be replaced" in got[f"{k}.minHealthyPercent"]
    assert "allowed: 30 to 7200" in got[f"{k}.drainTimeoutSeconds"]
    got = refusals(aws_values(nodes=2, update={"maxSurge": 3}))
    assert "MaxHealthyPercentage 250" in got[f"{k}.maxSurge"] and "allowed: up to 1" in got[f"{k}.maxSurge"]
    got = refusals(aws_values(nodeGroup="instances", update={"strategy": "manual"}))
    assert "nodeGroup: managed" in got[k]
    eks = aws_values(scheduler="kubernetes", update={"strategy": "manual", "maxSurge": 1, "drainTimeoutSeconds": 60})
    got = refusals(eks)
    assert "allowed: rolling" in got[f"{k}.strategy"]
    assert "allowed: 0" in got[f"{k}.maxSurge"]
    assert "no drain budget" in got[f"{k}.drainTimeoutSeconds"]


def test_an_image_bump_on_a_managed_group_is_an_in_place_update_that_rolls():
    before = plan_json(plan_stack_with("aws-slurm-h100", image="ami-0123456789abcdef0"))
    after = plan_json(plan_stack_with("aws-slurm-h100", image="ami-0fedcba9876543210"))
    d = diff_plans(before, after)
    asg = next(c for c in d.changed if c.type == ASG)
    assert asg.verdict == "refresh"  # the group is updated in place, not replaced
    assert not any(c.verdict == "replace" for c in d.changed if c.type == ASG)
    assert any("rolled out by the group itself" in w and "drained and replaced in batches" in w for w in d.warnings)
    # the Slurm head is not touched by a compute-side image bump
    assert not any(c.name.endswith("-head") for c in d.changed)


# --- tags: retagged in place, never a new launch template version -------------------------------------------------


@pytest.mark.parametrize("stack", ["aws-h100", "aws-a100-instances"])
def test_a_vm_mode_template_keeps_its_first_launch_tags_and_nodes_are_tagged_in_place(stack_plan, stack):
    plan = stack_plan(stack)
    template = one(plan, "ec2/launchTemplate:LaunchTemplate")
    assert template["ignoreChanges"] == ["tagSpecifications"]
    for group in resources_of(plan, "autoscaling/group:Group"):  # propagated to the instances it launches
        assert {t["key"]: t["propagateAtLaunch"] for t in group["inputs"]["tags"]}["team"] is True
    for node in resources_of(plan, "ec2/instance:Instance"):  # each node's own tags and its volumes'
        assert node["inputs"]["tags"]["team"] == node["inputs"]["volumeTags"]["team"]
        assert node["inputs"]["volumeTags"]["Name"].endswith("-volume")


def test_an_eks_pool_template_follows_the_tags_its_only_way_to_tag_instances(stack_plan):
    for template in resources_of(stack_plan("aws-eks-h100"), "ec2/launchTemplate:LaunchTemplate"):
        assert not template.get("ignoreChanges")
        assert all(spec["tags"]["gpu-cluster:cluster"] for spec in template["inputs"]["tagSpecifications"])
