"""Secure-default rules over registered resources, shared by the policy pack and the offline plan.

The rules are pure functions of (type token, camelCase props), so the same code runs under
`pulumi preview --policy-pack policy` (see `policy/__main__.py`, which wraps each rule in a
pulumi-policy `StackValidationPolicy`) and in `gpu-cluster plan`, on the recorded resources.
Stack-level facts (did the stack opt into public IPs or spot, its price and ceiling) come from the
props of the `gpu-cluster:index:GpuCluster` component, so the rules need no other input.

Policy config has pulumi-policy's `--policy-pack-config` format: `{"all": "advisory",
"no-public-ip": "disabled", "spot-nodes": {"enforcementLevel": "mandatory", "allowSpot": false},
"cost-ceiling": {"maxHourlyUsd": 500}}`.

A check yields a plain message, or an `Issue` that also says what kind of problem it is and how to fix
it: the plan prints one line per rule, kind and fix (`group_violations`) instead of one per resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .model import (
    CLUSTER_TYPE,
    LEVELS,
    Facts,
    Issue,
    Level,
    Resource,
    Rule,
    Violation,
    ViolationGroup,
    group_violations,
)
from .profiles import (
    PROFILES,
    PROFILES_FILE,
    PolicyConfigError,
    ProfileRow,
    benchmark,
    policy_names,
    profile_levels,
    profile_rows,
    profile_variants,
    rule_levels,
    variant_levels,
)
from .rules import PROFILE_ONLY, RULES
from .rules.kubernetes import control_plane_service, endpoint_state, secrets_companions
from .transit import unenforced
from .types import K8S_POOL_TYPES, NODE_TYPES, RELEASE_TYPE

__all__ = [
    "CLUSTER_TYPE",
    "K8S_POOL_TYPES",
    "LEVELS",
    "NODE_TYPES",
    "PROFILES",
    "PROFILES_FILE",
    "PROFILE_ONLY",
    "RELEASE_TYPE",
    "RULES",
    "Facts",
    "Issue",
    "Level",
    "PolicyConfigError",
    "ProfileRow",
    "Resource",
    "Rule",
    "Violation",
    "ViolationGroup",
    "benchmark",
    "check_rule",
    "control_plane_service",
    "endpoint_state",
    "evaluate",
    "facts_from",
    "group_violations",
    "policy_names",
    "profile_levels",
    "profile_rows",
    "profile_variants",
    "rule_levels",
    "variant_levels",
]


def _settings(config: Mapping[str, Any], rule: str) -> Mapping[str, Any]:
    entry = config.get(rule)
    return entry if isinstance(entry, Mapping) else {}


def facts_from(resources: list[Resource], config: Mapping[str, Any]) -> Facts:
    cluster: Mapping[str, Any] = next(
        (r.props.get("stackFacts") or {} for r in resources if r.type == CLUSTER_TYPE), {}
    )
    spot_cfg = _settings(config, "spot-nodes")
    # the ceiling: the policy's own setting (the pack hands each rule only its own config), else the stack's
    cost_cfg = {**_settings(config, "cost-ceiling-unchecked"), **_settings(config, "cost-ceiling")}
    ceiling = cost_cfg.get("maxHourlyUsd", cluster.get("maxHourlyUsd"))
    return Facts(
        public_ip=bool(cluster.get("publicIp", False)),
        spot=bool(cluster.get("spot", False)),
        instance_type=cluster.get("instanceType"),
        hourly_usd=cluster.get("hourlyUsdAtMaxNodes", cluster.get("hourlyUsd")),
        max_hourly_usd=float(ceiling) if ceiling is not None else None,
        allow_spot=bool(spot_cfg.get("allowSpot", True)),
        login_public_ip=bool(cluster.get("loginPublicIp", False)),
        k8s_public_endpoint=bool(cluster.get("kubernetesPublicEndpoint", False)),
        k8s_public_cidrs=tuple(str(c) for c in cluster.get("kubernetesPublicCidrs") or ()),
        serve_public=bool(cluster.get("servePublic", False)),
        cloud=cluster.get("cloud"),
        compliance=str(cluster.get("compliance", "none")),
        plain_transit=unenforced(resources),
        audit_trail=any(_delivering_trail(r) for r in resources),
        k8s_secrets_companions=secrets_companions(resources),
    )


def _delivering_trail(res: Resource) -> bool:
    """A trail that is on and delivers somewhere that keeps the events: an ActionTrail trail to SLS or OSS
    (pulumi-alicloud actiontrail/trail.py sls_project_arn, oss_bucket_name, status Enable | Disable), a CloudAudit
    tracking set to CLS or COS."""
    props = res.props
    if res.type == "tencentcloud:Audit/track:Track":
        # tencentcloud-iac-pulumi 0.2.3 audit/track.py: status 1 Open; storage cos or cls, storage_name the target
        return props.get("status") == 1 and bool((props.get("storage") or {}).get("storageName"))
    return (
        res.type == "alicloud:actiontrail/trail:Trail"
        and props.get("status", "Enable") != "Disable"
        and bool(props.get("slsProjectArn") or props.get("ossBucketName"))
    )


def check_rule(rule: Rule, resources: list[Resource], facts: Facts, level: Level) -> list[Violation]:
    violations = []
    for res in resources:
        for found in rule.check(res, facts):
            issue = found if isinstance(found, Issue) else Issue(found)
            violations.append(
                Violation(
                    rule.name,
                    level,
                    res.urn,
                    f"{res.name} ({res.type}) {issue.message}",
                    issue.message,
                    issue.kind,
                    issue.kind_one,
                    issue.fix,
                )
            )
    return violations


def evaluate(resources: list[Resource], config: Mapping[str, Any] | None = None) -> list[Violation]:
    """All violations of the enabled rules, in rule order, then resource order."""
    config = config or {}
    facts = facts_from(resources, config)
    levels = rule_levels(config, facts.compliance)
    return [
        violation
        for rule in RULES
        if levels[rule.name] != "disabled"
        for violation in check_rule(rule, resources, facts, levels[rule.name])
    ]
