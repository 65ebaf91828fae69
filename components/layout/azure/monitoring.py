"""The self-hosted Prometheus and Grafana on Azure (monitoring.prometheus: selfHosted), pure: on the login node, finding
the GPU nodes with azure_sd_configs and the nodes' user-assigned managed identity (catalog/monitoring.yaml).

monitoring.prometheus managed (`AzureManaged`; catalog/monitoring.yaml managed.azure): the Azure Monitor workspace
monitoring.notify builds (layout/azure/alerts.py, reused: its default data collection endpoint and rule, the
publisher role on that rule only, the rules as its Prometheus rule group) stores the samples and evaluates the rules.
The login node's Prometheus runs in agent mode, discovering the nodes as below and remote-writing with the nodes'
user-assigned identity; its Grafana reads the workspace's query endpoint with the same identity (Monitoring Data
Reader on this workspace only). The same dashboards are Azure Monitor dashboards with Grafana in the resource group
(layout/azure/portal_dashboards.py). With monitoring.grafanaAdmins, Azure Managed Grafana is built beside it
(layout/azure/managed_grafana.py). On AKS no login node takes part: layout/azure/aks_metrics.py.

azure_sd lists the virtual machines and scale-set VMs of the cluster's resource group; the login node and the Slurm
head are dropped by their Name tag, and a VM tagged for another cluster (a shared, existing resource group) by its
gpu-cluster:cluster tag. The subscription, the resource group's name and the identity's client id are known at
deploy only: the part carries placeholders that components/azure fills in the login node's custom data. The
identity gets Reader on the resource group (layout/azure/identity.py). The node NSG admits the VNet, so the login
subnet reaches the exporters.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import yaml

from ... import bootstrap
from ...bootstrap import File, Part
from ...bootstrap.monitoring import PASSWORD_FILE, PROMETHEUS_YML, Discovery, RemoteWrite, versions
from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ...text import one_line
from ..monitoring import login_part
from .alerts import INGESTION_URL_PLACEHOLDER
from .managed_grafana import AzureGrafana
from .managed_grafana import plan as grafana_plan
from .portal_dashboards import PortalDashboards
from .portal_dashboards import plan as dashboards_plan

# filled at deploy (components/azure/__init__.py): what only the deployed cluster knows
SUBSCRIPTION_PLACEHOLDER = "@GPU_CLUSTER_AZURE_SUBSCRIPTION@"
RESOURCE_GROUP_PLACEHOLDER = "@GPU_CLUSTER_AZURE_RESOURCE_GROUP@"
CLIENT_ID_PLACEHOLDER = "@GPU_CLUSTER_AZURE_CLIENT_ID@"
# managed: the workspace's Prometheus query endpoint (metrics.prometheusQueryEndpoint), known at deploy
QUERY_URL_PLACEHOLDER = "@GPU_CLUSTER_AZURE_PROMETHEUS_QUERY_URL@"


@dataclass(frozen=True)
class AzureManaged:
    """monitoring.prometheus managed: the workspace's service, the login node's read grant, Managed Grafana."""

    service: str  # catalog/monitoring.yaml managed.azure service
    query_roles: tuple[str, ...]  # the nodes' identity on this workspace: the login node's Grafana reads it
    grafana_note: str  # where the dashboards live, and why not in Azure Managed Grafana
    grafana: AzureGrafana | None  # Azure Managed Grafana (monitoring.grafanaAdmins), None without admins
    dashboards: PortalDashboards  # the dashboards as Azure Monitor dashboards with Grafana (every mode)


@dataclass(frozen=True)
class AzureMonitoring:
    part: Part  # the login node's part (bootstrap/monitoring.py), with the placeholders
    vm_custom_data: str  # VM mode: the login node's whole custom data (Slurm mode appends `part` to the Slurm login's)
    grafana_port: int
    prometheus_listen: str
    password_file: str
    managed: AzureManaged | None = None  # monitoring.prometheus managed: the workspace stores, evaluates and alerts


def hosted(spec: ClusterSpec) -> bool:
    """The login node runs Prometheus (selfHosted) or its agent (managed): not with scheduler kubernetes."""
    return spec.prometheus in ("selfHosted", "managed") and spec.kubernetes is None


def discovery(spec: ClusterSpec) -> Discovery:
    config = {
        "authentication_method": "ManagedIdentity",
        "client_id": CLIENT_ID_PLACEHOLDER,
        "subscription_id": SUBSCRIPTION_PLACEHOLDER,
        "resource_group": RESOURCE_GROUP_PLACEHOLDER,
    }
    relabel = (
        {
            "source_labels": ["__meta_azure_machine_tag_Name"],
            "regex": f"{spec.name}-(login|head)",
            "action": "drop",
        },
        {
            "source_labels": ["__meta_azure_machine_tag_gpu_cluster_cluster"],
            "regex": f"|{spec.name}",  # untagged (a scale set's VM) or this cluster's
            "action": "keep",
        },
        {"source_labels": ["__meta_azure_machine_computer_name"], "target_label": "node"},
        {"source_labels": ["__meta_azure_machine_id"], "target_label": "instance_id"},
        {"source_labels": ["__meta_azure_machine_size"], "target_label": "instance_type"},
        {"source_labels": ["__meta_azure_machine_scale_set"], "regex": "(.+)", "target_label": "pool"},
    )
    return Discovery("azure", config, "__meta_azure_machine_private_ip", relabel)


def remote_write(part: Part) -> Part:
    """monitoring.notify: the part's prometheus.yml also remote-writes every sample to the Azure Monitor workspace
    whose rule group fires the action group (layout/azure/alerts.py), authenticated with the nodes' user-assigned
    identity (Prometheus 2.53 <remote_write> azuread.managed_identity.client_id; the cloud AzurePublic)."""

    def with_remote(f: File) -> File:
        if f.path != PROMETHEUS_YML:
            return f
        config = yaml.safe_load(f.content)
        config["remote_write"] = [
            {
                "url": INGESTION_URL_PLACEHOLDER,
                "azuread": {"cloud": "AzurePublic", "managed_identity": {"client_id": CLIENT_ID_PLACEHOLDER}},
            }
        ]
        return File(f.path, yaml.safe_dump(config, sort_keys=False, width=1000), f.permissions)

    return replace(part, files=tuple(with_remote(f) for f in part.files))


def _entry() -> dict[str, Any]:
    entry = catalog_monitoring.managed("azure")
    assert entry is not None, "catalog/monitoring.yaml managed.azure"
    return entry


def _remote() -> RemoteWrite:
    """The agent's remote write (as monitoring.notify's, the nodes' identity) and Grafana's data source: the
    workspace's query endpoint, Azure auth with the same identity (catalog/monitoring.yaml managed.azure
    grafanaAuth)."""
    auth = _entry()["grafanaAuth"]
    return RemoteWrite(
        url=INGESTION_URL_PLACEHOLDER,
        auth={"azuread": {"cloud": "AzurePublic", "managed_identity": {"client_id": CLIENT_ID_PLACEHOLDER}}},
        query_url=QUERY_URL_PLACEHOLDER,
        datasource_auth=auth["jsonData"],
        grafana_env={
            **{str(k): str(v) for k, v in auth["env"].items()},
            str(auth["clientIdEnv"]): CLIENT_ID_PLACEHOLDER,
        },
    )


def managed_plan(spec: ClusterSpec, login_grafana: bool = True) -> AzureManaged:
    """`login_grafana` False (AKS: no login node's Grafana reads the workspace): no read grant for the nodes."""
    entry = _entry()
    return AzureManaged(
        service=str(entry["service"]),
        query_roles=tuple(str(r) for r in entry["queryRoles"]) if login_grafana else (),
        grafana_note=one_line(str(entry["grafanaPlan"] if login_grafana else entry["kubernetes"]["grafanaPlan"])),
        grafana=grafana_plan(spec, entry),
        dashboards=dashboards_plan(spec, entry),
    )


def plan(spec: ClusterSpec) -> AzureMonitoring | None:
    if not hosted(spec):
        return None
    managed = managed_plan(spec) if spec.prometheus == "managed" else None
    if managed is not None:  # the workspace's rule group evaluates and alerts: no rules on the login node
        part = login_part(spec, discovery(spec), remote=_remote())
    else:
        part = login_part(spec, discovery(spec))
        if spec.monitoring.notify:
            part = remote_write(part)
    return AzureMonitoring(
        part,
        bootstrap.cloud_init((part,)),
        grafana_port=int(versions()["grafana"]["port"]),
        prometheus_listen=str(versions()["prometheus"]["listen"]),
        password_file=PASSWORD_FILE,
        managed=managed,
    )
