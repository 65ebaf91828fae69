"""`gpu-cluster recommend`: memory from documented formulas (docs/recommend.md), ranked options, and a
stack file that plans cleanly."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from components import recommend as rec
from components.cli import app
from components.errors import ConfigError

from .conftest import ROOT
from .test_spot import spot_data

runner = CliRunner()


def run(*args: str, columns: int = 200):
    return runner.invoke(app, ["recommend", *args], env={"COLUMNS": str(columns)})


# --- the pinned cases ---------------------------------------------------------------------------------


def test_7b_bf16_inference_fits_one_24gb_gpu():
    need = rec.memory_need("inference", 7e9, "bf16")
    assert need.total_gib == pytest.approx(7e9 * 2 / rec.GIB + 2.0)  # weights + 2 GiB of KV cache (4,096 tokens)
    assert need.total_gib <= 24 * rec.USABLE_FRACTION
    options = rec.recommend(need)
    a10g = next(o for o in options if o.row.gpu == "A10G")
    assert (a10g.nodes, a10g.row.gpus, a10g.gpus_needed) == (1, 1, 1)


def test_70b_bf16_inference_needs_more_than_one_80gb_gpu():
    need = rec.memory_need("inference", 70e9, "bf16")
    assert need.total_gib > 80
    for option in rec.recommend(need, limit=100):
        if option.row.gpuMemoryGiB and option.row.gpuMemoryGiB <= 80:
            assert option.gpus_needed >= 2


def test_70b_full_fine_tuning_with_adam_needs_several_8_gpu_nodes():
    need = rec.memory_need("fine-tuning", 70e9, "bf16")
    assert need.total_gib == pytest.approx(70e9 * 16 / rec.GIB)
    options = rec.recommend(need, limit=100)
    up_to_141 = [o for o in options if (o.row.gpuMemoryGiB or 0) <= 141]
    assert up_to_141
    for option in up_to_141:
        assert option.multi_node and option.row.gpus == 8 and option.row.has_fabric, option.row.instanceType


def test_int4_and_fp8_shrink_the_weights():
    bf16, fp8, int4 = (rec.memory_need("inference", 70e9, p).terms[0][1] for p in ("bf16", "fp8", "int4"))
    assert bf16 == pytest.approx(2 * fp8) == pytest.approx(4 * int4)


@given(st.floats(1e8, 1e12), st.sampled_from(["inference", "training"]))
def test_every_option_holds_the_need(params, workload):
    need = rec.memory_need(workload, params)
    try:
        options = rec.recommend(need, limit=100)
    except ConfigError:
        return  # nothing holds it: said with the flag named
    for option in options:
        usable = option.total_gpus * float(option.row.gpuMemoryGiB or 0) * rec.USABLE_FRACTION
        assert usable >= need.total_gib
    # every option NCCL can train across comes first (a multi-node option on an unusable fabric is ranked last),
    # cheapest first within each part
    usable = [o.fabric_usable for o in options]
    assert usable == sorted(usable, reverse=True)
    for part in (True, False):
        costs = [o.hourly_usd for o in options if o.fabric_usable is part and o.hourly_usd is not None]
        assert costs == sorted(costs)


def test_rendering_and_hpc_pick_fit_gpus_only():
    assert {o.row.gpu for o in rec.recommend(rec.memory_need("rendering", None), limit=100)} <= set(rec.RENDERING_GPUS)
    assert {o.row.gpu for o in rec.recommend(rec.memory_need("hpc", None), limit=100)} <= set(rec.HPC_GPUS)


# --- the command --------------------------------------------------------------------------------------


def test_json_schema_and_ranking():
    result = run("--workload", "inference", "--model-params", "70B", "--context", "32k", "--batch", "4", "-f", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"workload", "needGiB", "need", "multiNode", "options", "wroteStack", "spot", "writeSkipped"}
    keys = {"cloud", "instanceType", "gpu", "gpusPerNode", "gpuMemoryGiB", "nodes", "totalGpus", "gpusNeeded",
            "multiNode", "fabric", "fabricGbps", "hourlyUsd", "usdPerGpuHour", "priceVerified", "region", "why",
            "source", "spotHourlyUsd", "spotOffered", "fabricUsable", "gpuFraction"}  # fmt: skip
    assert all(set(o) == keys for o in out["options"])
    assert "KV cache (131,072 tokens)" in out["need"]
    for part in (True, False):  # options NCCL can train across first, each part cheapest first
        priced = [o["hourlyUsd"] for o in out["options"] if o["hourlyUsd"] is not None and o["fabricUsable"] is part]
        assert priced == sorted(priced)


def test_table_fits_80_columns():
    result = run("--workload", "training", "--model-params", "13B", columns=80)
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "…" not in result.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--workload", "dancing", "--model-params", "7B"], "--workload"),
        (["--workload", "inference", "--model-params", "seven"], "--model-params"),
        (["--workload", "inference"], "--model-params"),
        (["--workload", "inference", "--model-params", "7B", "--context", "lots"], "--context"),
        (["--workload", "inference", "--model-params", "7B", "--precision", "fp4"], "--precision"),
        (["--workload", "training", "--model-params", "7B", "--precision", "int4"], "--precision"),
        (["--workload", "training", "--model-params", "70B", "--budget", "1"], "--budget"),
        (["--workload", "inference", "--model-params", "7B", "--budget", "-3"], "--budget"),
        (["--workload", "inference", "--model-params", "7B", "--cloud", "mars"], "--cloud"),
        (["--workload", "inference", "--model-params", "400B", "--gpus-max", "2"], "--gpus-max"),
        (["--workload", "inference", "--model-params", "7B", "--write-stack", "Bad_Name"], "--write-stack"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(args, flag):
    result = run(*args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag}"), result.output
    assert "Traceback" not in result.output


def test_budget_keeps_only_options_under_it():
    out = json.loads(run("--workload", "inference", "--model-params", "7B", "--budget", "1", "-f", "json").stdout)
    assert out["options"] and all(o["hourlyUsd"] <= 1 for o in out["options"])


def write_stack(tmp_path, name: str, *flags: str):
    """`recommend ... --write-stack NAME -f json` into a project folder of its own."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    return run(*flags, "--write-stack", name, "--project", str(tmp_path), "-f", "json")


def test_write_stack_round_trip(tmp_path):
    result = write_stack(tmp_path, "rec-rt", "--workload", "inference", "--model-params", "7B", "--cloud", "aws")
    assert result.exit_code == 0, result.output
    path = tmp_path / "stacks" / "Pulumi.rec-rt.yaml"
    assert json.loads(result.stdout)["wroteStack"] == str(path)
    config = yaml.safe_load(path.read_text())["config"]
    assert config["gpu-cluster:cloud"] == "aws" and config["gpu-cluster:cluster"]["nodes"] == 1
    planned = runner.invoke(app, ["plan", "--config", str(path), "-f", "json"])
    assert planned.exit_code == 0, planned.output
    summary = json.loads(planned.stdout)["summary"]
    assert summary["instanceType"] == config["gpu-cluster:cluster"]["instanceType"]
    # never overwrites
    again = run(
        "--workload", "inference", "--model-params", "7B", "--write-stack", "rec-rt", "--project", str(tmp_path)
    )
    assert again.exit_code == 2 and "error: --write-stack" in again.output


def test_write_stack_skips_options_the_layout_refuses_and_says_why(tmp_path):
    # every Azure option needs an sshPublicKey (the Azure layout's refusal), which a written stack cannot invent
    result = write_stack(tmp_path, "rec-az", "--workload", "inference", "--model-params", "7B", "--cloud", "azure")
    assert result.exit_code == 2 and "error: --write-stack: no option validates" in result.output
    assert "sshPublicKey" in result.output and not (tmp_path / "stacks" / "Pulumi.rec-az.yaml").exists()
    # across clouds the first option that plans is written, the skipped better-ranked ones named
    out = write_stack(tmp_path, "rec-any", "--workload", "inference", "--model-params", "7B", "--budget", "5")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    written = yaml.safe_load((tmp_path / "stacks" / "Pulumi.rec-any.yaml").read_text())["config"]
    first = next(o for o in doc["options"] if o["instanceType"] == written["gpu-cluster:cluster"]["instanceType"])
    assert all(s.split(":", 1)[0] in {o["instanceType"] for o in doc["options"]} for s in doc["writeSkipped"])
    assert doc["options"].index(first) == len(doc["writeSkipped"])  # every better option was skipped, with a reason
    assert runner.invoke(app, ["plan", "--config", str(tmp_path / "stacks" / "Pulumi.rec-any.yaml")]).exit_code == 0


def test_new_types_rank_with_their_caveats():
    # 70B full fine-tuning (1,043 GiB) fits one p6-b300 node (8 x 268.6 x 0.9 = 1,934 GiB): no fabric needed,
    # which matters because its EFA is not wired (catalog/aws.yaml); g7e (96 GB, no fabric) cannot hold it on
    # one node and is never offered multi-node.
    options = rec.recommend(rec.memory_need("fine-tuning", 70e9, "bf16"), limit=100)
    b300 = next(o for o in options if o.row.instanceType == "p6-b300.48xlarge")
    assert (b300.nodes, b300.multi_node, b300.row.has_fabric) == (1, False, False)
    assert not any(o.row.gpu == "RTX-PRO-6000" for o in options)
    mi300x = next(o for o in options if o.row.gpu == "MI300X")
    assert mi300x.nodes == 1 and "amd GPUs" in mi300x.why and "not covered" in mi300x.why
    assert all("not covered" not in o.why for o in options if o.row.gpu_vendor == "nvidia")


# --- --spot -----------------------------------------------------------------------------------------------


def spot_options(*args: str) -> list[dict]:
    result = run("--workload", "inference", "--model-params", "7B", "--spot", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["spot"] is True
    return out["options"]


def test_spot_ranks_by_the_spot_price_where_known_and_says_it_is_a_snapshot():
    options = spot_options()
    ranked = [o["spotHourlyUsd"] if o["spotHourlyUsd"] is not None else o["hourlyUsd"] for o in options]
    assert ranked == sorted(ranked)  # spot where known, else on-demand (the spot price's upper bound)
    # at spot, AWS's g6.xlarge (use1-az2 0.347/h in catalog/spot/aws.yaml) is the cheapest 7B fit, then GCP's
    # g2-standard-4 (0.36122/h), AWS's g5.xlarge (0.4328/h) and Azure's 1 x A100-80GB (eastus 0.444433/h); on demand
    # the A100 is 3.673/h and ranks below the first L40S (g6e.xlarge 1.861/h), at spot above it (g6e.2xlarge 0.8402/h)
    top = [(o["instanceType"], o["spotHourlyUsd"]) for o in options[:4]]
    assert top == [("g6.xlarge", 0.347), ("g2-standard-4", 0.3612), ("g5.xlarge", 0.4328),
                   ("Standard_NC24ads_A100_v4", 0.4444)]  # fmt: skip
    plain = json.loads(run("--workload", "inference", "--model-params", "7B", "-f", "json").stdout)["options"]
    for listed, a100_first in ((options, True), (plain, False)):
        names = [o["instanceType"] for o in listed]
        first_l40s = next(i for i, o in enumerate(listed) if o["gpu"] == "L40S")
        assert (names.index("Standard_NC24ads_A100_v4") < first_l40s) is a100_first
    known = [o for o in options if o["spotHourlyUsd"] is not None]
    # every option listed above has a spot reference since AWS's g-family ones were transcribed; Alibaba has no spot
    # file (SCHEMA.md, "Spot"), so its options are the unknown ones
    unknown = [o for o in spot_options("--cloud", "alicloud") if o["spotHourlyUsd"] is None]
    assert known and unknown
    assert all("spot $" in o["why"] and "reference snapshot" in o["why"] and o["spotOffered"] for o in known)
    assert all("spot price unknown" in o["why"] and o["spotOffered"] is None for o in unknown)


def test_spot_skips_types_a_source_says_are_not_sold_as_spot(tmp_path):
    shipped = (ROOT / "components" / "catalog" / "spot" / "azure.yaml").read_text()
    text = shipped.replace(
        "{instanceType: Standard_NC24ads_A100_v4, hourlyUsd: 0.444433}",
        "{instanceType: Standard_NC24ads_A100_v4, offered: false, source: test}",
    )
    with spot_data(tmp_path, "azure", text):
        options = spot_options("--cloud", "azure")
        on_demand = json.loads(run("--workload", "inference", "--model-params", "7B", "--cloud", "azure",
                                   "-f", "json").stdout)["options"]  # fmt: skip
    names = [o["instanceType"] for o in options]
    assert "Standard_NC24ads_A100_v4" not in names
    assert "Standard_NC24ads_A100_v4" in [o["instanceType"] for o in on_demand]  # without --spot it stays


def test_spot_budget_counts_the_spot_price_and_the_table_shows_it(tmp_path):
    # 0.5/h buys no on-demand 7B fit, but at spot AWS's g6.xlarge (0.347/h) and g5.xlarge (0.4328/h), GCP's
    # g2-standard-4 (0.36122/h) and Azure's A100-80GB (0.444433/h)
    assert run("--workload", "inference", "--model-params", "7B", "--budget", "0.5").exit_code == 2
    within = spot_options("--budget", "0.5")
    assert [o["instanceType"] for o in within] == [
        "g6.xlarge",
        "g2-standard-4",
        "g5.xlarge",
        "Standard_NC24ads_A100_v4",
    ]
    result = run("--workload", "inference", "--model-params", "70B", "--spot", columns=80)
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "cheapest spot price first" in result.stdout and "spot $/h" in result.stdout


def test_spot_write_stack_writes_spot_true(tmp_path):
    # 7B training (104.3 GiB) on AWS at spot: g7e.12xlarge, 2 x RTX PRO 6000 (172.8 GiB usable), at its us-east-1
    # reference 1.7461/h (use1-az2), the cheapest AWS spot fit (g4dn.metal 2.5404/h is next)
    result = write_stack(
        tmp_path, "spot-test", "--workload", "training", "--model-params", "7B", "--spot", "--cloud", "aws"
    )
    assert result.exit_code == 0, result.output
    path = tmp_path / "stacks" / "Pulumi.spot-test.yaml"
    assert yaml.safe_load(path.read_text())["config"]["gpu-cluster:cluster"]["spot"] is True
    planned = runner.invoke(app, ["plan", "--config", str(path), "-f", "json"])
    assert planned.exit_code == 0, planned.output
    summary = json.loads(planned.stdout)["summary"]
    assert summary["spot"] is True and summary["instanceType"] == "g7e.12xlarge"
    assert summary["spotHourlyUsdPerNode"] == 1.7461


def test_spot_markdown_has_the_spot_column_and_without_spot_it_is_as_before():
    spot_md = run("--workload", "inference", "--model-params", "7B", "--spot", "-f", "markdown").stdout
    header = next(line for line in spot_md.splitlines() if line.startswith("| #"))
    assert header == "| # | cloud | type | nodes | GPUs | fabric | $/h | $/GPU-h | spot $/h |"
    assert "| g2-standard-4 |" in spot_md and "| 0.36 |" in spot_md
    plain_md = run("--workload", "inference", "--model-params", "7B", "-f", "markdown").stdout
    assert next(line for line in plain_md.splitlines() if line.startswith("| #")).endswith("| $/GPU-h |")
    assert "spot $" not in plain_md


# --- multi-node: a fabric NCCL can use (issue 26, defect 7) -------------------------------------------------------


def test_multi_node_h100_on_gcp_is_a3_mega_whose_fabric_nccl_can_use():
    # a3-highgpu-8g is cheaper, but its GPUDirect-TCPX needs a kernel no public image carries
    need = rec.memory_need("fine-tuning", 70e9, "bf16")
    h100 = [o for o in rec.recommend(need, cloud="gcp", limit=100) if o.row.gpu == "H100"]
    assert [o.row.instanceType for o in h100] == ["a3-megagpu-8g"]
    assert h100[0].multi_node and h100[0].fabric_usable and "NOT usable" not in h100[0].why


def test_an_option_on_an_unusable_fabric_is_marked_and_ranked_after_the_usable_ones():
    options = rec.recommend(rec.memory_need("fine-tuning", 70e9, "bf16"), limit=100)
    unusable = [o for o in options if not o.fabric_usable]
    assert {o.row.instanceType for o in unusable} >= {"p3dn.24xlarge", "a4x-highgpu-4g"}
    assert all(o.multi_node and "NOT usable by NCCL on image auto" in o.why for o in unusable)
    assert all(not o.fabric_usable for o in options[options.index(unusable[0]) :])
    assert all(o.as_json()["fabricUsable"] is False for o in unusable)
