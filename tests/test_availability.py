"""Per-region (and per-zone) availability as data: sourced, refusing a region that does not sell the type,
defaulting a zone that sells it, and never refusing where the data does not know."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from components import catalog, recommend
from components.catalog import availability
from components.cli import app
from components.errors import ConfigError

from .conftest import aws_values, spec_of

WITH_DATA = [c for c in catalog.CLOUDS if availability.load(c).offers]


@pytest.mark.parametrize("cloud", catalog.CLOUDS)
def test_every_file_is_sourced_dated_and_names_catalog_types(cloud):
    data = availability.load(cloud)
    if not data.offers:
        return  # no file (or an empty one): availability unknown everywhere, nothing refused
    # repo@commit path; or, where the index names no commit (Tencent's doc), the repository and the index file id
    assert re.search(r"[\w.-]+/[\w.-]+@[0-9a-f]{40} |[\w.-]+/[\w.-]+ .*index file id \d+", data.source), "cite it"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data.date)
    known = {r.instanceType for r in catalog.all_types(cloud)}
    assert set(data.offers) <= known, set(data.offers) - known
    for name, offer in data.offers.items():
        assert offer.regions, name
        assert set(offer.regions) <= data.covered, name
        assert all(z.startswith(tuple(f"{r}-" for r in offer.regions)) for z in offer.zones), name


def test_the_data_covers_every_cloud_it_should():
    assert set(WITH_DATA) == {"aws", "gcp", "azure", "alicloud", "tencentcloud"}
    # every type but p6e-gb200 (sold in UltraServer Capacity Blocks; its source lists no regions: unknown)
    unknown = {"p6e-gb200.36xlarge"}
    assert set(availability.load("aws").offers) == {r.instanceType for r in catalog.all_types("aws")} - unknown
    assert availability.offer("gcp", "a3-megagpu-8g") is not None


def test_sold_in_is_true_false_or_unknown():
    assert availability.sold_in("aws", "p5.48xlarge", "us-east-1") is True
    assert availability.sold_in("aws", "p6-b200.48xlarge", "eu-west-1") is False
    assert availability.sold_in("aws", "p6-b200.48xlarge", "ap-south-2") is False
    assert availability.sold_in("aws", "p6-b200.48xlarge", "ap-southeast-7") is None  # region outside the sources
    assert availability.sold_in("gcp", "n1-standard-32", "us-central1") is None  # type without data (T4 or V100)
    assert availability.sold_in("azure", "Standard_ND96isr_H100_v5", "eastus") is True
    assert availability.sold_in("azure", "Standard_ND96isr_H100_v5", "westeurope") is None  # outside the source
    assert availability.sold_in("alicloud", "ecs.ebmgn8v.48xlarge", "cn-beijing") is None  # type without data


def test_nearest_first_orders_by_prefix_then_part_of_the_world():
    order = availability.nearest_first("eu-west-1", ["us-east-1", "ap-south-1", "eu-central-1", "me-central-1"])
    assert order == ["eu-central-1", "me-central-1", "ap-south-1", "us-east-1"]
    assert availability.nearest_first("us-west-2", ["us-east-1", "ca-central-1", "eu-west-1"])[:2] == [
        "us-east-1",
        "ca-central-1",
    ]


GCP_ROWS = [
    (r.instanceType, r.gpu) for r in catalog.all_types("gcp") if availability.offer("gcp", r.instanceType, gpu=r.gpu)
]


@given(st.sampled_from(GCP_ROWS), st.sampled_from(sorted(availability.load("gcp").covered)))
def test_a_gcp_zone_default_sells_the_type(row, region):
    instance_type, gpu = row  # per-GPU entries (n1-standard-32/-96) answer for the row's GPU
    zones = availability.zones_selling("gcp", instance_type, region, gpu=gpu)
    assert zones is not None
    assert all(z.startswith(f"{region}-") for z in zones)
    assert (availability.sold_in("gcp", instance_type, region, gpu=gpu) is True) == bool(zones)


# --- the spec: refusal, defaulting, and unknowns left alone ------------------------------------------


def test_a_type_not_sold_in_the_region_exits_2_naming_the_key_and_where_it_is_sold():
    values = aws_values(gpu="B200:8", zone=None)
    values["aws:region"] = "eu-west-1"
    with pytest.raises(ConfigError) as info:
        spec_of(values)
    assert info.value.key == "gpu-cluster:cluster.gpu"
    assert "p6-b200.48xlarge is not sold in eu-west-1" in info.value.message
    assert "us-east-1, us-east-2, us-west-2" in info.value.message
    assert "catalog/availability/aws.yaml: tsaol/aws-gpu@77fcd9fe1d06" in info.value.message


def test_the_issues_example_b200_in_ap_south_2_exits_2():
    values = aws_values(gpu="B200:8", zone=None)
    values["aws:region"] = "ap-south-2"
    with pytest.raises(ConfigError, match=re.escape("p6-b200.48xlarge is not sold in ap-south-2")):
        spec_of(values)


def test_instance_type_not_sold_in_the_region_names_instance_type():
    values = aws_values(gpu=None, instanceType="p5e.48xlarge", zone=None)  # us-east-1 does not sell it
    with pytest.raises(ConfigError) as info:
        spec_of(values)
    assert info.value.key == "gpu-cluster:cluster.instanceType"
    assert (
        "(nearest first): us-east-2, us-west-2, ap-southeast-2, ap-southeast-3, eu-north-1, eu-west-2"
        in info.value.message
    )


def test_an_unknown_region_is_warned_not_refused():
    values = aws_values(gpu="B200:8", zone=None)
    values["aws:region"] = "ap-southeast-7"  # a region neither source covers
    spec = spec_of(values)
    assert spec.instance.instanceType == "p6-b200.48xlarge"
    assert any("does not cover ap-southeast-7" in f.message for f in spec.findings)


def gcp(**cluster: Any) -> dict[str, Any]:
    return {
        "gpu-cluster:cloud": "gcp",
        "gcp:project": "p",
        "gcp:region": cluster.pop("region", "us-central1"),
        "gpu-cluster:cluster": {"nodes": 1, **cluster},
    }


def test_gcp_zone_defaults_to_a_zone_that_sells_the_type():
    spec = spec_of(gcp(gpu="H100:8", instanceType="a3-highgpu-8g", region="europe-west4"))
    assert spec.zone == "europe-west4-b"
    assert any(f.key == "gpu-cluster:cluster.zone" and "first zone of europe-west4" in f.message for f in spec.findings)


def test_gcp_zone_is_kept_when_set_and_warned_when_the_data_does_not_list_it():
    assert spec_of(gcp(gpu="H100:8", instanceType="a3-megagpu-8g", zone="us-central1-b")).zone == "us-central1-b"
    spec = spec_of(gcp(gpu="H200:8", instanceType="a3-ultragpu-8g", zone="us-central1-a", spot=True))
    assert spec.zone == "us-central1-a"
    assert any("not sold in zone us-central1-a" in f.message and "us-central1-b" in f.message for f in spec.findings)


def test_gcp_zone_stays_unset_where_the_types_zones_are_unknown():
    # a4x-highgpu-4g: no source lists its zones (catalog/availability/gcp.yaml); reservation-bound only
    spec = spec_of(gcp(gpu="GB200:4", instanceType="a4x-highgpu-4g", reservation="a4x-block"))
    assert spec.zone is None
    assert not any(f.key == "gpu-cluster:cluster.zone" for f in spec.findings)


def test_resolve_skips_a_type_not_sold_in_the_region():
    # H100:1 on AWS is p5.4xlarge only; ca-central-1 sells p5.48xlarge but not p5.4xlarge
    with pytest.raises(catalog.CatalogError, match=re.escape("p5.4xlarge is not sold in ca-central-1")):
        catalog.resolve("aws", "H100", 1, region="ca-central-1")
    assert catalog.resolve("aws", "H100", 8, region="ca-central-1").type.instanceType == "p5.48xlarge"
    # a region outside the data never changes the pick
    assert catalog.resolve("aws", "T4", 1, region="us-west-2") == catalog.resolve("aws", "T4", 1)


def test_loading_is_cached():
    assert availability.load("gcp") is availability.load("gcp")


# --- per-GPU entries (byGpu): GCP n1-standard-32/-96 take T4 or V100, sold in different zones ----------------


def test_every_per_gpu_entry_covers_each_gpu_its_catalog_rows_carry():
    data = availability.load("gcp")
    assert set(data.by_gpu) == {"n1-standard-32", "n1-standard-96"}
    for name, per in data.by_gpu.items():
        assert set(per) == {r.gpu for r in catalog.find("gcp", name)}, name
        assert name not in data.offers  # the type alone: unknown (which GPU?)
        assert availability.offer("gcp", name) is None and availability.sold_in("gcp", name, "us-central1") is None
    # SkyPilot v9 vms.csv: the T4 / V100 accelerator rows (the same zones for every count), all of them zones
    # the n1-standard-32 and -96 VM rows list; the same lists as n1-standard-4 (T4) and n1-standard-8 (V100)
    for name in data.by_gpu:
        assert availability.offer("gcp", name, gpu="T4") == availability.offer("gcp", "n1-standard-4")
        assert availability.offer("gcp", name, gpu="V100") == availability.offer("gcp", "n1-standard-8")
    t4, v100 = (availability.offer("gcp", "n1-standard-96", gpu=g) for g in ("T4", "V100"))
    assert t4 is not None and v100 is not None
    assert (len(t4.zones), len(t4.regions), len(v100.zones), len(v100.regions)) == (51, 23, 12, 5)
    assert "asia-east1-a" in t4.zones and "asia-east1-a" not in v100.zones


def test_per_gpu_lookups_answer_for_the_gpu_given():
    assert availability.zones_selling("gcp", "n1-standard-96", "asia-east1", gpu="T4") == (
        "asia-east1-a",
        "asia-east1-c",
    )
    assert availability.zones_selling("gcp", "n1-standard-96", "asia-east1", gpu="V100") == ("asia-east1-c",)
    assert availability.zones_selling("gcp", "n1-standard-96", "asia-east1") is None
    assert availability.sold_in("gcp", "n1-standard-32", "asia-east2", gpu="T4") is True
    assert availability.sold_in("gcp", "n1-standard-32", "asia-east2", gpu="V100") is False
    assert availability.why_not("gcp", "n1-standard-32", "asia-east2", gpu="T4") is None
    why = availability.why_not("gcp", "n1-standard-32", "asia-east2", gpu="V100")
    assert why is not None and why.startswith(
        "n1-standard-32 with V100 is not sold in asia-east2; regions that sell it (nearest first): asia-east1, "
    )
    assert availability.why_not("gcp", "n1-standard-32", "asia-east2") is None  # no GPU: unknown, never refused
    # gpu= is ignored by an entry keyed by the type alone (its rows carry one model)
    assert availability.zones_selling("gcp", "a3-megagpu-8g", "us-central1", gpu="H100") == (
        availability.zones_selling("gcp", "a3-megagpu-8g", "us-central1")
    )
    assert availability.label("gcp", "n1-standard-96", gpu="T4") == "n1-standard-96 with T4"
    assert availability.label("gcp", "a3-megagpu-8g", gpu="H100") == "a3-megagpu-8g"


def test_n1_standard_96_zone_defaults_from_the_zones_of_the_gpu_it_carries():
    t4 = spec_of(gcp(gpu="T4:4", instanceType="n1-standard-96", region="asia-east1"))
    v100 = spec_of(gcp(gpu="V100:8", instanceType="n1-standard-96", region="asia-east1"))
    assert (t4.instance.gpu, t4.zone, v100.instance.gpu, v100.zone) == ("T4", "asia-east1-a", "V100", "asia-east1-c")
    for spec, zone, model in ((t4, "asia-east1-a", "T4"), (v100, "asia-east1-c", "V100")):
        (finding,) = [f for f in spec.findings if f.key == "gpu-cluster:cluster.zone"]
        assert finding.level == "info"
        assert finding.message.startswith(
            f"not set; {zone}, the first zone of asia-east1 that sells n1-standard-96 with {model} "
        )
    # gpu alone resolves n1-standard-96 for 4 x T4 too, and takes the T4 zones
    assert spec_of(gcp(gpu="T4:4", region="asia-east1")).zone == "asia-east1-a"


def test_n1_zone_that_sells_only_the_other_gpu_is_warned():
    spec = spec_of(gcp(gpu="V100:8", instanceType="n1-standard-96", region="asia-east1", zone="asia-east1-a"))
    assert spec.zone == "asia-east1-a"  # kept: warned, never refused (the snapshot's date is in the message)
    (finding,) = [f for f in spec.findings if f.key == "gpu-cluster:cluster.zone"]
    assert finding.level == "warning"
    assert finding.message.startswith(
        "n1-standard-96 with V100 is not sold in zone asia-east1-a; zones of asia-east1 that sell it: asia-east1-c "
    )
    # the same zone with T4 sells it: nothing said
    t4 = spec_of(gcp(gpu="T4:4", instanceType="n1-standard-96", region="asia-east1", zone="asia-east1-a"))
    assert not any(f.key == "gpu-cluster:cluster.zone" for f in t4.findings)


def test_n1_with_a_gpu_its_region_does_not_sell_is_refused_naming_the_pair():
    with pytest.raises(ConfigError) as info:
        spec_of(gcp(gpu="V100:8", instanceType="n1-standard-96", region="asia-east2"))  # T4 only there
    assert info.value.key == "gpu-cluster:cluster.instanceType"
    assert info.value.message.startswith(
        "n1-standard-96 with V100 is not sold in asia-east2; regions that sell it (nearest first): asia-east1, "
    )
    with pytest.raises(ConfigError, match=re.escape("n1-standard-96 with V100 is not sold in asia-east2")):
        spec_of(gcp(gpu="V100:8", region="asia-east2"))  # resolved from gpu: cluster.gpu
    assert spec_of(gcp(gpu="T4:4", instanceType="n1-standard-96", region="asia-east2")).zone == "asia-east2-a"


def test_compare_counts_the_regions_of_the_gpu_each_n1_row_carries():
    rows = {(r.instanceType, r.gpu): recommend.compare_row(r) for r in catalog.find("gcp", "n1-standard-96")}
    t4, v100 = rows[("n1-standard-96", "T4")], rows[("n1-standard-96", "V100")]
    assert (len(t4["regions"]), len(v100["regions"])) == (23, 5)
    assert v100["regions"] == ["asia-east1", "europe-west4", "us-central1", "us-east1", "us-west1"]
    markdown = CliRunner().invoke(app, ["compare", "t4:4", "-f", "markdown"], env={"COLUMNS": "200"}).stdout
    line = next(line for line in markdown.splitlines() if "n1-standard-96" in line)
    assert "| 23 |" in line and "| ? |" not in line
    sold = recommend.compare_row(catalog.find("gcp", "n1-standard-32")[0], region="asia-east2")
    assert sold["soldInRegion"] is (sold["gpu"] == "T4")
    # with a region, compare leaves out the V100 row not sold there (it used to be unknown, and listed)
    assert [r.gpu for r in recommend.compare("V100", 8, region="asia-east2") if r.cloud == "gcp"] == []
    assert [r.instanceType for r in recommend.compare("T4", 4, region="asia-east2") if r.cloud == "gcp"] == [
        "n1-standard-96"
    ]


def test_recommend_writes_an_n1_stack_whose_zone_the_data_now_knows():
    # --write-stack refuses a GCP option whose zones are unknown; n1-standard-96 with T4 has them in asia-east2
    (row,) = [r for r in catalog.find("gcp", "n1-standard-96") if r.gpu == "T4"]
    values = recommend.stack_config(recommend.Option(row, 1, 4, "asia-east2", "test"), "n1-t4")
    assert values["gpu-cluster:cluster"]["instanceType"] == "n1-standard-96"
    assert spec_of(values).zone == "asia-east2-a"  # the spec defaults it from the T4 zones
    (v100,) = [r for r in catalog.find("gcp", "n1-standard-96") if r.gpu == "V100"]
    assert recommend.stack_config(recommend.Option(v100, 1, 8, "us-central1", "test"), "n1-v100")
    # the region it builds in without --region: the price region, where both GPUs are sold
    assert recommend._region_for(v100, None) == "us-central1"


# --- the loader: byGpu validated ---------------------------------------------------------------------------

HEADER = """source: "o/r@0123456789012345678901234567890123456789 p.csv"
date: "2026-12-01"
regions: [asia-east1, asia-east2]
types:
"""


@pytest.fixture
def gcp_file(tmp_path, monkeypatch):
    """Load a gcp.yaml written here (the catalog rows are the real ones); the real file is reloaded after."""
    monkeypatch.setattr(availability, "_DIR", tmp_path)

    def load(types: str) -> availability.CloudAvailability:
        (tmp_path / "gcp.yaml").write_text(HEADER + "".join(f"  {line}\n" for line in types.splitlines()))
        availability.load.cache_clear()
        return availability.load("gcp")

    yield load
    availability.load.cache_clear()


def test_the_loader_reads_a_per_gpu_entry(gcp_file):
    data = gcp_file(
        "n1-standard-96: {byGpu: {T4: {zones: [asia-east1-a, asia-east2-a]}, V100: {regions: [asia-east1]}}}"
    )
    assert data.by_gpu == {
        "n1-standard-96": {
            "T4": availability.Offer(("asia-east1", "asia-east2"), ("asia-east1-a", "asia-east2-a")),
            "V100": availability.Offer(("asia-east1",)),
        }
    }
    assert data.offers == {}
    assert availability.sold_in("gcp", "n1-standard-96", "asia-east2", gpu="V100") is False


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (
            "n1-standard-32: {zones: [asia-east1-a]}",
            "n1-standard-32: its catalog rows carry ['T4', 'V100']; give byGpu",
        ),
        ("n1-standard-32: {byGPU: {T4: {zones: [asia-east1-a]}}}", "n1-standard-32: its catalog rows carry"),
        ("n1-standard-4: {byGPU: {T4: {zones: [asia-east1-a]}}}", "n1-standard-4: give regions and/or zones"),
        (
            "n1-standard-32: {byGpu: {T4: {zones: [asia-east1-a]}}, zones: [asia-east1-a]}",
            "n1-standard-32: byGpu alone",
        ),
        ("n1-standard-32: {byGpu: {}}", "n1-standard-32: byGpu alone, mapping GPU models"),
        ("n1-standard-32: {byGpu: [T4, V100]}", "n1-standard-32: byGpu alone, mapping GPU models"),
        (
            "n1-standard-32: {byGpu: {A100: {zones: [asia-east1-a]}}}",
            "n1-standard-32: byGpu: ['A100'] not among the GPUs its catalog rows carry ['T4', 'V100']",
        ),
        (
            "n1-standard-4: {byGpu: {V100: {zones: [asia-east1-c]}}}",
            "byGpu: ['V100'] not among the GPUs its catalog rows carry ['T4']",
        ),
        (
            "a9-madeup-8g: {byGpu: {H100: {zones: [asia-east1-a]}}}",
            "byGpu: ['H100'] not among the GPUs its catalog rows carry []",
        ),
        (
            "n1-standard-32: {byGpu: {T4: {zone: [asia-east1-a]}}}",
            "n1-standard-32: byGpu: T4: give regions and/or zones",
        ),
        ("n1-standard-32: {byGpu: {T4: [asia-east1-a]}}", "n1-standard-32: byGpu: T4: give regions and/or zones"),
        (
            "n1-standard-32: {byGpu: {T4: {zones: [us-east1-b]}}}",
            "n1-standard-32: byGpu: T4: regions ['us-east1'] are not in the file's regions list",
        ),
    ],
)
def test_the_loader_refuses_a_bad_per_gpu_entry(gcp_file, entry, why):
    with pytest.raises(availability.AvailabilityError) as info:
        gcp_file(entry)
    assert str(info.value).startswith("gcp.yaml: ") and why in str(info.value)


def test_a_zone_name_without_a_dash_is_its_own_region():
    from components.catalog.availability import _zone_region

    assert _zone_region("us-central1-a") == "us-central1" and _zone_region("ap-guangzhou-3") == "ap-guangzhou"
    assert _zone_region("eastus") == "eastus"
