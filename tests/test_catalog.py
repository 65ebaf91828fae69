import re

import pytest

from components import catalog
from components.catalog import CLOUDS, normalize_gpu, resolve

PUBLIC_KEYS = [
    "cloud",
    "instanceType",
    "gpu",
    "gpus",
    "gpuMemoryGiB",
    "vcpus",
    "memoryGiB",
    "localNvmeCount",
    "localNvmeGb",
    "networkGbps",
    "fabric",
    "fabricDevices",
    "fabricGbps",
    "hourlyUsd",
    "source",
    "priceVerified",
    "priceNote",
]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_row_is_sourced_and_consistent(cloud):
    data = catalog.load(cloud)
    assert data.types, f"{cloud} catalog is empty"
    for row in data.types:
        keys = re.findall(r"[A-Z][A-Z0-9-]+[A-Z0-9]", row.source)
        assert keys or "/" in row.source, f"{row.instanceType}: source names no reference"
        for key in keys:
            if key in data.sources or any(key in v for v in data.sources.values()):
                continue
            assert "/" in row.source or key in row.source, f"{row.instanceType}: source key {key} undefined"
        assert (row.fabric == "none") == (row.fabricDevices == 0) == (row.fabricGbps == 0), row.instanceType
        assert (row.localNvmeCount == 0) or row.localNvmeGb is None or row.localNvmeGb > 0


def test_aws_covers_the_families_the_issue_names():
    names = {r.instanceType for r in catalog.load("aws").types}
    for family in ("g4dn", "g5", "g6", "g6e", "p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"):
        assert any(n.split(".")[0] == family for n in names), family


@pytest.mark.parametrize(
    ("itype", "cards", "efa", "gbps"),
    [
        ("p5.48xlarge", 32, 32, 3200),
        ("p5en.48xlarge", 16, 16, 3200),
        ("p4d.24xlarge", 4, 4, 400),
        ("g6e.48xlarge", 4, 4, 400),
        ("p6-b200.48xlarge", 8, 8, 3200),
        ("g4dn.xlarge", 1, 0, 0),
    ],
)
def test_aws_fabric_facts(itype, cards, efa, gbps):
    (row,) = catalog.find("aws", itype)
    assert (row.networkCards, row.fabricDevices, row.fabricGbps) == (cards, efa, gbps)


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("h100", "H100"),
        ("A100-80GB", "A100-80GB"),
        ("a100_80gb", "A100-80GB"),
        ("nvidia-tesla-t4", "T4"),
        ("L40S", "L40S"),
        ("a100", "A100"),
        (" H200 ", "H200"),
        ("x900", None),
    ],
)
def test_gpu_spellings(spelling, canonical):
    assert normalize_gpu(spelling) == canonical


def test_resolve_picks_the_only_type():
    res = resolve("aws", "H100", 8)
    assert res.type.instanceType == "p5.48xlarge"
    assert "only" in res.reason


def test_resolve_rule_smallest_then_cheapest():
    res = resolve("aws", "T4", 1)
    assert res.type.instanceType == "g4dn.xlarge"
    assert "fewest vCPUs" in res.reason and "g4dn.2xlarge" in res.reason


def test_resolve_h200_between_p5e_and_p5en_is_explicit():
    res = resolve("aws", "H200", 8)
    others = {r.instanceType for r in catalog.load("aws").types if r.gpu == "H200" and r.gpus == 8}
    assert res.type.instanceType in others and len(others) == 2
    assert "also offered" in res.reason


def test_resolve_errors_list_what_exists():
    with pytest.raises(catalog.CatalogError, match="counts offered: 1, 8"):
        resolve("aws", "H100", 3)
    with pytest.raises(catalog.CatalogError, match="models offered"):
        resolve("aws", "L20", 1)


def test_public_row_keys_are_stable():
    row = catalog.all_types()[0]
    assert list(row.public_row()) == PUBLIC_KEYS
    assert list(catalog.PUBLIC_KEYS) == PUBLIC_KEYS


def test_unnamed_gpu_is_never_picked_for_a_named_model():
    unnamed = [r for r in catalog.all_types() if r.gpu is None]
    for row in unnamed:
        assert row.gpuDescription, f"{row.instanceType} has neither gpu nor gpuDescription"


def test_every_gcp_row_states_vcpus_and_memory():
    """The type picker and the plan read vCPUs and memory; a row without them resolves as if it had none."""
    missing = [r.instanceType for r in catalog.load("gcp").types if r.vcpus is None or r.memoryGiB is None]
    assert missing == []


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp"])
def test_a100_80gb_never_costs_less_per_gpu_than_a100_40gb(cloud):
    """The GCP rows copied from one SkyPilot file broke this (a2-ultragpu below a2-highgpu): a price-data check."""

    def cheapest(model):
        return min(r.hourlyUsd / r.gpus for r in catalog.load(cloud).types if r.gpu == model and r.hourlyUsd)

    assert cheapest("A100-80GB") >= cheapest("A100")


@pytest.mark.parametrize("cloud", CLOUDS)
def test_unverified_prices_carry_a_note_and_a_source(cloud):
    for row in catalog.load(cloud).types:
        if not row.priceVerified:
            assert row.hourlyUsd is not None and row.priceNote and len(row.priceNote) <= 120, row.instanceType
            assert "unverified" in (row.notes or "").lower(), f"{row.instanceType}: notes must say why in full"
