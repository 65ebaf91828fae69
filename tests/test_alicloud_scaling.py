"""Elastic fleets on Alibaba Cloud: the ESS group's floor (scale to zero) and its Spot mix with an on-demand base and
the on-demand fallback, as registered with the mocks; what is not built is refused with its key."""

import pytest

from components.errors import ConfigError
from components.layout import alicloud as ali_layout

from .conftest import one, plan_values, spec_of

FLEET = {"instanceType": "ecs.gn6i-c4g1.xlarge", "nodes": 1, "minNodes": 0, "maxNodes": 10, "zone": "cn-hangzhou-k"}


def fleet(**cluster):
    return {
        "gpu-cluster:cloud": "alicloud",
        "alicloud:region": "cn-hangzhou",
        "gpu-cluster:cluster": {**FLEET, **cluster},
    }


def group_of(values):
    return one(plan_values(values), "ess/scalingGroup:ScalingGroup")["inputs"]


def test_spot_mix_keeps_an_on_demand_base_and_falls_back_to_on_demand():
    group = group_of(fleet(spot={"enabled": True, "onDemandBase": 1, "fallback": "onDemand"}))
    assert (group["minSize"], group["desiredCapacity"], group["maxSize"]) == (0, 1, 10)
    assert group["multiAzPolicy"] == "COST_OPTIMIZED"
    assert group["onDemandBaseCapacity"] == 1
    assert group["onDemandPercentageAboveBaseCapacity"] == 0
    assert group["compensateWithOnDemand"] is True
    assert group["spotInstanceRemedy"] is True


def test_spot_mix_without_fallback_stays_preemptible_above_the_base():
    group = group_of(fleet(spot={"enabled": True, "onDemandBase": 2, "fallback": "none"}, nodes=2))
    assert (group["onDemandBaseCapacity"], group["compensateWithOnDemand"]) == (2, False)


def test_min_nodes_alone_sets_the_floor_and_no_spot_mix():
    group = group_of(fleet(minNodes=0))
    assert group["minSize"] == 0
    assert not {"multiAzPolicy", "onDemandBaseCapacity", "compensateWithOnDemand"} & set(group)


def test_spot_true_and_a_fixed_group_plan_as_before(stack_plan):
    group = one(stack_plan("alicloud-dev"), "ess/scalingGroup:ScalingGroup")["inputs"]
    assert (group["minSize"], group["maxSize"], group["desiredCapacity"]) == (1, 1, 1)
    assert not {"multiAzPolicy", "onDemandBaseCapacity", "compensateWithOnDemand"} & set(group)
    values = fleet(spot=True)
    del values["gpu-cluster:cluster"]["minNodes"]
    assert ali_layout.plan(spec_of(values)).fleet is None


@pytest.mark.parametrize(
    ("scaling", "reason"),
    [
        ({"metric": "gpuUtilization", "target": 70}, "no GPU metric"),
        ({"metric": "queueDepth", "target": 5, "queue": "auto"}, "no Message Service queue metric"),
        ({"metric": "schedule", "schedule": [{"cron": "0 22 * * *", "nodes": 0}]}, "365 days"),
    ],
)
def test_scaling_metrics_not_built_on_alicloud_are_refused_with_their_key(scaling, reason):
    with pytest.raises(ConfigError) as info:
        ali_layout.plan(spec_of(fleet(scaling=scaling)))
    assert info.value.key == "gpu-cluster:cluster.scaling.metric"
    assert reason in info.value.message
