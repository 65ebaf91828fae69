"""`gpu-cluster compare GPU[:COUNT]`: every cloud's types with that GPU, cheapest per GPU-hour first."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from components import catalog, recommend
from components.catalog import spot
from components.cli import app
from components.cli.browse import _spot_cell

from .conftest import ROOT
from .test_spot import spot_data

runner = CliRunner()
MODELS = sorted({r.gpu for r in catalog.all_types() if r.gpu})


def run(*args: str, columns: int = 200):
    return runner.invoke(app, ["compare", *args], env={"COLUMNS": str(columns)})


def test_json_rows_are_every_cloud_sorted_by_price_per_gpu_hour():
    result = run("h100", "-f", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["cloud"] for r in rows} >= {"aws", "azure", "gcp"}
    assert {r["instanceType"] for r in rows} == {r.instanceType for r in catalog.all_types() if r.gpu == "H100"}
    per = [r["usdPerGpuHour"] if r["usdPerGpuHour"] is not None else math.inf for r in rows]
    assert per == sorted(per)
    assert list(rows[0]) == list(recommend.compare_row(catalog.all_types("aws")[0]))
    first = rows[0]
    assert first["usdPerGpuHour"] == round(first["hourlyUsd"] / first["gpus"], 5)
    assert first["priceRegion"] and first["source"]


@given(st.sampled_from(MODELS))
def test_ordering_holds_for_every_model(model):
    rows = recommend.compare(model)
    keys = [r.usd_per_gpu_hour or math.inf for r in rows]
    assert keys == sorted(keys)
    assert all(r.gpu == model for r in rows)


def test_count_and_region_filter():
    rows = json.loads(run("H100:8", "--region", "us-east-1", "-f", "json").stdout)
    assert [r["instanceType"] for r in rows] == ["p5.48xlarge"]
    assert rows[0]["soldInRegion"] is True
    # a region the data says does not sell B200 on AWS leaves it out, with the reason on stderr
    result = run("B200", "--region", "eu-west-1")
    assert result.exit_code == 2
    assert "GPU: no type with B200 sold in eu-west-1" in result.output


def test_bad_gpu_exits_2_with_the_argument_named():
    result = run("z80")
    assert result.exit_code == 2
    assert "GPU: unknown GPU model 'z80'" in result.output
    assert "Traceback" not in result.output
    assert run("h100:x").exit_code == 2


def cells(text: str) -> set[str]:
    return {cell.strip() for line in text.splitlines() if line.startswith("│") for cell in line.split("│")}


def test_table_fits_80_columns_and_keeps_every_type_whole():
    result = run("T4", columns=80)
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert {r.instanceType for r in catalog.all_types() if r.gpu == "T4"} <= cells(result.stdout)
    assert "…" not in result.stdout
    assert "not shown at 80 columns:" in result.stdout


def test_in_a_pipe_it_fits_80_columns():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run(
        [sys.executable, "-m", "components", "compare", "H100"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    assert {"p5.48xlarge", "Standard_ND96isr_H100_v5", "a3-megagpu-8g"} <= cells(proc.stdout)


def test_markdown_has_every_column():
    result = run("A100-80GB", "-f", "markdown")
    assert result.exit_code == 0
    header = result.stdout.splitlines()[0]
    assert header.startswith("| cloud | type | GPU |") and "$/GPU-h" in header
    assert "p4de.24xlarge" in result.stdout


def test_the_newest_types_show_what_is_and_is_not_known():
    rows = {r["instanceType"]: r for r in json.loads(run("b300", "-f", "json").stdout)}
    b300 = rows["p6-b300.48xlarge"]
    # EFA not wired (no network-card layout source): shown without a fabric, price marked unverified
    assert (b300["fabric"], b300["fabricGbps"], b300["priceVerified"]) == ("none", 0, False)
    assert b300["regions"] == ["ap-northeast-2", "us-east-1", "us-gov-east-1", "us-west-2"]
    g7e = [r for r in json.loads(run("rtx-pro-6000:8", "-f", "json").stdout) if r["cloud"] == "aws"]
    assert [r["instanceType"] for r in g7e] == ["g7e.48xlarge"] and g7e[0]["localNvmeGb"] is None
    (mi300x,) = json.loads(run("mi300x", "--region", "eastus", "-f", "json").stdout)
    assert (mi300x["fabric"], mi300x["fabricGbps"], mi300x["hourlyUsd"]) == ("infiniband", 3200, None)
    assert mi300x["regions"] is None and mi300x["soldInRegion"] is None  # availability unknown, never refused


# --- spot -------------------------------------------------------------------------------------------------


def test_json_rows_carry_the_reference_spot_price_and_whether_it_is_offered():
    rows = {r["instanceType"]: r for r in json.loads(run("t4", "-f", "json").stdout)}
    # keys only ever added, at the end: the spot keys, then the local-currency ones, then gpuFraction
    assert list(rows["g4dn.xlarge"])[-6:-4] == ["spotHourlyUsd", "spotOffered"]
    # catalog/spot/azure.yaml: eastus 0.062699/h; unknown rows say null, never a guess
    assert (rows["Standard_NC4as_T4_v3"]["spotHourlyUsd"], rows["Standard_NC4as_T4_v3"]["spotOffered"]) == (
        0.062699,
        True,
    )
    unknown = [r for r in rows.values() if r["cloud"] in ("alicloud", "tencentcloud")]
    assert unknown and all(r["spotHourlyUsd"] is None and r["spotOffered"] is None for r in unknown)
    for r in catalog.all_types():
        if r.gpu == "T4":
            assert rows[r.instanceType]["spotHourlyUsd"] == spot.hourly_usd(r) or r.instanceType.startswith("n1-")


def test_the_spot_column_fits_80_columns_and_markdown_has_it():
    result = run("T4", columns=80)
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    header = next(line for line in result.stdout.splitlines() if line.startswith("┃"))
    assert "spot" in header
    nc4 = next(line for line in result.stdout.splitlines() if "Standard_NC4as_T4_v3" in line)
    assert nc4.rstrip("│ ").endswith("0.06")  # the last column: spot
    assert "spot: reference spot $/h in the same region, a snapshot" in " ".join(result.stdout.split())
    markdown = run("A100-80GB", "-f", "markdown").stdout
    assert markdown.splitlines()[0].endswith("| $/h | $/GPU-h | spot | local/h |")  # local/h: a CNY price
    assert "| 32.77 | 4.10 | 3.60 |" in markdown  # Standard_ND96amsr_A100_v4: eastus spot 3.6047/h


def test_a_type_not_sold_as_spot_shows_no(tmp_path):
    shipped = (spot._DIR / "azure.yaml").read_text()
    text = shipped.replace(
        "{instanceType: Standard_NC4as_T4_v3, hourlyUsd: 0.062699}",
        "{instanceType: Standard_NC4as_T4_v3, offered: false, source: test}",
    )
    with spot_data(tmp_path, "azure", text):
        rows = {r["instanceType"]: r for r in json.loads(run("t4", "-f", "json").stdout)}
        markdown = run("t4", "-f", "markdown").stdout
    assert (rows["Standard_NC4as_T4_v3"]["spotHourlyUsd"], rows["Standard_NC4as_T4_v3"]["spotOffered"]) == (
        None,
        False,
    )
    line = next(line for line in markdown.splitlines() if "Standard_NC4as_T4_v3" in line)
    assert line.endswith("| no | - |")  # spot, then local/h (none on a USD cloud)


@given(st.one_of(st.none(), st.floats(min_value=0.0001, max_value=1000)), st.sampled_from([True, False, None]))
def test_spot_cell_is_a_price_no_or_unknown(price, offered):
    cell = _spot_cell(price, offered)
    if offered is False:
        assert cell == "no"
    elif price is None:
        assert cell == "?"
    else:
        assert float(cell.replace(",", "")) == pytest.approx(price, abs=0.005)


def test_alibaba_rows_carry_their_cny_list_price_apart_from_the_usd_columns():
    rows = {r["instanceType"]: r for r in json.loads(run("a10", "-f", "json").stdout)}
    assert list(rows["ecs.gn7i-c8g1.2xlarge"])[-4:-1] == ["localHourly", "localCurrency", "localPriceRegion"]
    table = yaml.safe_load((ROOT / "components/catalog/prices/alicloud.yaml").read_text())["instances"]
    beijing = table["hourlyByRegion"]["cn-beijing"]  # the price file's region when no --region is asked
    ali = rows["ecs.gn7i-c8g1.2xlarge"]
    assert (ali["localHourly"], ali["localCurrency"], ali["localPriceRegion"]) == (
        beijing["ecs.gn7i-c8g1.2xlarge"],
        "CNY",
        "cn-beijing",
    )
    assert ali["hourlyUsd"] is None and ali["usdPerGpuHour"] is None  # never converted into the $ columns
    usd = [r for r in rows.values() if r["cloud"] in ("aws", "azure", "gcp")]
    assert usd and all(r["localHourly"] is None and r["localCurrency"] is None for r in usd)
    hangzhou = json.loads(run("a10", "--region", "cn-hangzhou", "-f", "json").stdout)
    ali = next(r for r in hangzhou if r["instanceType"] == "ecs.gn7i-c8g1.2xlarge")
    assert (ali["localHourly"], ali["localPriceRegion"]) == (
        table["hourlyByRegion"]["cn-hangzhou"]["ecs.gn7i-c8g1.2xlarge"],
        "cn-hangzhou",
    )


def test_the_markdown_names_the_currency_in_every_local_price_cell():
    result = run("a10", "-f", "markdown")
    assert result.exit_code == 0 and result.stdout.splitlines()[0].endswith("| spot | local/h |")
    line = next(x for x in result.stdout.splitlines() if "ecs.gn7i-c8g1.2xlarge" in x)
    assert line.rstrip(" |").endswith(" CNY") and "never converted" in result.stdout
