"""The offline plan and the CLI: JSON format, exit codes, secrets, bad input without tracebacks."""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components import catalog
from components.cli import app

from .conftest import ROOT, shipped_stacks
from .test_catalog import PUBLIC_KEYS

runner = CliRunner()
STACKS = shipped_stacks()
SUMMARY_KEYS = {
    "instanceType",
    "gpu",
    "gpusPerNode",
    "nodes",
    "fabric",
    "fabricGbpsPerNode",
    "fabricGbpsRated",
    "scratch",
    "hourlyUsd",
    "resourceCount",
}


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_plans(stack, stack_plan):
    plan = stack_plan(stack)
    doc = plan.as_json()
    assert {"project", "stack", "cloud", "region", "resources", "outputs", "summary", "warnings"} <= set(doc)
    assert set(doc["summary"]) >= SUMMARY_KEYS
    assert doc["summary"]["resourceCount"] == len(doc["resources"]) > 5
    for res in doc["resources"]:
        assert {"urn", "type", "name", "parent", "custom", "inputs"} <= set(res)
        assert res["urn"].startswith(f"urn:pulumi:{stack}::gpu-cluster::")
        assert ":" in res["type"]
    json.dumps(doc)  # serialisable as is
    if doc["summary"]["fabric"] != "none":
        assert doc["summary"]["fabricGbpsPerNode"] == doc["summary"]["fabricGbpsRated"]


def test_json_output_of_the_cli(tmp_path):
    result = invoke("plan", "--stack", "aws-h100", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["cloud"] == "aws" and doc["region"] == "us-east-1"
    types = {r["type"] for r in doc["resources"]}
    assert {
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:autoscaling/group:Group",
        "gpu-cluster:index:GpuCluster",
        "aws:ec2/placementGroup:PlacementGroup",
    } <= types
    assert doc["summary"]["hourlyUsd"] == pytest.approx(4 * 55.04)
    assert doc["outputs"]["fabricGbpsPerNode"] == 3200


def test_table_and_markdown(tmp_path):
    table = invoke("plan", "--stack", "aws-h100")
    assert table.exit_code == 0 and "3,200 of 3,200 Gb/s" in table.stdout and "p5.48xlarge" in table.stdout
    md = invoke("plan", "--stack", "aws-h100", "--format", "markdown")
    assert md.exit_code == 0 and md.stdout.startswith("### gpu-cluster plan: `aws-h100`") and "<details>" in md.stdout


def test_resources_never_depend_on_registration_order(stack_plan):
    plan = stack_plan("aws-h100")
    urns = [r.urn for r in plan.resources]
    assert urns == sorted(urns) and len(set(urns)) == len(urns)


def write_stack(tmp_path: Path, text: str, name: str = "Pulumi.bad.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "is empty"),
        ("config: [", "is not valid YAML at line"),
        ("- 1\n- 2\n", "must be a mapping"),
        ("config:\n  gpu-cluster:cloud: aws\n", "aws:region: got null; required"),
        (
            "config:\n  aws:region: us-east-1\n  gpu-cluster:cloud: aws\n  gpu-cluster:cluster:\n    gpu: H100:8\n"
            "    storage: {scratch: ssd}\n",
            "gpu-cluster:cluster.storage.scratch: got 'ssd'",
        ),
        ("confg: {}\n", "unknown top-level key"),
    ],
)
def test_bad_input_exits_2_with_one_message(tmp_path, text, fragment):
    result = invoke("plan", "--config", str(write_stack(tmp_path, text)))
    assert result.exit_code == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.output + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_stack_and_both_options():
    assert invoke("plan", "--stack", "nope").exit_code == 2
    assert invoke("plan").exit_code == 2


def test_secure_values_show_as_secret(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.aws-dev.yaml").read_text()
    text = text.replace("    tags:", "    sshPublicKey:\n      secure: v1:AAAABBBB\n    tags:")
    result = invoke("plan", "--config", str(write_stack(tmp_path, text, "Pulumi.aws-dev.yaml")), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    key_pair = next(r for r in doc["resources"] if r["type"] == "aws:ec2/keyPair:KeyPair")
    assert key_pair["inputs"]["publicKey"] == "[secret]"
    assert "v1:AAAABBBB" not in result.stdout and "placeholder" not in result.stdout


def test_real_entry_point_prints_no_traceback(tmp_path):
    bad = write_stack(tmp_path, "config:\n  gpu-cluster:cloud: mars\n")
    proc = subprocess.run(
        [sys.executable, "-m", "components", "plan", "--config", str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "gpu-cluster:cloud: got 'mars'; allowed: aws, azure, gcp, alicloud" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_catalog_json_rows():
    result = invoke("catalog", "--cloud", "aws", "--gpu", "h100", "--format", "json")
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert {r["instanceType"] for r in rows} == {"p5.48xlarge", "p5.4xlarge"}
    assert list(rows[0]) == PUBLIC_KEYS
    assert invoke("catalog").exit_code == 0
    assert invoke("catalog", "--cloud", "mars").exit_code == 2
    assert invoke("catalog", "--gpu", "z80").exit_code == 2


# --- the catalog at 80 columns, in a pipe, and its filters ------------------------------------------


def catalog_table(*args: str, columns: int) -> str:
    result = runner.invoke(app, ["catalog", *args], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


def type_cells(text: str) -> set[str]:
    """Every cell of every table row, stripped (a type that is cut or wrapped is not one of them)."""
    return {cell.strip() for line in text.splitlines() if line.startswith("│") for cell in line.split("│")}


def test_catalog_at_80_columns_never_cuts_an_instance_type():
    text = catalog_table(columns=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert {r.instanceType for r in catalog.all_types()} <= type_cells(text)
    assert "…" not in text
    # what did not fit is said, with how to see it
    assert "not shown at 80 columns:" in text and "--format json" in text


def test_catalog_in_a_pipe_keeps_every_type_whole():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run(
        [sys.executable, "-m", "components", "catalog", "--cloud", "aws", "--gpu", "h100"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert {"p5.48xlarge", "p5.4xlarge"} <= type_cells(proc.stdout)
    assert "…" not in proc.stdout


def headers(text: str) -> set[str]:
    return {cell.strip() for line in text.splitlines() if line.startswith("┃") for cell in line.split("┃")} - {""}


def test_a_wide_catalog_shows_every_column():
    text = catalog_table("--cloud", "aws", columns=200)
    all_columns = {"type", "GPU", "vCPU", "mem GiB", "local NVMe", "net Gb/s", "fabric", "fabric Gb/s", "$/h"}
    assert headers(text) == all_columns
    assert "not shown" not in text
    narrow = catalog_table("--cloud", "aws", columns=80)
    assert {"type", "GPU", "$/h"} <= headers(narrow) < all_columns
    assert "p5.48xlarge" in type_cells(narrow)


def test_catalog_gpu_filter_takes_model_and_count():
    result = invoke("catalog", "--cloud", "aws", "--gpu", "H100:8", "--format", "json")
    assert result.exit_code == 0, result.output
    assert [r["instanceType"] for r in json.loads(result.stdout)] == ["p5.48xlarge"]
    everywhere = json.loads(invoke("catalog", "--gpu", "h100:8", "-f", "json").stdout)
    assert {r["cloud"] for r in everywhere} >= {"aws", "azure", "gcp"}
    assert all(r["gpu"] == "H100" and r["gpus"] == 8 for r in everywhere)
    bad = invoke("catalog", "--gpu", "H100:x")
    assert bad.exit_code == 2 and "MODEL or MODEL:COUNT" in bad.stderr


def test_a_catalog_filter_that_matches_nothing_says_what_would():
    result = invoke("catalog", "--cloud", "azure", "--gpu", "l4", "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    assert "no azure type has L4" in result.stderr and "L4 is offered on: aws, gcp" in result.stderr
    counts = invoke("catalog", "--cloud", "aws", "--gpu", "H100:4")
    assert counts.exit_code == 0 and not counts.stdout.strip()
    assert "no aws type has 4 x H100; counts offered: 1, 8" in counts.stderr


def test_an_unknown_gpu_model_suggests_the_nearest():
    result = invoke("catalog", "--gpu", "h10")
    assert result.exit_code == 2 and "did you mean H100" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_version():
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout == f"gpu-cluster {expected}\n"


@pytest.mark.parametrize("command", [[], ["plan"], ["catalog"], ["diff"]])
def test_help_shows_no_type_on_flags_and_words_for_values(command):
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout and "<str>" not in result.stdout and "<path>" not in result.stdout
    if command == ["diff"]:
        row = next(line for line in result.stdout.splitlines() if "--all-stacks" in line)
        assert row.split("--all-stacks", 1)[1].split()[0] == "every"  # the help text follows directly
        assert "REV" in result.stdout
    if command == ["catalog"]:
        assert "MODEL[:COUNT]" in result.stdout


def test_shipped_stack_comments_speak_to_users():
    for path in (ROOT / "stacks" / f"Pulumi.{stack}.yaml" for stack in STACKS):
        comments = [line for line in path.read_text().splitlines() if line.lstrip().startswith("#")]
        assert comments and comments[0].startswith("# "), path.name  # each stack says what it builds
        assert not any(re.search(r"(?i)\bissue\b", line) for line in comments), path.name
