"""`python -m bench`: plan time and memory by cluster size, start-up, test-suite time, fabric and scratch.

    python3 -m uv run python -m bench                  # the full run (a few minutes on 2 cores)
    python3 -m uv run python -m bench --quick          # sizes 1,2, one cloud: a smoke test (seconds)
    python3 -m uv run python -m bench --kubernetes     # only the Kubernetes stacks' series (about a minute)
    python3 -m uv run python -m bench --floor          # only every shipped stack's plan against its SDK floor

Prints tables and writes JSON (`--out`, default bench/results/latest.json, quick.json for --quick). Exit code 0 when the
run completed (targets missed are reported, not fatal), 2 on a bad flag.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console

from components.catalog import CLOUDS

from . import floor, measure, report
from .stacks import kubernetes_stacks, pick, shipped_stacks

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = (1, 8, 64, 512, 2048)
QUICK_SIZES = (1, 2)
MODES = ("managed", "instances")


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(s) for s in text.split(",") if s.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: comma-separated node counts, e.g. 1,8,64") from None
    if not sizes or sizes[0] < 1 or sizes[-1] > 5000:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: node counts from 1 to 5000")
    return sizes


def _clouds(text: str) -> tuple[str, ...]:
    clouds = tuple(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    bad = [c for c in clouds if c not in CLOUDS]
    if bad or not clouds:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: a comma-separated subset of {','.join(CLOUDS)}")
    return clouds


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_sizes, help="node counts (default 1,8,64,512,2048; --quick: 1,2)")
    parser.add_argument("--clouds", type=_clouds, help="clouds (default: every cloud, catalog.CLOUDS; --quick: aws)")
    parser.add_argument(
        "--out", type=Path, default=None, help="JSON result (default bench/results/latest.json, --quick: quick.json)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, one cloud, no test suite")
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes for the untimed checks (default 2)")
    parser.add_argument("--no-tests", action="store_true", help="skip timing the test suite")
    parser.add_argument(
        "--kubernetes", action="store_true", help="only the series of the scheduler: kubernetes stacks (managed mode)"
    )
    parser.add_argument(
        "--floor", action="store_true", help="only each shipped stack's plan CPU against its SDK import floor, and diff"
    )
    parser.add_argument(
        "--diff-base",
        default="HEAD",
        metavar="REV",
        help="the base of the timed `diff --all-stacks` (default HEAD; a revision before a change to components/ "
        "diffs every stack)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"argument --jobs: got {args.jobs}; allowed: 1 or more")
    args.sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    args.clouds = args.clouds or (("aws",) if args.quick else CLOUDS)
    # a smoke run must not overwrite the full run's figures
    name = "quick.json" if args.quick else "kubernetes.json" if args.kubernetes else "latest.json"
    name = "floor.json" if args.floor and not args.quick else name
    args.out = args.out or ROOT / "bench" / "results" / name
    return args


def run(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    started = time.perf_counter()
    stacks, invalid = shipped_stacks(ROOT)
    chosen = {c: pick(stacks, c) for c in args.clouds}
    skipped = {c: "no shipped stack for this cloud yet" for c, s in chosen.items() if s is None}
    flagships = {c: s for c, s in chosen.items() if s is not None}
    kube = kubernetes_stacks(stacks, args.clouds)
    result: dict[str, Any] = {
        "schema": 1,
        "command": "python -m bench " + " ".join(sys.argv[1:]),
        "quick": args.quick,
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "loadAverageAtStart": list(os.getloadavg()),
        },
        "sizes": list(args.sizes),
        "clouds": list(args.clouds),
        "targets": report.TARGETS,
        "stacks": {c: s.stack for c, s in flagships.items()},
        "kubernetesStacks": [s.stack for s in kube],
        "skipped": skipped,
        "invalidStacks": invalid,
    }
    with measure.Workspace() as ws:
        if args.kubernetes:  # the Kubernetes series alone, timed one process at a time
            result["kubernetes"] = measure.kubernetes_matrix(ROOT, ws, kube, args.sizes, 1)
            result["kubernetesTargets"] = report.kubernetes_targets(result["kubernetes"], args.sizes)
            result["machine"]["loadAverageAtEnd"] = list(os.getloadavg())
            result["seconds"] = round(time.perf_counter() - started, 1)
            return result
        if args.floor:  # the plans against their floors alone, and diff --all-stacks
            _floor(result, ws, stacks if not args.quick else list(flagships.values()), not args.quick, args.diff_base)
            result["machine"]["loadAverageAtEnd"] = list(os.getloadavg())
            result["seconds"] = round(time.perf_counter() - started, 1)
            return result
        # 1. Timed, one process at a time (quick mode trades fairness for speed).
        cold: dict[str, Any] = {}
        if not args.quick:
            ws.own_bytecode_cache()
            cold = measure.warm_up(ROOT, ws, flagships, measure.reference_size(args.sizes))
        if args.quick:  # timings are not the point of a smoke run: check the catalog types meanwhile
            with ThreadPoolExecutor(max_workers=1) as pool:
                checks = pool.submit(measure.catalog_types, ROOT, ws, flagships, args.clouds, 1, True)
                result["plans"] = measure.plan_matrix(ROOT, ws, flagships, args.sizes, MODES, max(1, args.jobs - 1))
                types = checks.result()
        else:
            result["plans"] = measure.plan_matrix(ROOT, ws, flagships, args.sizes, MODES, 1)
        result["planTargets"] = report.plan_targets(result["plans"], args.sizes)
        jobs = max(1, args.jobs - 1) if args.quick else 1
        result["kubernetes"] = measure.kubernetes_matrix(ROOT, ws, kube, args.sizes, jobs)
        result["kubernetesTargets"] = report.kubernetes_targets(result["kubernetes"], args.sizes)
        result["startup"] = measure.startup(
            ROOT, ws, flagships, result["plans"], args.sizes, eager=not args.quick, cold=cold
        )
        result["render"] = None if args.quick else measure.render(ROOT, ws, flagships, args.sizes)
        _floor(result, ws, stacks if not args.quick else list(flagships.values()), not args.quick, args.diff_base)
        result["tests"] = None if args.quick or args.no_tests else measure.test_suite(ROOT, ws)
        # 2. Untimed correctness checks, in parallel.
        if not args.quick:
            types = measure.catalog_types(ROOT, ws, flagships, args.clouds, args.jobs, quick=False)
    result["fabric"] = report.fabric_rows(types)
    result["scratch"] = report.scratch_rows(types)
    result["machine"]["loadAverageAtEnd"] = list(os.getloadavg())
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def _floor(result: dict[str, Any], ws: measure.Workspace, stacks: list[Any], diff: bool, base: str = "HEAD") -> None:
    result["floor"] = floor.stack_rows(ROOT, ws, stacks)
    result["diffAllStacks"] = floor.diff_all_stacks(ROOT, ws, base) if diff else None
    result["floorTargets"] = floor.verdicts(result["floor"], result["diffAllStacks"])


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 150)
    console.print(f"[bold]gpu-cluster bench[/bold]: sizes {args.sizes}, clouds {','.join(args.clouds)}")
    result = run(args, console)
    report.print_all(result, console)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"wrote {args.out} ({result['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
