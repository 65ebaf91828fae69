"""The diff engine: two offline plans (the stable plan JSON) in, created / deleted / changed out.

Pure: no Pulumi, no git, no I/O. Linear in the size of the two plans: resources are matched by URN
through dicts, each input tree is walked once, and replacement is propagated along references
(`<id of NAME>`, `<autoname:NAME>` placeholders) through an index built in one pass.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .. import placeholders
from ..placeholders import SECRET as SECRET_PLACEHOLDER
from .rules import SEVERITY, Rules, Verdict, classify, default_rules, new_version
from .spec_changes import SpecChange, spec_changes

# Keys whose values are secret whatever they hold (the plan masks `secure:` config; this also covers
# values a program passes in clear under a secret-looking key).
SECRET_KEY = re.compile(
    r"(?i)(password|passwd|passphrase|secret|token|private_?key|api_?key|credential|access_?key|connection_?string)"
)
_MISSING: Any = object()
REPLACING: frozenset[str] = frozenset({"replace", "may-replace"})
# Plan summary fields whose change recreates every node (now, or at the next instance refresh).
NODE_FIELDS = {
    "instanceType": "instance type",
    "image": "image",
    "placement": "placement",
    "fabric": "fabric",
    "nodeGroup": "node group",
    "spot": "spot",
}


@dataclass(frozen=True)
class Change:
    path: str
    old: Any
    new: Any

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new}


@dataclass
class Changed:
    urn: str
    type: str
    name: str
    changes: list[Change]
    verdict: Verdict = "update"
    reasons: list[str] = field(default_factory=list)  # "path: verdict" for the worst paths


@dataclass
class PlanDiff:
    stack: str
    created: list[str]
    deleted: list[str]
    changed: list[Changed]
    unchanged: int
    may_replace: list[str]
    warnings: list[str]
    summary: dict[str, Any]
    types: dict[str, str] = field(default_factory=dict, repr=False)  # urn -> type token, for renderers
    steps: int = 0  # work done (nodes visited, lookups): the linear-time check counts these
    spec_changes: list[SpecChange] = field(default_factory=list)  # per config key, with its update policy

    @property
    def refused(self) -> list[SpecChange]:
        """The changed keys whose update policy refuses the change (`gpu-cluster diff` exits 4)."""
        return [c for c in self.spec_changes if c.refused]

    def as_json(self) -> dict[str, Any]:
        """The stable JSON form (docs/review.md): keys are only ever added."""
        return {
            "created": self.created,
            "deleted": self.deleted,
            "changed": [{"urn": c.urn, "changes": [ch.as_json() for ch in c.changes]} for c in self.changed],
            "mayReplace": self.may_replace,
            "unchanged": self.unchanged,
            "warnings": self.warnings,
            "summary": self.summary,
            "specChanges": [c.as_json() for c in self.spec_changes],
        }


class _Counter:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


def _mask(value: Any, secret: bool) -> Any:
    if value is _MISSING:
        return None
    if secret or value == SECRET_PLACEHOLDER:
        return SECRET_PLACEHOLDER
    return _mask_tree(value)


def _mask_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: SECRET_PLACEHOLDER if SECRET_KEY.search(str(k)) else _mask_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_tree(v) for v in value]
    return value


def _same(a: Any, b: Any) -> bool:
    # True == 1 in Python; a bool that becomes an int is a change for the engine.
    return type(a) is type(b) and a == b


def diff_inputs(old: Any, new: Any, counter: _Counter | None = None, path: str = "") -> list[Change]:
    """Every leaf that differs, as (path, old, new); secrets masked. `a.b[2].c` paths."""
    out: list[Change] = []
    _walk(old, new, path, False, out, counter or _Counter())
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(old: Any, new: Any, path: str, secret: bool, out: list[Change], counter: _Counter) -> None:
    counter.n += 1
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            _walk(
                old.get(key, _MISSING),
                new.get(key, _MISSING),
                _join(path, str(key)),
                secret or bool(SECRET_KEY.search(str(key))),
                out,
                counter,
            )
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            _walk(
                old[i] if i < len(old) else _MISSING,
                new[i] if i < len(new) else _MISSING,
                f"{path}[{i}]",
                secret,
                out,
                counter,
            )
    elif not _same(old, new):
        out.append(Change(path, _mask(old, secret), _mask(new, secret)))


def _ignored(path: str, ignore_changes: Any) -> bool:
    """A change Pulumi does not make: the resource's `ignoreChanges` covers its path (the old state value is kept,
    so no update and no replacement follows; `a` covers `a.b` and `a[0]`, `a[*].b` covers `a[3].b`)."""
    return any(_ignore_pattern(p).match(path) for p in ignore_changes)


@cache
def _ignore_pattern(path: str) -> re.Pattern[str]:
    return re.compile(re.escape(path).replace(r"\[\*\]", r"\[\d+\]") + r"(?:$|[.\[])")


def _leaf_paths(value: Any, path: str) -> list[str]:
    """The paths inside a mapping or list that a change replaces whole (`block.key`, list indices kept)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in [_join(path, str(k)), *_leaf_paths(v, _join(path, str(k)))]]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, f"{path}[{i}]")]
    return []


def _references(
    inputs: Any, counter: _Counter, path: str = "", parent: dict[str, Any] | None = None
) -> list[tuple[str, str, dict[str, Any] | None, str]]:
    """(referenced NAME, input path, the dict holding it, the value) for every placeholder reference."""
    found: list[tuple[str, str, dict[str, Any] | None, str]] = []
    stack: list[tuple[Any, str, dict[str, Any] | None]] = [(inputs, path, parent)]
    while stack:
        value, where, holder = stack.pop()
        counter.n += 1
        if isinstance(value, dict):
            stack.extend((v, _join(where, str(k)), value) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", holder) for i, v in enumerate(value))
        elif isinstance(value, str) and "<" in value:
            found.extend((name, where, holder, value) for name in placeholders.referenced(value))
    return found


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"
    return "?" if value is None else str(value)


def _from_to(old: Any, new: Any) -> str:
    return _fmt(new) if _same(old, new) else f"{_fmt(old)} -> {_fmt(new)}"


def _worse(a: Verdict, b: Verdict) -> Verdict:
    return a if SEVERITY[a] >= SEVERITY[b] else b


def _scratch_fate(scratch: str) -> str:
    """What happens to a node's scratch when the node goes, from the plan summary's description."""
    if "retained on delete" in scratch:
        return "its scratch disk is kept (retainScratch): detached, still billed, no longer managed"
    if "cloud disk" in scratch:
        return "its scratch disk is deleted with it"
    if scratch in ("", "none"):
        return "no scratch to lose"
    return "local scratch is lost"


def _what(res: dict[str, Any]) -> str:
    return f"{res['type']} `{res['name']}`"


RELEASE = "kubernetes:helm.sh/v3:Release"  # components/incluster.py: one resource per Helm release


def _release(res: dict[str, Any]) -> str:
    inputs = res.get("inputs") or {}
    return f"Helm release `{inputs.get('name') or res['name']}` ({inputs.get('chart')} {inputs.get('version')})"


def _control_planes(*summaries: dict[str, Any]) -> dict[str, str]:
    """Control-plane resource name -> its service (EKS, GKE, AKS, ACK), from the plans' `kubernetes` summary."""
    out: dict[str, str] = {}
    for summary in summaries:
        kube = summary.get("kubernetes") or {}
        if kube.get("controlPlane"):
            out[str(kube["controlPlane"])] = str(kube.get("service") or "Kubernetes")
    return out


def _plane_loss(service: str) -> str:
    return (
        f"the {service} control plane: every Kubernetes object in it is lost (etcd: Secrets, workloads, "
        "the operators' state); its node pools and Helm releases go with it"
    )


def diff_plans(old: dict[str, Any] | None, new: dict[str, Any] | None, rules: Rules | None = None) -> PlanDiff:
    """Compare two plan JSON documents of one stack. `None` = the stack does not exist on that side."""
    rules = rules or default_rules()
    counter = _Counter()
    old_doc, new_doc = old or {}, new or {}
    old_res = {r["urn"]: r for r in old_doc.get("resources", [])}
    new_res = {r["urn"]: r for r in new_doc.get("resources", [])}
    created = [u for u in new_res if u not in old_res]
    deleted = [u for u in old_res if u not in new_res]
    counter.n += len(old_res) + len(new_res)

    changed: dict[str, Changed] = {}
    for urn, res in new_res.items():
        before = old_res.get(urn)
        if before is None:
            continue
        changes = diff_inputs(before.get("inputs", {}), res.get("inputs", {}), counter)
        ignored = res.get("ignoreChanges") or ()
        changes = [c for c in changes if not _ignored(c.path, ignored)]
        if changes:
            changed[urn] = Changed(urn, res["type"], res["name"], changes)

    def judge(item: Changed, res: dict[str, Any]) -> None:
        rule = rules.rule(item.type)
        for ch in item.changes:
            verdict: Verdict = "update"
            if res.get("custom", True):
                # a block added or removed whole changes every path inside it (EKS: kubernetesNetworkConfig
                # added with a serviceIpv4Cidr replaces the cluster, though the rule names only the inner path)
                inner = [p for side in (ch.old, ch.new) for p in _leaf_paths(side, ch.path)]
                inputs = res.get("inputs") or {}
                verdicts = [classify(rule, ch.path, ch.old, ch.new, inputs), *(classify(rule, p) for p in inner)]
                verdict = max(verdicts, key=SEVERITY.__getitem__)
            if SEVERITY[verdict] > SEVERITY[item.verdict]:
                item.verdict, item.reasons = verdict, []
            if verdict == item.verdict and verdict != "update" and len(item.reasons) < 3:
                item.reasons.append(f"`{ch.path}`")

    for urn, item in changed.items():
        judge(item, new_res[urn])

    # Propagation: a replaced resource gets a new id, a versioned one a new version; whoever references
    # it sees that input change and is judged by its own rules (a subnet replaced -> instance subnetId).
    by_name: dict[str, list[str]] = defaultdict(list)
    refs: dict[str, list[tuple[str, str, dict[str, Any] | None, str]]] = defaultdict(list)
    for urn, res in new_res.items():
        by_name[res["name"]].append(urn)
        for name, path, holder, value in _references(res.get("inputs", {}), counter):
            refs[name].append((urn, path, holder, value))

    def versions(item: Changed) -> bool:
        return new_version(rules.rule(item.type), (c.path for c in item.changes))

    queue = deque(urn for urn, item in changed.items() if item.verdict in REPLACING or versions(item))
    seen = set(queue)
    while queue:
        producer = changed[queue.popleft()]
        counter.n += 1
        versioned = producer.verdict not in REPLACING and versions(producer)
        for urn, path, holder, value in refs.get(producer.name, ()):
            counter.n += 1
            if urn == producer.urn or urn in created:
                continue
            res = new_res[urn]
            if versioned:
                parent = path.rsplit(".", 1)[0] if "." in path else ""
                path = _join(parent, "version")
                old_value = holder.get("version") if holder else None
                change = Change(path, old_value, f"<next version of {producer.name}>")
            else:
                change = Change(path, value, f"<new id: {producer.name} is replaced>")
            item = changed.get(urn) or Changed(urn, res["type"], res["name"], [])
            changed[urn] = item
            if any(c.path == change.path for c in item.changes):
                continue
            item.changes.append(change)
            before = item.verdict
            verdict = classify(rules.rule(item.type), change.path) if res.get("custom", True) else "update"
            if producer.verdict == "may-replace" and verdict == "replace":
                verdict = "may-replace"
            item.verdict = _worse(item.verdict, verdict)
            if verdict == item.verdict and verdict != "update" and len(item.reasons) < 3:
                item.reasons.append(f"`{change.path}` (references `{producer.name}`)")
            if item.verdict in REPLACING and before not in REPLACING and urn not in seen:
                seen.add(urn)
                queue.append(urn)

    changed_list = [changed[u] for u in sorted(changed)]
    unchanged = sum(1 for u in new_res if u in old_res and u not in changed)
    may_replace = [c.urn for c in changed_list if c.verdict in REPLACING]
    warnings = _warnings(old, new, old_res, new_res, sorted(deleted), changed_list, rules, tuple(sorted(created)))
    summary = _summary(old, new, len(created), len(changed_list), len(deleted), unchanged, len(may_replace))
    types = {u: r["type"] for u, r in {**old_res, **new_res}.items()}
    stack = str(new_doc.get("stack") or old_doc.get("stack") or "?")
    return PlanDiff(
        stack,
        sorted(created),
        sorted(deleted),
        changed_list,
        unchanged,
        may_replace,
        warnings,
        summary,
        types,
        counter.n,
        spec_changes(old, new),
    )


def _nodes_of(doc: dict[str, Any] | None) -> int:
    return int(((doc or {}).get("summary") or {}).get("nodes") or 0)


def _warnings(
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    old_res: dict[str, dict[str, Any]],
    new_res: dict[str, dict[str, Any]],
    deleted: list[str],
    changed: list[Changed],
    rules: Rules,
    created: tuple[str, ...] = (),
) -> list[str]:
    loss: list[str] = []
    plane_loss: list[str] = []  # a Kubernetes control plane: everything in the cluster, so it leads
    disruption: list[str] = []
    notes: list[str] = []
    before, after = (old or {}).get("summary") or {}, (new or {}).get("summary") or {}
    shared_loss: list[str] = []  # the shared filesystem (datasets, checkpoints): always first
    sides = (after.get("sharedStorage"), before.get("sharedStorage"))  # what is lost: the old side's size
    shared = {str(fs["resource"]): fs for fs in sides if fs and fs.get("resource")}

    def data_loss(res: dict[str, Any], text: str) -> None:
        fs = shared.get(str(res.get("name")))
        if fs is None:
            loss.append(text)
            return
        size = f"{fs['sizeGb']:,} GiB" if fs.get("sizeGb") else "elastic size"
        guard = " (protect is set: Pulumi refuses until it is unprotected)" if res.get("protect") else ""
        what = f"{_what(res)}, the shared filesystem ({size} at {fs.get('path')})"
        shared_loss.append(text.replace(_what(res), what, 1) + guard)

    had_nodes = _nodes_of(old) > 0
    scratch = _scratch_fate(str(before.get("scratch") or ""))
    planes = _control_planes(before, after)
    # a control plane deleted or replaced takes its releases with it: they are not listed one by one
    planes_gone = any(old_res[u]["name"] in planes for u in deleted) or any(
        c.name in planes and c.verdict in REPLACING for c in changed
    )

    if old is not None and new is not None:
        o_nodes, n_nodes = _nodes_of(old), _nodes_of(new)
        if n_nodes < o_nodes:
            loss.append(
                f"DATA LOSS: node count {o_nodes} -> {n_nodes}: "
                f"{o_nodes - n_nodes} running node(s) are terminated ({scratch})"
            )
        for key, label in NODE_FIELDS.items():
            if key in before and key in after and not _same(before[key], after[key]) and had_nodes:
                disruption.append(
                    f"DISRUPTION: {label} {_fmt(before[key])} -> {_fmt(after[key])}: every node is recreated with it "
                    f"(now, or at the next instance refresh); {scratch}"
                )
    if new is None and old is not None:
        loss.append(f"DATA LOSS: the stack `{old.get('stack')}` is removed: all {len(old_res)} resources are deleted")

    for urn in deleted:
        res = old_res[urn]
        rule = rules.rule(res["type"])
        kept = " (retainOnDelete: the cloud resource is kept)" if res.get("retainOnDelete") else ""
        if rule.holds == "nodes":
            loss.append(f"DATA LOSS: deletes {_what(res)}: its running nodes are terminated ({scratch}){kept}")
        elif res["name"] in planes:
            plane_loss.append(f"DATA LOSS: deletes {_what(res)}, {_plane_loss(planes[res['name']])}{kept}")
        elif rule.holds == "data":
            data_loss(res, f"DATA LOSS: deletes {_what(res)}: the data on it is lost{kept}")
        elif res["type"] == RELEASE and new is not None and not planes_gone:
            disruption.append(f"DISRUPTION: uninstalls {_release(res)}: what it runs in the cluster is removed")
        elif rule.holds in ("network", "placement") and had_nodes:
            disruption.append(f"DISRUPTION: deletes {_what(res)}, which the nodes run in{kept}")

    for item in changed:
        res = new_res[item.urn]
        rule = rules.rule(item.type)
        why = ", ".join(item.reasons)
        source = "" if rule.known else " (no provider rule for this type)"
        if item.verdict in REPLACING:
            verb = "replaces" if item.verdict == "replace" else "may replace"
            if rule.holds == "nodes":
                loss.append(
                    f"DATA LOSS: {verb} {_what(res)} ({why}){source}: its nodes are terminated and recreated; {scratch}"
                )
            elif res["name"] in planes:
                plane_loss.append(f"DATA LOSS: {verb} {_what(res)} ({why}){source}, {_plane_loss(planes[res['name']])}")
            elif res["type"] == RELEASE:
                if not planes_gone:
                    disruption.append(
                        f"DISRUPTION: {verb} {_release(res)} ({why}){source}: uninstalled, then installed again"
                    )
            elif rule.holds == "data":
                data_loss(res, f"DATA LOSS: {verb} {_what(res)} ({why}){source}: the data on it is lost")
            elif rule.holds in ("network", "placement") and had_nodes:
                disruption.append(f"DISRUPTION: {verb} {_what(res)} ({why}){source}, which the nodes run in")
            else:
                notes.append(f"{verb} {_what(res)} ({why}){source}")
        elif res["type"] == RELEASE:
            notes.append(_release_update(old_res[item.urn], res, item))
        elif item.verdict == "restart":
            disruption.append(f"DISRUPTION: {_what(res)}: {why} change in place with a stop/start of the node")
        elif item.verdict == "refresh" and rule.holds == "nodes" and _rolls(rule.rolls, res.get("inputs", {})):
            disruption.append(
                f"DISRUPTION: {_what(res)}: {why} change in place, rolled out by the group itself: running nodes are "
                f"drained and replaced in batches ({scratch} then); new nodes get the new one"
            )
        elif item.verdict == "refresh" and rule.holds == "nodes":
            disruption.append(
                f"DISRUPTION: {_what(res)}: {why} change in place, but running nodes keep their old configuration "
                f"until an instance refresh replaces them ({scratch} then); new nodes get the new one"
            )

    # a resource whose rule says what its creation does to running nodes (`created`), added to resources they use
    old_names = {r["name"] for r in old_res.values()}
    for urn in created:
        res = new_res[urn]
        text = rules.rule(res["type"]).created
        if text and had_nodes and any(n in old_names for n, *_ in _references(res.get("inputs", {}), _Counter())):
            disruption.append(f"DISRUPTION: creates {_what(res)}: {text}")
    if old is not None:  # a new stack's releases are in its resource list, not news
        notes += [f"installs {_release(new_res[u])}" for u in created if new_res[u]["type"] == RELEASE]
    old_warnings = set((old or {}).get("warnings") or [])
    notes += [f"plan: {w}" for w in (new or {}).get("warnings") or [] if w not in old_warnings]
    removed = loss[:1] if new is None and old is not None else []  # "the stack is removed" stays the headline
    return removed + shared_loss + plane_loss + loss[len(removed) :] + disruption + notes


def _release_update(before: dict[str, Any], after: dict[str, Any], item: Changed) -> str:
    """A Helm upgrade in place: the chart version and which values change (`helm upgrade`: its pods restart)."""
    parts = []
    old_v, new_v = (before.get("inputs") or {}).get("version"), (after.get("inputs") or {}).get("version")
    if old_v != new_v:
        parts.append(f"chart {(after.get('inputs') or {}).get('chart')} {old_v} -> {new_v}")
    values = sorted({c.path for c in item.changes if c.path == "values" or c.path.startswith("values.")})
    if values:
        parts.append("values " + ", ".join(f"`{v}`" for v in values[:3]) + (" ..." if len(values) > 3 else ""))
    others = sorted({c.path for c in item.changes if c.path != "version" and not c.path.startswith("values")})
    if others:
        parts.append(", ".join(f"`{o}`" for o in others[:3]))
    name = (after.get("inputs") or {}).get("name") or after["name"]
    return f"upgrades Helm release `{name}` in place: {'; '.join(parts)} (helm upgrade: its pods restart)"


def _summary(
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    created: int,
    changed: int,
    deleted: int,
    unchanged: int,
    may_replace: int,
) -> dict[str, Any]:
    before, after = (old or {}).get("summary") or {}, (new or {}).get("summary") or {}
    compared = {
        k: {"old": before.get(k), "new": after.get(k)}
        for k in ("totalGpus", "nodes", "instanceType", "hourlyUsd", "totalHourlyUsd")
    }
    # the cost shown: everything the stack runs (totalHourlyUsd, issue 30) when every side's plan has it; a plan
    # written before it (GPU nodes only) is compared on hourlyUsd, so the line never sets GPU-only against a total
    sides = [side for side, doc in ((before, old), (after, new)) if doc is not None]
    cost_key = "totalHourlyUsd" if sides and all("totalHourlyUsd" in side for side in sides) else "hourlyUsd"

    def side_by_side(key: str) -> str:
        # A stack that exists on one side only is "new" or "removed", not "? -> 48".
        if old is None and new is not None:
            return f"{_fmt(after.get(key))} (new)"
        if new is None and old is not None:
            return f"{_fmt(before.get(key))} (removed)"
        return _from_to(before.get(key), after.get(key))

    line = f"+{created} / ~{changed} / -{deleted}, GPUs {side_by_side('totalGpus')}, est. $/h {side_by_side(cost_key)}"
    return {
        "stack": (new or old or {}).get("stack"),
        "cloud": (new or old or {}).get("cloud"),
        "created": created,
        "changed": changed,
        "deleted": deleted,
        "unchanged": unchanged,
        "mayReplace": may_replace,
        **compared,
        "line": line,
    }


def _rolls(paths: tuple[str, ...], inputs: dict[str, Any]) -> bool:
    """Whether one of the rule's `rolls` inputs (dotted paths) is set in the resource's inputs (`*`: always)."""
    for path in paths:
        if path == "*":
            return True
        value: Any = inputs
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            return True
    return False
