"""Alibaba Cloud's availability and price data (issue 17, section 1): where each GPU type is sold, per region, from
catalog/availability/alicloud.yaml; a type the data says is not sold in the stack's region exits 2 naming the regions
that sell it; no zone is defaulted from it (it has none); hourlyUsd stays null, and the catalog says why."""

from __future__ import annotations

import re
from typing import Any

import pytest

from components import catalog
from components.catalog import availability
from components.errors import ConfigError
from components.plan import load_stack
from components.plan.render import cost_text

from .conftest import ROOT, plan_json, plan_stack, plan_values, resources_of, shipped_stacks, spec_of

DATA = availability.load("alicloud")
# The families the source prices (every catalog size of them is listed); the 8th-gen ones it has in no region.
PRICED_FAMILIES = ("gn6i", "gn6v", "gn7", "gn7i", "gn7e", "ebmgn7e", "ebmgn7ex", "vgn7i", "vgn6i", "sgn7i")
SALES_ONLY_FAMILIES = ("gn8is", "gn8v", "ebmgn8is", "ebmgn8ia", "ebmgn8v")


def family(instance_type: str) -> str:
    """`ecs.gn7i-c8g1.2xlarge` -> `gn7i`, `ecs.gn8v-8x.48xlarge` -> `gn8v`, `ecs.ebmgn8v.48xlarge` -> `ebmgn8v`."""
    return re.split(r"[.-]", instance_type.removeprefix("ecs."), maxsplit=1)[0]


def alicloud(region: str, **cluster: Any) -> dict[str, Any]:
    return {
        "alicloud:region": region,
        "gpu-cluster:cloud": "alicloud",
        "gpu-cluster:cluster": {"nodes": 1, "nodeGroup": "instances", **cluster},
    }


# --- the data file ----------------------------------------------------------------------------------------


def test_the_file_is_cited_by_commit_dated_and_region_level_only():
    assert DATA.source.startswith(
        "cloudpilot-ai/karpenter-provider-alibabacloud@cb536aff5b7248f5a679823a04e8a9a1b534c8c0 "
        "pkg/providers/pricing/initial-on-demand-prices.json"
    )
    assert DATA.date == "2026-12-01"
    assert len(DATA.covered) == 27
    assert {"cn-hangzhou", "cn-beijing", "us-east-1", "eu-central-1", "ap-southeast-1"} <= DATA.covered
    assert all(not offer.zones for offer in DATA.offers.values())  # the source has no zones
    assert DATA.zone_default is False


def test_every_type_in_the_file_is_a_catalog_row_and_every_priced_family_row_is_in_it():
    rows = {r.instanceType: r for r in catalog.all_types("alicloud")}
    assert set(DATA.offers) <= set(rows)
    priced = {name for name in rows if family(name) in PRICED_FAMILIES}
    assert set(DATA.offers) == priced
    for name in rows:
        assert family(name) in PRICED_FAMILIES + SALES_ONLY_FAMILIES, name  # a new family must be placed in one


@pytest.mark.parametrize(
    ("instance_type", "regions"),
    [
        ("ecs.gn7-c13g1.26xlarge", ("cn-beijing", "cn-shanghai", "cn-wulanchabu")),
        ("ecs.ebmgn7ex.32xlarge", ("cn-beijing", "cn-shenzhen")),
        (
            "ecs.gn7i-8x.32xlarge",
            ("ap-southeast-5", "cn-beijing", "cn-hangzhou", "cn-heyuan", "cn-shanghai", "cn-wulanchabu"),
        ),
    ],
)
def test_regions_as_the_source_lists_them(instance_type, regions):
    offer = availability.offer("alicloud", instance_type)
    assert offer is not None
    assert offer.regions == regions


def test_gn6i_sizes_differ_where_the_source_says_so():
    # the c40g1.10xlarge size has no price in cn-nanjing and us-west-1, unlike its siblings
    assert availability.sold_in("alicloud", "ecs.gn6i-c4g1.xlarge", "us-west-1") is True
    assert availability.sold_in("alicloud", "ecs.gn6i-c40g1.10xlarge", "us-west-1") is False
    assert availability.sold_in("alicloud", "ecs.gn6i-c40g1.10xlarge", "cn-nanjing") is False


@pytest.mark.parametrize("region", ["cn-beijing", "cn-hangzhou", "us-east-1", "me-central-1"])
def test_the_8th_generation_families_stay_unknown_everywhere(region):
    for row in catalog.all_types("alicloud"):
        if family(row.instanceType) in SALES_ONLY_FAMILIES:
            assert availability.offer("alicloud", row.instanceType) is None
            assert availability.sold_in("alicloud", row.instanceType, region) is None
            assert availability.why_not("alicloud", row.instanceType, region) is None


# --- the spec: refusal, resolution, regions outside the source ------------------------------------------


def test_an_instance_type_not_sold_in_the_region_exits_2_naming_where_it_is_sold():
    with pytest.raises(ConfigError) as info:
        spec_of(alicloud("cn-hangzhou", instanceType="ecs.gn7-c13g1.26xlarge"))
    assert info.value.key == "gpu-cluster:cluster.instanceType"
    assert info.value.message.startswith(
        "ecs.gn7-c13g1.26xlarge is not sold in cn-hangzhou; regions that sell it (nearest first): "
        "cn-beijing, cn-shanghai, cn-wulanchabu (catalog/availability/alicloud.yaml: "
        "cloudpilot-ai/karpenter-provider-alibabacloud@cb536aff5b72 pkg/providers/pricing/initial-on-demand-prices.json"
    )
    assert spec_of(alicloud("cn-beijing", instanceType="ecs.gn7-c13g1.26xlarge")).region == "cn-beijing"


def test_a_gpu_no_type_sells_in_the_region_exits_2_on_gpu_and_names_the_nearest_region_first():
    with pytest.raises(ConfigError) as info:
        spec_of(alicloud("us-west-1", gpu="A10:1"))
    assert info.value.key == "gpu-cluster:cluster.gpu"
    assert "ecs.gn7i-c8g1.2xlarge is not sold in us-west-1; regions that sell it (nearest first): us-east-1, " in (
        info.value.message
    )
    assert spec_of(alicloud("us-east-1", gpu="A10:1")).instance.instanceType == "ecs.gn7i-c8g1.2xlarge"


def test_gpu_resolution_skips_a_type_not_sold_there():
    with pytest.raises(catalog.CatalogError, match=re.escape("ecs.gn7-c13g1.26xlarge is not sold in cn-hangzhou")):
        catalog.resolve("alicloud", "A100", 8, region="cn-hangzhou")
    assert catalog.resolve("alicloud", "A100", 8, region="cn-shanghai").type.instanceType == "ecs.gn7-c13g1.26xlarge"


def test_a_region_outside_the_source_is_warned_not_refused():
    spec = spec_of(alicloud("me-central-1", gpu="A10:1"))
    assert spec.instance.instanceType == "ecs.gn7i-c8g1.2xlarge"
    assert any(
        f.level == "warning" and "does not cover me-central-1" in f.message and "eu-central-1" in f.message
        for f in spec.findings
    )


def test_an_unknown_type_is_never_refused():
    spec = spec_of(alicloud("us-west-1", instanceType="ecs.ebmgn8v.48xlarge"))
    assert spec.instance.instanceType == "ecs.ebmgn8v.48xlarge"
    assert not any("catalog/availability" in f.message for f in spec.findings)


# --- zones: the data has none, so the deploy's own lookup stays -----------------------------------------


def test_an_unset_zone_is_left_to_get_zones_and_a_set_zone_is_kept():
    values = alicloud("cn-hangzhou", instanceType="ecs.gn7i-c8g1.2xlarge")
    spec = spec_of(values)
    assert spec.zone is None
    assert availability.zones_selling("alicloud", "ecs.gn7i-c8g1.2xlarge", "cn-hangzhou") is None
    assert not any(f.key.endswith("zone") for f in spec.findings)
    zones = {r["inputs"]["zoneId"] for r in resources_of(plan_values(values), "vpc/switch:Switch")}  # nodes and NAT
    assert zones == {"<first zone in cn-hangzhou selling ecs.gn7i-c8g1.2xlarge>"}  # the mocked get_zones answer
    values["gpu-cluster:cluster"]["zone"] = "cn-hangzhou-k"
    pinned = {r["inputs"]["zoneId"] for r in resources_of(plan_values(values), "vpc/switch:Switch")}
    assert pinned == {"cn-hangzhou-k"}
    assert not any(f.key.endswith("zone") for f in spec_of(values).findings)  # no zone data: nothing to warn


# --- shipped stacks: sold where they are, or unknown (test_identity_of_resources pins their URNs) ------------


EXPECTED = {
    "alicloud-a100": True,  # gn7e-c16g1.32xlarge in cn-beijing
    "alicloud-a100-cmk": True,
    "alicloud-mlps3-sm4": True,  # gn7e-c16g1.32xlarge in cn-beijing, as alicloud-a100
    "alicloud-mlps3-nas": True,  # as alicloud-mlps3-sm4
    "alicloud-dev": True,  # T4:1 -> gn6i-c4g1.xlarge in cn-hangzhou
    "alicloud-erdma": None,  # ebmgn8v: not in the source
    "alicloud-ack-erdma": None,
    "alicloud-inference-fleet": True,  # gn7i-c8g1.2xlarge in cn-hangzhou
    "alicloud-slurm-elastic": None,  # ebmgn8v (its cluster type): not in the source
    "alicloud-a10-slice": True,  # A10:1/6 -> vgn7i-vws-m4.xlarge in cn-beijing
    "alicloud-arms": True,  # T4:1 -> gn6i-c4g1.xlarge in cn-beijing
    "alicloud-ack-arms": True,  # gn7i-c8g1.2xlarge in cn-hangzhou, as alicloud-inference-fleet
}


@pytest.mark.parametrize("stack", shipped_stacks("alicloud"))
def test_every_shipped_alicloud_stack_is_sold_in_its_region_or_unknown(stack):
    spec = spec_of(load_stack(ROOT, stack).values, stack)
    assert availability.sold_in("alicloud", spec.instance.instanceType, spec.region) is EXPECTED[stack]
    assert spec.zone is None or spec.zone == load_stack(ROOT, stack).values["gpu-cluster:cluster"].get("zone")


# --- prices ------------------------------------------------------------------------------------------------


def test_no_usd_price_is_claimed_and_the_catalog_says_what_was_found():
    data = catalog.load("alicloud")
    assert all(r.hourlyUsd is None for r in data.types)
    assert data.prices["region"] is None and data.prices["date"] is None
    assert "CNY" in data.prices["source"] and "not converted" in data.prices["source"]
    # the CNY list that gives the regions is a cited source, and says it is not used for prices
    assert data.sources["CLOUDPILOT-CNY"].startswith(
        "cloudpilot-ai/karpenter-provider-alibabacloud@cb536aff5b7248f5a679823a04e8a9a1b534c8c0"
    )
    assert "not for hourlyUsd" in data.sources["CLOUDPILOT-CNY"]


def test_a_shipped_alicloud_plan_shows_no_price():
    summary = plan_json(plan_stack("alicloud-a100"))["summary"]
    assert summary["hourlyUsd"] is None
    assert summary["hourlyUsdVerified"] is None
    # no USD figure: the node's CNY price (the bill's gpuNode) is shown as it is, never converted
    assert cost_text(summary).startswith("no USD price; ") and " CNY/h per node" in cost_text(summary)
