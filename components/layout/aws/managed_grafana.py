"""Amazon Managed Grafana beside monitoring.prometheus managed, pure (catalog/monitoring.yaml managed.aws
managedGrafana): built only when monitoring.grafanaAdmins names who may sign in, since its users are IAM Identity
Center users holding a Grafana role on it and no one else can open it.

The workspace is customer-managed: its role (trusted by Amazon Managed Grafana for this account's workspaces) may
query this cluster's AMP workspace only. pulumi-aws cannot provision a data source or a dashboard inside it, so a
workspace service account's token configures the pulumiverse-grafana provider, which provisions the AMP data source
(sigv4 with the workspace's role) and the dashboards the login node provisions (bootstrap/monitoring/), their panels
pointed at that data source's uid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...bootstrap.monitoring import dashboards
from ...spec import ClusterSpec
from ...text import one_line
from ..monitoring import point_at


@dataclass(frozen=True)
class AwsDashboard:
    file: str  # bootstrap/monitoring/<file>: also the resource's name suffix
    title: str
    config_json: str  # the dashboard model, its panels and variables naming `datasource_uid`


@dataclass(frozen=True)
class AwsGrafana:
    service: str  # "Amazon Managed Grafana", as the plan names it
    name: str  # the workspace's name
    account_access_type: str
    authentication_providers: tuple[str, ...]
    permission_type: str
    grafana_version: str
    admin_role: str  # the Grafana role each admin gets (RoleAssociation role)
    admins: tuple[str, ...]  # IAM Identity Center user ids (monitoring.grafanaAdmins)
    service_account_role: str  # the provisioning service account's Grafana role
    token_seconds_to_live: int  # the service account token's life (the API's longest)
    principal: str  # the service the workspace role trusts
    query_actions: tuple[str, ...]  # the workspace role's grant on this cluster's AMP workspace only
    datasource_uid: str
    datasource_json: dict[str, Any]  # the data source's jsonData: sigv4 with the workspace's role
    dashboards: tuple[AwsDashboard, ...]


def workspace_name(cluster: str, stack: str) -> str:
    """`gpu-cluster-<cluster>-<stack>`: whose it is (the name need not be unique; WorkspaceName allows 1-255 of
    [a-zA-Z0-9-._~], which cluster and stack names keep to)."""
    return f"gpu-cluster-{cluster}-{stack}"[:255]


def plan(spec: ClusterSpec, managed: dict[str, Any]) -> AwsGrafana | None:
    """None without monitoring.grafanaAdmins: nobody could sign in to it."""
    admins = tuple(spec.monitoring.grafana_admins)
    if not admins:
        return None
    g = managed["managedGrafana"]
    uid = str(g["datasourceUid"])
    return AwsGrafana(
        service=one_line(str(g["service"])),
        name=workspace_name(spec.name, spec.stack),
        account_access_type=str(g["accountAccessType"]),
        authentication_providers=tuple(g["authenticationProviders"]),
        permission_type=str(g["permissionType"]),
        grafana_version=str(g["grafanaVersion"]),
        admin_role=str(g["adminRole"]),
        admins=admins,
        service_account_role=str(g["serviceAccountRole"]),
        token_seconds_to_live=int(g["tokenSecondsToLive"]),
        principal=str(g["principal"]),
        query_actions=tuple(managed["queryActions"]),
        datasource_uid=uid,
        # as the login node's data source (layout/aws/monitoring.py _remote), signed with the workspace's role
        datasource_json={
            "sigV4Auth": True,
            "sigV4AuthType": str(g["sigV4AuthType"]),
            "sigV4Region": spec.region,
        },
        dashboards=tuple(
            AwsDashboard(
                file, str(body["title"]), json.dumps(point_at(body, uid), separators=(",", ":"), sort_keys=True)
            )
            for file, body in dashboards().items()
        ),
    )
