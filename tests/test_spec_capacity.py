"""Capacity (issue 26, defect 5): Capacity Blocks only on the families AWS sells as such, GCP flex-start placed
compactly only where Cluster Toolkit allows it, and a GCP zone no GPU is sold in refused (catalog/capacity.yaml)."""

from __future__ import annotations

import pytest

from components import catalog
from components.catalog import capacity

from .conftest import aws_values, gcp_values, plan_values, resources_of, spec_of
from .test_spec_rules import errors_of

CB = "cr-0123456789abcdef0"


def keyed(values) -> dict[str, str]:
    return {e.key: e.message for e in errors_of(values)}


def block(instance_type: str, **cluster):
    return aws_values(gpu=None, instanceType=instance_type, reservation=CB, reservationType="capacity-block", **cluster)


def test_a_capacity_block_on_a_type_not_sold_as_one_is_refused():
    message = keyed(block("g6e.12xlarge"))["gpu-cluster:cluster.reservationType"]
    assert "g6e.12xlarge is not sold as an EC2 Capacity Block" in message and "p5" in message


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p4d.24xlarge", "p5en.48xlarge", "p6-b200.48xlarge"])
def test_a_capacity_block_on_a_family_sold_as_one_plans(instance_type):
    spec = spec_of(block(instance_type, zone=None))
    assert (spec.reservation_type, spec.instance.instanceType) == ("capacity-block", instance_type)


def test_every_type_sold_only_through_capacity_blocks_is_in_a_capacity_block_family():
    only = [r.instanceType for r in catalog.load("aws").types if r.extra.get("purchase") == "capacity-block"]
    assert only and all(capacity.capacity_block_refusal(t) is None for t in only)


def flex(instance_type: str, **cluster):
    base = {"gpu": None, "instanceType": instance_type, "nodes": 2, "nodeGroup": "instances", "zone": None}
    return gcp_values(**{**base, "gcp": {"flexStart": True}, **cluster})


def test_flex_start_on_a3_mega_resolves_placement_auto_to_none_and_plans_no_placement_policy():
    spec = spec_of(flex("a3-megagpu-8g"))
    assert spec.placement == "none"
    assert any("auto resolves to none with gcp.flexStart" in f.message for f in spec.findings)
    plan = plan_values(flex("a3-megagpu-8g"))
    assert resources_of(plan, "compute/resourcePolicy:ResourcePolicy") == []
    instances = resources_of(plan, "compute/instanceFromTemplate:InstanceFromTemplate") + resources_of(
        plan, "compute/instance:Instance"
    )
    assert instances and all(not r["inputs"].get("resourcePolicies") for r in instances)


def test_flex_start_with_an_explicit_cluster_placement_on_a3_mega_is_refused():
    message = keyed(flex("a3-megagpu-8g", placement="cluster"))["gpu-cluster:cluster.placement"]
    assert "flex-start VMs are placed compactly only on a3-ultragpu, a4-highgpu, h4d" in message


def test_flex_start_on_a3_mega_at_one_node_gets_no_placement_policy():
    # flex-start VMs are standalone instances (a MIG is refused): one VM would get a compact policy, which is not
    # kept at one node (its vmCount is fixed), so auto is none for that reason, said as info
    one = flex("a3-megagpu-8g", nodes=1)
    spec = spec_of(one)
    assert spec.placement == "none"
    assert [f.level for f in spec.findings if f.message.startswith("auto resolves to none at one node")] == ["info"]
    assert resources_of(plan_values(one), "compute/resourcePolicy:ResourcePolicy") == []


def test_flex_start_on_a3_ultra_keeps_its_compact_placement():
    spec = spec_of(flex("a3-ultragpu-8g", zone="us-central1-b"))
    assert spec.placement == "cluster"
    assert spec_of(flex("a3-ultragpu-8g", zone="us-central1-b", placement="cluster")).placement == "cluster"


def test_without_flex_start_a3_mega_keeps_its_placement():
    assert spec_of(gcp_values(gpu=None, instanceType="a3-megagpu-8g", nodes=2, zone=None)).placement == "cluster"


def test_a_gcp_zone_no_gpu_is_sold_in_is_an_error():
    message = keyed(gcp_values(zone="us-central1-z"))["gpu-cluster:cluster.zone"]
    assert "got 'us-central1-z'; no GPU type is sold in such a zone of us-central1" in message
    assert "us-central1-a, us-central1-b, us-central1-c, us-central1-f" in message


def test_the_gcp_zone_key_is_named_when_the_zone_comes_from_gcp_zone():
    values = gcp_values(zone=None)
    values["gcp:zone"] = "us-central1-z"
    assert "no GPU type is sold" in keyed(values)["gcp:zone"]


def test_a_listed_zone_that_does_not_sell_the_type_is_still_a_warning():
    spec = spec_of(gcp_values(gpu="H200:8", instanceType="a3-ultragpu-8g", zone="us-central1-a", spot=True))
    assert any("not sold in zone us-central1-a" in f.message for f in spec.findings)


def test_zones_are_refused_only_where_the_data_knows_them():
    assert capacity.zones_known("gcp") and not capacity.zones_known("tencentcloud")
    assert capacity.zones_listed("gcp", "us-central1") == tuple(f"us-central1-{z}" for z in "abcf")
    assert capacity.zones_listed("aws", "us-east-1") == ()
