"""`minNodes`, `scaling` and the object form of `spot` (issue: elastic GPU fleets): defaults that keep every
stack as it was, and one keyed error per problem."""

from __future__ import annotations

import pytest

from components.errors import ConfigErrors
from components.spec import build_spec
from components.spec.model import ScheduledSize

from .conftest import aws_values


def fleet(**cluster):
    base = {"gpu": "L40S:1", "nodes": 1, "maxNodes": 20}
    return aws_values(**{**base, **cluster})


def errors_of(values) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(values, "test")
    return [(e.key, e.message) for e in info.value.errors]


def test_the_defaults_are_todays_cluster():
    spec = build_spec(aws_values(spot=True), "test")
    assert (spec.min_nodes, spec.nodes, spec.scaling) == (2, 2, None)
    assert (spec.spot, spec.spot_on_demand_base, spec.spot_fallback) == (True, 0, "none")
    assert build_spec(aws_values(), "test").spot is False


def test_a_fleet_resolves():
    spec = build_spec(
        fleet(minNodes=0, spot={"onDemandBase": 1, "fallback": "onDemand"},
              scaling={"metric": "gpuUtilization", "target": 70, "schedule": [{"cron": "0 20 * * *", "nodes": 0}],
                       "timeZone": "Europe/Berlin", "scaleInCooldownSeconds": 300}),
        "test",
    )  # fmt: skip
    assert (spec.min_nodes, spec.max_nodes, spec.spot, spec.spot_on_demand_base, spec.spot_fallback) == (
        0, 20, True, 1, "onDemand"
    )  # fmt: skip
    assert spec.scaling is not None
    assert (spec.scaling.metric, spec.scaling.target, spec.scaling.time_zone) == ("gpuUtilization", 70, "Europe/Berlin")
    assert spec.scaling.schedule == (ScheduledSize(cron="0 20 * * *", nodes=0),)
    assert spec.scaling.scale_in_cooldown_seconds == 300


def test_metric_none_is_no_scaling():
    assert build_spec(fleet(scaling={"metric": "none"}), "test").scaling is None


def test_spot_disabled_drops_the_mix():
    spec = build_spec(fleet(spot={"enabled": False}), "test")
    assert (spec.spot, spec.spot_on_demand_base, spec.spot_fallback) == (False, 0, "none")


@pytest.mark.parametrize(
    ("cluster", "key", "fragment"),
    [
        ({"minNodes": 21}, "minNodes", "more than maxNodes 20"),
        ({"minNodes": 2}, "minNodes", "more than nodes 1"),
        ({"scaling": {"metric": "gpuUtilization", "target": 0.5}}, "scaling.target", "1 to 100"),
        ({"scaling": {"metric": "gpuUtilization", "target": 101}}, "scaling.target", "1 to 100"),
        ({"scaling": {"metric": "gpuUtilization"}}, "scaling.target", "required with metric gpuUtilization"),
        ({"scaling": {"metric": "queueDepth", "target": 5}}, "scaling.queue", "required with metric queueDepth"),
        ({"scaling": {"metric": "schedule", "queue": "auto", "schedule": [{"cron": "0 8 * * *", "nodes": 2}]}},
         "scaling.queue", "applies to metric queueDepth"),
        ({"scaling": {"metric": "schedule", "target": 5, "schedule": [{"cron": "0 8 * * *", "nodes": 2}]}},
         "scaling.target", "not schedule"),
        ({"scaling": {"metric": "schedule"}}, "scaling.schedule", "empty"),
        ({"scaling": {"metric": "schedule", "schedule": [{"cron": "0 25 * * *", "nodes": 1}]}},
         "scaling.schedule[0].cron", "not a cron expression"),
        ({"scaling": {"metric": "schedule", "schedule": [{"cron": "0 8 * *", "nodes": 1}]}},
         "scaling.schedule[0].cron", "five fields"),
        ({"scaling": {"metric": "schedule", "schedule": [{"cron": "0 8 * * *", "nodes": 30}]}},
         "scaling.schedule[0].nodes", "outside minNodes 1 to maxNodes 20"),
        ({"scaling": {"metric": "schedule", "timeZone": "Mars/Base", "schedule": []}}, "scaling.timeZone", "IANA"),
        ({"scaling": {"metric": "gpuUtilization", "target": 50}, "scheduler": "slurm"}, "scaling",
         "its own autoscaler"),
        ({"spot": {"onDemandBase": 21}}, "spot.onDemandBase", "more than maxNodes 20"),
        ({"spot": {"enabled": False, "fallback": "onDemand"}}, "spot", "only with enabled: true"),
        ({"spot": "yes"}, "spot", "allowed: true, false or"),
        ({"spot": {"fallback": "ondemand"}}, "spot.fallback", "'onDemand' or 'none'"),
    ],
)  # fmt: skip
def test_bad_fleet_input_names_the_key(cluster, key, fragment):
    got = errors_of(fleet(**cluster))
    assert any(k == f"gpu-cluster:cluster.{key}" and fragment in m for k, m in got), got


def test_instances_neither_scale_nor_mix():
    got = errors_of(
        aws_values(nodeGroup="instances", minNodes=1, spot={"onDemandBase": 1},
                   scaling={"metric": "gpuUtilization", "target": 60})
    )  # fmt: skip
    keys = [k for k, _ in got]
    assert keys == ["gpu-cluster:cluster.spot", "gpu-cluster:cluster.minNodes", "gpu-cluster:cluster.scaling"]


def test_scaling_a_fabric_wired_training_cluster_is_warned():
    spec = build_spec(aws_values(maxNodes=8, scaling={"metric": "gpuUtilization", "target": 80}), "test")
    assert any("fabric-wired multi-node" in w for w in spec.warnings)
    idle = build_spec(fleet(maxNodes=1, scaling={"metric": "gpuUtilization", "target": 80}), "test")
    assert any("nothing can move" in w for w in idle.warnings)


def test_a_scaling_fleet_without_a_fabric_gets_no_placement_group():
    fleet_spec = build_spec(fleet(scaling={"metric": "gpuUtilization", "target": 70}), "test")
    assert fleet_spec.placement == "none"
    assert any("auto resolves to none for a scaling fleet" in str(f) for f in fleet_spec.findings)
    assert build_spec(fleet(), "test").placement == "cluster"  # maxNodes > 1, no scaling: as before
    wired = build_spec(aws_values(maxNodes=8, scaling={"metric": "gpuUtilization", "target": 80}), "test")
    assert wired.placement == "cluster"  # fabric wired: placement kept (and the scaling warned)


def keyed(spec) -> list[str]:
    return [str(f) for f in spec.findings if f.key == "gpu-cluster:cluster.scaling"]


@pytest.mark.parametrize(
    ("cluster", "minimum"),
    [
        ({"nodes": 20, "minNodes": 20}, 20),  # minNodes = maxNodes = nodes
        ({"nodes": 5, "minNodes": 5}, 5),  # minNodes = nodes
        ({"nodes": 5, "minNodes": 0}, 0),
    ],
)
def test_min_nodes_up_to_its_bounds_is_accepted(cluster, minimum):
    assert build_spec(fleet(**cluster), "test").min_nodes == minimum


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        ({"minNodes": 21}, "21 is more than maxNodes 20"),
        ({"nodes": 3, "minNodes": 4}, "4 is more than nodes 3 (the count at deploy)"),
    ],
)
def test_min_nodes_out_of_bounds_messages(cluster, message):
    assert errors_of(fleet(**cluster)) == [("gpu-cluster:cluster.minNodes", message)]


def test_instances_messages():
    got = errors_of(aws_values(nodeGroup="instances", minNodes=1, scaling={"metric": "gpuUtilization", "target": 60}))
    assert got == [
        ("gpu-cluster:cluster.minNodes", "only applies to nodeGroup: managed (instances are a fixed count)"),
        ("gpu-cluster:cluster.scaling", "needs nodeGroup: managed (a fixed set of instances does not scale)"),
    ]


@pytest.mark.parametrize(
    ("scaling", "key", "message"),
    [
        ({"metric": "gpuUtilization"}, "scaling.target",
         "required with metric gpuUtilization: a percent of GPU utilisation (1-100)"),
        ({"metric": "queueDepth", "queue": "auto"}, "scaling.target",
         "required with metric queueDepth: messages per node"),
        ({"metric": "gpuUtilization", "target": 0.99}, "scaling.target",
         "got 0.99; a percent of GPU utilisation, 1 to 100"),
        ({"metric": "gpuUtilization", "target": 100.01}, "scaling.target",
         "got 100.01; a percent of GPU utilisation, 1 to 100"),
        ({"metric": "queueDepth", "target": 5}, "scaling.queue",
         "required with metric queueDepth: auto (the cluster's own) or a queue id"),
        ({"metric": "gpuUtilization", "target": 50, "queue": "auto"}, "scaling.queue",
         "applies to metric queueDepth, not gpuUtilization"),
        ({"metric": "schedule", "target": 5, "schedule": [{"cron": "0 8 * * *", "nodes": 2}]}, "scaling.target",
         "applies to gpuUtilization and queueDepth, not schedule"),
        ({"metric": "schedule"}, "scaling.schedule", "empty, but metric is schedule: list {cron, nodes} entries"),
        ({"metric": "schedule", "schedule": [{"cron": "0 8 * *", "nodes": 1}]}, "scaling.schedule[0].cron",
         "got '0 8 * *'; not a cron expression (five fields are needed: minute hour day-of-month month day-of-week)"),
        ({"metric": "schedule", "schedule": [{"cron": "0 8 * * *", "nodes": 1}, {"cron": "0 20 * * *", "nodes": 21}]},
         "scaling.schedule[1].nodes", "21 is outside minNodes 1 to maxNodes 20"),
    ],
)  # fmt: skip
def test_scaling_messages(scaling, key, message):
    assert errors_of(fleet(scaling=scaling)) == [(f"gpu-cluster:cluster.{key}", message)]


@pytest.mark.parametrize("target", [1, 50, 100])
def test_a_target_from_1_to_100_is_accepted(target):
    spec = build_spec(fleet(scaling={"metric": "gpuUtilization", "target": target}), "test")
    assert spec.scaling is not None and spec.scaling.target == target


def test_queue_depth_resolves_with_its_target_and_queue():
    spec = build_spec(fleet(scaling={"metric": "queueDepth", "target": 5, "queue": "auto"}), "test")
    assert spec.scaling is not None
    assert (spec.scaling.metric, spec.scaling.target, spec.scaling.queue) == ("queueDepth", 5, "auto")


def test_schedule_nodes_at_the_bounds_are_accepted():
    entries = [{"cron": "0 8 * * 1-5", "nodes": 20}, {"cron": "0 20 * * *", "nodes": 1}]
    spec = build_spec(fleet(scaling={"metric": "schedule", "schedule": entries}), "test")
    assert spec.scaling is not None
    assert [entry.nodes for entry in spec.scaling.schedule] == [20, 1]


NOTHING_MOVES = (
    "gpu-cluster:cluster.scaling: gpuUtilization, but minNodes = maxNodes = {n}: nothing can move; raise maxNodes"
)
WIRED = (
    "gpu-cluster:cluster.scaling: gpuUtilization on a fabric-wired multi-node cluster: nodes added later may not land "
    "near the others in the placement group, and a training job loses ranks when a node is removed"
)
TARGET = {"metric": "gpuUtilization", "target": 80}


@pytest.mark.parametrize(
    ("values", "warnings"),
    [
        (fleet(scaling=TARGET), []),  # not fabric wired, room to move
        (fleet(nodes=1, maxNodes=1, scaling=TARGET), [NOTHING_MOVES.format(n=1)]),
        (aws_values(nodes=1, maxNodes=1, scaling=TARGET), [NOTHING_MOVES.format(n=1)]),  # wired, but one node
        (aws_values(nodes=1, maxNodes=2, scaling=TARGET), [WIRED]),
        (aws_values(nodes=2, maxNodes=2, scaling=TARGET), [NOTHING_MOVES.format(n=2), WIRED]),
        (fleet(nodes=1, maxNodes=1, scaling={"metric": "none"}), []),
        (aws_values(maxNodes=8, scaling={"metric": "none"}), []),
        (aws_values(nodes=2, maxNodes=2, scaling={"metric": "none"}), []),
    ],
)
def test_scaling_warnings(values, warnings):
    assert keyed(build_spec(values, "test")) == warnings
