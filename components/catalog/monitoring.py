"""catalog/monitoring.yaml: the clouds that build the self-hosted Prometheus and Grafana, and their discovery."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml

_DATA = Path(__file__).resolve().parent / "monitoring.yaml"


@cache
def data() -> dict[str, Any]:
    """catalog/monitoring.yaml."""
    loaded: dict[str, Any] = load_yaml(_DATA)
    return loaded


@cache
def cloud_logs(cloud: str) -> dict[str, Any]:
    """catalog/logs/<cloud>.yaml: the facts of a cloud's log agent that its layout (layout/<cloud>/logs.py) reads."""
    loaded: dict[str, Any] = load_yaml(_DATA.parent / "logs" / f"{cloud}.yaml")
    return loaded


def self_hosted_clouds() -> tuple[str, ...]:
    """The clouds whose layouts build monitoring.prometheus: selfHosted."""
    return tuple(data()["selfHosted"])


def self_hosted(cloud: str) -> dict[str, Any] | None:
    """`selfHosted.<cloud>`: the discovery and its grant, None where it is not built."""
    entry: dict[str, Any] | None = data()["selfHosted"].get(cloud)
    return entry


def _entry(section: str, cloud: str) -> dict[str, Any] | None:
    """`<section>.<cloud>`, None where the section has no entry for the cloud."""
    entry: dict[str, Any] | None = (data().get(section) or {}).get(cloud)
    return entry


def _why(entries: Mapping[str, Any] | None, cloud: str) -> str | None:
    """`<cloud>.why` of a `notBuilt`-style map: why something is not built on the cloud (None: no reason recorded)."""
    entry = (entries or {}).get(cloud)
    return str(entry["why"]) if entry else None


def not_built_why(cloud: str) -> str | None:
    """`notBuilt.<cloud>.why`: why selfHosted is not built there yet (None: no reason recorded)."""
    return _why(data().get("notBuilt"), cloud)


def managed(cloud: str) -> dict[str, Any] | None:
    """`managed.<cloud>`: the managed Prometheus and the login node's grants, None where `managed` is not built."""
    return _entry("managed", cloud)


def managed_not_built_why(cloud: str) -> str | None:
    """`managedNotBuilt.<cloud>.why`: why `managed` is not built on a cloud yet."""
    return _why(data().get("managedNotBuilt"), cloud)


def logs(cloud: str) -> dict[str, Any] | None:
    """`logs.<cloud>`: the log service and the retention it takes, None where shipping is not built."""
    return _entry("logs", cloud)


def control_plane_logs(cloud: str) -> dict[str, Any] | None:
    """`logs.<cloud>.kubernetes.controlPlane`: the control plane's log group and types, None where not built."""
    entry = logs(cloud)
    kube = entry.get("kubernetes") if entry else None
    plane = kube.get("controlPlane") if isinstance(kube, dict) else None
    return plane if isinstance(plane, dict) else None


def logs_retention_floor(compliance: str) -> dict[str, Any] | None:
    """`logsRetentionByCompliance.<profile>`: the least days a compliance profile keeps the nodes' logs, and why."""
    return _entry("logsRetentionByCompliance", compliance)


def logs_not_built_why(cloud: str) -> str | None:
    """`logsNotBuilt.<cloud>.why`: why a cloud with a layout ships no logs yet."""
    return _why(data().get("logsNotBuilt"), cloud)


def notify(cloud: str) -> dict[str, Any] | None:
    """`notify.<cloud>`: how firing alerts reach people, None where it is not built."""
    return _entry("notify", cloud)


def notify_not_built_why(cloud: str) -> str | None:
    """`notifyNotBuilt.<cloud>.why`: why alerts are not sent to people on a cloud yet (None: no reason recorded)."""
    return _why(data().get("notifyNotBuilt"), cloud)


def built(section: str) -> tuple[str, ...]:
    """The clouds with an entry under `logs`, `notify` or `managed`."""
    return tuple(data().get(section) or {})


def kubernetes_chart() -> str:
    """`kubernetes.chart`: the chart (catalog/kubernetes/charts.yaml) that is selfHosted with scheduler kubernetes."""
    return str(data()["kubernetes"]["chart"])


def kubernetes_not_built_why(cloud: str) -> str | None:
    """`kubernetes.notBuilt.<cloud>.why`: why a cloud with Kubernetes does not install that chart (None: unrecorded)."""
    return _why(data()["kubernetes"].get("notBuilt"), cloud)
