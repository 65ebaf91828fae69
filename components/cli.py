"""`gpu-cluster`: the offline plan and the catalog, for people without cloud credentials.

Exit codes: 0 success, 2 invalid input (one message naming the config key, no traceback).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import catalog
from .errors import ConfigError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Cloud-neutral GPU clusters on Pulumi: offline plans and the instance catalog.",
)
REPO_ROOT = Path(__file__).resolve().parent.parent


class Format(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


class CatalogFormat(StrEnum):
    table = "table"
    json = "json"


def _fail(message: str) -> typer.Exit:
    # Text, not markup: config values may contain [brackets] or :emoji: codes.
    Console(stderr=True, highlight=False, soft_wrap=True, emoji=False).print(Text.assemble(("error: ", "red"), message))
    return typer.Exit(code=2)


def _project_dir(project: Path | None) -> Path:
    from .plan import find_project

    if project is not None:
        return find_project(project.resolve())
    try:
        return find_project(Path.cwd())
    except ConfigError:
        return find_project(REPO_ROOT)


@app.command()
def plan(
    stack: Annotated[
        str | None, typer.Option("--stack", "-s", help="stack NAME: reads stacks/Pulumi.NAME.yaml")
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="any Pulumi stack config file")] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="output format")] = Format.table,
    project: Annotated[Path | None, typer.Option("--project", help="folder with Pulumi.yaml")] = None,
    policy_config: Annotated[
        Path | None,
        typer.Option("--policy-config", help="enforcement levels, as for `pulumi preview --policy-pack-config`"),
    ] = None,
) -> None:
    """Show exactly what `pulumi up` would create for a stack, offline, with cost, fabric and policy.

    Exit codes: 0 success, 2 invalid input, 3 a mandatory policy is violated (the plan is still printed).
    """
    from .plan import load_stack, make_plan
    from .plan.render import render_json, render_markdown, render_table

    if (stack is None) == (config is None):
        raise _fail("give exactly one of --stack NAME or --config FILE")
    try:
        project_dir = _project_dir(project)
        levels = _policy_config(policy_config)
        the_plan = make_plan(project_dir, load_stack(project_dir, stack, config), levels)
        violations = the_plan.violations()
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if fmt is Format.json:
        sys.stdout.write(render_json(the_plan) + "\n")
    elif fmt is Format.markdown:
        sys.stdout.write(render_markdown(the_plan))
    else:
        render_table(the_plan, Console(soft_wrap=False))
    if any(v.level == "mandatory" for v in violations):
        raise typer.Exit(code=3)


def _policy_config(path: Path | None) -> dict[str, Any]:
    """Policy levels from a JSON/YAML file; errors name the file and the policy key."""
    from .policy import PolicyConfigError, rule_levels

    if path is None:
        return {}
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        reason = f"cannot be read as JSON or YAML ({exc.__class__.__name__})"
        raise ConfigError(f"--policy-config {path}", reason) from None
    if not isinstance(data, dict):
        raise ConfigError(f"--policy-config {path}", "must be a mapping of policy name to level or settings")
    try:
        rule_levels(data)
    except PolicyConfigError as exc:
        raise ConfigError(f"--policy-config {path}", str(exc)) from None
    return data


@app.command("catalog")
def catalog_cmd(
    cloud: Annotated[str | None, typer.Option("--cloud", help="aws | azure | gcp | alicloud")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU model, any usual spelling (h100, a100-80gb)")] = None,
    fmt: Annotated[CatalogFormat, typer.Option("--format", "-f")] = CatalogFormat.table,
) -> None:
    """List the GPU instance types gpu-cluster knows, with specs, fabric, price and source."""
    if cloud is not None and cloud not in catalog.CLOUDS:
        raise _fail(f"--cloud: got {cloud!r}; allowed: {', '.join(catalog.CLOUDS)}")
    model = None
    if gpu is not None:
        model = catalog.normalize_gpu(gpu)
        if model is None:
            known = ", ".join(sorted(set(catalog.gpu_aliases().values())))
            raise _fail(f"--gpu: unknown GPU model {gpu!r}; known models: {known}")
    rows = [r for r in catalog.all_types(cloud) if model is None or r.gpu == model]
    if fmt is CatalogFormat.json:
        sys.stdout.write(json.dumps([r.public_row() for r in rows], indent=2) + "\n")
        return
    table = Table(title=f"{len(rows)} GPU instance types")
    for col in ("cloud", "type", "GPU", "vCPU", "mem GiB", "local NVMe", "net Gb/s", "fabric", "fabric Gb/s", "$/h"):
        table.add_column(col, justify="right" if col not in ("cloud", "type", "GPU", "fabric") else "left")
    for r in rows:
        nvme = (
            f"{r.localNvmeCount} x {r.localNvmeGb:g} GB"
            if r.localNvmeCount and r.localNvmeGb
            else str(r.localNvmeCount or "-")
        )
        table.add_row(
            r.cloud,
            r.instanceType,
            f"{r.gpus} x {r.gpu or r.gpuDescription}",
            str(r.vcpus or "?"),
            f"{r.memoryGiB:g}" if r.memoryGiB else "?",
            nvme,
            f"{r.networkGbps:g}" if r.networkGbps else "?",
            r.fabric if r.fabric == "none" else f"{r.fabric} x{r.fabricDevices}",
            f"{r.fabricGbps:g}" if r.fabricGbps else "-",
            f"{r.hourlyUsd:,.2f}" if r.hourlyUsd else "?",
        )
    Console().print(table)


@app.command()
def diff(
    plans: Annotated[
        list[Path] | None, typer.Argument(help="OLD.json NEW.json: two `plan --format json` files of one stack")
    ] = None,
    stack: Annotated[str | None, typer.Option("--stack", "-s", help="stack NAME, planned at --base and now")] = None,
    base: Annotated[str | None, typer.Option("--base", help="git revision to compare against")] = None,
    all_stacks: Annotated[
        bool, typer.Option("--all-stacks", help="every stack the change since --base touches")
    ] = False,
    fmt_name: Annotated[str, typer.Option("--format", "-f", help="table | markdown | json")] = "table",
    project: Annotated[Path | None, typer.Option("--project", help="folder with Pulumi.yaml")] = None,
) -> None:
    """Compare two offline plans: created, deleted, changed inputs, and data-loss warnings first."""
    from .diff import PlanDiff, diff_plans, gitplan, read_plan, render_json, render_markdown, render_table

    if fmt_name not in Format.__members__:
        raise _fail(f"--format: got {fmt_name!r}; allowed: {', '.join(Format.__members__)}")
    fmt = Format(fmt_name)
    files = plans or []
    modes = [bool(files), stack is not None, all_stacks]
    if sum(modes) != 1:
        raise _fail("give exactly one of: OLD.json NEW.json, --stack NAME --base REV, or --all-stacks --base REV")
    if files and (len(files) != 2 or base is not None):
        raise _fail("diff takes exactly two plan files, OLD.json NEW.json (and no --base)")
    if not files and base is None:
        raise _fail("--base REV is required with --stack and --all-stacks (for example --base origin/main)")
    diffs: list[PlanDiff] = []
    try:
        if files:
            old, new = (read_plan(path) for path in files)
            if old.get("stack") != new.get("stack"):
                raise ConfigError(
                    str(files[1]),
                    f"is a plan of stack {new.get('stack')!r}, the other of {old.get('stack')!r}; "
                    "diff compares two plans of the same stack",
                )
            diffs.append(diff_plans(old, new))
        elif base is not None:  # checked above: --stack and --all-stacks come with --base
            project_dir = _project_dir(project)
            top, rel = gitplan.toplevel(project_dir)
            commit = gitplan.resolve(top, base)
            with gitplan.worktree(top, commit) as tree:
                base_project = tree / rel
                names: list[str] = (
                    [stack] if stack is not None else gitplan.touched_stacks(project_dir, commit, base_project)
                )
                for name in names:
                    old_plan = gitplan.plan_in_tree(base_project, name)
                    new_plan = gitplan.plan_here(project_dir, name)
                    if old_plan is None and new_plan is None:
                        raise ConfigError("--stack", f"no stack {name!r} at {base} nor in the working tree")
                    diffs.append(diff_plans(old_plan, new_plan))
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if fmt is Format.json:
        sys.stdout.write(render_json(diffs, many=all_stacks) + "\n")
    elif fmt is Format.markdown:
        sys.stdout.write(render_markdown(diffs, base))
    else:
        render_table(diffs, Console(soft_wrap=False))


def main() -> None:
    app()
