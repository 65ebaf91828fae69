"""Drain-first replacements on Alibaba Cloud (`update:`): the ESS group's scale-in lifecycle hook (the drain budget),
the plan's warning that ESS and ACK cannot roll a new configuration declaratively (with the manual way), as
registered with the mocks; and the refusals."""

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
