"""The benchmark runs and reports what it should. Not a timed test: figures come from `python -m bench`."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import parse
from bench.report import kubernetes_targets, plan_targets
from bench.scratch import bootstrap_of, files_in
from bench.stacks import Shipped, kubernetes_stacks, pick
from components.layout import cloud_init
from components.layout.aws import INSTANCE_STORE_GLOBS
from components.layout.gcp.nodes import startup_script
from components.plan.runner import _Collector

ROOT = Path(__file__).resolve().parent.parent


def test_quick_run_emits_the_report(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--sizes", "1", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    for key in ("plans", "planTargets", "startup", "tests", "render", "fabric", "scratch", "targets", "stacks"):
        assert key in data
    assert data["stacks"] == {"aws": "aws-h100"}  # the VM-mode flagship, not a scheduler's stack
    # every shipped EKS stack measures its own series (bench/stacks.py kubernetes_stacks), in name order
    eks = sorted(
        line.split(":")[0] for line in (ROOT / "stacks/shipped.yaml").read_text().splitlines() if "eks" in line
    )
    assert data["kubernetesStacks"] == eks and "aws-eks-h100" in eks
    assert [k["stack"] for k in data["kubernetes"]] == eks
    for kube in data["kubernetes"]:
        assert (kube["scheduler"], kube["nodes"]) == ("kubernetes", 1)
        assert kube["ok"] and kube["resourceCount"] > 0 and kube["fabricGbpsPerNode"] == 3200
    plans = {(p["mode"], p["nodes"]): p for p in data["plans"]}
    assert set(plans) == {("managed", 1), ("instances", 1)}
    for p in plans.values():
        assert p["ok"] and p["resourceCount"] > 0 and p["peakRssMiB"] > 0 and p["cpuSeconds"] > 0
    (startup,) = data["startup"]
    assert startup["sdksLoaded"] == ["pulumi_aws"] and startup["onlyOwnSdk"]
    (fabric,) = data["fabric"]
    assert (fabric["instanceType"], fabric["wiredGbps"], fabric["ratio"]) == ("p5.48xlarge", 3200, 1.0)
    assert fabric["naiveRatio"] == pytest.approx(100 / 3200, abs=1e-3)
    assert fabric["usable"] is True and fabric["usableMissing"] == [] and fabric["status"] == "ok"
    (scratch,) = data["scratch"]
    assert scratch["status"] == "stripes all" and scratch["devices"] == 8
    assert "Plan time and peak memory" in proc.stdout


@pytest.mark.parametrize(
    ("argv", "flag"),
    [(["--sizes", "x"], "--sizes"), (["--sizes", "0"], "--sizes"), (["--clouds", "aws,ibm"], "--clouds")],
)
def test_bad_flags_exit_2_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        parse(argv)
    assert exc.value.code == 2
    assert flag in capsys.readouterr().err


def _row(mode: str, nodes: int, cpu: float, resources: int, rss: float = 100.0) -> dict:
    return {
        "cloud": "aws",
        "mode": mode,
        "nodes": nodes,
        "ok": True,
        "cpuSeconds": cpu,
        "wallSeconds": cpu,
        "resourceCount": resources,
        "peakRssMiB": rss,
    }


def test_targets_flag_per_node_work_and_superlinear_growth():
    plans = [
        _row("managed", 8, 1.0, 19),
        _row("managed", 2048, 1.5, 19),  # 1.5x: too slow
        _row("instances", 8, 1.0, 26),
        _row("instances", 512, 3.0, 530),
        _row("instances", 2048, 19.0, 2066, rss=1500),  # 8.8 ms/node, 2.6x faster growth at the end, > 1 GiB
    ]
    verdicts = {
        (v["mode"], v["target"].split(" ")[0].rstrip(":")): v["met"] for v in plan_targets(plans, [8, 512, 2048])
    }
    assert verdicts == {
        ("managed", "resources"): True,
        ("managed", "time"): False,
        ("instances", "ms"): False,
        ("instances", "linear"): False,
        ("instances", "peak"): False,
    }
    assert plans[1]["ratioToRef"] == {"refNodes": 8, "cpu": 1.5, "wall": 1.5, "resources": 1.0}


def test_scratch_files_are_found_in_every_user_data_form():
    from components.layout import Scratch

    scratch = Scratch("nvme", "/scratch", 4, 900.0, INSTANCE_STORE_GLOBS)
    text = cloud_init(scratch)
    for form in (text, base64.b64encode(text.encode()).decode(), startup_script(scratch)):
        found = bootstrap_of([{"inputs": {"metadata": {"user-data": form}}}])
        assert found is not None
        script, env = found
        assert script.startswith("#!/bin/bash") and env["EXPECTED_DEVICES"] == "4"
        assert env["DEVICE_GLOBS"] == INSTANCE_STORE_GLOBS[0]
    assert files_in("not user data") == {}


def test_collector_paused_during_a_plan_and_nothing_stays_frozen():
    import gc

    before = gc.get_freeze_count()  # another plan of this process may have frozen its objects
    collector = _Collector()
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled() and collector.frozen == (before == 0)
    with collector.paused():
        pass
    assert gc.isenabled() and not collector.frozen
    assert before or gc.get_freeze_count() == 0


def test_kubernetes_series_judged_as_managed_mode_per_stack():
    rows = [
        {**_row("managed", 8, 1.0, 39), "stack": "aws-eks-h100"},
        {**_row("managed", 2048, 1.1, 39), "stack": "aws-eks-h100"},
        {**_row("managed", 8, 1.0, 64), "cloud": "gcp", "stack": "gcp-gke"},
        {**_row("managed", 2048, 1.3, 65), "cloud": "gcp", "stack": "gcp-gke"},  # slower and more resources
    ]
    verdicts = {(v["stack"], v["target"].split(" ")[0]): v["met"] for v in kubernetes_targets(rows, [8, 2048])}
    assert verdicts == {
        ("aws-eks-h100", "resources"): True,
        ("aws-eks-h100", "time"): True,
        ("gcp-gke", "resources"): False,
        ("gcp-gke", "time"): False,
    }
    assert all(v["mode"] == "kubernetes" for v in kubernetes_targets(rows, [8, 2048]))


def test_flagships_are_vm_mode_stacks_and_kubernetes_stacks_are_listed_apart():
    def shipped(stack: str, scheduler: str) -> Shipped:
        return Shipped(stack, Path(stack), "aws", "p5.48xlarge", "efa", 3200.0, 8, "H100", scheduler)

    stacks = [shipped("aws-eks-h100", "kubernetes"), shipped("aws-h100", "none"), shipped("aws-slurm", "slurm")]
    picked = pick(stacks, "aws")
    assert picked is not None and picked.stack == "aws-h100"  # "aws-eks-h100" sorts first but is EKS
    assert [s.stack for s in kubernetes_stacks(stacks, ["aws"])] == ["aws-eks-h100"]
    assert kubernetes_stacks(stacks, ["gcp"]) == []
