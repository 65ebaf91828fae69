"""Names derived from `cluster.name` and names Slurm keeps: the data in `names.yaml` and the checks the spec's
`_derived_names` and `_slurm_names` run. Pure: no Pulumi."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml

_DATA = Path(__file__).parent / "names.yaml"
_ENTRY_KEYS = {"what", "template", "when", "pattern", "maxLength", "rule", "slurmNode", "source", "code"}
_WHEN_KEYS = {"scheduler", "nodeGroup", "login"}


@dataclass(frozen=True)
class Derived:
    """One name a cloud builds from the cluster name, and the cloud's rule for it."""

    what: str
    template: str
    when: dict[str, Any]
    pattern: str
    max_length: int
    rule: str
    slurm_node: bool
    source: str

    def applies(self, *, scheduler: str, node_group: str, login: bool) -> bool:
        when = self.when
        return (
            scheduler in when.get("scheduler", (scheduler,))
            and node_group in when.get("nodeGroup", (node_group,))
            and (not when.get("login") or login)
        )

    def render(self, name: str, index: int) -> str:
        return self.template.format(name=name, index=index)

    def breaks(self, value: str) -> str | None:
        """Why `value` breaks the rule, or None."""
        if len(value) > self.max_length:
            return f"{len(value)} characters, more than {self.max_length}"
        if not re.fullmatch(self.pattern, value):
            return f"not {self.rule}"
        return None


@cache
def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = load_yaml(_DATA)
    return loaded


@cache
def derived(cloud: str) -> tuple[Derived, ...]:
    """The names `cloud` derives from the cluster name that a cluster name can break."""
    found: list[Derived] = []
    for entry in _data()["derived"].get(cloud, []):
        if set(entry) - _ENTRY_KEYS or set(entry.get("when") or {}) - _WHEN_KEYS:
            raise ValueError(f"names.yaml: {cloud}: malformed entry {entry.get('what')!r}")
        found.append(
            Derived(
                what=str(entry["what"]),
                template=str(entry["template"]),
                when=dict(entry.get("when") or {}),
                pattern=str(entry["pattern"]),
                max_length=int(entry["maxLength"]),
                rule=" ".join(str(entry["rule"]).split()),
                slurm_node=bool(entry.get("slurmNode", False)),
                source=" ".join(str(entry["source"]).split()),
            )
        )
    return tuple(found)


def name_problems(cloud: str, name: str, *, scheduler: str, node_group: str, login: bool, max_nodes: int) -> list[str]:
    """Why `name` would give `cloud` a name it refuses (one message per derived name), or nothing."""
    found: list[str] = []
    reserved = slurm_reserved("node") if scheduler == "slurm" else ()
    for entry in derived(cloud):
        if not entry.applies(scheduler=scheduler, node_group=node_group, login=login):
            continue
        for index in sorted({0, max(max_nodes - 1, 0)}):
            value = entry.render(name, index)
            why = entry.breaks(value)
            if why is None and entry.slurm_node and value.upper() in reserved:
                why = f"a name Slurm reserves ({', '.join(reserved)})"
            if why is not None:
                found.append(
                    f"{entry.what} would be {value!r}: {why} ({_short(entry.source)}); "
                    f"use a name of letters and digits with single hyphens between them, ending with a letter or digit"
                )
                break
    return found


def slurm_reserved(kind: str) -> tuple[str, ...]:
    """The names slurm.conf reads as its defaults record (kind partition) or refuses (kind node)."""
    slurm = _data()["slurm"]
    return tuple(str(n) for n in slurm["partitionReserved" if kind == "partition" else "nodeReserved"])


def reserved_partition(partition: str, reserved: Collection[str] | None = None) -> str | None:
    """The reserved word `partition` spells (compared without case, as Slurm does), or None."""
    words = slurm_reserved("partition") if reserved is None else reserved
    return next((w for w in words if partition.upper() == w.upper()), None)


def slurm_source() -> str:
    return " ".join(str(_data()["slurm"]["source"]).split())


def _short(source: str) -> str:
    """The first clause of a source (its file and field), short enough for one message."""
    head = source.split(": ", 1)[0]
    return head if len(head) <= 160 else head[:157] + "..."
