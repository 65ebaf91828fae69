"""Provider replacement rules, loaded from `replacement/<cloud>.yaml` (data with sources, not code).

A rule says, for one Pulumi type token, which changed input paths replace the resource, restart it,
roll out only on refresh, or update it in place; and what the resource holds (nodes, data, network).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from ..text import one_line

Verdict = Literal["update", "refresh", "restart", "may-replace", "replace"]
# Worst first wins when a resource has several changed paths.
SEVERITY: dict[str, int] = {"update": 0, "refresh": 1, "restart": 2, "may-replace": 3, "replace": 4}
HOLDS = ("nodes", "data", "network", "placement", "none")
RULES_DIR = Path(__file__).parent / "replacement"
_INDEX = re.compile(r"\[\d+\]")


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
    complete: bool = False
    versioned: bool = False
    known: bool = True  # False: no cloud file lists this type (holds guessed from its name)
    created: str = ""  # what creating it next to resources already deployed does to the running nodes


def _matches(patterns: tuple[str, ...], path: str) -> bool:
    return any(p == "*" or path == p or path.startswith(p + ".") for p in patterns)


def normalize(path: str) -> str:
    """`networkInterfaces[3].interfaceType` -> `networkInterfaces.interfaceType` (rules ignore indices)."""
    return _INDEX.sub("", path)


def classify(rule: TypeRule, path: str) -> Verdict:
    """What changing `path` does to a resource under `rule`."""
    p = normalize(path)
    if _matches(rule.replace, p):
        return "replace"
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


def load_rules(folder: Path = RULES_DIR) -> Rules:
    types: dict[str, TypeRule] = {}
    defaults: dict[str, tuple[str, ...]] = {}
    holds_by_ending: dict[str, tuple[str, ...]] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
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
                complete=bool(raw.get("complete", False)),
                versioned=bool(raw.get("versioned", False)),
                created=one_line(raw.get("created", "")),
            )
    return Rules(types, defaults, holds_by_ending)


@cache
def default_rules() -> Rules:
    return load_rules()
