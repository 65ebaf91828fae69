"""The cloud-neutral cluster spec: stack config in, one validated, resolved `ClusterSpec` out.

`build_spec` is pure (no Pulumi runtime): the CLI validates a stack file with it before planning,
and `__main__.py` calls it with the engine's config, so `pulumi up` and `gpu-cluster plan` reject
the same input with the same message, before any resource is registered. Every error names the
config key path, the value given and what is allowed.

The package: `model` (what the user writes), `messages` (pydantic's errors in words), `context` (what the
rules read), `rules/` (one module per concern; `CROSS_RULES` their order), `resolve` (the auto values once
every rule passed), `resolved` (`ClusterSpec`).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from .. import catalog, placeholders
from ..catalog import CLOUDS, Cloud
from ..errors import CLUSTER_KEY, ConfigError, ConfigErrors
from .context import Context
from .messages import describe, pydantic_message
from .model import ClusterConfig
from .resolve import resolve
from .resolved import (
    BudgetSpec,
    ClusterSpec,
    KubernetesSpec,
    PartitionSpec,
    ScalingSpec,
    ServeSpec,
    UpdateSpec,
    base_tags_of,
)
from .rules import CROSS_RULES
from .rules.identity import SECRET_KEY_STAND_IN, rsa_bits
from .rules.instance import parse_gpu

__all__ = [
    "CROSS_RULES",
    "PROJECT",
    "SECRET_PLACEHOLDER",
    "BudgetSpec",
    "ClusterSpec",
    "KubernetesSpec",
    "PartitionSpec",
    "ScalingSpec",
    "ServeSpec",
    "UpdateSpec",
    "base_tags_of",
    "build_spec",
    "cloud_rules",
    "parse_gpu",
    "rsa_bits",
    "rules_of",
]

PROJECT = "gpu-cluster"
OWN_KEYS = ("cloud", "cluster", "maxHourlyUsd")
SECRET_PLACEHOLDER = placeholders.SECRET


def cloud_rules() -> dict[str, dict[str, Any]]:
    """Each cloud's `rules:` section of its catalog file (region key, CIDR limits, patterns)."""
    return {cloud: rules_of(cloud) for cloud in CLOUDS}


def rules_of(cloud: Cloud) -> dict[str, Any]:
    """One cloud's `rules:` section: a plan reads its own cloud's catalog only (issue 35: loading all five files cost
    each plan a tenth of its time)."""
    return catalog.load(cloud).rules


def _region(cloud: Cloud, values: Mapping[str, Any], rules: Mapping[str, Any]) -> tuple[str, str | None]:
    region_rule = rules["region"]
    project = None
    if "project" in region_rule:
        project = values.get(region_rule["project"])
        if not isinstance(project, str) or not project:
            raise ConfigError(region_rule["project"], f"required when gpu-cluster:cloud is {cloud}")
    region = values.get(region_rule["key"])
    example = region_rule["example"]
    if not isinstance(region, str) or not re.fullmatch(r"[a-z0-9-]+", region or ""):
        raise ConfigError(
            region_rule["key"],
            f"got {describe(region)}; required when gpu-cluster:cloud is {cloud} (a region such as {example})",
        )
    known = rules.get("regions")
    if known and region not in known:
        near = difflib.get_close_matches(region, known, n=3)
        hint = f"did you mean {', '.join(near)}?" if near else f"for example {example}"
        raise ConfigError(region_rule["key"], f"got {region!r}; {cloud} has no such region ({hint})")
    return region, project


def _check_foreign_keys(cloud: Cloud, values: Mapping[str, Any]) -> None:
    own = rules_of(cloud)["providerNamespaces"]
    for key in sorted(values):
        namespace, _, name = key.partition(":")
        if namespace == PROJECT and name not in OWN_KEYS:
            raise ConfigError(key, f"unknown key; allowed: {', '.join(f'{PROJECT}:{k}' for k in OWN_KEYS)}")
        if namespace == PROJECT or namespace in own:
            continue  # no other cloud's namespace: the other clouds' catalogs are read only for a key they may own
        for other in CLOUDS:
            if other != cloud and namespace in rules_of(other)["providerNamespaces"]:
                raise ConfigError(
                    key, f"is a {other} setting but gpu-cluster:cloud is {cloud}; remove it or change the cloud"
                )


def _max_hourly(raw: Any) -> float | None:
    """`gpu-cluster:maxHourlyUsd`: a positive number (the engine passes it as text)."""
    key = f"{PROJECT}:maxHourlyUsd"
    if raw is None or raw == "":
        return None
    value = raw
    if isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(key, f"got {raw!r}; a number of USD per hour") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(key, f"got {describe(raw)}; a positive number of USD per hour")
    if value <= 0:  # shown as a number: the engine passes text, the stack file a number
        raise ConfigError(key, f"got {value:g}; a positive number of USD per hour")
    return float(value)


def build_spec(
    values: Mapping[str, Any], stack: str, project: str = PROJECT, secret_keys: Collection[str] = ()
) -> ClusterSpec:
    """Validate flat stack config (`{"gpu-cluster:cloud": "aws", "aws:region": ...}`) into a spec.

    `gpu-cluster:cluster` may be a mapping or its JSON text (the engine passes objects as JSON).
    `secret_keys` are the config keys holding `secure:` values.
    """
    cloud = values.get(f"{PROJECT}:cloud")
    if cloud not in CLOUDS:
        raise ConfigError(f"{PROJECT}:cloud", f"got {describe(cloud)}; allowed: {', '.join(CLOUDS)}")
    rules = rules_of(cloud)
    _check_foreign_keys(cloud, values)
    region, gcp_project = _region(cloud, values, rules)

    raw = values.get(CLUSTER_KEY, {})
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise ConfigError(CLUSTER_KEY, "must be a mapping of cluster settings, got text") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(CLUSTER_KEY, f"must be a mapping of cluster settings, got {describe(raw)}")
    secret_config = CLUSTER_KEY in secret_keys
    if raw.get("sshPublicKey") == SECRET_PLACEHOLDER:
        # a secure key the offline plan cannot decrypt: plan with a stand-in, shown as secret
        raw = {**raw, "sshPublicKey": SECRET_KEY_STAND_IN}
        secret_config = True
    try:
        cfg = ClusterConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigErrors([ConfigError(*pydantic_message(err)) for err in exc.errors()]) from None

    max_hourly = _max_hourly(values.get(f"{PROJECT}:maxHourlyUsd"))
    spec = _cross_check(cloud, region, gcp_project, cfg, values, stack, project, rules, max_hourly)
    return replace(spec, secret_config=secret_config) if secret_config else spec


def _cross_check(
    cloud: Cloud,
    region: str,
    gcp_project: str | None,
    cfg: ClusterConfig,
    values: Mapping[str, Any],
    stack: str,
    project: str,
    rules: Mapping[str, Any],
    max_hourly: float | None,
) -> ClusterSpec:
    ctx = Context(cloud, region, cfg, values, stack, rules)
    errors = [error for check in CROSS_RULES for error in check(ctx)]
    if errors:
        raise ConfigErrors(errors)
    return resolve(ctx, project, gcp_project, max_hourly)
