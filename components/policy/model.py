"""What the rules read and return: a recorded resource, the stack's facts, a finding, a rule.

Standard library only: the policy pack's own environment has nothing else (policy/requirements.txt).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["mandatory", "advisory", "disabled"]
LEVELS: tuple[Level, ...] = ("mandatory", "advisory", "disabled")
CLUSTER_TYPE = "gpu-cluster:index:GpuCluster"
CONFIG = "gpu-cluster:cluster"  # the config key the fixes name (components.errors.CLUSTER_KEY; rules import no package)


@dataclass(frozen=True)
class Resource:
    type: str
    props: Mapping[str, Any]
    urn: str
    name: str
    protect: bool = False  # the resource option (the pack: `opts.protect`; the plan: protect or retainOnDelete)


@dataclass(frozen=True)
class Facts:
    """What the stack asked for, read from the GpuCluster component's props, plus policy config."""

    public_ip: bool = False
    spot: bool = False
    instance_type: str | None = None
    hourly_usd: float | None = None  # at maxNodes: what the cluster can cost once scaled
    max_hourly_usd: float | None = None
    allow_spot: bool = True
    login_public_ip: bool = False  # the stack opted its login node (only) into a public IP
    k8s_public_endpoint: bool = False  # kubernetes.publicEndpoint: the API server may be public ...
    k8s_public_cidrs: tuple[str, ...] = ()  # ... from these ranges only (kubernetes.publicCidrs)
    k8s_secrets_companions: frozenset[str] = frozenset()  # types of the stack's Secrets encryptions with a key (TKE)
    serve_public: bool = False  # serve.public: the stack's endpoint may face the internet
    cloud: str | None = None
    compliance: str = "none"  # the stack's profile (profiles.yaml): its levels override the rules' defaults
    plain_transit: frozenset[str] = frozenset()  # filesystem types that could refuse plain NFS and do not (transit)
    audit_trail: bool = False  # the stack builds an enabled trail of the account's API events (ActionTrail, CloudAudit)


@dataclass(frozen=True)
class Issue:
    """What a check found on one resource, with what groups it with the same finding elsewhere.

    `kind` reads after "N resources" (`lack environment`), `kind_one` after "1 resource" (`lacks environment`);
    `fix` names what to change. Findings without a kind group by their message.
    """

    message: str
    kind: str = ""
    kind_one: str = ""
    fix: str = ""


@dataclass(frozen=True)
class Violation:
    rule: str
    level: Level
    urn: str
    message: str
    detail: str = ""  # the check's own words, without the resource's name
    kind: str = ""
    kind_one: str = ""
    fix: str = ""

    def as_json(self) -> dict[str, str]:
        return {"rule": self.rule, "level": self.level, "urn": self.urn, "message": self.message}


@dataclass(frozen=True)
class ViolationGroup:
    """The violations of one rule that share a kind (or a message) and a fix: one line in the plan."""

    rule: str
    level: Level
    violations: tuple[Violation, ...]

    @property
    def fix(self) -> str:
        return self.violations[0].fix

    @property
    def summary(self) -> str:
        first, count = self.violations[0], len(self.violations)
        if first.kind:
            text = f"{count} resource{'s' if count != 1 else ''} {first.kind if count != 1 else first.kind_one}"
        elif count == 1:
            text = first.message
        else:
            text = f"{count} resources: {first.detail}"
        return text + (f"; {first.fix}" if first.fix else "")

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "level": self.level,
            "count": len(self.violations),
            "summary": self.summary,
            "fix": self.fix or None,
            "urns": [v.urn for v in self.violations],
        }


def group_violations(violations: list[Violation]) -> list[ViolationGroup]:
    """One group per rule, level, kind (or message, when a finding has no kind) and fix, in first-seen order."""
    groups: dict[tuple[str, str, str, str], list[Violation]] = {}
    for v in violations:
        groups.setdefault((v.rule, v.level, v.kind or v.detail or v.message, v.fix), []).append(v)
    return [ViolationGroup(key[0], members[0].level, tuple(members)) for key, members in groups.items()]


Check = Callable[[Resource, Facts], Iterator[str | Issue]]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    level: Level
    check: Check


def find(value: Any, keys: set[str]) -> Iterator[Any]:
    """Every value stored under one of `keys`, at any depth of a props tree."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in keys:
                yield item
            yield from find(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from find(item, keys)


def truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def at(props: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of a props tree ('' is the props themselves), None where absent."""
    value: Any = props
    for key in filter(None, path.split(".")):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value
