"""Compliance profiles (profiles.yaml) and the enforcement level of each rule under a profile and a policy config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from .model import LEVELS, Level, Violation
from .rules import PROFILE_ONLY, RULES

PROFILES_FILE = Path(__file__).resolve().parent / "profiles.yaml"
PROFILES = ("cis", "mlps3")


@cache
def _profiles() -> dict[str, Any]:
    loaded: dict[str, Any] = load_yaml(PROFILES_FILE)
    return loaded


def profile_levels(profile: str) -> dict[str, Level]:
    """The levels a profile gives its rules (none: no override)."""
    if profile == "none":
        return {}
    return {name: entry["level"] for name, entry in _profiles()["profiles"][profile]["rules"].items()}


def profile_variants(profile: str) -> dict[str, Level]:
    """The rules to which a profile gives a level other than the rule's default, with that level."""
    defaults = {rule.name: rule.level for rule in RULES}
    return {name: level for name, level in profile_levels(profile).items() if level != defaults[name]}


def variant_levels() -> dict[str, set[Level]]:
    """Per rule, every level a profile gives it beyond its default (the pack registers a policy for each)."""
    found: dict[str, set[Level]] = {}
    for profile in PROFILES:
        for name, level in profile_variants(profile).items():
            found.setdefault(name, set()).add(level)
    return found


def policy_names() -> set[str]:
    """The pack's policies: one per rule (but the profile-only ones), and `<rule>-<level>` per level a profile gives a
    rule beyond its default."""
    variants = {f"{name}-{level}" for name, levels in variant_levels().items() for level in levels}
    return {rule.name for rule in RULES if rule.name not in PROFILE_ONLY} | variants


@dataclass(frozen=True)
class ProfileRow:
    """One rule of a profile on one stack: the control it serves and what the stack's resources gave."""

    rule: str
    level: Level
    control: str | None  # None: no control of the benchmark asks for it (the toolkit's baseline)
    findings: int

    @property
    def result(self) -> str:
        if self.level == "disabled":
            return "not checked (disabled by the policy config)"
        if not self.findings:
            return "pass"
        return "fail" if self.level == "mandatory" else f"advisory ({self.findings})"

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "level": self.level,
            "control": self.control,
            "result": self.result,
            "findings": self.findings,
        }


def benchmark(profile: str, cloud: str) -> str | None:
    entry = _profiles()["benchmarks"][profile]
    return entry.get(cloud) if isinstance(entry, Mapping) else entry


def profile_rows(
    profile: str, cloud: str, violations: list[Violation], config: Mapping[str, Any] | None = None
) -> list[ProfileRow]:
    """The profile's rules in its order, each with its control on this cloud, the level it ran at (a policy config
    may still change the profile's) and the violations found."""
    levels = rule_levels(config or {}, profile)
    rows = []
    for name, entry in _profiles()["profiles"][profile]["rules"].items():
        control = entry["control"] if "control" in entry else (entry.get("controls") or {}).get(cloud)
        found = sum(1 for v in violations if v.rule == name)
        rows.append(ProfileRow(name, levels[name], control, found))
    return rows


class PolicyConfigError(ValueError):
    """Bad policy config; the message names the key."""


def rule_levels(config: Mapping[str, Any], profile: str = "none") -> dict[str, Level]:
    """Enforcement level per rule, as the engine sets the pack's: the rule's default, then `all`, then the rule's
    own entry. A rule the stack's profile gives another level L is the pack's `<rule>-<L>` policy: L, then `all`,
    then that policy's entry. A rule only profiles use (PROFILE_ONLY) has no policy of its own in the pack: without
    a profile only its own entry turns it on here (`all` does not)."""
    names = {rule.name for rule in RULES} | policy_names()
    for key in config:
        if key != "all" and key not in names:
            raise PolicyConfigError(f"{key}: unknown policy; known: all, {', '.join(sorted(names))}")
    levels: dict[str, Level] = {}
    variants = profile_variants(profile)
    for rule in RULES:
        level: Any = variants.get(rule.name, rule.level)
        if rule.name in variants:
            keys: tuple[str, ...] = ("all", f"{rule.name}-{variants[rule.name]}")
        elif rule.name in PROFILE_ONLY:
            keys = (rule.name,)
        else:
            keys = ("all", rule.name)
        for key in keys:
            entry = config.get(key)
            if isinstance(entry, Mapping):
                entry = entry.get("enforcementLevel")
            if entry is not None:
                if entry not in LEVELS:
                    raise PolicyConfigError(f"{key}: enforcement level {entry!r}; allowed: {', '.join(LEVELS)}")
                level = entry
        levels[rule.name] = level
    return levels
