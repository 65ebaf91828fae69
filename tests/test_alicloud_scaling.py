"""Elastic fleets on Alibaba Cloud: the ESS group's floor (scale to zero), its Spot mix with an on-demand base and
the on-demand fallback, and its scheduled tasks (UTC crons from a fixed-offset zone), as registered with the mocks;
what is not built is refused with its key."""

from datetime import UTC, datetime

import pytest

from components.errors import ConfigError
from components.layout import alicloud as ali_layout
from components.layout.alicloud import scaling as alicloud_scaling

from .conftest import one, plan_values, resources_of, spec_of

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
        ({"metric": "gpuUtilization", "target": 70}, "which series an ESS custom-metric alarm reads"),
        ({"metric": "queueDepth", "target": 5, "queue": "auto"}, "no Message Service queue metric"),
    ],
)
def test_scaling_metrics_not_built_on_alicloud_are_refused_with_their_key(scaling, reason):
    with pytest.raises(ConfigError) as info:
        ali_layout.plan(spec_of(fleet(scaling=scaling)))
    assert info.value.key == "gpu-cluster:cluster.scaling.metric"
    assert reason in info.value.message


BUILD_DAY = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # a Tuesday


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr(alicloud_scaling, "now", lambda: BUILD_DAY)


def schedule(zone, *entries):
    return fleet(scaling={"metric": "schedule", "timeZone": zone, "schedule": [dict(e) for e in entries]})


def tasks_of(values):
    return [r["inputs"] for r in resources_of(plan_values(values), "ess/scheduledTask:ScheduledTask")]


def test_schedule_in_a_fixed_offset_zone_becomes_utc_cron_tasks_on_the_group(clock):
    values = schedule("Asia/Shanghai", {"cron": "0 8 * * 1-5", "nodes": 4}, {"cron": "30 20 * * *", "nodes": 0})
    morning, night = tasks_of(values)
    # 08:00 in UTC+8 is 00:00 UTC the same weekday; 20:30 is 12:30 UTC
    assert morning["recurrenceType"] == night["recurrenceType"] == "Cron"
    assert (morning["recurrenceValue"], morning["desiredCapacity"]) == ("0 0 * * 1-5", 4)
    assert (night["recurrenceValue"], night["desiredCapacity"]) == ("30 12 * * *", 0)
    assert morning["scalingGroupId"] == night["scalingGroupId"] == "<id of test-alicloud-ess>"
    # the first run is the cron's next UTC fire after the build, the end as far as ESS allows (365 days)
    assert (morning["launchTime"], night["launchTime"]) == ("2026-12-02T00:00Z", "2026-12-01T12:30Z")
    assert morning["recurrenceEndTime"] == night["recurrenceEndTime"] == "2027-12-01T00:00:00Z"
    assert not {"minValue", "maxValue", "scheduledAction"} & set(morning)


def test_a_local_time_on_the_previous_utc_day_moves_the_day_of_week_and_splits_the_entry(clock):
    # 06:00 in UTC+8 is 22:00 UTC the day before; 20:00 stays on the same day
    early, late = tasks_of(schedule("Asia/Shanghai", {"cron": "0 6,20 * * 1-5", "nodes": 3}))
    assert early["recurrenceValue"] == "0 22 * * 0,1,2,3,4"
    assert late["recurrenceValue"] == "0 12 * * 1-5"
    assert (early["desiredCapacity"], late["desiredCapacity"]) == (3, 3)


def test_schedule_warns_of_the_date_the_tasks_stop_and_what_renews_them(clock):
    layout = ali_layout.plan(spec_of(schedule("UTC", {"cron": "0 22 * * *", "nodes": 0})))
    assert layout.fleet is not None and layout.fleet.schedule[0].cron == "0 22 * * *"
    (warning,) = [w for w in layout.warnings if "scaling.schedule" in w]
    assert "stop repeating on 2027-12-01" in warning and "pulumi up" in warning


def test_schedule_outputs_name_the_utc_crons_and_their_end(clock):
    doc = plan_values(schedule("Etc/GMT-9", {"cron": "0 9 * * *", "nodes": 2})).as_json()
    assert any("stop repeating on 2027-12-01" in w for w in doc["warnings"])  # the plan says it, too
    scaling = doc["outputs"]["scaling"]
    assert scaling["schedule"] == [
        {"cron": "0 0 * * *", "timeZone": "UTC", "nodes": 2, "until": "2027-12-01T00:00:00Z"}
    ]


@pytest.mark.parametrize(
    ("zone", "cron", "key", "reason"),
    [
        ("Europe/Berlin", "0 8 * * *", "scaling.timeZone", "daylight saving"),
        ("Asia/Shanghai", "0 6 1 * *", "scaling.schedule[0].cron", "day of month or month"),
        ("Asia/Kolkata", "0,45 8 * * *", "scaling.schedule[0].cron", "not one minute x hour cron"),
        ("UTC", "0 0 1 6 *", "scaling.schedule[0].cron", "more than 90 days ahead"),
    ],
)
def test_schedules_that_cannot_be_converted_exactly_are_refused_by_key(clock, zone, cron, key, reason):
    with pytest.raises(ConfigError) as info:
        ali_layout.plan(spec_of(schedule(zone, {"cron": cron, "nodes": 0})))
    assert info.value.key == f"gpu-cluster:cluster.{key}"
    assert reason in info.value.message
