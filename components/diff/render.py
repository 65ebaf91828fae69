"""Rendering plan diffs: terminal table (rich), a sticky pull-request comment (markdown), JSON."""

from __future__ import annotations

import json
import re
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .engine import Change, Changed, PlanDiff
from .rules import default_rules
from .spec_changes import markdown_lines
from .userdata import FileDiff, describe, diff_bootstrap, is_bootstrap
from .values import from_to

MARKER = "<!-- gpu-cluster-plan-diff -->"
# GitHub rejects issue/PR comments over 65,536 characters; keep a margin for the truncation note.
COMMENT_LIMIT = 65_536
MAX_WARNINGS_PER_STACK = 40
ICONS = {"DATA LOSS": ":boom:", "DISRUPTION": ":warning:"}
_INDEXED = re.compile(r"^(.+)\[(\d+)\]$")  # a whole list element: `networkInterfaces[17]`
_NUMBERED = re.compile(r"`([^`]*?)(\d+)`")  # a resource name with a number: `llm-train-aws-node-3`
_LEVELS = ("DATA LOSS: ", "DISRUPTION: ")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def _is_bootstrap(ch: Change) -> bool:
    return all(v is None or isinstance(v, str) for v in (ch.old, ch.new)) and is_bootstrap(ch.path, ch.old, ch.new)


def bootstrap_changes(item: Changed) -> list[tuple[Change, list[FileDiff]]]:
    """The item's changed node bootstraps, each with its decoded per-file diff ([] when it does not decode)."""
    return [(ch, diff_bootstrap(ch.old, ch.new) or []) for ch in item.changes if _is_bootstrap(ch)]


def file_diff_lines(files: list[FileDiff]) -> list[str]:
    """A bootstrap's file diffs as unified diff text: a ---/+++ header per file, then its hunks."""
    out: list[str] = []
    for f in files:
        out += [f"--- {'/dev/null' if f.status == 'added' else f.name}"]
        out += [f"+++ {'/dev/null' if f.status == 'removed' else f.name}"]
        out += list(f.lines)
    return out


def _bootstrap_line(ch: Change) -> str:
    files = diff_bootstrap(ch.old, ch.new) or []
    count = f"{len(files)} file{'s' if len(files) != 1 else ''} changed" if files else "not decodable"
    return f"{ch.path}: {describe(ch.old)} -> {describe(ch.new)} ({count})"


def change_lines(item: Changed) -> list[str]:
    """One line per changed path; a list that grew or shrank by two or more elements is one line,
    `networkInterfaces: 33 -> 17 items`, instead of one `[i]: {...} -> null` line per element. A node bootstrap
    is never shown encoded: its line says what it is (`cloud-config, gzip+base64, ...`), its files' diff follows
    (`bootstrap_changes`)."""
    runs: dict[tuple[str, bool], list[tuple[int, int]]] = {}  # (list path, removed) -> (position, index)
    for position, ch in enumerate(item.changes):
        match = _INDEXED.match(ch.path)
        if match and (ch.old is None) != (ch.new is None):  # an element only one side has
            runs.setdefault((match.group(1), ch.new is None), []).append((position, int(match.group(2))))
    lines: dict[int, str] = {}
    folded: set[int] = set()
    for (path, removed), members in runs.items():
        indices = sorted(index for _, index in members)
        if len(indices) < 2 or indices != list(range(indices[0], indices[-1] + 1)):
            continue  # not a tail of the list: keep the elements' own lines
        shorter, longer = indices[0], indices[-1] + 1
        old_len, new_len = (longer, shorter) if removed else (shorter, longer)
        lines[members[0][0]] = f"{path}: {old_len} -> {new_len} items"
        folded.update(position for position, _ in members[1:])
    return [
        lines.get(position, _bootstrap_line(ch) if _is_bootstrap(ch) else f"{ch.path}: {from_to(ch.old, ch.new)}")
        for position, ch in enumerate(item.changes)
        if position not in folded
    ]


def _numbers(digits: list[str]) -> str:
    """["0", "1", "2", "5"] -> "0..2,5"."""
    if any(d != str(int(d)) for d in digits):  # zero-padded: list them as written
        return ",".join(digits)
    values = sorted({int(d) for d in digits})
    spans: list[str] = []
    start = prev = values[0]
    for value in [*values[1:], None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        spans.append(str(start) if start == prev else f"{start}..{prev}")
        if value is not None:
            start = prev = value
    return ",".join(spans)


def grouped_warnings(d: PlanDiff) -> list[str]:
    """The warnings with per-resource repeats folded: six `DATA LOSS: replaces ... node-N ...` lines
    that differ only in N become `DATA LOSS: 6 nodes: replaces ... node-{0..5} ...`. Order is kept
    (a group stands where its first line stood); the JSON form keeps every line."""
    types = {urn.rsplit("::", 1)[-1]: token for urn, token in d.types.items()}
    entries: list[str | tuple[str, str]] = []
    groups: dict[tuple[str, str], list[str]] = {}  # (warning with the name cut out, name stem) -> numbers
    for warning in d.warnings:
        match = next((m for m in _NUMBERED.finditer(warning) if m.group(1) + m.group(2) in types), None)
        if match is None:
            entries.append(warning)
            continue
        key = (warning[: match.start()] + "\0" + warning[match.end() :], match.group(1))
        if key not in groups:
            groups[key] = []
            entries.append(key)
        groups[key].append(match.group(2))
    rules = default_rules()
    out: list[str] = []
    for entry in entries:
        if isinstance(entry, str):
            out.append(entry)
            continue
        template, stem = entry
        digits = groups[entry]
        if len(digits) == 1:
            out.append(template.replace("\0", f"`{stem}{digits[0]}`"))
            continue
        holds = {rules.rule(types[stem + n]).holds for n in digits}
        what = f"{len(digits)} {'nodes' if holds == {'nodes'} else 'resources'}: "
        text = template.replace("\0", f"`{stem}{{{_numbers(digits)}}}`")
        level = next((lv for lv in _LEVELS if text.startswith(lv)), "")
        out.append(level + what + text[len(level) :])
    return out


def _json(d: PlanDiff) -> dict[str, Any]:
    """The stable object, with each node bootstrap decoded: its `old`/`new` say what it is (never base64) and an
    added `decoded` key holds the per-file unified diff."""
    doc = d.as_json()
    for item, entry in zip(d.changed, doc["changed"], strict=True):
        for ch, out in zip(item.changes, entry["changes"], strict=True):
            if _is_bootstrap(ch):
                files = diff_bootstrap(ch.old, ch.new) or []
                out["old"] = None if ch.old is None else describe(ch.old)
                out["new"] = None if ch.new is None else describe(ch.new)
                out["decoded"] = [f.as_json() for f in files]
    return doc


def render_json(diffs: list[PlanDiff], many: bool = False) -> str:
    """One diff: the stable object. `--all-stacks`: {"stacks": {name: object}}."""
    if not many and len(diffs) == 1:
        return json.dumps(_json(diffs[0]), indent=2, default=str)
    return json.dumps({"stacks": {d.stack: _json(d) for d in diffs}}, indent=2, default=str)


def render_table(diffs: list[PlanDiff], console: Console) -> None:
    for d in diffs:
        console.print(Text(f"gpu-cluster plan diff: {d.stack}", style="bold"))
        console.print(Text(d.summary["line"]))
        for change in d.spec_changes:  # per config key first: what running nodes and jobs see
            console.print(Text(change.line(), style="bold red" if change.refused else "cyan"))
        for w in grouped_warnings(d):
            style = "bold red" if w.startswith("DATA LOSS") else "yellow"
            console.print(Text(w, style=style))
        table = Table(show_header=True, header_style="bold")
        table.add_column("")
        table.add_column("resource")
        table.add_column("change")
        for urn in d.created:
            table.add_row("+", Text(urn.rsplit("::", 1)[-1]), Text(d.types.get(urn, "")))
        for urn in d.deleted:
            table.add_row("-", Text(urn.rsplit("::", 1)[-1]), Text(d.types.get(urn, "")))
        for item in d.changed:
            mark = {"replace": "+-", "may-replace": "+-?"}.get(item.verdict, "~")
            lines = change_lines(item)
            for ch, files in bootstrap_changes(item):
                lines += [f"{ch.path}, decoded:", *file_diff_lines(files)]
            table.add_row(mark, Text(item.name), Text("\n".join(lines)))
        if table.row_count:
            console.print(table)
        console.print(Text(f"{d.unchanged} unchanged", style="dim"))


def _stack_details(d: PlanDiff) -> list[str]:
    lines = [f"#### `{d.stack}`", "", "| | resource | type | change |", "|---|---|---|---|"]
    for urn in d.created:
        lines.append(f"| + | `{_md(urn.rsplit('::', 1)[-1])}` | `{d.types.get(urn, '')}` | created |")
    for urn in d.deleted:
        lines.append(f"| - | `{_md(urn.rsplit('::', 1)[-1])}` | `{d.types.get(urn, '')}` | deleted |")
    for item in d.changed:
        mark = {"replace": "+-", "may-replace": "+-?"}.get(item.verdict, "~")
        body = "<br>".join(_md(line) for line in change_lines(item))
        lines.append(f"| {mark} | `{_md(item.name)}` | `{item.type}` | {item.verdict}: {body} |")
    lines += ["", f"{d.unchanged} unchanged.", ""]
    return lines + _bootstrap_details(d)


def _fence(text: str) -> str:
    """A code fence longer than any backtick run in `text`, so a diff line cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _bootstrap_details(d: PlanDiff) -> list[str]:
    """The decoded node bootstraps that changed, as `diff` blocks; resources with the same change share one."""
    groups: dict[tuple[str, ...], list[str]] = {}  # the diff text -> "`name` `path`" of each holder
    heads: dict[tuple[str, ...], str] = {}
    for item in d.changed:
        for ch, files in bootstrap_changes(item):
            text = tuple(file_diff_lines(files))
            groups.setdefault(text, []).append(f"`{_md(item.name)}` `{_md(ch.path)}`")
            heads.setdefault(text, _md(_bootstrap_line(ch).split(": ", 1)[1]))
    if not groups:
        return []
    lines = [f"**Node bootstrap of `{d.stack}`**, decoded (what the nodes will run):", ""]
    for text, holders in groups.items():
        lines += [f"{', '.join(holders)}: {heads[text]}", ""]
        if text:
            fence = _fence("\n".join(text))
            lines += [fence + "diff", *text, fence, ""]
    return lines


def render_markdown(diffs: list[PlanDiff], base: str | None = None, limit: int = COMMENT_LIMIT) -> str:
    """A PR comment: summary table per stack, warnings first, the full list folded; under `limit`."""
    title = "### gpu-cluster offline plan diff" + (f" against `{_md(base)}`" if base else "")
    head = [MARKER, title, ""]
    if not diffs:
        return "\n".join([*head, "No stack is touched by this change.", ""])
    head += ["| stack | changes | GPUs | est. $/h | may replace |", "|---|---|---|---|---|"]
    for d in diffs:
        s = d.summary
        counts = f"+{s['created']} / ~{s['changed']} / -{s['deleted']}"
        gpus = s["line"].split("GPUs ", 1)[1].split(", est.")[0]
        cost = s["line"].split("est. $/h ", 1)[1]
        head.append(f"| `{d.stack}` | {counts} | {gpus} | {cost} | {s['mayReplace']} |")
    head.append("")
    for d in diffs:
        warnings = grouped_warnings(d)
        if not warnings and not d.spec_changes:
            continue
        head += [f"**`{d.stack}`**", ""]
        head += [*markdown_lines(d.spec_changes), ""] if d.spec_changes else []
        shown = warnings[:MAX_WARNINGS_PER_STACK]
        for w in shown:
            icon = (
                ":boom:"
                if w.startswith("DATA LOSS")
                else ":warning:"
                if w.startswith("DISRUPTION")
                else ":information_source:"
            )
            head.append(f"- {icon} {w}")
        if len(warnings) > len(shown):
            head.append(f"- ... and {len(warnings) - len(shown)} more warnings (see the full diff locally)")
        head.append("")
    tail = [
        "_Offline plan under Pulumi mocks: provider-computed values and drift are not visible; "
        "see docs/review.md. Reproduce with `gpu-cluster diff --all-stacks --base <base>`._",
        "",
    ]
    body: list[str] = []
    for d in diffs:
        body += _stack_details(d)
    total_changes = sum(len(d.created) + len(d.deleted) + len(d.changed) for d in diffs)
    opening = [f"<details><summary>Full list: {total_changes} resource changes</summary>", ""]
    closing = ["</details>", ""]
    fixed = len("\n".join(head + opening + closing + tail)) + 2
    budget = limit - fixed - 400  # room for the truncation note
    kept: list[str] = []
    used = 0
    for line in body:
        if used + len(line) + 1 > budget:
            left = len(body) - len(kept)
            kept += [
                "",
                f"**Truncated:** {left} more lines did not fit GitHub's {limit:,}-character comment limit. "
                "Run the command below locally for the full list.",
                "",
            ]
            break
        kept.append(line)
        used += len(line) + 1
    text = "\n".join(head + opening + kept + closing + tail)
    if len(text) > limit:  # warnings alone overflow: keep the marker, the summary and a note
        text = text[: limit - 200].rsplit("\n", 1)[0] + "\n\n**Truncated** to fit the comment limit.\n"
    return text
