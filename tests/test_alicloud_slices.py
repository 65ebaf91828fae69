"""Alibaba's vGPU slice rows (issue 32): vgn6i-vws (T4 slices) and sgn7i-vws (A10 slices on shared CPUs) beside
vgn7i-vws, every number as ALI-GPU-ZH prints it, their regions and CNY prices from the cloudpilot-ai table, and
`compare` / `recommend` for a T4 slice."""

from __future__ import annotations

from fractions import Fraction

import pytest

from components import catalog
from components import recommend as rec
from components.catalog import availability

from .conftest import spec_of

# (type, fraction, GPU memory GB, vCPU, GiB, base Gbit/s, ENIs) as ALI-GPU-ZH's tables print them
ROWS = [
    ("ecs.vgn6i-m4-vws.xlarge", "T4", "1/4", 4, 4, 23, 2, 3),
    ("ecs.vgn6i-m8-vws.2xlarge", "T4", "1/2", 8, 10, 46, 4, 4),
    ("ecs.sgn7i-vws-m2.xlarge", "A10", "1/12", 2, 4, 15.5, 1.5, 2),
    ("ecs.sgn7i-vws-m4.2xlarge", "A10", "1/6", 4, 8, 31, 2.6, 4),
    ("ecs.sgn7i-vws-m8.4xlarge", "A10", "1/3", 8, 16, 62, 5, 4),
    ("ecs.sgn7i-vws-m2s.xlarge", "A10", "1/12", 2, 4, 8, 1.5, 2),
    ("ecs.sgn7i-vws-m4s.2xlarge", "A10", "1/6", 4, 8, 16, 2.6, 4),
    ("ecs.sgn7i-vws-m8s.4xlarge", "A10", "1/3", 8, 16, 32, 5, 4),
]
# CNY per hour in cn-beijing (cloudpilot-ai initial-on-demand-prices.json @cb536aff)
BEIJING_CNY = {
    "ecs.vgn6i-m4-vws.xlarge": 3.273719,
    "ecs.vgn6i-m8-vws.2xlarge": 5.909491,
    "ecs.sgn7i-vws-m2.xlarge": 1.871087,
    "ecs.sgn7i-vws-m8s.4xlarge": 5.571,
}


@pytest.mark.parametrize(("itype", "gpu", "fraction", "gpu_gb", "vcpus", "memory", "gbps", "enis"), ROWS)
def test_the_rows_are_the_docs_numbers(itype, gpu, fraction, gpu_gb, vcpus, memory, gbps, enis):
    (row,) = catalog.find("alicloud", itype)
    assert (row.gpu, row.gpus, row.gpuFraction) == (gpu, 1, fraction)
    whole = 16 if gpu == "T4" else 24
    assert row.gpuMemoryGiB == pytest.approx(whole * Fraction(fraction)) == gpu_gb
    assert (row.vcpus, row.memoryGiB, row.networkGbps, row.networkCards) == (vcpus, memory, gbps, enis)
    assert row.hourlyUsd is None and row.fabric == "none"
    assert row.source == "ALI-GPU-ZH; ALI-GRID"
    assert ("SHARED CPUs" in (row.notes or "")) == itype.startswith("ecs.sgn7i")


def test_regions_and_cny_prices_come_from_the_price_table():
    assert availability.sold_in("alicloud", "ecs.vgn6i-m4-vws.xlarge", "cn-zhangjiakou") is True
    assert availability.sold_in("alicloud", "ecs.vgn6i-m4-vws.xlarge", "cn-chengdu") is False
    assert availability.sold_in("alicloud", "ecs.sgn7i-vws-m2.xlarge", "eu-central-1") is True
    rows = {r["instanceType"]: r for r in (rec.compare_row(x) for x in catalog.all_types("alicloud"))}
    for itype, cny in BEIJING_CNY.items():
        assert (rows[itype]["localHourly"], rows[itype]["localCurrency"]) == (cny, "CNY")
        assert rows[itype]["localPriceRegion"] == "cn-beijing"


def test_a_t4_slice_resolves_from_the_gpu_form():
    spec = spec_of(
        {
            "gpu-cluster:cloud": "alicloud",
            "alicloud:region": "cn-hangzhou",
            "gpu-cluster:cluster": {"gpu": "T4:1/4", "nodes": 1},
        }
    )
    assert spec.instance.instanceType == "ecs.vgn6i-m4-vws.xlarge"
    # the dedicated-CPU vgn7i-vws row comes before the shared-CPU sgn7i-vws one of the same share (fewer vCPUs)
    a10 = spec_of({**spec_values("A10:1/6")})
    assert a10.instance.instanceType == "ecs.vgn7i-vws-m4.xlarge"
    assert spec_of(spec_values("A10:1/12")).instance.instanceType == "ecs.sgn7i-vws-m2s.xlarge"


def spec_values(gpu: str) -> dict[str, object]:
    return {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-beijing", "gpu-cluster:cluster": {"gpu": gpu}}


def test_compare_lists_the_t4_slices_with_their_share():
    rows = {r["instanceType"]: r for r in (rec.compare_row(x) for x in rec.compare("T4"))}
    assert rows["ecs.vgn6i-m4-vws.xlarge"]["gpuFraction"] == "1/4"
    assert rows["ecs.vgn6i-m8-vws.2xlarge"]["gpuFraction"] == "1/2"
    assert rows["ecs.vgn6i-m8-vws.2xlarge"]["gpuMemoryGiB"] == 8
    assert rows["ecs.gn6i-c4g1.xlarge"]["gpuFraction"] is None


def test_recommend_offers_the_t4_half_slice_for_a_7b_int4_model_and_not_the_quarter():
    need = rec.memory_need("inference", 7e9, "int4")  # 5.3 GiB: 8 GB x 0.9 holds it, 4 GB x 0.9 does not
    options = {o.row.instanceType: o for o in rec.recommend(need, cloud="alicloud", limit=50)}
    half = options["ecs.vgn6i-m8-vws.2xlarge"]
    assert "vGPU slice (1/2 of a T4, 8 GB)" in half.why
    assert "ecs.vgn6i-m4-vws.xlarge" not in options
    assert rec.stack_config(half, "dev")["gpu-cluster:cluster"]["gpu"] == "T4:1/2"
