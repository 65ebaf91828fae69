"""Alerts to people on Azure (monitoring.notify), and the workspace prometheus managed writes to, pure: an action
group with one email receiver per address (notify only), an Azure Monitor workspace the login node's Prometheus (or
its agent) remote-writes to, and a Prometheus rule group there evaluating the same rules as the login node
(bootstrap/monitoring.py rule_list) that fires the action group (catalog/monitoring.yaml notify.azure).

The remote write authenticates with the nodes' user-assigned identity, which the login node carries; its only grant
for it is Monitoring Metrics Publisher on the workspace's own data collection rule (the login node shares that
identity with the GPU nodes, so they could publish there too, and nowhere else).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...bootstrap.monitoring import Thresholds, rule_list
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec

INGESTION_URL_PLACEHOLDER = "@GPU_CLUSTER_AZURE_REMOTE_WRITE_URL@"  # filled at deploy (components/azure/alerts.py)


@dataclass(frozen=True)
class AlertRule:
    """One rule of the rule group, as alertsmanagement PrometheusRule takes it."""

    alert: str
    expression: str
    for_: str | None  # ISO 8601 (None: fires at once)
    severity: int
    labels: dict[str, str]
    annotations: dict[str, str]


@dataclass(frozen=True)
class AzureAlerts:
    emails: tuple[str, ...]  # empty (managed without notify): no action group
    short_name: str  # the action group's groupShortName (at most 12 characters)
    interval: str  # the rule group's evaluation interval (ISO 8601)
    rules: tuple[AlertRule, ...]
    publisher_role: str  # Monitoring Metrics Publisher, on the workspace's data collection rule
    ingestion_path: str  # after the data collection endpoint's metrics ingestion URL; {immutable_id} to fill
    # AKS (prometheus managed): the add-on writes through the cluster's own collection rule, so the nodes' identity
    # gets no publisher grant, and the rule group's scopes add the cluster, its clusterName the AKS cluster's name
    aks: bool = False

    def receiver_name(self, i: int) -> str:
        return f"email-{i}"


def _entry() -> dict[str, Any]:
    entry = catalog_monitoring.notify("azure")
    assert entry is not None, "catalog/monitoring.yaml notify.azure"
    return entry


def iso_minutes(prometheus_for: str) -> str | None:
    """Prometheus' `for: 5m` as ISO 8601 (PT5M); `0m` is no wait at all."""
    match = re.fullmatch(r"(\d+)m", prometheus_for)
    assert match, prometheus_for
    minutes = int(match.group(1))
    return f"PT{minutes}M" if minutes else None


def short_name(cluster: str, most: int) -> str:
    """The action group's short name (shown in SMS and email subjects): the cluster's name, cut to fit."""
    return cluster[:most].rstrip("-") or "gpu-cluster"[:most]


def rules(spec: ClusterSpec, severity: dict[str, int]) -> tuple[AlertRule, ...]:
    out = []
    for r in rule_list(Thresholds(**spec.monitoring.alerts.model_dump())):
        level = str(r["labels"]["severity"])
        out.append(
            AlertRule(
                alert=str(r["alert"]),
                expression=str(r["expr"]),
                for_=iso_minutes(str(r["for"])),
                severity=int(severity[level]),
                labels={str(k): str(v) for k, v in r["labels"].items()},
                annotations={str(k): str(v) for k, v in r["annotations"].items()},
            )
        )
    return tuple(out)


def plan(spec: ClusterSpec) -> AzureAlerts | None:
    """The workspace and its rule group: with monitoring.notify (the spec refuses it where the login node's
    Prometheus does not run), and with prometheus managed, where the workspace stores the samples and evaluates the
    rules (without notify: no action group, the rules fire into the workspace's alerts only); on AKS the add-on
    writes there (layout/azure/aks_metrics.py)."""
    managed = spec.prometheus == "managed"
    if not managed and (not spec.monitoring.notify or spec.prometheus != "selfHosted"):
        return None
    entry = _entry()
    return AzureAlerts(
        emails=tuple(spec.monitoring.notify),
        short_name=short_name(spec.name, int(entry["shortNameMax"])),
        interval=str(entry["interval"]),
        rules=rules(spec, {str(k): int(v) for k, v in entry["severity"].items()}),
        publisher_role=str(entry["publisherRole"]),
        ingestion_path=str(entry["ingestionPath"]),
        aks=spec.kubernetes is not None,
    )
