"""catalog/monitoring.yaml: the clouds that build the self-hosted Prometheus and Grafana, and their discovery."""

from __future__ import annotations

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


def self_hosted_clouds() -> tuple[str, ...]:
    """The clouds whose layouts build monitoring.prometheus: selfHosted."""
    return tuple(data()["selfHosted"])


def self_hosted(cloud: str) -> dict[str, Any] | None:
    """`selfHosted.<cloud>`: the discovery and its grant, None where it is not built."""
    entry: dict[str, Any] | None = data()["selfHosted"].get(cloud)
    return entry


def not_built_why(cloud: str) -> str | None:
    """`notBuilt.<cloud>.why`: why selfHosted is not built there yet (None: no reason recorded)."""
    entry = data().get("notBuilt", {}).get(cloud)
    return None if entry is None else str(entry["why"])


def managed(cloud: str) -> dict[str, Any] | None:
    """`managed.<cloud>`: the managed Prometheus and the login node's grants, None where `managed` is not built."""
    entry: dict[str, Any] | None = (data().get("managed") or {}).get(cloud)
    return entry


def managed_not_built_why(cloud: str) -> str | None:
    """`managedNotBuilt.<cloud>.why`: why `managed` is not built on a cloud yet."""
    entry = (data().get("managedNotBuilt") or {}).get(cloud)
    return str(entry["why"]) if entry else None


def logs(cloud: str) -> dict[str, Any] | None:
    """`logs.<cloud>`: the log service and the retention it takes, None where shipping is not built."""
    entry: dict[str, Any] | None = (data().get("logs") or {}).get(cloud)
    return entry


def logs_retention_floor(compliance: str) -> dict[str, Any] | None:
    """`logsRetentionByCompliance.<profile>`: the least days a compliance profile keeps the nodes' logs, and why."""
    entry: dict[str, Any] | None = (data().get("logsRetentionByCompliance") or {}).get(compliance)
    return entry


def logs_not_built_why(cloud: str) -> str | None:
    """`logsNotBuilt.<cloud>.why`: why a cloud with a layout ships no logs yet."""
    entry = (data().get("logsNotBuilt") or {}).get(cloud)
    return str(entry["why"]) if entry else None


def notify(cloud: str) -> dict[str, Any] | None:
    """`notify.<cloud>`: how firing alerts reach people, None where it is not built."""
    entry: dict[str, Any] | None = (data().get("notify") or {}).get(cloud)
    return entry


def built(section: str) -> tuple[str, ...]:
    """The clouds with an entry under `logs`, `notify` or `managed`."""
    return tuple(data().get(section) or {})


def kubernetes_chart() -> str:
    """`kubernetes.chart`: the chart (catalog/kubernetes/charts.yaml) that is selfHosted with scheduler kubernetes."""
    return str(data()["kubernetes"]["chart"])


def kubernetes_not_built_why(cloud: str) -> str | None:
    """`kubernetes.notBuilt.<cloud>.why`: why a cloud with Kubernetes does not install that chart (None: unrecorded)."""
    entry = (data()["kubernetes"].get("notBuilt") or {}).get(cloud)
    return None if entry is None else str(entry["why"])
