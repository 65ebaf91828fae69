"""Drain-first replacements on Alibaba Cloud (`update:`): the ESS group's scale-in lifecycle hook (the drain budget),
the plan's warning that ESS and ACK cannot roll a new configuration declaratively (with the manual way, in the spec's
own batch sizes), as registered with the mocks; and the refusals."""

import pytest

from components.errors import ConfigError

from .conftest import one, plan_values, resources_of, spec_of
from .test_alicloud_resources import alicloud_values

HOOK = "ess/lifecycleHook:LifecycleHook"
T4 = {"instanceType": "ecs.gn6i-c4g1.xlarge", "nodes": 1}  # alicloud-dev's type: no fabric, a managed group


@pytest.mark.parametrize("stack", ["alicloud-dev", "alicloud-a100-cmk"])
def test_every_shipped_ess_group_drains_a_node_before_scale_in(stack_plan, stack):
    plan = stack_plan(stack)
    group = one(plan, "ess/scalingGroup:ScalingGroup")
    hook = one(plan, HOOK)
    assert hook["parent"] == group["parent"]
    assert hook["inputs"] == {
        "scalingGroupId": f"<id of {group['name']}>",
        "name": "gpu-cluster-drain",
        "lifecycleTransition": "SCALE_IN",
        "heartbeatTimeout": 600,  # ESS's own default (catalog/update.yaml)
        "defaultResult": "CONTINUE",
    }
    # ESS cannot roll a new scaling configuration: the plan says how to do it by hand
    assert any("StartInstanceRefresh" in w for w in plan.spec.warnings)


def test_the_drain_budget_and_its_range():
    plan = plan_values(alicloud_values(**T4, update={"drainTimeoutSeconds": 1800}))
    assert one(plan, HOOK)["inputs"]["heartbeatTimeout"] == 1800
    with pytest.raises(ConfigError) as info:
        spec_of(alicloud_values(**T4, update={"drainTimeoutSeconds": 30000}))
    assert info.value.key == "gpu-cluster:cluster.update.drainTimeoutSeconds"
    assert "allowed: 30 to 21600" in info.value.message


def test_manual_strategy_drops_the_warning_but_keeps_the_hook():
    plan = plan_values(alicloud_values(**T4, update={"strategy": "manual"}))
    assert not any("StartInstanceRefresh" in w for w in plan.spec.warnings)
    assert len(resources_of(plan, HOOK)) == 1


def test_instances_and_ack_pools_get_no_hook(stack_plan):
    assert resources_of(stack_plan("alicloud-erdma"), HOOK) == []
    ack = stack_plan("alicloud-ack-erdma")
    assert resources_of(ack, HOOK) == []
    assert any("nodepools/<pool>/upgrade" in w for w in ack.spec.warnings)


def _refresh_hint(plan) -> str:
    (hint,) = [w for w in plan.spec.warnings if "StartInstanceRefresh" in w]
    return hint


def test_the_manual_refresh_replaces_what_runs_in_the_spec_batch_sizes(stack_plan):
    """ESS matches an instance by its scaling configuration's id, which the in-place update of the configuration keeps,
    so the API's default SkipMatching true would replace nothing; its defaults MinHealthyPercentage 80 and
    MaxHealthyPercentage 120 (a surge node) are not the spec's 90 and 100 (catalog/update.yaml alicloud)."""
    hint = _refresh_hint(stack_plan("alicloud-dev"))
    assert "--SkipMatching false" in hint
    assert "--MinHealthyPercentage 90 " in hint and "--MaxHealthyPercentage 100`" in hint
    assert "<minHealthyPercent>" not in hint and "<maxHealthyPercent>" not in hint
    plan = plan_values(alicloud_values(**{**T4, "nodes": 2}, update={"minHealthyPercent": 50, "maxSurge": 1}))
    hint = _refresh_hint(plan)
    assert "--MinHealthyPercentage 50 " in hint and "--MaxHealthyPercentage 150`" in hint


def test_a_surge_beyond_what_ess_refresh_takes_is_refused():
    with pytest.raises(ConfigError) as info:
        spec_of(alicloud_values(**{**T4, "nodes": 2}, update={"maxSurge": 3}))
    assert info.value.key == "gpu-cluster:cluster.update.maxSurge"
    assert "MaxHealthyPercentage 250" in info.value.message and "allowed: up to 2" in info.value.message
    spec_of(alicloud_values(**{**T4, "nodes": 2}, update={"maxSurge": 2}))  # 200: the most ESS takes


@pytest.mark.parametrize(
    ("key", "mode", "says"),
    [
        ("cluster.image", {"scheduler": "none"}, "until you start the instance refresh the plan prints"),
        ("cluster.image", {"scheduler": "slurm"}, "until you start the instance refresh the plan prints"),
        ("cluster.storage.rootGb", {"scheduler": "slurm"}, "until you start the instance refresh the plan prints"),
        ("cluster.instanceType", {"scheduler": "none"}, "until you start the instance refresh the plan prints"),
        ("cluster.storage.scratchGb", {"scheduler": "slurm"}, "until you start the instance refresh the plan prints"),
        ("cluster.adminUser", {"scheduler": "slurm"}, "until you start the instance refresh the plan prints"),
        ("cluster.image", {"scheduler": "kubernetes"}, "start the node pool upgrade the plan prints"),
        ("cluster.storage.scratchGb", {"scheduler": "kubernetes"}, "start the node pool upgrade the plan prints"),
        ("cluster.adminUser", {"scheduler": "kubernetes"}, "start the node pool upgrade the plan prints"),
    ],
)
def test_the_update_policy_table_says_alibaba_rolls_by_hand(key, mode, says):
    """ESS and ACK take a new configuration for new nodes only (catalog/update.yaml alicloud): the table says so for
    Alibaba, and still says the group rolls by itself elsewhere."""
    from components.spec.updates import update_policies

    policy = update_policies()[key]
    ali = policy.effect({"cloud": "alicloud", "nodeGroup": "managed", "sharedKind": None, **mode})
    assert (ali.policy, says in ali.jobs) == ("rolling", True)
    aws = policy.effect({"cloud": "aws", "nodeGroup": "managed", "scheduler": mode["scheduler"], "sharedKind": None})
    assert "the plan prints" not in aws.jobs


def test_the_manual_refresh_names_only_what_the_ess_api_takes(stack_plan):
    """Every `--Param` of the printed command is a field of ess 2022-02-22 StartInstanceRefreshRequest (the API model
    in the venv), with the values the plan computed."""
    import re

    from alibabacloud_ess20220222.models import StartInstanceRefreshRequest

    hint = _refresh_hint(stack_plan("alicloud-a100-cmk"))
    command = hint[hint.index("`aliyun ess StartInstanceRefresh") : hint.index("`", hint.index("`aliyun") + 1)]
    given = dict(re.findall(r"--(\w+) (\S+)", command))
    assert set(given) == {"RegionId", "ScalingGroupId", "SkipMatching", "MinHealthyPercentage", "MaxHealthyPercentage"}
    values = {k: v for k, v in given.items() if not v.startswith("<")}
    typed = {k: (v == "true") if k == "SkipMatching" else int(v) for k, v in values.items()}
    # to_map writes every list field, empty when unset (Checkpoints)
    assert {k: v for k, v in StartInstanceRefreshRequest().from_map(typed).to_map().items() if v != []} == typed
