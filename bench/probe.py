"""One measured plan, as a whole process: `python -m bench.probe --config FILE --out PLAN --report R`.

It runs the real CLI (`gpu-cluster plan --config FILE --format json`) with two observations added,
neither of which changes what is planned: the time from this process's first line to the first
resource the program registers, and which provider SDK modules are loaded at the end. With
`--eager MOD,...` it first imports those modules, the naive baseline of a program that loads every
cloud's SDK up front.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402  (after T0 on purpose: the clock starts before any import)
import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from components.datafile import load_yaml  # noqa: E402

# Each cloud's provider SDK module, from the clouds' registry data: read as plain YAML (not through the catalog,
# which loads pydantic), so the `--eager` baseline and the module census below stay the plan's own.
CLOUDS_FILE = Path(__file__).resolve().parent.parent / "components" / "catalog" / "clouds.yaml"
SDK_OF: dict[str, str] = {cloud: str(row["sdk"]) for cloud, row in load_yaml(CLOUDS_FILE)["clouds"].items()}
SDKS = tuple(SDK_OF.values())
# what a plan's floor imports besides `pulumi`: the provider SDKs the program may load (bench/floor.py)
FLOOR_PACKAGES = (*SDKS, "pulumi_random", "pulumi_kubernetes", "pulumi_tls")


def loaded_sdk_modules(packages: tuple[str, ...] = SDKS) -> list[str]:
    """SDK packages and first-level submodules (an SDK's `ec2` or `compute`) really loaded by the plan.

    The SDKs register their submodules as lazy modules (importlib.util.LazyLoader) that load on
    first attribute access; those still lazy cost nothing and are left out.
    """
    return sorted(
        m
        for m, module in list(sys.modules.items())
        if m.split(".")[0] in packages and m.count(".") <= 1 and type(module).__name__ != "_LazyModule"
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.probe")
    parser.add_argument("--config", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--out", required=True, help="where the plan JSON goes")
    parser.add_argument("--report", required=True, help="where this probe's observations go")
    parser.add_argument("--eager", default="", help="comma-separated modules to import first (naive baseline)")
    args = parser.parse_args()

    eager: dict[str, float] = {}
    for module in filter(None, args.eager.split(",")):
        start = time.perf_counter()
        importlib.import_module(module)
        eager[module] = time.perf_counter() - start

    from components import cli
    from components.plan import runner

    first: dict[str, float] = {}
    register = runner.RecordingMonitor.RegisterResource

    def timed(self: runner.RecordingMonitor, request: Any) -> Any:
        if not first and request.type != "pulumi:pulumi:Stack":
            first["seconds"] = time.perf_counter() - T0
        return register(self, request)

    runner.RecordingMonitor.RegisterResource = timed  # type: ignore[method-assign]
    sys.argv = ["gpu-cluster", "plan", "--config", args.config, "--project", args.project, "--format", "json"]
    code: Any = 0
    with open(args.out, "w") as out, contextlib.redirect_stdout(out):
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code
    report = {
        "exitCode": code if isinstance(code, int) else 1,
        "firstResourceSeconds": first.get("seconds"),
        "totalSeconds": time.perf_counter() - T0,
        "eagerImportSeconds": eager,
        "sdkModules": loaded_sdk_modules(),
        "floorModules": loaded_sdk_modules(FLOOR_PACKAGES),
    }
    with open(args.report, "w") as fh:
        json.dump(report, fh)
    return int(report["exitCode"])


if __name__ == "__main__":
    sys.exit(main())
