"""The offline plan and the CLI: JSON format, exit codes, secrets, bad input without tracebacks."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components.cli import app

from .conftest import ROOT
from .test_catalog import PUBLIC_KEYS

runner = CliRunner()
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
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
