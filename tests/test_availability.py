"""Per-region (and per-zone) availability as data: sourced, refusing a region that does not sell the type,
defaulting a zone that sells it, and never refusing where the data does not know."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components import catalog
from components.catalog import availability
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


@given(
    st.sampled_from(sorted(availability.load("gcp").offers)), st.sampled_from(sorted(availability.load("gcp").covered))
)
def test_a_gcp_zone_default_sells_the_type(instance_type, region):
    zones = availability.zones_selling("gcp", instance_type, region)
    assert zones is not None
    assert all(z.startswith(f"{region}-") for z in zones)
    assert (availability.sold_in("gcp", instance_type, region) is True) == bool(zones)


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
    # n1-standard-32 carries T4 or V100, whose zones differ: no entry (catalog/availability/gcp.yaml)
    assert spec_of(gcp(gpu="T4:1", instanceType="n1-standard-32")).zone is None


def test_resolve_skips_a_type_not_sold_in_the_region():
    # H100:1 on AWS is p5.4xlarge only; ca-central-1 sells p5.48xlarge but not p5.4xlarge
    with pytest.raises(catalog.CatalogError, match=re.escape("p5.4xlarge is not sold in ca-central-1")):
        catalog.resolve("aws", "H100", 1, region="ca-central-1")
    assert catalog.resolve("aws", "H100", 8, region="ca-central-1").type.instanceType == "p5.48xlarge"
    # a region outside the data never changes the pick
    assert catalog.resolve("aws", "T4", 1, region="us-west-2") == catalog.resolve("aws", "T4", 1)


def test_loading_is_cached():
    assert availability.load("gcp") is availability.load("gcp")
