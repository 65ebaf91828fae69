"""The dashboards of bootstrap/monitoring/ as Azure Monitor dashboards with Grafana, pure (catalog/monitoring.yaml
managed.azure portalDashboards): with monitoring.prometheus managed in every mode (VM, Slurm, AKS), since AKS runs no
Grafana and Azure Managed Grafana's dashboards cannot be provisioned by azure-native.

Each dashboard is a Microsoft.Dashboard/dashboards resource in the cluster's resource group with one definition
(`default`) holding the Grafana dashboard JSON. In the Azure portal a workspace-scoped Prometheus data source is
named after its Azure Monitor workspace, whose name azure-native generates at deploy; so the panels name a data
source variable instead of a fixed uid, and the variable's instance-name filter is that name, filled in at deploy
(`serialized`). Day 2: the definition's JSON is updated in place; the dashboards go with managed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...bootstrap.monitoring import dashboards
from ...spec import ClusterSpec
from ..monitoring import point_at

# the workspace's name, known at deploy (components/azure/managed_grafana.py fills it in through `serialized`)
WORKSPACE_PLACEHOLDER = "@GPU_CLUSTER_AZURE_MONITOR_WORKSPACE_NAME@"


@dataclass(frozen=True)
class PortalDashboard:
    file: str  # bootstrap/monitoring/<file>
    name: str  # the dashboard resource's name
    title: str
    template: str  # the dashboard JSON, WORKSPACE_PLACEHOLDER standing for the workspace's name


@dataclass(frozen=True)
class PortalDashboards:
    definition_name: str
    dashboards: tuple[PortalDashboard, ...]


def dashboard_name(cluster: str, file: str, most: int) -> str:
    """`<cluster>-<file stem without dashboard->`, the cluster part cut so the stem always stays (two dashboards of
    one long cluster name stay apart), ending alphanumeric as the name pattern wants."""
    stem = re.sub(r"^dashboard-", "", file.removesuffix(".json"))
    head = re.sub(r"[^A-Za-z0-9]+$", "", cluster[: max(most - len(stem) - 1, 1)])
    return f"{head}-{stem}"


def datasource_variable(entry: dict[str, Any]) -> dict[str, Any]:
    """A Grafana data source variable listing the Prometheus data sources named exactly as the workspace."""
    return {
        "name": str(entry["datasourceVariable"]),
        "label": "Azure Monitor workspace",
        "type": "datasource",
        "query": str(entry["datasourceType"]),
        "regex": f"/^{WORKSPACE_PLACEHOLDER}$/",
        "refresh": 1,
        "hide": 0,
        "includeAll": False,
        "multi": False,
        "current": {},
        "options": [],
    }


def template(body: dict[str, Any], entry: dict[str, Any]) -> str:
    """The dashboard with every Prometheus reference naming the variable, the variable first in its templating."""
    pointed = point_at(body, "${" + str(entry["datasourceVariable"]) + "}")
    templating = dict(pointed.get("templating") or {})
    templating["list"] = [datasource_variable(entry), *templating.get("list", [])]
    return json.dumps({**pointed, "templating": templating}, separators=(",", ":"), sort_keys=True)


def serialized(template_json: str, workspace_name: str) -> str:
    """The definition's serializedData: the template with the workspace's name as a literal in the regex (escaped
    for the regex, then for the JSON string it sits in)."""
    return template_json.replace(WORKSPACE_PLACEHOLDER, json.dumps(re.escape(workspace_name))[1:-1])


def plan(spec: ClusterSpec, managed: dict[str, Any]) -> PortalDashboards:
    entry = managed["portalDashboards"]
    most = int(entry["nameMax"])
    return PortalDashboards(
        definition_name=str(entry["definitionName"]),
        dashboards=tuple(
            PortalDashboard(file, dashboard_name(spec.name, file, most), str(body["title"]), template(body, entry))
            for file, body in dashboards().items()
        ),
    )
