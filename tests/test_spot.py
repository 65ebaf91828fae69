"""Spot reference prices (catalog/spot/<cloud>.yaml): the data's schema, the loader's refusals, what "not offered"
means for `spot.refusal`, and the plan's cost row of a spot stack."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components import catalog
from components.catalog import spot
from components.plan.render import cost_text

from .conftest import plan_stack

SPOT_FILES = sorted(spot._DIR.glob("*.yaml"))
CITATION = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} \S+")  # owner/repo@<40-hex commit> path


@contextmanager
def spot_data(tmp: Path, cloud: str, text: str) -> Iterator[None]:
    """The shipped spot files, with `cloud`'s replaced by `text`, for the duration (the loader is cached)."""
    folder = tmp / "spot"
    folder.mkdir(exist_ok=True)
    for path in SPOT_FILES:
        shutil.copy(path, folder / path.name)
    (folder / f"{cloud}.yaml").write_text(text)
    original = spot._DIR
    spot._DIR = folder
    spot.load.cache_clear()
    try:
        yield
    finally:
        spot._DIR = original
        spot.load.cache_clear()


def spot_file(region: str, *types: str) -> str:
    head = f'source: "a/b@{"0" * 40} x.csv"\ndate: "2026-12-01"\nregion: {region}\ntypes:\n'
    return head + "".join(f"  - {t}\n" for t in types)


# --- the shipped data ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SPOT_FILES, ids=[p.stem for p in SPOT_FILES])
def test_every_file_is_sourced_dated_and_in_the_price_region(path):
    data = spot.load(path.stem)
    assert CITATION.match(data.source), data.source
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data.date)
    assert data.region == catalog.load(path.stem).prices["region"]
    assert data.entries, "a file with no types says nothing: leave it out"


@pytest.mark.parametrize("path", SPOT_FILES, ids=[p.stem for p in SPOT_FILES])
def test_every_type_is_in_the_catalog_and_priced_above_zero_or_not_offered_with_a_source(path):
    cloud = path.stem
    for entry in spot.load(cloud).entries:
        rows = catalog.find(cloud, entry.instanceType)  # type: ignore[arg-type]
        assert rows, entry.instanceType
        if entry.offered:
            assert entry.price is not None and entry.price > 0
        else:
            assert entry.price is None and entry.source


def test_only_clouds_with_a_published_source_have_a_file():
    # Alibaba and Tencent: no public USD spot price source found (SCHEMA.md, "Spot"), so unknown everywhere
    assert {p.stem for p in SPOT_FILES} == {"aws", "azure", "gcp"}
    for row in catalog.all_types("alicloud")[:3] + catalog.all_types("tencentcloud")[:3]:
        assert spot.lookup(row) is None and spot.offered(row) is None


def test_gcp_prices_are_the_vm_row_plus_the_gpu_row_as_transcribed():
    raw = yaml.safe_load((spot._DIR / "gcp.yaml").read_text())["types"]
    a3 = next(e for e in raw if e["instanceType"] == "a3-highgpu-8g")
    assert (a3["vmUsd"], a3["gpuRow"], a3["gpuUsd"]) == (5.15632, "H100:8", 42.7096)
    (row,) = catalog.find("gcp", "a3-highgpu-8g")
    assert spot.hourly_usd(row) == 47.86592
    for entry in raw:  # the GPU row read is the catalog row's model and count
        model, count = entry["gpuRow"].split(":")
        rows = [r for r in catalog.find("gcp", entry["instanceType"]) if entry.get("gpus") in (None, r.gpus)]
        assert len(rows) == 1 and rows[0].gpus == int(count)
        assert model.startswith(str(rows[0].gpu)), (entry, rows[0].gpu)  # H100-MEGA for H100, as SkyPilot names it


def test_an_aws_price_is_the_cheapest_zone_of_the_region_and_keeps_the_dearest():
    (row,) = catalog.find("aws", "g5.48xlarge")
    entry = next(e for e in spot.load("aws").entries if e.instanceType == "g5.48xlarge")
    assert (spot.hourly_usd(row), entry.highUsd, entry.zones) == (6.3351, 8.109, 5)


def test_every_aws_type_has_a_us_east_1_spot_price_but_the_ones_the_file_says_are_unknown():
    # the aws.yaml header names what SkyPilot v9 has no us-east-1 row for (p5e, p6-b300), sells only as Capacity
    # Blocks (p6e-gb200) or was not transcribed (the vGPU slices); any other type left out would be a gap
    listed = {e.instanceType for e in spot.load("aws").entries}
    missing = {row.instanceType for row in catalog.all_types("aws")} - listed
    slices = {"g6f.large", "g6f.xlarge", "g6f.2xlarge", "g6f.4xlarge", "gr6f.4xlarge"}  # vGPU slices: not transcribed
    assert missing == {"p5e.48xlarge", "p6-b300.48xlarge", "p6e-gb200.36xlarge"} | slices
    (gb200,) = catalog.find("aws", "p6e-gb200.36xlarge")
    assert spot.offered(gb200) is False  # not offered through the catalog's Capacity-Block row, not unknown
    (b300,) = catalog.find("aws", "p6-b300.48xlarge")
    assert spot.offered(b300) is None


@pytest.mark.parametrize(
    ("instance_type", "low", "high", "zones"),
    [
        ("g6e.48xlarge", 4.5998, 11.8539, 4),  # use1-az1 far below az2/az4/az6: the cheapest zone is the reference
        ("g4dn.12xlarge", 1.158, 1.5928, 5),
        ("g7e.12xlarge", 1.7461, 1.9951, 2),  # g7e has only use1-az2 and az6 rows
    ],
)
def test_aws_g_family_prices_are_the_transcribed_zone_range(instance_type, low, high, zones):
    (row,) = catalog.find("aws", instance_type)
    entry = next(e for e in spot.load("aws").entries if e.instanceType == instance_type)
    assert (spot.hourly_usd(row), entry.highUsd, entry.zones) == (low, high, zones)


def test_every_spot_price_is_at_most_the_on_demand_price_the_ranking_uses_as_its_upper_bound():
    # recommend --spot ranks an unknown spot price by the on-demand one (docs/recommend.md, "Spot"): that is fair only
    # while no known spot price is above its on-demand price
    checked = 0
    for row in catalog.all_types():
        price = spot.hourly_usd(row)
        if price is not None and row.hourlyUsd is not None:
            assert price <= row.hourlyUsd, (row.cloud, row.instanceType, price, row.hourlyUsd)
            checked += 1
    assert checked >= 50


def test_a_type_without_an_entry_is_unknown_not_refused():
    (row,) = catalog.find("azure", "Standard_ND96isr_H200_v5")
    assert spot.lookup(row) is None and spot.offered(row) is None
    assert spot.refusal("azure", "Standard_ND96isr_H200_v5") is None


# --- the loader refuses malformed data ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ("{instanceType: g5.xlarge, hourlyUsd: 0.4, colour: red}", "colour"),
        ("{instanceType: g5.xlarge, hourlyUsd: 0}", "greater than 0"),
        ("{instanceType: g5.xlarge}", "give a price or offered: false"),
        ("{instanceType: g5.xlarge, offered: false}", "offered false takes a source"),
        ("{instanceType: g5.xlarge, offered: false, source: x, hourlyUsd: 1.0}", "offered false takes a source"),
        ("{instanceType: g5.xlarge, hourlyUsd: 1.0, vmUsd: 0.5, gpuRow: 'A10G:1', gpuUsd: 0.5}", "not both"),
        ("{instanceType: g5.xlarge, vmUsd: 0.5}", "not both"),
        ("{instanceType: g5.xlarge, hourlyUsd: 2.0, highUsd: 1.0}", "below hourlyUsd"),
        ("{instanceType: z9.huge, hourlyUsd: 1.0}", "z9.huge is not in catalog/aws.yaml"),
    ],
)
def test_malformed_entries_are_errors(tmp_path, entry, error):
    with spot_data(tmp_path, "aws", spot_file("us-east-1", entry)), pytest.raises(spot.SpotError, match=error):
        spot.load("aws")


def test_a_file_for_another_region_or_with_unknown_keys_is_an_error(tmp_path):
    other_region = spot_file("eu-west-1", "{instanceType: g5.xlarge, hourlyUsd: 1.0}")
    with spot_data(tmp_path, "aws", other_region), pytest.raises(spot.SpotError, match="price region us-east-1"):
        spot.load("aws")
    unknown_key = "owner: me\n" + spot_file("us-east-1", "{instanceType: g5.xlarge, hourlyUsd: 1}")
    with spot_data(tmp_path, "aws", unknown_key), pytest.raises(spot.SpotError, match="owner"):
        spot.load("aws")


def test_a_gcp_n1_type_needs_its_gpu_count_and_each_count_is_its_own_price(tmp_path):
    no_count = spot_file("us-central1", "{instanceType: n1-standard-32, hourlyUsd: 1.0}")
    with spot_data(tmp_path, "gcp", no_count), pytest.raises(spot.SpotError, match="3 catalog rows; give gpus"):
        spot.load("gcp")
    text = spot_file(
        "us-central1",
        "{instanceType: n1-standard-32, gpus: 1, hourlyUsd: 1.5}",
        "{instanceType: n1-standard-32, gpus: 2, hourlyUsd: 2.5}",
    )
    with spot_data(tmp_path, "gcp", text):
        prices = {r.gpus: spot.hourly_usd(r) for r in catalog.find("gcp", "n1-standard-32")}
    assert prices == {1: 1.5, 2: 2.5, 4: None}


@given(
    st.floats(min_value=0.0001, max_value=500, allow_nan=False),
    st.floats(min_value=0.0001, max_value=500, allow_nan=False),
)
def test_a_vm_plus_gpu_price_is_their_sum_and_above_zero(vm, gpu):
    entry = spot.Entry(instanceType="a2-highgpu-1g", vmUsd=vm, gpuRow="A100:1", gpuUsd=gpu)
    assert entry.price is not None and entry.price > 0
    assert entry.price == pytest.approx(vm + gpu, abs=10**-spot.DIGITS)


# --- "not offered": the refusal the spec reads --------------------------------------------------------


def test_not_offered_is_a_refusal_naming_the_source(tmp_path):
    text = spot_file("us-east-1", "{instanceType: p5e.48xlarge, offered: false, source: 'AWS docs (test)'}")
    with spot_data(tmp_path, "aws", text):
        (row,) = catalog.find("aws", "p5e.48xlarge")
        assert spot.offered(row) is False and spot.hourly_usd(row) is None
        assert spot.refusal("aws", "p5e.48xlarge") == (
            "p5e.48xlarge is not sold as spot (AWS docs (test)); set spot: false, or pick a type offered as spot "
            "(gpu-cluster compare shows the spot column)"
        )
        assert spot.refusal("aws", "p5.48xlarge") is None


# --- the plan's cost row --------------------------------------------------------------------------------


def test_a_spot_stack_shows_the_reference_spot_price_beside_the_on_demand_upper_bound():
    plan = plan_stack("azure-dev")  # spot: true on Standard_NC4as_T4_v3
    summary = plan.summary()
    assert summary["spot"] is True and summary["instanceType"] == "Standard_NC4as_T4_v3"
    assert (summary["spotHourlyUsdPerNode"], summary["spotPriceRegion"], summary["spotPriceDate"]) == (
        0.062699,
        "eastus",
        "2026-12-01",
    )
    assert cost_text(summary).startswith(
        "$0.53/h (on-demand upper bound; reference spot $0.062699/h per node in eastus, read 2026-12-01; spot varies)"
    )


def test_the_cost_row_without_a_known_spot_price_is_as_before():
    base = {"hourlyUsdPerNode": 1.0, "hourlyUsd": 2.0, "nodes": 2, "maxNodes": 2, "spot": True}
    assert cost_text({**base, "spotHourlyUsdPerNode": None}) == "$2.00/h (on-demand upper bound; spot varies)"
    assert cost_text({**base, "spot": False}) == "$2.00/h"


def test_a_stack_without_spot_has_no_spot_reference():
    summary = plan_stack("aws-h100").summary()
    assert summary["spot"] is False
    assert (summary["spotHourlyUsdPerNode"], summary["spotPriceRegion"], summary["spotPriceDate"]) == (None,) * 3


def test_what_the_catalog_already_rules_out_is_not_offered_with_its_source(monkeypatch):
    # written once: a Capacity-Block-only row (extra.purchase) and a reservation-bound-only type
    # (rules.consumption.noSpot) are "not offered" without a spot entry repeating it
    (p5,) = catalog.find("aws", "p5.48xlarge")
    block_only = p5.model_copy(update={"extra": {"purchase": "capacity-block", "purchaseSource": "CB-TEST"}})
    monkeypatch.setitem(catalog.load("aws").sources, "CB-TEST", "the test's Capacity Blocks page")
    found = spot.lookup(block_only)
    assert found is not None and (found.offered, found.hourly_usd) == (False, None)
    assert found.source == "sold only through Capacity Blocks: the test's Capacity Blocks page"
    assert spot.lookup(p5) is not None and spot.offered(p5) is True  # the shipped row: a price, offered
    rules = catalog.load("gcp").rules
    monkeypatch.setitem(rules, "consumption", {**(rules.get("consumption") or {}), "noSpot": ["a2-ultragpu"]})
    (a2,) = catalog.find("gcp", "a2-ultragpu-8g")
    assert spot.offered(a2) is False and spot.hourly_usd(a2) is None  # the rule wins over a transcribed price
    assert spot.refusal("gcp", "a2-ultragpu-8g") == (
        "a2-ultragpu-8g is not sold as spot (reservation-bound only: catalog/gcp.yaml rules.consumption.noSpot); "
        "set spot: false, or pick a type offered as spot (gpu-cluster compare shows the spot column)"
    )
    assert spot.refusal("gcp", "a2-highgpu-8g") is None
    assert spot.refusal("mars", "a2-highgpu-8g") is None


def test_the_spec_refuses_spot_on_a_type_not_sold_as_spot_before_any_resource():
    from components.errors import ConfigError

    from .conftest import aws_values, spec_of

    with pytest.raises(ConfigError) as info:
        spec_of(aws_values(gpu="GB200:4", spot=True))
    errors = getattr(info.value, "errors", [info.value])
    spot = [e for e in errors if e.key == "gpu-cluster:cluster.spot"]
    assert len(spot) == 1 and spot[0].message.startswith("p6e-gb200.36xlarge is not sold as spot (")
    assert spec_of(aws_values(gpu="H100:8", spot=True)).spot  # a type sold as spot plans


def test_a_capacity_block_row_names_its_source_and_the_files_region_and_date():
    row = catalog.find("aws", "p6e-gb200.36xlarge")[0]
    cited = catalog.load("aws").sources[row.extra["purchaseSource"]]
    found = spot.lookup(row)
    assert found is not None and not found.offered and found.hourly_usd is None
    assert found.source == f"sold only through Capacity Blocks: {cited}"
    assert (found.region, found.date) == (spot.load("aws").region, spot.load("aws").date)
    # a source given as a full citation (not a key of sources:) is kept; none at all names the catalog file
    as_text = row.model_copy(update={"extra": {**row.extra, "purchaseSource": "EC2 User Guide, Capacity Blocks"}})
    assert spot.lookup(as_text).source == "sold only through Capacity Blocks: EC2 User Guide, Capacity Blocks"
    bare = row.model_copy(update={"extra": {k: v for k, v in row.extra.items() if k != "purchaseSource"}})
    assert spot.lookup(bare).source == "sold only through Capacity Blocks: catalog/aws.yaml"


def test_a_machine_type_with_several_gpu_counts_gets_the_price_of_its_own_count():
    rows = {(r.gpu, r.gpus): r for r in catalog.find("gcp", "n1-standard-32")}
    one, two = spot.hourly_usd(rows[("T4", 1)]), spot.hourly_usd(rows[("T4", 2)])
    assert one is not None and two is not None and one < two  # the T4:2 row adds a second GPU's spot price
