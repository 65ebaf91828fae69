"""The `update:` block as the spec resolves it: catalog/update.yaml's defaults per cloud and kind of group, the batch
arithmetic every cloud's rolling policy is built from, and every problem reported at once, naming its key."""

import pytest

from components.catalog.update import cloud_update, defaults
from components.errors import ConfigErrors
from components.spec import UpdateSpec, build_spec

from .conftest import aws_values, gcp_values, spec_of
from .test_alicloud_resources import alicloud_values
from .test_azure_resources import azure_values


def test_the_defaults_are_the_catalogs_with_their_sources():
    base = defaults()
    assert (base["strategy"], base["minHealthyPercent"], base["maxSurge"]) == ("rolling", 90, 0)
    assert "default is 90 percent" in base["minHealthyPercentSource"]
    for cloud in ("aws", "azure", "gcp", "alicloud", "tencentcloud"):
        entry = cloud_update(cloud)
        assert entry.drain_source, cloud
        assert entry.rolling or entry.manual, cloud  # rolls declaratively, or says how by hand


@pytest.mark.parametrize(
    ("values", "drain"),
    [
        (aws_values(), 3600),  # the lifecycle hook's default heartbeat
        (aws_values(scheduler="kubernetes"), None),  # EKS drains by itself: no budget to set
        (azure_values(), 300),  # Terminate notification: PT5M
        (azure_values(scheduler="kubernetes"), 1800),  # AKS drainTimeoutInMinutes 30
        (gcp_values(), None),  # a MIG has no termination hook
        (alicloud_values(instanceType="ecs.gn6i-c4g1.xlarge", nodes=1), 600),  # the ESS hook's default
    ],
)
def test_each_cloud_resolves_its_own_drain_budget(values, drain):
    update = spec_of(values).update
    assert (update.strategy, update.min_healthy_percent, update.max_surge) == ("rolling", 90, 0)
    assert update.drain_timeout_seconds == drain


@pytest.mark.parametrize(
    ("nodes", "healthy", "surge", "down"),
    [
        (1, 90, 0, 1),  # one node, no surge: it goes down (a rolling update must progress)
        (4, 90, 0, 1),  # ceil(3.6) = 4 kept, but at least one at a time
        (10, 90, 0, 1),
        (10, 50, 0, 5),
        (4, 100, 1, 0),  # surge first, nothing down
        (4, 75, 2, 1),
    ],
)
def test_a_batch_takes_down_what_min_healthy_percent_lets_go(nodes, healthy, surge, down):
    assert UpdateSpec("rolling", healthy, surge, None).max_unavailable(nodes) == down


def test_every_problem_is_reported_at_once_each_naming_its_key():
    with pytest.raises(ConfigErrors) as info:
        build_spec(
            aws_values(
                update={"minHealthyPercent": 100, "drainTimeoutSeconds": 9000, "maxSurge": 9, "strategy": "fast"}
            ),
            "test",
        )
    keys = sorted(e.key for e in info.value.errors)
    assert keys == ["gpu-cluster:cluster.update.strategy"]  # the shape first: an unknown strategy is refused alone
    with pytest.raises(ConfigErrors) as info:
        build_spec(aws_values(nodes=2, update={"minHealthyPercent": 100, "drainTimeoutSeconds": 9000}), "test")
    keys = sorted(e.key for e in info.value.errors)
    assert keys == ["gpu-cluster:cluster.update.drainTimeoutSeconds", "gpu-cluster:cluster.update.minHealthyPercent"]
    assert all("allowed" in e.message for e in info.value.errors)
