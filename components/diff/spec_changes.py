"""The diff per spec key: two plans' `config` in, the changed keys with their update policy out (issue 28).

Pure: the plans carry the config as written (`config`, components/plan); the policies are data
(components/spec/updates.yaml). A `when:` override is chosen by the new plan's mode (its cloud, node group,
scheduler and shared filesystem kind), the old plan's where the stack is removed. A plan written before plans
carried their config gives no key changes (the resource detail still says everything).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..spec.updates import MODE_KEYS, block_keys, update_policies
from .values import from_to

REFUSED = "REFUSED"


@dataclass(frozen=True)
class SpecChange:
    key: str  # dotted camelCase, as the stack file writes it (`cluster.storage.shared.sizeGb`)
    old: Any
    new: Any
    policy: str | None  # in-place, rolling, replace, refused; None: no entry in the table
    jobs: str
    source: str
    how: str | None = None

    @property
    def refused(self) -> bool:
        return self.policy == "refused"

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "old": self.old,
            "new": self.new,
            "policy": self.policy,
            "jobs": self.jobs,
            "source": self.source,
            "how": self.how,
        }

    def line(self, limit: int = 60) -> str:
        """`cluster.nodes: 2 -> 3 (in-place): Running nodes ...`; a refused change leads with REFUSED and the safe
        way."""
        values = from_to(self.old, self.new, limit)
        if self.refused:
            return f"{REFUSED}: {self.key}: {values}: {self.jobs} Safe way: {self.how}"
        return f"{self.key}: {values} ({self.policy or 'no update policy'}): {self.jobs}"


def mode_of(plan: dict[str, Any] | None) -> dict[str, str | None]:
    """What a `when:` matches, read from a plan: cloud, nodeGroup, scheduler, sharedKind."""
    doc = plan or {}
    summary = doc.get("summary") or {}
    shared = summary.get("sharedStorage") or {}
    found = {
        "cloud": doc.get("cloud"),
        "nodeGroup": summary.get("nodeGroup"),
        "scheduler": summary.get("scheduler"),
        "sharedKind": shared.get("kind"),
    }
    return {k: None if found[k] is None else str(found[k]) for k in MODE_KEYS}


def changed_keys(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(key, old, new) for every key whose value differs; a block present on both sides is compared by its keys,
    a block added or removed whole is one change of the block's key."""
    if isinstance(old, dict) and isinstance(new, dict) and (not path or path in block_keys()):
        out: list[tuple[str, Any, Any]] = []
        for key in [*old, *(k for k in new if k not in old)]:
            out += changed_keys(old.get(key), new.get(key), f"{path}.{key}" if path else str(key))
        return out
    if _named(old) and _named(new):
        return _named_changes(old, new, path)
    same = type(old) is type(new) and old == new  # True == 1 in Python; a bool that becomes an int is a change
    return [] if same else [(path, old, new)]


def _named(value: Any) -> bool:
    """A list of named blocks (slurm.partitions): compared item by item, by name."""
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) and "name" in i for i in value)


def _named_changes(old: list[dict[str, Any]], new: list[dict[str, Any]], path: str) -> list[tuple[str, Any, Any]]:
    """Per item kept: each changed field as `<path>.<field>` ({name: value} on each side); an item added is a change of
    the list's own key, an item removed a change of `<path>.name` (what was there goes)."""
    before, after = {i["name"]: i for i in old}, {i["name"]: i for i in new}
    out: list[tuple[str, Any, Any]] = []
    for name, item in before.items():
        if name not in after:
            out.append((f"{path}.name", name, None))
            continue
        for field in [*item, *(k for k in after[name] if k not in item)]:
            was, now = item.get(field), after[name].get(field)
            if type(was) is not type(now) or was != now:
                out.append((f"{path}.{field}", {name: was}, {name: now}))
    out += [(path, None, item) for name, item in after.items() if name not in before]
    if [i["name"] for i in old if i["name"] in after] != [i["name"] for i in new if i["name"] in before]:
        out.append((path, [i["name"] for i in old], [i["name"] for i in new]))  # reordered: the default may move
    return out


def spec_changes(old_plan: dict[str, Any] | None, new_plan: dict[str, Any] | None) -> list[SpecChange]:
    """The changed config keys of two plans of one stack, each with its update policy."""
    old_config, new_config = (old_plan or {}).get("config"), (new_plan or {}).get("config")
    if not isinstance(old_config, dict) or not isinstance(new_config, dict):
        return []  # a new or removed stack, or a plan without its config: the resource detail says it all
    mode = mode_of(new_plan)
    table = update_policies()
    out: list[SpecChange] = []
    for key, old, new in changed_keys(old_config, new_config):
        owner = next((k for k in _ancestors(key) if k in table), None)
        if owner is None:
            out.append(SpecChange(key, old, new, None, "No update policy is known for this key.", ""))
            continue
        effect = table[owner].effect(mode)
        out.append(SpecChange(key, old, new, effect.policy, effect.jobs, effect.source, effect.how))
    return out


def _ancestors(key: str) -> list[str]:
    """`cluster.tags.team` -> itself, `cluster.tags`, `cluster`: the nearest key the table has answers."""
    parts = key.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]


def markdown_lines(changes: list[SpecChange]) -> list[str]:
    """One bullet per changed key, for the PR comment."""
    icons = {"refused": ":no_entry:", "replace": ":recycle:", "rolling": ":arrows_counterclockwise:"}
    return [
        f"- {icons.get(c.policy or '', ':white_check_mark:')} {c.line().replace('|', chr(92) + '|')}" for c in changes
    ]
