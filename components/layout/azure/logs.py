"""The nodes' logs in Azure Monitor Logs (monitoring.logs.enabled), pure: one Log Analytics workspace per cluster,
one data collection rule (syslog into the workspace's Syslog table), and the Azure Monitor Agent extension on every
VM and scale set the cluster builds, associated with that rule (catalog/monitoring.yaml logs.azure).

Least privilege: the agent authenticates with the nodes' user-assigned identity (settings.authentication.
managedIdentity mi_res_id) and sends only what the rules associated with its VM name, to their destinations; the
identity gets no role on the workspace. Day 2: the extension is a child resource of a single VM (its custom data is
untouched) and an entry of the scale set's extension profile (its upgrade policy rolls it out, as a model change);
the elastic partitions' VMs get it from the head's resume program, after each VM is created.

AKS (scheduler kubernetes): the nodes run AKS's node image, not our extensions. Container Insights (the `omsagent`
add-on profile of the ManagedCluster, managed identity auth) runs its agent on every node and sends what a second
collection rule names to the same workspace: the pods' output, Kubernetes events, the pod inventory and the nodes'
syslog (kubelet, containerd, the kernel), with the same facilities and level; the rule is associated with the cluster
(catalog/monitoring.yaml logs.azure.kubernetes). The login VM keeps the agent and the first rule. Metrics stay with
kube-prometheus-stack. Enabling the add-on updates the ManagedCluster in place (no node pool changes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...catalog import monitoring as catalog_monitoring
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line

# KnownSyslogDataSourceLogLevels, least to most severe: a minimum level collects it and every level above
LEVELS = ("Debug", "Info", "Notice", "Warning", "Error", "Critical", "Alert", "Emergency")
SYSLOG_STREAM = "Microsoft-Syslog"  # KnownSyslogDataSourceStreams: the workspace's Syslog table
DESTINATION = "workspace"  # the DCR's name for the workspace destination
SKU = "PerGB2018"  # pay per GB ingested, the only tier new workspaces get besides the commitment tiers


@dataclass(frozen=True)
class AgentExtension:
    """The Azure Monitor Agent VM extension (catalog/monitoring.yaml logs.azure.agent)."""

    name: str
    publisher: str
    type: str
    type_handler_version: str
    identifier_name: str  # settings.authentication.managedIdentity identifier-name: a user-assigned identity's id

    def settings(self, identity_id: Any) -> dict[str, Any]:
        """The extension's public settings: authenticate with the nodes' user-assigned identity (`identity_id`)."""
        return {
            "authentication": {
                "managedIdentity": {"identifier-name": self.identifier_name, "identifier-value": identity_id}
            }
        }


@dataclass(frozen=True)
class ContainerInsights:
    """AKS: the omsagent add-on and its collection rule (catalog/monitoring.yaml logs.azure.kubernetes)."""

    addon: str
    config: Mapping[str, str]  # the add-on's config beside the workspace's resource id
    workspace_key: str  # the config key that takes the workspace's resource id
    extension_name: str
    data_source_name: str
    association_name: str
    streams: tuple[str, ...]
    settings: Mapping[str, Any]  # the extension's dataCollectionSettings

    def addon_config(self, workspace_id: Any) -> dict[str, Any]:
        return {self.workspace_key: workspace_id, **self.config}


@dataclass(frozen=True)
class AzureLogs:
    retention_days: int
    sku: str
    facilities: tuple[str, ...]
    log_levels: tuple[str, ...]
    agent: AgentExtension
    not_collected: tuple[str, ...]  # text files the rule does not tail (a custom table is not built)
    container_insights: ContainerInsights | None = None  # AKS: the add-on and its rule on the cluster
    vm_rule: bool = True  # the VMs' syslog rule: not on AKS without a login node (no VM of ours to associate)

    @property
    def service(self) -> str:
        return str(_entry()["service"])


def _entry() -> dict[str, Any]:
    entry = catalog_monitoring.logs("azure")
    assert entry is not None, "catalog/monitoring.yaml logs.azure"
    return entry


def logs_problems(spec: ClusterSpec) -> list[ConfigError]:
    """Why the logs cannot be built for this config: a customer-managed key (catalog logs.azure.cmk)."""
    if not spec.monitoring.logs.enabled:
        return []
    k = f"{CLUSTER_KEY}.monitoring.logs.enabled"
    problems = []
    cmk = _entry()["cmk"]
    if spec.encryption_key != "provider" and not cmk.get("built"):
        problems.append(
            ConfigError(
                k,
                f"with encryption.key {spec.encryption_key}: {one_line(cmk['why'])} ({one_line(cmk['source'])}); use "
                "false, or encryption.key provider to keep the logs under Microsoft-managed keys",
            )
        )
    return problems


def plan(spec: ClusterSpec) -> AzureLogs | None:
    """None unless monitoring.logs.enabled; a refused config raises in the layout's `plan()` (logs_problems)."""
    if not spec.monitoring.logs.enabled:
        return None
    entry = _entry()
    agent = entry["agent"]
    lowest = LEVELS.index(str(entry["syslogMinLevel"]))
    return AzureLogs(
        retention_days=spec.monitoring.logs.retention_days,
        sku=SKU,
        facilities=tuple(str(f) for f in entry["syslogFacilities"]),
        log_levels=LEVELS[lowest:],
        agent=AgentExtension(
            name=str(agent["name"]),
            publisher=str(agent["publisher"]),
            type=str(agent["type"]),
            type_handler_version=str(agent["typeHandlerVersion"]),
            identifier_name=str(agent["identifierName"]),
        ),
        not_collected=tuple(str(p) for p in entry.get("notCollected", ())),
        container_insights=_container_insights(entry["kubernetes"]) if spec.scheduler == "kubernetes" else None,
        vm_rule=not (spec.scheduler == "kubernetes" and spec.login is None),
    )


def _container_insights(kube: Mapping[str, Any]) -> ContainerInsights:
    return ContainerInsights(
        addon=str(kube["addon"]),
        config={str(k): str(v) for k, v in kube["config"].items()},
        workspace_key=str(kube["workspaceKey"]),
        extension_name=str(kube["extensionName"]),
        data_source_name=str(kube["dataSourceName"]),
        association_name=str(kube["associationName"]),
        streams=tuple(str(s) for s in kube["streams"]),
        settings=dict(kube["dataCollectionSettings"]),
    )
