"""Provider replacement rules, loaded from `replacement/<cloud>.yaml` (data with sources, not code).

A rule says, for one Pulumi type token, which changed input paths replace the resource, restart it,
roll out only on refresh, or update it in place; and what the resource holds (nodes, data, network).
A size (`sized:`) is judged by its direction: growing a filesystem is in place where shrinking it replaces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ..datafile import load_yaml
from ..text import one_line

Verdict = Literal["update", "refresh", "restart", "may-replace", "replace"]
# Worst first wins when a resource has several changed paths.
SEVERITY: dict[str, int] = {"update": 0, "refresh": 1, "restart": 2, "may-replace": 3, "replace": 4}
HOLDS = ("nodes", "data", "network", "placement", "none")
RULES_DIR = Path(__file__).parent / "replacement"
_INDEX = re.compile(r"\[\d+\]")
_NUMBER = re.compile(r"\d+(\.\d+)*")
UNKNOWN: Any = object()  # a side of a change the caller does not know (a leaf inside a block added whole)


@dataclass(frozen=True)
class Sized:
    """A size or version whose change is judged by its direction (`sized:` in the rules files).

    `bands`: ranges the size can move within but never leave ("The capacity range can't be changed once
    selected"); a move across them is `across`. `replaceIf`: other inputs under which any change replaces
    (FSx SCRATCH_1 cannot grow)."""

    grow: Verdict = "update"
    shrink: Verdict = "replace"
    bands: tuple[tuple[float, float], ...] = ()
    across: Verdict = "may-replace"
    replace_if: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class TypeRule:
    token: str
    holds: str
    source: str
    replace: tuple[str, ...] = ()
    may_replace: tuple[str, ...] = ()
    restart: tuple[str, ...] = ()
    refresh: tuple[str, ...] = ()
    update: tuple[str, ...] = ()
    sized: tuple[tuple[str, Sized], ...] = ()
    complete: bool = False
    versioned: bool = False
    # a versioned resource's inputs that change without a new version (a launch template's own tags)
    unversioned: tuple[str, ...] = ()
    known: bool = True  # False: no cloud file lists this type (holds guessed from its name)
    created: str = ""  # what creating it next to resources already deployed does to the running nodes
    # inputs whose presence means the group rolls a `refresh` change out itself: drained, replaced in batches
    # (`*`: the group always does)
    rolls: tuple[str, ...] = ()


def new_version(rule: TypeRule, paths: Iterable[str]) -> bool:
    """Whether changes at these input paths give a versioned resource a new version (its referrers see it)."""
    return rule.versioned and any(not _matches(rule.unversioned, normalize(p)) for p in paths)


def _matches(patterns: tuple[str, ...], path: str) -> bool:
    return any(p == "*" or path == p or path.startswith(p + ".") for p in patterns)


def normalize(path: str) -> str:
    """`networkInterfaces[3].interfaceType` -> `networkInterfaces.interfaceType` (rules ignore indices)."""
    return _INDEX.sub("", path)


def _magnitude(value: Any) -> tuple[float, ...] | None:
    """A size or a dotted version as comparable numbers (`18000`, `"18000"`, `"2.15"`); None when it is not one
    (a placeholder, a block, a missing side)."""
    if isinstance(value, bool) or value is UNKNOWN:
        return None
    if isinstance(value, int | float):
        return (float(value),)
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        return tuple(float(part) for part in value.strip().split("."))
    return None


def _band(bands: tuple[tuple[float, float], ...], size: float) -> int:
    return next((i for i, (low, high) in enumerate(bands) if low <= size <= high), -1)


def _sized(size: Sized, old: Any, new: Any, inputs: dict[str, Any] | None) -> Verdict:
    if inputs is not None and any(str(inputs.get(key)) in values for key, values in size.replace_if):
        return "replace"
    before, after = _magnitude(old), _magnitude(new)
    if before is None or after is None or (size.replace_if and inputs is None):
        # direction or condition unknown: the worst the rule allows
        return max((size.grow, size.shrink, size.across if size.bands else "update"), key=SEVERITY.__getitem__)
    if size.bands and _band(size.bands, before[0]) != _band(size.bands, after[0]):
        return size.across
    if after == before:
        return "update"
    return size.grow if after > before else size.shrink


def classify(
    rule: TypeRule, path: str, old: Any = UNKNOWN, new: Any = UNKNOWN, inputs: dict[str, Any] | None = None
) -> Verdict:
    """What changing `path` from `old` to `new` does to a resource under `rule` (`inputs`: its new inputs, for a
    `sized` rule's conditions). Without the values a `sized` path gets the worst of its directions."""
    p = normalize(path)
    if _matches(rule.replace, p):
        return "replace"
    size = next((s for pattern, s in rule.sized if pattern == p), None)
    if size is not None:
        return _sized(size, old, new, inputs)
    if _matches(rule.may_replace, p):
        return "may-replace"
    if _matches(rule.restart, p):
        return "restart"
    if _matches(rule.refresh, p):
        return "refresh"
    if _matches(rule.update, p) or rule.versioned or rule.complete:
        return "update"
    return "may-replace"


@dataclass(frozen=True)
class Rules:
    types: dict[str, TypeRule]
    defaults: dict[str, tuple[str, ...]]  # provider prefix -> in-place paths for every type
    holds_by_ending: dict[str, tuple[str, ...]]

    def rule(self, token: str) -> TypeRule:
        found = self.types.get(token)
        if found is not None:
            return found
        name = token.rsplit(":", 1)[-1].lower()
        holds = next(
            (h for h, endings in self.holds_by_ending.items() if any(name.endswith(e.lower()) for e in endings)),
            "none",
        )
        update = next((paths for prefix, paths in self.defaults.items() if token.startswith(prefix)), ())
        return TypeRule(token, holds, "no rule for this type: may replace", update=update, known=False)


def _tuple(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in (value or []))


def _verdict(where: str, value: Any, default: Verdict) -> Verdict:
    if value is None:
        return default
    if value not in SEVERITY:
        raise ValueError(f"{where}: verdict {value!r}; allowed: {', '.join(SEVERITY)}")
    found: Verdict = value
    return found


def _sizes(where: str, raw: Any) -> tuple[tuple[str, Sized], ...]:
    out: list[tuple[str, Sized]] = []
    for path, spec in (raw or {}).items():
        at = f"{where}: sized {path}"
        spec = spec or {}
        unknown = set(spec) - {"grow", "shrink", "bands", "across", "replaceIf"}
        if unknown:
            raise ValueError(f"{at}: unknown keys {sorted(unknown)}")
        bands = tuple((float(low), float(high)) for low, high in spec.get("bands") or ())
        replace_if = tuple((str(k), _tuple(v)) for k, v in (spec.get("replaceIf") or {}).items())
        size = Sized(
            grow=_verdict(at, spec.get("grow"), "update"),
            shrink=_verdict(at, spec.get("shrink"), "replace"),
            bands=bands,
            across=_verdict(at, spec.get("across"), "may-replace"),
            replace_if=replace_if,
        )
        out.append((str(path), size))
    return tuple(out)


def load_rules(folder: Path = RULES_DIR) -> Rules:
    types: dict[str, TypeRule] = {}
    defaults: dict[str, tuple[str, ...]] = {}
    holds_by_ending: dict[str, tuple[str, ...]] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = load_yaml(path) or {}
        for holds, endings in (data.get("holdsByTypeNameEnding") or {}).items():
            holds_by_ending[str(holds)] = _tuple(endings)
        prefix = str(data.get("prefix", ""))
        common = _tuple((data.get("defaults") or {}).get("update"))
        if prefix:
            defaults[prefix] = common
        for token, raw in (data.get("types") or {}).items():
            holds = str(raw.get("holds", "none"))
            if holds not in HOLDS:
                raise ValueError(f"{path.name}: {token}: holds {holds!r}; allowed: {', '.join(HOLDS)}")
            types[str(token)] = TypeRule(
                token=str(token),
                holds=holds,
                source=one_line(raw.get("source", "")),
                replace=_tuple(raw.get("replace")),
                may_replace=_tuple(raw.get("mayReplace")),
                restart=_tuple(raw.get("restart")),
                refresh=_tuple(raw.get("refresh")),
                update=_tuple(raw.get("update")) + common,
                sized=_sizes(f"{path.name}: {token}", raw.get("sized")),
                complete=bool(raw.get("complete", False)),
                versioned=bool(raw.get("versioned", False)),
                unversioned=_tuple(raw.get("unversioned")),
                created=one_line(raw.get("created", "")),
                rolls=_tuple(raw.get("rolls")),
            )
    return Rules(types, defaults, holds_by_ending)


@cache
def default_rules() -> Rules:
    return load_rules()
