"""A config with several problems that only a cloud's layout can see gets every one of them in one run, one
keyed line each, on the CLI and under `pulumi up`, and nothing is registered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from typer.testing import CliRunner

from components.cli import app
from components.errors import ConfigError, ConfigErrors, refuse
from components.plan.runner import PlanMocks, RecordingMonitor, run_program
from components.plan.stackfile import read_stack_file

from .conftest import ROOT

C = "gpu-cluster:cluster"
TAGS = {"environment": "test"}
FLEET = {"nodes": 1, "minNodes": 0, "maxNodes": 4, "nodeGroup": "managed", "tags": TAGS}

CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "aws-fleet": (
        {
            "aws:region": "us-east-1",
            "gpu-cluster:cloud": "aws",
            C: {**FLEET, "name": "many", "instanceType": "g6e.xlarge", "network": {"egress": "none"},
                "spot": {"enabled": True, "fallback": "onDemand"},
                "scaling": {"metric": "gpuUtilization", "target": 70}},
        },
        [f"{C}.spot.fallback", f"{C}.network.egress", f"{C}.minNodes"],
    ),
    "aws-fleet-queue": (
        {
            "aws:region": "us-east-1",
            "gpu-cluster:cloud": "aws",
            C: {**FLEET, "name": "many", "instanceType": "g6e.xlarge",
                "spot": {"enabled": True, "fallback": "onDemand"},
                "scaling": {"metric": "queueDepth", "target": 5, "queue": "my-queue"}},
        },
        [f"{C}.spot.fallback", f"{C}.scaling.queue"],
    ),
    "gcp-fleet": (
        {
            "gcp:project": "ml-project",
            "gcp:region": "us-central1",
            "gpu-cluster:cloud": "gcp",
            C: {**FLEET, "name": "many", "instanceType": "g2-standard-4", "zone": "us-central1-a",
                "spot": {"enabled": True, "fallback": "onDemand"}, "monitoring": {"dcgmExporter": False},
                "scaling": {"metric": "gpuUtilization", "target": 70}},
        },
        [f"{C}.spot.fallback", f"{C}.scaling.metric", f"{C}.minNodes"],
    ),
    "aws-eks": (
        {
            "aws:region": "us-east-1",
            "gpu-cluster:cloud": "aws",
            C: {"name": "many", "gpu": "H100:8", "nodes": 2, "zone": "us-east-1a", "scheduler": "kubernetes",
                "network": {"egress": "none"}, "image": "ami-0123456789abcdef0", "tags": TAGS},
        },
        [f"{C}.network.egress", f"{C}.image"],
    ),
    "azure-availability-set": (
        {
            "azure-native:location": "eastus",
            "gpu-cluster:cloud": "azure",
            C: {"name": "many", "instanceType": "Standard_ND96isr_H100_v5", "nodes": 2, "nodeGroup": "instances",
                "zone": "1", "spot": True, "tags": TAGS},
        },
        [f"{C}.spot", f"{C}.zone", f"{C}.sshPublicKey"],
    ),
    "alicloud-sizes": (
        {
            "alicloud:region": "cn-hangzhou",
            "gpu-cluster:cloud": "alicloud",
            C: {"name": "many", "instanceType": "ecs.gn6i-c4g1.xlarge", "nodes": 1, "maxNodes": 2500,
                "nodeGroup": "managed", "zone": "cn-hangzhou-k", "storage": {"rootGb": 4000}, "tags": TAGS},
        },
        [f"{C}.storage.rootGb", f"{C}.maxNodes"],
    ),
}  # fmt: skip


def _stack_file(tmp_path: Path, values: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.many.yaml"
    path.write_text(yaml.safe_dump({"config": values}, sort_keys=False))
    return path


@pytest.mark.parametrize("case", CASES)
def test_every_layout_problem_is_reported_at_once(tmp_path, case):
    values, keys = CASES[case]
    path = _stack_file(tmp_path, values)
    result = CliRunner().invoke(app, ["plan", "--config", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert [line.split(": ", 2)[1] for line in lines] == keys, lines  # one line per problem, in the rules' order
    assert all(line.startswith("error: ") and "\\n" not in line for line in lines)
    # `pulumi up`: the program raises the same lines as one RunError, before any resource
    monitor = RecordingMonitor(PlanMocks("mock-region"))
    with pytest.raises(pulumi.RunError) as info:
        run_program(ROOT / "__main__.py", read_stack_file(path, "gpu-cluster"), "mock-region", monitor)
    assert [f"error: {line}" for line in str(info.value).splitlines()] == lines
    assert monitor.registered == []


def test_refuse_raises_nothing_one_error_or_all_of_them():
    refuse([])
    one = ConfigError("a", "x")
    with pytest.raises(ConfigError) as single:
        refuse(iter([one]))
    assert single.value is one
    with pytest.raises(ConfigErrors) as many:
        refuse([one, ConfigError("b", "y")])
    assert str(many.value) == "a: x\nb: y" and [e.key for e in many.value.errors] == ["a", "b"]
