"""Documented constraints, as data, judged against translated API requests (Alibaba and Tencent alike).

A rule names an API action and a parameter path (`Tag.Key`, `SystemDisk.Category`, `DataDisks.DiskName`; a
list on the way applies the rest to every item) and what the SDK's documentation of that parameter says:
`length: [min, max]` (characters), `pattern` (the whole value), `enum`, `forbidPrefix`/`forbidContains`,
`maxItems` (a list), `maxBytes` (`raw`: after base64 decoding), `range: [min, max]` (a number), `ignoreCase` (for
`enum`); `when: {sibling: value}` applies the rule only where the value's siblings match, and `absentIf: {path:
value}` says the parameter must be left out of a request where `path` holds `value`, `presentIf: {path: value}` that
it must be sent there. Every rule carries `quote`,
text that must be in that parameter's documentation in the installed SDK (tests check it), so a rule cannot drift
from its source.

Values known only at deploy (`<id of NAME>`, `<resolved at deploy: ...>`, `[secret]`) are not judged; the
checker lists them so a report can say what was left out.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.placeholders import SECRET

DEPLOY_TIME = re.compile(r"<[^<>]+>")


@dataclass(frozen=True)
class Rule:
    api: str  # "ecs:RunInstances"
    path: str  # "Tag.Key"
    quote: str  # text of the parameter's SDK documentation
    length: tuple[int, int] | None = None
    pattern: str | None = None
    enum: tuple[str, ...] | None = None
    forbid_prefix: tuple[str, ...] = ()
    forbid_contains: tuple[str, ...] = ()
    max_items: int | None = None
    max_bytes: int | None = None
    raw: bool = False  # maxBytes counts the base64-decoded bytes
    doc_path: str | None = None  # where the quote is, when not at `path` (a list's own documentation)
    number_range: tuple[float, float] | None = None
    ignore_case: bool = False
    when: tuple[tuple[str, str], ...] = ()  # siblings of the value that must match
    absent_if: tuple[str, str] | None = None  # (path, value): then `path` of this rule must be absent
    present_if: tuple[str, str] | None = None  # (path, value): then `path` of this rule must be sent
    why: str = ""

    @staticmethod
    def of(row: Mapping[str, Any]) -> Rule:
        return Rule(
            api=str(row["api"]),
            path=str(row["path"]),
            quote=str(row["quote"]),
            length=tuple(row["length"]) if "length" in row else None,  # type: ignore[arg-type]
            pattern=row.get("pattern"),
            enum=tuple(str(v) for v in row["enum"]) if "enum" in row else None,
            forbid_prefix=tuple(row.get("forbidPrefix", ())),
            forbid_contains=tuple(row.get("forbidContains", ())),
            max_items=row.get("maxItems"),
            max_bytes=row.get("maxBytes"),
            raw=bool(row.get("raw", False)),
            doc_path=row.get("docPath"),
            number_range=tuple(row["range"]) if "range" in row else None,  # type: ignore[arg-type]
            ignore_case=bool(row.get("ignoreCase", False)),
            when=tuple((str(k), str(v)) for k, v in (row.get("when") or {}).items()),
            absent_if=tuple(next(iter(row["absentIf"].items()))) if "absentIf" in row else None,  # type: ignore[arg-type]
            present_if=tuple(next(iter(row["presentIf"].items()))) if "presentIf" in row else None,  # type: ignore[arg-type]
            why=str(row.get("why", "")),
        )


def load(path: Path) -> list[Rule]:
    return [Rule.of(row) for row in yaml.safe_load(path.read_text())["rules"]]


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)
    not_judged: list[str] = field(default_factory=list)  # deploy-time values a rule could not see


def known(value: Any) -> bool:
    return not (isinstance(value, str) and (value == SECRET or DEPLOY_TIME.search(value)))


def values_at(node: Any, path: str, where: str = "") -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """(where, value, parent) for every value at a dotted path; lists on the way fan out (1-based, as the APIs
    count); `parent` is the object holding the value (its siblings)."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from values_at(item, path, f"{where}.{i + 1}")
        return
    head, _, rest = path.partition(".")
    if not isinstance(node, Mapping) or head not in node:
        return
    here = f"{where}.{head}" if where else head
    if rest:
        yield from values_at(node[head], rest, here)
    else:
        yield here, node[head], node


def judge(rule: Rule, request: Mapping[str, Any], verdict: Verdict, label: str) -> None:
    if rule.absent_if is not None:
        path, expected = rule.absent_if
        if any(str(v) == expected for _, v, _ in values_at(request, path)):
            verdict.problems.extend(
                f"{label}: {where} must be left out where {path} is {expected}"
                for where, value, _ in values_at(request, rule.path)
                if value not in (None, [], "")
            )
        return
    if rule.present_if is not None:
        path, expected = rule.present_if
        if any(str(v) == expected for _, v, _ in values_at(request, path)) and all(
            value in (None, [], "") for _, value, _ in values_at(request, rule.path)
        ):
            verdict.problems.append(f"{label}: {rule.path} must be sent where {path} is {expected}")
        return
    for where, value, parent in values_at(request, rule.path):
        if value is None or any(str(parent.get(k)) != v for k, v in rule.when):
            continue
        if rule.max_items is not None:
            count = len(value) if isinstance(value, list | dict) else 1
            if count > rule.max_items:
                verdict.problems.append(f"{label}: {where} has {count} items, at most {rule.max_items}")
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            at = f"{where}.{i + 1}" if isinstance(value, list) else where
            if not known(item):
                verdict.not_judged.append(f"{label}: {at} = {item!r}")
                continue
            text = str(item).lower() if isinstance(item, bool) else str(item)
            for problem in _problems(rule, text):
                verdict.problems.append(f"{label}: {at} = {_short(text)}: {problem}")


def _problems(rule: Rule, text: str) -> Iterator[str]:
    if rule.length is not None and not rule.length[0] <= len(text) <= rule.length[1]:
        yield f"{len(text)} characters, allowed {rule.length[0]} to {rule.length[1]}"
    if rule.pattern is not None and not re.fullmatch(rule.pattern, text):
        yield f"does not match {rule.pattern}"
    if rule.enum is not None:
        allowed = {v.lower() for v in rule.enum} if rule.ignore_case else set(rule.enum)
        if (text.lower() if rule.ignore_case else text) not in allowed:
            yield f"not one of {', '.join(rule.enum)}"
    if rule.number_range is not None:
        try:
            number = float(text)
        except ValueError:
            yield "not a number"
        else:
            low, high = rule.number_range
            if not low <= number <= high:
                yield f"outside {low:g} to {high:g}"
    for prefix in rule.forbid_prefix:
        if text.lower().startswith(prefix):
            yield f"starts with {prefix!r}"
    for part in rule.forbid_contains:
        if part in text:
            yield f"contains {part!r}"
    if rule.max_bytes is not None:
        size = len(base64.b64decode(text)) if rule.raw else len(text.encode())
        if size > rule.max_bytes:
            yield f"{size} bytes{' before base64' if rule.raw else ''}, at most {rule.max_bytes}"


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def folded(text: str) -> str:
    """Documentation text with whitespace folded and markup quotes dropped, for quote matching."""
    text = " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"[`*]", "", text)).split())
    return re.sub(r" ([.,:;)])", r"\1", text)
