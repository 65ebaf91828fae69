"""Each shipped stack's plan against its floor: the CPU time of importing the Pulumi SDK and exactly the provider
modules that plan loaded, in a process of its own, side by side in one run (issue 35: a plan within 1.5x of its
floor for the median stack, 2.0x for the slowest). And `diff --all-stacks`, both sides planned, for all of them."""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .measure import Workspace, _probe, run_measured
from .stacks import Shipped

TARGETS = {"medianRatioMax": 1.5, "slowestRatioMax": 2.0, "diffAllStacksSecondsMax": 60.0}


def floor_command(modules: Sequence[str]) -> list[str]:
    """The floor process: the interpreter importing what the plan's program needed from Pulumi, nothing of ours.

    Each module is loaded, not merely imported: the SDKs register their submodules as lazy modules (pulumi._utils.
    _LazyModule) that run only on first attribute access, so `import pulumi_aws.ec2` alone costs nothing and a floor
    of bare imports left out what the plan paid loading them (pulumi_aws.ec2: about 1.2 s of the aws-h100 plan). The
    attribute read (`__all__`) is not one of the names the lazy module answers without loading."""
    names = ["pulumi", *modules]
    code = f"import importlib\nfor name in {names!r}:\n    getattr(importlib.import_module(name), '__all__', None)\n"
    return [sys.executable, "-c", code]


def warm(project: Path, ws: Workspace, stacks: Sequence[Shipped]) -> None:
    """Bytecode compiled before anything is timed: each stack planned once, untimed, into the workspace's own cache.

    Why: with PYTHONDONTWRITEBYTECODE=1 in the environment every child recompiled the SDK it imported (seconds), and
    even with a cache the first stack to load a module (pulumi_aws.eks) paid its compilation. Issue 35's figures are
    with bytecode cached, as every run after the first is (README: a first run is slower)."""
    ws.own_bytecode_cache()
    for shipped in stacks:
        _probe(ws, project, shipped.path, f"warm-{shipped.stack}")


def stack_rows(project: Path, ws: Workspace, stacks: Sequence[Shipped]) -> list[dict[str, Any]]:
    """One row per stack: the plan's CPU seconds, the floor's, and their ratio (one process at a time, warm)."""
    warm(project, ws, stacks)
    rows = []
    for shipped in stacks:
        plan = _probe(ws, project, shipped.path, f"floor-{shipped.stack}")
        modules = (plan.get("probe") or {}).get("floorModules") or []
        floor = run_measured(floor_command(modules), project, ws.env)
        row: dict[str, Any] = {
            "stack": shipped.stack,
            "cloud": shipped.cloud,
            "ok": plan["ok"] and floor.code == 0,
            "planCpuSeconds": plan["cpuSeconds"],
            "floorCpuSeconds": round(floor.cpu, 3),
            "floorModules": modules,
        }
        if row["ok"] and floor.cpu > 0:
            row["ratio"] = round(plan["cpuSeconds"] / floor.cpu, 2)
        else:
            row["error"] = plan.get("error") or floor.stderr.strip().splitlines()[-1:] or "floor failed"
        rows.append(row)
    return rows


def diff_all_stacks(project: Path, ws: Workspace, base: str = "HEAD") -> dict[str, Any]:
    """`gpu-cluster diff --all-stacks --base REV`: every stack the change since REV touches planned on both sides, as
    a PR's CI does. A change under components/ touches every stack; against a clean HEAD none is planned, so the row
    says how many stacks were diffed (`--diff-base REV`: a revision before a change to components/)."""
    cmd = [sys.executable, "-m", "components", "diff", "--all-stacks", "--base", base, "--format", "json"]
    out = ws.file("diff-all.json")
    m = run_measured(cmd, project, ws.env, stdout=out, timeout=1800)
    try:
        stacks = len(json.loads(out.read_text())["stacks"])
    except (OSError, ValueError, KeyError, TypeError):
        stacks = None
    return {
        "base": base,
        "exitCode": m.code,
        "stacks": stacks,
        "wallSeconds": round(m.wall, 1),
        "cpuSeconds": round(m.cpu, 1),
    }


def verdicts(rows: list[dict[str, Any]], diff: dict[str, Any] | None) -> dict[str, Any]:
    ratios = sorted(r["ratio"] for r in rows if "ratio" in r)
    out: dict[str, Any] = {"targets": TARGETS, "stacks": len(rows), "measured": len(ratios)}
    if ratios:
        out["medianRatio"] = round(statistics.median(ratios), 2)
        out["slowestRatio"] = ratios[-1]
        out["medianMet"] = out["medianRatio"] <= TARGETS["medianRatioMax"]
        out["slowestMet"] = out["slowestRatio"] <= TARGETS["slowestRatioMax"]
    if diff is not None:
        out["diffAllStacksMet"] = diff["exitCode"] == 0 and diff["wallSeconds"] <= TARGETS["diffAllStacksSecondsMax"]
    return out
