"""storage.shared: spec rules, the storage catalog, the plan summary and the diff's DATA LOSS (cloud-neutral parts)."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from components.catalog import storage
from components.cli import app
from components.diff import diff_plans
from components.errors import ConfigErrors
from components.plan.render import summary_rows

from .conftest import aws_values, plan_stack, plan_values, spec_of

KEY = "gpu-cluster:cluster.storage.shared"


def errors_of(values) -> dict[str, str]:
    with pytest.raises(ConfigErrors) as info:
        spec_of(values)
    return {e.key: e.message for e in info.value.errors}


def shared(**cfg):
    return aws_values(storage={"shared": cfg})


@pytest.mark.parametrize("size", [1200, 2400, 4800, 7200, 100800])
def test_fsx_sizes_on_the_increments_are_accepted(size):
    assert spec_of(shared(sizeGb=size)).storage.shared.size_gb == size


@pytest.mark.parametrize(("size", "near"), [(1000, "1200"), (3000, "2400 or 4800"), (5000, "4800 or 7200")])
def test_a_size_off_the_increments_names_the_key_and_the_allowed_sizes(size, near):
    msg = errors_of(shared(sizeGb=size))[f"{KEY}.sizeGb"]
    assert f"got {size}" in msg and "1200, 2400, then multiples of 2400" in msg and f"nearest: {near}" in msg


def test_existing_without_an_id_is_refused():
    assert "needs the filesystem's mount source" in errors_of(shared(kind="existing"))[f"{KEY}.existing"]


def test_existing_with_another_kind_is_refused():
    assert "use kind: existing" in errors_of(shared(kind="lustre", existing="x@tcp:/y"))[f"{KEY}.existing"]


def test_a_throughput_off_the_tiers_is_refused():
    assert "125, 250, 500, 1000" in errors_of(shared(throughput=300))[f"{KEY}.throughput"]


def test_elastic_nfs_takes_no_throughput():
    assert "no throughput tiers" in errors_of(shared(kind="nfs", throughput=250))[f"{KEY}.throughput"]


@pytest.mark.parametrize("path", ["/scratch", "/scratch/shared"])
def test_a_path_clashing_with_scratch_is_refused(path):
    assert "clashes with scratchPath" in errors_of(shared(path=path))[f"{KEY}.path"]


def test_all_problems_are_reported_at_once():
    found = errors_of(shared(sizeGb=1000, throughput=7, path="/scratch"))
    assert {f"{KEY}.sizeGb", f"{KEY}.throughput", f"{KEY}.path"} <= set(found)


def test_unknown_key_names_the_allowed_ones():
    msg = errors_of(shared(sizeGB=1200))[f"{KEY}.sizeGB"]
    assert "did you mean sizeGb?" in msg


def test_bad_input_exits_2_with_the_key_named(tmp_path):
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(
        "config:\n  aws:region: us-east-1\n  gpu-cluster:cloud: aws\n  gpu-cluster:cluster:\n    gpu: H100:8\n"
        "    zone: us-east-1a\n    storage: {shared: {sizeGb: 3000}}\n"
    )
    result = CliRunner().invoke(app, ["plan", "--config", str(path)])
    assert result.exit_code == 2
    assert f"{KEY}.sizeGb: got 3000" in result.stderr and "Traceback" not in result.output + result.stderr


def test_every_catalog_number_has_a_source():
    for cloud in ("aws", "azure", "gcp", "alicloud"):
        data = storage.load(cloud)
        if data is None:
            continue
        for svc in data.services.values():
            if svc.sizes is not None:
                assert svc.sizes.source, (cloud, svc.kind)
            if svc.throughputs:
                assert svc.throughput_source, (cloud, svc.kind)
            assert svc.ports and svc.ports_source, (cloud, svc.kind)
            assert svc.mount_source and svc.client.get("source"), (cloud, svc.kind)
            assert svc.price_source, (cloud, svc.kind)


def test_plan_summary_shows_shared_storage_and_its_cost():
    plan = plan_stack("aws-h100")
    s = plan.summary()["sharedStorage"]
    assert s["kind"] == "lustre" and s["sizeGb"] == 4800 and s["throughput"] == 1000 and s["path"] == "/shared"
    assert s["monthlyUsd"] == round(4800 * 0.600, 2) and "aws.amazon.com/fsx/lustre/pricing" in s["priceSource"]
    assert s["resource"] == "llm-train-aws-shared" and s["retain"] is True and s["efa"] is True
    row = dict(summary_rows(plan))["shared storage"]
    assert "4,800 GiB at 1000 MB/s/TiB at /shared" in row and "est. $2,880.00/month" in row


def test_no_shared_storage_in_the_summary_without_it():
    assert plan_stack("aws-dev").summary()["sharedStorage"] is None
    assert dict(summary_rows(plan_stack("aws-dev")))["shared storage"] == "none"


def _json(values) -> dict:
    return json.loads(json.dumps(plan_values(values, "aws-h100").as_json(), default=str))


@pytest.mark.parametrize(
    ("change", "verb"),
    # a smaller FSx for Lustre replaces it (a growth is in place: tests/test_diff_sizes.py)
    [({"sizeGb": 2400}, "replaces"), ({"kind": "nfs", "sizeGb": None, "throughput": None}, "deletes")],
)
def test_diff_puts_the_shared_filesystem_first_as_data_loss(change, verb):
    base = {"kind": "lustre", "sizeGb": 4800, "throughput": 250}
    old = _json(shared(**base))
    new_cfg = {k: v for k, v in {**base, **change}.items() if v is not None}
    new = _json(shared(**new_cfg))
    first = diff_plans(old, new).warnings[0]
    assert first.startswith(f"DATA LOSS: {verb} aws:fsx/lustreFileSystem:LustreFileSystem `aws-h100-aws-shared`")
    assert "the shared filesystem (4,800 GiB at /shared)" in first and "protect is set" in first


def test_diff_flags_a_deployment_type_change_as_replacement():
    old = _json(shared(sizeGb=4800))
    new = copy.deepcopy(old)
    fs = next(r for r in new["resources"] if r["type"] == "aws:fsx/lustreFileSystem:LustreFileSystem")
    fs["inputs"]["deploymentType"] = "SCRATCH_2"
    first = diff_plans(old, new).warnings[0]
    assert first.startswith("DATA LOSS: replaces aws:fsx/lustreFileSystem:LustreFileSystem `aws-h100-aws-shared`")
    assert "`deploymentType`" in first and "4,800 GiB" in first


def test_diff_of_a_throughput_change_is_in_place():
    old, new = _json(shared(sizeGb=4800, throughput=250)), _json(shared(sizeGb=4800, throughput=500))
    d = diff_plans(old, new)
    assert not [w for w in d.warnings if "shared filesystem" in w]


def test_a_cloud_without_storage_data_refuses_it_even_existing():
    values = {
        "gpu-cluster:cloud": "tencentcloud",
        "tencentcloud:region": "ap-guangzhou",
        "gpu-cluster:cluster": {"gpu": "T4:1", "storage": {"shared": {"kind": "existing", "existing": "10.0.0.4:/x"}}},
    }
    with pytest.raises(ConfigErrors) as info:
        spec_of(values)
    assert (
        "does not build or mount a shared filesystem on tencentcloud"
        in {e.key: e.message for e in info.value.errors}[f"{KEY}.kind"]
    )


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp", "alicloud"])
def test_every_service_has_a_sourced_price_or_says_why_none(cloud):
    """A reference price is a number with its source, or null with the date it was searched for: never invented."""
    data = storage.load(cloud)
    assert data is not None
    for kind, svc in data.services.items():
        price = svc.price
        numbers = price.get("usdPerGbMonth") or price.get("usdPerGbMonthByThroughput")
        assert svc.price_source, (cloud, kind)
        if numbers:
            continue
        assert "usdPerGbMonth" in price and price["usdPerGbMonth"] is None, (cloud, kind)
        assert price.get("searched", "").startswith("20"), (cloud, kind)
        assert "no reference price found" in svc.price_source, (cloud, kind)
        assert svc.monthly_usd(10240, svc.default_throughput) is None
