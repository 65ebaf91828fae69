"""Rendering a plan as a terminal table (rich), markdown (pull-request comments) or JSON."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.tree import Tree

from . import Plan

HIDDEN_INPUTS = {"tags", "tagsAll", "userData", "tagSpecifications", "description", "__defaults"}
MAX_INLINE = 3


def _short(value: Any) -> str:
    if isinstance(value, list):
        return f"[{_count(len(value), 'item')}]"
    if isinstance(value, dict):
        return "{...}"
    text = str(value)
    return text if len(text) <= 48 else text[:45] + "..."


def key_inputs(inputs: dict[str, Any]) -> str:
    shown = [(k, v) for k, v in inputs.items() if k not in HIDDEN_INPUTS and v not in (None, "", [], {})]
    return ", ".join(f"{k}={_short(v)}" for k, v in shown[:MAX_INLINE]) + (" ..." if len(shown) > MAX_INLINE else "")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _gbps(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def summary_rows(plan: Plan) -> list[tuple[str, str]]:
    s = plan.summary()
    cost = "unknown (no public price)" if s["hourlyUsd"] is None else f"${s['hourlyUsd']:,.2f}/h"
    if s["spot"] and s["hourlyUsd"] is not None:
        cost += " (on-demand upper bound; spot varies)"
    wired, rated = s["fabricGbpsPerNode"], s["fabricGbpsRated"]
    ratio = f" ({wired / rated:.0%})" if rated else ""
    return [
        ("stack", f"{plan.stack.stack} ({plan.spec.cloud}, {plan.spec.region})"),
        ("instance type", f"{s['instanceType']}: {s['resolution']}"),
        (
            "GPUs",
            f"{_count(s['nodes'], 'node')} x {s['gpusPerNode']} x {s['gpu']} = {s['totalGpus']}"
            f" (max {_count(s['maxNodes'], 'node')})",
        ),
        ("node group", f"{s['nodeGroup']}, placement {s['placement']}"),
        ("fabric", f"{s['fabric']}: {_gbps(wired)} of {_gbps(rated)} Gb/s per node wired{ratio}"),
        ("scratch", s["scratch"]),
        ("image", str(s["image"]) + (f" + driver {s['gpuDriver']}" if s.get("gpuDriver") else "")),
        ("est. cost", cost),
        ("resources", str(s["resourceCount"])),
    ]


def _tree(plan: Plan) -> Tree:
    children: dict[str | None, list[Any]] = defaultdict(list)
    known = {res.urn for res in plan.resources}
    for res in plan.resources:
        children[res.parent if res.parent in known else None].append(res)
    root = Tree(f"[bold]{plan.stack.project}/{plan.stack.stack}[/bold]")

    def add(node: Tree, parent: str | None) -> None:
        for res in children.get(parent, []):
            detail = key_inputs(res.inputs)
            label = f"{res.type}  [bold]{res.name}[/bold]" + (f"  [dim]{detail}[/dim]" if detail else "")
            add(node.add(label), res.urn)

    add(root, None)
    return root


def render_table(plan: Plan, console: Console) -> None:
    table = Table(title="gpu-cluster offline plan", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in summary_rows(plan):
        table.add_row(key, value)
    parts: list[Any] = [table]
    for warning in plan.warnings():
        parts.append(f"[yellow]warning:[/yellow] {warning}")
    for violation in plan.violations():
        color = "red" if violation.level == "mandatory" else "yellow"
        parts.append(f"[{color}]policy {violation.rule} ({violation.level}):[/{color}] {violation.message}")
    parts.append(_tree(plan))
    console.print(Group(*parts))


def render_markdown(plan: Plan) -> str:
    lines = [f"### gpu-cluster plan: `{plan.stack.stack}`", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v.replace('|', '/')} |" for k, v in summary_rows(plan)]
    warnings = plan.warnings()
    if warnings:
        lines += ["", "**Warnings**", ""] + [f"- :warning: {w}" for w in warnings]
    violations = plan.violations()
    if violations:
        lines += ["", "**Policy violations**", ""] + [f"- `{v.rule}` ({v.level}): {v.message}" for v in violations]
    lines += [
        "",
        f"<details><summary>{len(plan.resources)} resources</summary>",
        "",
        "| type | name | key inputs |",
        "|---|---|---|",
    ]
    lines += [f"| `{r.type}` | `{r.name}` | {key_inputs(r.inputs).replace('|', '/')} |" for r in plan.resources]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def render_json(plan: Plan) -> str:
    return json.dumps(plan.as_json(), indent=2, sort_keys=False, default=str)
