"""Azure Managed Grafana beside monitoring.prometheus managed, pure (catalog/monitoring.yaml managed.azure
managedGrafana): built only when monitoring.grafanaAdmins names who may sign in, since its users are Microsoft Entra
principals holding a Grafana role on it and no one else can open it.

Its system-assigned identity reads this cluster's Azure Monitor workspace only (Monitoring Data Reader on the
workspace, not the subscription the portal's default would give), the workspace is linked as its Prometheus data
source, and each named principal gets Grafana Admin on this Grafana only. No dashboards are provisioned inside it:
azure-native has no resource for a dashboard inside a Grafana workspace (the catalog's `grafana` says why); the same
dashboards are the login node's Grafana's and Azure Monitor dashboards with Grafana (portal_dashboards.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...spec import ClusterSpec


@dataclass(frozen=True)
class AzureGrafana:
    name: str  # the Grafana workspace's name (its endpoint's host part)
    sku: str
    major_version: str
    zone_redundancy: str
    public_network_access: str
    api_key: str
    reader_role: str  # on the Azure Monitor workspace, for the Grafana's system identity
    admin_role: str  # on the Grafana, for each admin
    admins: tuple[str, ...]  # Microsoft Entra object ids (monitoring.grafanaAdmins)


def grafana_name(cluster: str, most: int) -> str:
    """`<cluster>-grafana` cut to fit, ending alphanumeric (a letter first: cluster names start with one)."""
    return re.sub(r"[^A-Za-z0-9]+$", "", f"{cluster}-grafana"[:most])


def plan(spec: ClusterSpec, managed: dict[str, Any]) -> AzureGrafana | None:
    """None without monitoring.grafanaAdmins: nobody could sign in to it."""
    admins = tuple(spec.monitoring.grafana_admins)
    if not admins:
        return None
    g = managed["managedGrafana"]
    return AzureGrafana(
        name=grafana_name(spec.name, int(g["nameMax"])),
        sku=str(g["sku"]),
        major_version=str(g["majorVersion"]),
        zone_redundancy=str(g["zoneRedundancy"]),
        public_network_access=str(g["publicNetworkAccess"]),
        api_key=str(g["apiKey"]),
        reader_role=str(g["readerRole"]),
        admin_role=str(g["adminRole"]),
        admins=admins,
    )
