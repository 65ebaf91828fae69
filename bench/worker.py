"""In-process measurements, run as child processes of `python -m bench` (one cloud's SDK each).

`types`: plan every catalog type of one cloud that has a fabric or local NVMe as a 2-node variant
of a shipped stack; report the fabric Gb/s the plan counted from its registered resources and
whether the rendered scratch bootstrap stripes every device. `render`: time rendering (table,
markdown, JSON) and diffing of big plans, at two sizes to show the growth is linear.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from components import catalog
from components.errors import ConfigError
from components.plan import Plan, load_stack, make_plan
from components.plan.render import render_json, render_markdown, render_table

from .scratch import bootstrap_of, stripes_all
from .stacks import variant


def _plan(project: Path, path: Path) -> Plan:
    return make_plan(project, load_stack(project, None, path))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def type_entry(project: Path, base: Path, tmp: Path, row: catalog.InstanceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "cloud": row.cloud,
        "instanceType": row.instanceType,
        "gpu": row.gpu or row.gpuDescription,
        "fabric": row.fabric,
        "ratedGbps": row.fabricGbps,
        "naiveRatio": round(row.gbps_per_fabric_device / row.fabricGbps, 4) if row.fabricGbps else None,
        "localNvme": row.localNvmeCount,
    }
    path = variant(
        base,
        tmp,
        f"bench-type-{_slug(row.instanceType)}-{_slug(row.gpu or 'x')}",
        instanceType=row.instanceType,
        gpu=f"{row.gpu}:{row.gpus}" if row.gpu else None,
        nodes=2,
        maxNodes=2,
        nodeGroup="managed",
        fabric="auto",
        placement=None,
        **{"storage.scratch": "auto", "network.publicIp": None},
    )
    try:
        plan = _plan(project, path)
        summary = plan.summary()
        resources = [r.as_json() for r in plan.resources]
    except ConfigError as exc:
        return {**entry, "error": f"rejected: {exc}"}
    except Exception as exc:  # report it and go on with the next type
        return {**entry, "error": f"{exc.__class__.__name__}: {exc}"}
    wired = summary["fabricGbpsPerNode"]
    entry["wiredGbps"] = wired
    entry["ratio"] = round(wired / row.fabricGbps, 4) if row.fabricGbps else None
    # wired is necessary, not sufficient: whether the bootstrap gives NCCL what the fabric needs
    entry["usable"] = summary.get("fabricUsable")
    entry["usableMissing"] = summary.get("fabricMissing") or []
    if row.localNvmeCount:
        found = bootstrap_of(resources)
        if found is None:
            entry["scratch"] = {"ok": False, "detail": f"no scratch bootstrap in the user data ({summary['scratch']})"}
        else:
            script, env = found
            result = stripes_all(script, env, row.localNvmeCount)
            entry["scratch"] = {**result, "expectedDevices": env.get("EXPECTED_DEVICES")}
    return entry


def cmd_types(args: argparse.Namespace) -> dict[str, Any]:
    rows = [r for r in catalog.all_types(args.cloud) if r.has_fabric or r.localNvmeCount]
    if args.only:
        rows = [r for r in rows if r.instanceType in args.only.split(",")]
    tmp = Path(args.tmp)
    return {"types": [type_entry(Path(args.project), Path(args.base), tmp, r) for r in rows]}


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _changed(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy with one tag changed on every tagged resource: the worst case for a diff (all changed)."""
    new = copy.deepcopy(doc)
    for res in new["resources"]:
        tags = res["inputs"].get("tags")
        if isinstance(tags, dict):
            tags["bench"] = "changed"
    return new


def render_times(plan: Plan) -> dict[str, Any]:
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    table, _ = _timed(lambda: render_table(plan, console))
    markdown, _ = _timed(lambda: render_markdown(plan))
    as_json, text = _timed(lambda: render_json(plan))
    out: dict[str, Any] = {
        "nodes": plan.spec.nodes,
        "resources": len(plan.resources),
        "tableSeconds": table,
        "markdownSeconds": markdown,
        "jsonSeconds": as_json,
    }
    try:
        from components import diff
    except ImportError:
        out["diff"] = None
        return out
    doc = json.loads(text)
    new = _changed(doc)
    same, _ = _timed(lambda: diff.diff_plans(doc, copy.deepcopy(doc)))
    changed, result = _timed(lambda: diff.diff_plans(doc, new))
    md, _ = _timed(lambda: diff.render_markdown([result]))
    out["diff"] = {"identicalSeconds": same, "allChangedSeconds": changed, "markdownSeconds": md}
    return out


def cmd_render(args: argparse.Namespace) -> dict[str, Any]:
    project = Path(args.project)
    sizes = []
    for config in args.config:
        plan = _plan(project, Path(config))
        sizes.append(render_times(plan))
        del plan
    return {"sizes": sizes}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    sub = parser.add_subparsers(dest="command", required=True)
    types = sub.add_parser("types")
    types.add_argument("--cloud", required=True, choices=catalog.CLOUDS)
    types.add_argument("--base", required=True)
    types.add_argument("--only", default="")
    render = sub.add_parser("render")
    render.add_argument("--config", action="append", required=True)
    for p in (types, render):
        p.add_argument("--project", required=True)
        p.add_argument("--tmp", default="")
    args = parser.parse_args()
    result = cmd_types(args) if args.command == "types" else cmd_render(args)
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
