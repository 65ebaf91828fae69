"""`gpu-cluster`: the offline plan and the catalog, for people without cloud credentials.

Exit codes: 0 success, 2 invalid input (one message naming the config key, no traceback); `plan`: 3 a mandatory
policy is violated; `diff`: 4 a config change its update policy refuses (components/spec/updates.yaml).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import catalog
from ..datafile import load_yaml
from ..errors import ConfigError
from . import browse
from .base import REFUSED_EXIT, Format, _Command, _fail, _project_dir, app, version

__all__ = ["REFUSED_EXIT", "app", "browse", "main", "version"]


@app.command(cls=_Command)
def plan(
    stack: Annotated[
        str | None, typer.Option("--stack", "-s", metavar="NAME", help="reads stacks/Pulumi.NAME.yaml")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", metavar="FILE", help="any Pulumi stack config file")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="output format")] = Format.table,
    project: Annotated[Path | None, typer.Option("--project", metavar="DIR", help="folder with Pulumi.yaml")] = None,
    policy_config: Annotated[
        Path | None,
        typer.Option(
            "--policy-config", metavar="FILE", help="enforcement levels, as for `pulumi preview --policy-pack-config`"
        ),
    ] = None,
) -> None:
    """Show exactly what `pulumi up` would create for a stack, offline, with cost, fabric and policy.

    Exit codes: 0 success, 2 invalid input, 3 a mandatory policy is violated (the plan is still printed).
    """
    from ..plan import load_stack, make_plan
    from ..plan.render import render_json, render_markdown, render_table

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
    from ..policy import PolicyConfigError, rule_levels

    if path is None:
        return {}
    try:
        data = load_yaml(path)
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


# the catalog commands, listed after `plan` in --help
app.command("catalog", cls=_Command)(browse.catalog_cmd)
app.command(cls=_Command)(browse.compare)
app.command(cls=_Command)(browse.recommend)


@app.command(cls=_Command)
def diff(
    plans: Annotated[
        list[Path] | None,
        typer.Argument(metavar="OLD.json NEW.json", help="two `plan --format json` files of one stack"),
    ] = None,
    stack: Annotated[
        str | None, typer.Option("--stack", "-s", metavar="NAME", help="the stack, planned at --base and now")
    ] = None,
    base: Annotated[str | None, typer.Option("--base", metavar="REV", help="git revision to compare against")] = None,
    all_stacks: Annotated[
        bool, typer.Option("--all-stacks", help="every stack the change since --base touches")
    ] = False,
    fmt_name: Annotated[
        str, typer.Option("--format", "-f", metavar="<table|markdown|json>", help="output format")
    ] = "table",
    project: Annotated[Path | None, typer.Option("--project", metavar="DIR", help="folder with Pulumi.yaml")] = None,
) -> None:
    """Compare two offline plans: each changed config key with its update policy, then data-loss warnings and the
    changed resources.

    Exit codes: 0 a diff, 2 invalid input, 4 a config change its update policy refuses (the diff is still printed).
    """
    from ..diff import PlanDiff, diff_plans, gitplan, read_plan, render_json, render_markdown, render_table

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
                # the base's plans in a process of their own meanwhile (a second core), each read in order
                base_plans = gitplan.BasePlans(base_project, names)
                try:
                    for name in names:
                        try:
                            new_plan, new_error = gitplan.plan_here(project_dir, name), None
                        except ConfigError as exc:  # the base's refusal, if any, is still the one reported first
                            new_plan, new_error = None, exc
                        old_plan = base_plans.get(name)
                        if new_error is not None:
                            raise new_error
                        if old_plan is None and new_plan is None:
                            raise ConfigError("--stack", f"no stack {name!r} at {base} nor in the working tree")
                        diffs.append(diff_plans(old_plan, new_plan))
                finally:
                    base_plans.close()
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if fmt is Format.json:
        sys.stdout.write(render_json(diffs, many=all_stacks) + "\n")
    elif fmt is Format.markdown:
        sys.stdout.write(render_markdown(diffs, base))
    else:
        render_table(diffs, Console(soft_wrap=False))
    if any(d.refused for d in diffs):
        raise typer.Exit(code=REFUSED_EXIT)


@app.command("update-policy", cls=_Command)
def update_policy_cmd(
    cloud: Annotated[str | None, typer.Option("--cloud", metavar="CLOUD", help="as it applies on one cloud")] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="output format")] = Format.table,
) -> None:
    """What changing each config key does to running nodes and jobs (data with sources: spec/updates.yaml)."""
    from ..spec.update_table import policy_rows, render_rows

    if cloud is not None and cloud not in catalog.CLOUDS:
        raise _fail(f"--cloud: got {cloud!r}; allowed: {', '.join(catalog.CLOUDS)}")
    rows = policy_rows(cloud)
    if fmt is not Format.table:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n" if fmt is Format.json else render_rows(rows))
        return
    table = Table("key", "when", "policy", "what running jobs and nodes see", header_style="bold")
    table.columns[0].no_wrap = True  # a key is read whole; the sentences fold
    for row in rows:
        style = {"refused": "red", "replace": "yellow"}.get(row["policy"], "")
        jobs = row["jobs"] + (f" Safe way: {row['how']}" if row["how"] else "")
        table.add_row(Text(row["key"]), Text(row["when"]), Text(row["policy"], style=style), Text(jobs))
    Console(highlight=False).print(table)


@app.command("schema", cls=_Command)
def schema_cmd() -> None:
    """Print the Pulumi package schema (JSON) that `pulumi package add` infers from the component.

    Inferred offline, with Pulumi's own schema inference (no Pulumi CLI): the `GpuCluster` resource, every
    input with its type and description, every output (docs/component.md).
    """
    from ..provider import schema

    sys.stdout.write(json.dumps(schema(), indent=2) + "\n")


image_app = typer.Typer(help="Node images: pin the release `image: auto` boots.", no_args_is_help=True)
app.add_typer(image_app, name="image")


@image_app.command("pin", cls=_Command)
def image_pin(
    stack: Annotated[str, typer.Option("--stack", "-s", metavar="NAME", help="edits stacks/Pulumi.NAME.yaml")],
    project: Annotated[Path | None, typer.Option("--project", metavar="DIR", help="folder with Pulumi.yaml")] = None,
) -> None:
    """Write the image release `image: auto` boots into the stack file (comments kept), so neither a newer image nor
    a newer gpu-cluster moves the stack's nodes: a new image is then a reviewed edit. Exit 2 when none is pinnable."""
    from ..plan import load_stack
    from ..plan.pin import pin_stack

    try:
        pinned = pin_stack(load_stack(_project_dir(project), stack))
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    sys.stdout.write(pinned.note + "\n")


def main() -> None:
    app()
