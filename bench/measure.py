"""Running and measuring child processes: wall time, CPU time and peak RSS of each one."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from .probe import SDK_OF, SDKS
from .stacks import Shipped, kubernetes_overrides, kubernetes_sized, series_overrides, sized


class Workspace:
    """A temporary folder for generated stack files, plan outputs and reports; removed at the end."""

    def __enter__(self) -> Workspace:
        self.path = Path(tempfile.mkdtemp(prefix="gc-bench-"))
        self.env = dict(os.environ)
        return self

    def own_bytecode_cache(self) -> None:
        """Children compile into a fresh cache of ours: the first plan per cloud is cold, later ones
        warm, whatever the environment says (PYTHONDONTWRITEBYTECODE=1 would make every run cold)."""
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["PYTHONPYCACHEPREFIX"] = str(self.path / "pycache")

    def __exit__(self, *exc: tuple[type[BaseException], BaseException, TracebackType] | None) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def file(self, name: str) -> Path:
        return self.path / name


@dataclass(frozen=True)
class Measured:
    code: int
    wall: float
    cpu: float  # user + system of the child
    peak_rss_mib: float  # the child's own high-water mark (wait4 rusage, not RUSAGE_CHILDREN's max)
    stderr: str


def run_measured(
    cmd: Sequence[str], cwd: Path, env: dict[str, str], stdout: Path | None = None, timeout: float = 600
) -> Measured:
    """Run one child and collect its own rusage with wait4 (RUSAGE_CHILDREN would mix children)."""
    err_path = Path(tempfile.mkstemp(prefix="gc-bench-err-")[1])
    with open(err_path, "w") as err, open(stdout or os.devnull, "w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=out, stderr=err)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.005)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
    text = err_path.read_text(errors="replace")
    err_path.unlink()
    return Measured(proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text)


def _probe(ws: Workspace, project: Path, config: Path, tag: str, eager: Iterable[str] = ()) -> dict[str, Any]:
    out, report = ws.file(f"{tag}.json"), ws.file(f"{tag}.report")
    cmd = [sys.executable, "-m", "bench.probe", "--config", str(config), "--project", str(project)]
    cmd += ["--out", str(out), "--report", str(report), "--eager", ",".join(eager)]
    m = run_measured(cmd, project, ws.env)
    row: dict[str, Any] = {
        "ok": m.code == 0,
        "rejected": m.code == 2,  # the spec refused the size (a cloud limit), with its one-line message
        "wallSeconds": round(m.wall, 3),
        "cpuSeconds": round(m.cpu, 3),
        "peakRssMiB": round(m.peak_rss_mib, 1),
    }
    if report.exists():
        row["probe"] = json.loads(report.read_text())
    if m.code == 0:
        summary = json.loads(out.read_text())["summary"]
        row["resourceCount"] = summary["resourceCount"]
        row["fabricGbpsPerNode"] = summary["fabricGbpsPerNode"]
    else:
        lines = [line for line in m.stderr.strip().splitlines() if line.strip()]
        row["error"] = lines[-1] if lines else f"exit code {m.code}"
    for path in (out, report):
        path.unlink(missing_ok=True)
    return row


def _pool(jobs: int, calls: list[Any]) -> list[Any]:
    if jobs <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda call: call(), calls))


def plan_matrix(
    project: Path, ws: Workspace, flagships: dict[str, Shipped], sizes: Sequence[int], modes: Sequence[str], jobs: int
) -> list[dict[str, Any]]:
    """Plan each flagship at every size and mode, each plan a fresh process."""
    top = max(sizes)
    relax = {
        (cloud, mode): series_overrides(project, s.path, ws.file("stacks"), cloud, mode, top)
        for cloud, s in flagships.items()
        for mode in modes
    }
    cases = [(cloud, s, mode, n) for cloud, s in flagships.items() for mode in modes for n in sizes]

    def case(cloud: str, shipped: Shipped, mode: str, nodes: int) -> Any:
        extra = relax[cloud, mode]

        def call() -> dict[str, Any]:
            config = sized(shipped.path, ws.file("stacks"), cloud, mode, nodes, **extra)
            row = _probe(ws, project, config, f"{cloud}-{mode}-{nodes}")
            return {"cloud": cloud, "stack": shipped.stack, "mode": mode, "nodes": nodes, "overrides": extra, **row}

        return call

    return _pool(jobs, [case(*c) for c in cases])


def kubernetes_matrix(
    project: Path, ws: Workspace, stacks: Sequence[Shipped], sizes: Sequence[int], jobs: int
) -> list[dict[str, Any]]:
    """Plan each Kubernetes stack at every size (its GPU pool is a managed node group), each plan a fresh process.

    Rows carry mode "managed" so `report.plan_targets` judges them as managed-mode plans (time flat, resources
    flat in node count), and `scheduler` to tell them from the VM-mode series."""
    folder = ws.file("k8s-stacks")

    def relaxation(shipped: Shipped) -> dict[str, str]:
        # the one accepted at the largest size any is accepted at (a cloud's group cap may stop the series short)
        for nodes in sorted(sizes, reverse=True):
            extra = kubernetes_overrides(project, shipped.path, folder, shipped.stack, nodes)
            if extra is not None:
                return extra
        return {}

    relax = {s.stack: relaxation(s) for s in stacks}

    def case(shipped: Shipped, nodes: int) -> Any:
        extra = relax[shipped.stack]

        def call() -> dict[str, Any]:
            config = kubernetes_sized(shipped.path, folder, shipped.stack, nodes, **extra)
            row = _probe(ws, project, config, f"k8s-{shipped.stack}-{nodes}")
            return {
                "cloud": shipped.cloud,
                "stack": shipped.stack,
                "scheduler": "kubernetes",
                "mode": "managed",
                "nodes": nodes,
                "overrides": extra,
                **row,
            }

        return call

    return _pool(jobs, [case(s, n) for s in stacks for n in sizes])


def warm_up(project: Path, ws: Workspace, flagships: dict[str, Shipped], nodes: int) -> dict[str, dict[str, Any]]:
    """One cold plan per cloud (empty bytecode cache): what a first run after install costs."""
    rows = {}
    for cloud, shipped in flagships.items():
        config = sized(shipped.path, ws.file("stacks"), cloud, "managed", nodes)
        rows[cloud] = {"nodes": nodes, **_probe(ws, project, config, f"cold-{cloud}")}
    return rows


def reference_size(sizes: Sequence[int]) -> int:
    """Ratios are to the 8-node plan; without one (quick runs), to the smallest size."""
    return 8 if 8 in sizes else min(sizes)


def startup(
    project: Path,
    ws: Workspace,
    flagships: dict[str, Shipped],
    plans: list[dict[str, Any]],
    sizes: Sequence[int],
    eager: bool,
    cold: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """Which SDKs a plan loads, and time to first resource, against loading every SDK up front."""
    ref = reference_size(sizes)
    lazy = {p["cloud"]: p for p in plans if p["mode"] == "managed" and p["nodes"] == ref and "probe" in p}
    # The naive baseline imports what every cloud's plan imported in this run (the SDK submodules
    # its mapping uses), plus each SDK's package: what a dispatch without lazy imports would pay.
    modules = sorted({m for p in lazy.values() for m in p["probe"]["sdkModules"]} | set(SDKS))
    rows = []
    for cloud, shipped in flagships.items():
        probe = lazy.get(cloud, {}).get("probe")
        if probe is None:
            rows.append({"cloud": cloud, "error": "the reference plan did not run"})
            continue
        loaded = sorted({m.split(".")[0] for m in probe["sdkModules"]})
        row: dict[str, Any] = {
            "cloud": cloud,
            "nodes": ref,
            "sdksLoaded": loaded,
            "onlyOwnSdk": loaded == [SDK_OF[cloud]],
            "firstResourceSeconds": _round(probe["firstResourceSeconds"]),
            "planWallSeconds": lazy[cloud]["wallSeconds"],
        }
        first_cold = cold.get(cloud, {}).get("probe", {}).get("firstResourceSeconds")
        if cloud in cold:
            row["cold"] = {
                "firstResourceSeconds": _round(first_cold),
                "planWallSeconds": cold[cloud]["wallSeconds"],
                "nodes": cold[cloud].get("nodes"),
            }
        if eager:
            config = sized(shipped.path, ws.file("stacks"), cloud, "managed", ref)
            naive = _probe(ws, project, config, f"eager-{cloud}", modules)
            naive_probe = naive.get("probe") or {}
            first = naive_probe.get("firstResourceSeconds")
            row["eager"] = {
                "modules": modules,
                "firstResourceSeconds": _round(first),
                "planWallSeconds": naive["wallSeconds"],
                "peakRssMiB": naive["peakRssMiB"],
                "importSeconds": round(sum(naive_probe.get("eagerImportSeconds", {}).values()), 3),
            }
            if first and probe["firstResourceSeconds"]:
                row["eagerOverLazy"] = round(first / probe["firstResourceSeconds"], 2)
        rows.append(row)
    return rows


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def render(project: Path, ws: Workspace, flagships: dict[str, Shipped], sizes: Sequence[int]) -> dict[str, Any] | None:
    """Render and diff the largest instances-mode plan of the first cloud (and a quarter of it)."""
    if not flagships:
        return None
    cloud, shipped = next(iter(flagships.items()))
    big = max(sizes)
    small = max(1, big // 4)
    sizes_out = []
    # the same relaxation the plan series uses, so clouds with placement caps render at full size
    extra = series_overrides(project, shipped.path, ws.file("stacks"), cloud, "instances", big)
    for n in (small, big):  # one process per size: each plan is its process's first, as in the CLI
        config = sized(shipped.path, ws.file("stacks"), cloud, "instances", n, **extra)
        cmd = [sys.executable, "-m", "bench.worker", "render", "--project", str(project), "--config", str(config)]
        out = ws.file(f"render-{n}.json")
        m = run_measured(cmd, project, ws.env, stdout=out)
        if m.code != 0:
            return {"cloud": cloud, "error": m.stderr.strip().splitlines()[-1] if m.stderr.strip() else str(m.code)}
        sizes_out += json.loads(out.read_text())["sizes"]
    data = {"sizes": sizes_out}
    diff_available = importlib.util.find_spec("components.diff") is not None
    return {"cloud": cloud, "stack": shipped.stack, "diffAvailable": diff_available, **data}


def test_suite(project: Path, ws: Workspace) -> dict[str, Any]:
    """`pytest -q` as a child process, without the bench's own test (it would recurse)."""
    # addopts already has -q; a second one would hide the summary line
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ignore=tests/test_bench.py"]
    out = Path(tempfile.mkstemp(prefix="gc-bench-pytest-")[1])
    m = run_measured(cmd, project, ws.env, stdout=out, timeout=900)
    lines = [line for line in out.read_text(errors="replace").splitlines() if line.strip()]
    out.unlink()
    summary = lines[-1] if lines else ""
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary)}
    return {
        "command": " ".join(["pytest", *cmd[3:]]),
        "exitCode": m.code,
        "wallSeconds": round(m.wall, 2),
        "cpuSeconds": round(m.cpu, 2),
        "summary": summary,
        **counts,
    }


def has_mapping(cloud: str) -> bool:
    """A cloud is mapped when both its pure layout and its Pulumi package exist."""
    return all(importlib.util.find_spec(f"components.{m}") is not None for m in (f"layout.{cloud}", cloud))


def catalog_types(
    project: Path, ws: Workspace, flagships: dict[str, Shipped], clouds: Sequence[str], jobs: int, quick: bool
) -> dict[str, Any]:
    """Per cloud: every type with a fabric or local NVMe, planned as a 2-node variant of its flagship."""
    calls = []
    status: dict[str, Any] = {}
    for cloud in clouds:
        if not has_mapping(cloud):
            status[cloud] = "no mapping"
            continue
        if cloud not in flagships:
            status[cloud] = "no shipped stack to plan from"
            continue
        shipped = flagships[cloud]
        cmd = [sys.executable, "-m", "bench.worker", "types", "--cloud", cloud, "--base", str(shipped.path)]
        cmd += ["--project", str(project), "--tmp", str(ws.file(f"types-{cloud}"))]
        if quick:
            cmd += ["--only", shipped.instance_type]
        out = ws.file(f"types-{cloud}.json")

        def call(cmd: list[str] = cmd, out: Path = out, cloud: str = cloud) -> tuple[str, Any]:
            m = run_measured(cmd, project, ws.env, stdout=out)
            if m.code != 0:
                return cloud, f"worker failed: {(m.stderr.strip().splitlines() or ['?'])[-1]}"
            return cloud, json.loads(out.read_text())["types"]

        calls.append(call)
    for cloud, value in _pool(jobs, calls):
        status[cloud] = value
    return {c: status[c] for c in clouds}
