"""catalog/update.yaml: the `update:` block's defaults and each cloud's rolling machinery and drain budget, sourced."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml

_DATA = Path(__file__).resolve().parent / "update.yaml"


@dataclass(frozen=True)
class Bounds:
    """A default and the range a cloud accepts (None: not sourced, not checked here)."""

    default: int
    min: int | None
    max: int | None


@dataclass(frozen=True)
class Hook:
    """A termination lifecycle hook: its name (the node's handler completes it by name), transition and result."""

    name: str
    transition: str
    default_result: str
    actions: tuple[str, ...]  # on the group's ARN
    describe: tuple[str, ...]  # read-only actions with no resource type (Resource "*")


@dataclass(frozen=True)
class CloudUpdate:
    """One cloud's entry: how it rolls (None: it cannot, `manual` says how by hand) and its drain budget."""

    cloud: str
    rolling: str | None
    manual: str | None
    kubernetes_manual: str | None  # the Kubernetes pool cannot roll declaratively: how to by hand
    drain: Bounds | None  # the managed VM group's hook / notification timeout; None: the cloud has none
    drain_source: str
    kubernetes_drain: Bounds | None  # the Kubernetes pool's drain timeout; None: not settable
    hook: Hook | None
    max_healthy: tuple[int, int] | None  # AWS MaxHealthyPercentage range
    kubernetes_surge: bool  # the Kubernetes pool takes a surge count
    kubernetes_max_unavailable: int | None  # the most nodes the pool's update may take down at once (None: no cap)
    surge_feature: str | None  # a subscription feature a surge needs (Azure scale sets)
    drain_step: int  # the drain budget's granularity in seconds (Azure: whole minutes)


@cache
def data() -> dict[str, Any]:
    """catalog/update.yaml."""
    loaded: dict[str, Any] = load_yaml(_DATA)
    return loaded


def defaults() -> dict[str, Any]:
    """`defaults`: strategy, minHealthyPercent, maxSurge (each with its source)."""
    entry: dict[str, Any] = data()["defaults"]
    return entry


def _bounds(raw: dict[str, Any] | None) -> Bounds | None:
    return None if raw is None else Bounds(int(raw["default"]), raw.get("min"), raw.get("max"))


@cache
def cloud_update(cloud: str) -> CloudUpdate:
    """The cloud's entry of catalog/update.yaml."""
    raw: dict[str, Any] = data()["clouds"][cloud]
    hook = raw.get("hook")
    healthy = raw.get("maxHealthyPercent")
    return CloudUpdate(
        cloud=cloud,
        rolling=raw.get("rolling"),
        manual=raw.get("rollingManual"),
        kubernetes_manual=raw.get("kubernetesRollingManual"),
        drain=_bounds(raw.get("drainTimeoutSeconds")),
        drain_source=str(raw.get("drainTimeoutSource", "")),
        kubernetes_drain=_bounds(raw.get("kubernetesDrainTimeoutSeconds"))
        if raw.get("kubernetesDrainTimeout")
        else None,
        hook=Hook(
            hook["name"],
            hook["transition"],
            hook["defaultResult"],
            tuple(hook.get("actions", ())),
            tuple(hook.get("describe", ())),
        )
        if hook
        else None,
        max_healthy=(int(healthy["min"]), int(healthy["max"])) if healthy else None,
        kubernetes_surge=bool(raw.get("kubernetesSurge", False)),
        kubernetes_max_unavailable=raw.get("kubernetesMaxUnavailable"),
        surge_feature=raw.get("surgeFeature"),
        drain_step=int(raw.get("drainTimeoutStep", 1)),
    )
