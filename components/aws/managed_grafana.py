"""Amazon Managed Grafana beside the AMP workspace (monitoring.prometheus managed with monitoring.grafanaAdmins): the
workspace role (Amazon Managed Grafana may assume it for this account's workspaces; it may query this cluster's AMP
workspace only), the customer-managed workspace with IAM Identity Center sign-in, the admins' role association, and
inside it, through the pulumiverse-grafana provider configured with a workspace service account's token, the AMP data
source and the dashboards of bootstrap/monitoring/.

The token lives 30 days (the API's longest); the provider uses it on every `pulumi up` that reads or changes the
data source or the dashboards, so after that a new one is made with `pulumi up --replace <token URN>`
(docs/monitoring.md). Decisions are layout/aws/managed_grafana.py's `AwsGrafana`; this module only builds them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumiverse_grafana as grafana

from ..layout.aws.managed_grafana import AwsGrafana
from ..resources import invoke_options
from .amp import Amp
from .naming import Context


@dataclass(frozen=True)
class ManagedGrafana:
    role: aws.iam.Role
    role_policy: aws.iam.RolePolicy
    workspace: aws.grafana.Workspace
    admins: aws.grafana.RoleAssociation
    service_account: aws.grafana.WorkspaceServiceAccount
    token: aws.grafana.WorkspaceServiceAccountToken
    provider: grafana.Provider
    datasource: grafana.oss.DataSource
    dashboards: list[grafana.oss.Dashboard]

    def output(self, g: AwsGrafana) -> dict[str, Any]:
        return {
            "service": g.service,
            "endpoint": self.workspace.endpoint.apply(lambda e: f"https://{e}"),
            "signIn": f"IAM Identity Center, {g.admin_role} for {len(g.admins)} user(s), public endpoint",
            "dashboards": [d.title for d in g.dashboards],
            # the provisioning token's end: a later `pulumi up` touching the dashboards needs a new one (docs)
            "tokenExpires": self.token.expires_at,
        }


def _trust(partition: str, region: str, account: str, principal: str) -> str:
    """Amazon Managed Grafana may assume the role for this account's workspaces in this region only."""
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": principal},
        "Action": "sts:AssumeRole",
        "Condition": {
            "StringEquals": {"aws:SourceAccount": account},
            "StringLike": {"aws:SourceArn": f"arn:{partition}:grafana:{region}:{account}:/workspaces/*"},
        },
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def _query(actions: tuple[str, ...], workspace_arn: str) -> str:
    statement = {"Sid": "QueryClusterWorkspace", "Effect": "Allow", "Action": list(actions), "Resource": workspace_arn}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def _role(ctx: Context, g: AwsGrafana, amp: Amp) -> tuple[aws.iam.Role, aws.iam.RolePolicy]:
    partition = aws.get_partition_output(opts=invoke_options(ctx.parent)).partition
    account = aws.get_caller_identity_output(opts=invoke_options(ctx.parent)).account_id
    region = ctx.layout.spec.region
    role = aws.iam.Role(
        f"{ctx.name}-grafana-role",
        assume_role_policy=pulumi.Output.all(partition, account).apply(
            lambda v: _trust(str(v[0]), region, str(v[1]), g.principal)
        ),
        description="Amazon Managed Grafana queries the cluster's AMP workspace (monitoring.grafanaAdmins)",
        tags=ctx.tagged("grafana-role"),
        opts=ctx.child,
    )
    actions = g.query_actions
    policy = aws.iam.RolePolicy(
        f"{ctx.name}-grafana-role-amp",
        role=role.name,
        policy=amp.workspace.arn.apply(lambda arn: _query(actions, arn)),
        opts=ctx.child,
    )
    return role, policy


def build(ctx: Context, amp: Amp | None) -> ManagedGrafana | None:
    managed = ctx.layout.amp  # VM mode's workspace or EKS's: the same dashboards either way
    g = managed.grafana if managed is not None else None
    if g is None or amp is None:
        return None
    role, role_policy = _role(ctx, g, amp)
    workspace = aws.grafana.Workspace(
        f"{ctx.name}-grafana",
        name=g.name,
        account_access_type=g.account_access_type,
        authentication_providers=list(g.authentication_providers),
        permission_type=g.permission_type,
        role_arn=role.arn,
        grafana_version=g.grafana_version,
        description=f"gpu-cluster {ctx.layout.spec.name}: the GPU dashboards on its AMP workspace",
        tags=ctx.tagged("grafana"),
        # the role's query grant first: the data source's first query signs with it
        opts=pulumi.ResourceOptions(parent=ctx.parent, depends_on=[role_policy]),
    )
    admins = aws.grafana.RoleAssociation(
        f"{ctx.name}-grafana-admins",
        workspace_id=workspace.id,
        role=g.admin_role,
        user_ids=list(g.admins),
        opts=ctx.child,
    )
    account = aws.grafana.WorkspaceServiceAccount(
        f"{ctx.name}-grafana-provisioner",
        workspace_id=workspace.id,
        name="gpu-cluster-provisioner",
        grafana_role=g.service_account_role,
        opts=ctx.child,
    )
    token = aws.grafana.WorkspaceServiceAccountToken(
        f"{ctx.name}-grafana-token",
        workspace_id=workspace.id,
        service_account_id=account.service_account_id,
        name="gpu-cluster-provisioner",
        seconds_to_live=g.token_seconds_to_live,
        opts=ctx.child,
    )
    provider = grafana.Provider(
        f"{ctx.name}-grafana",
        url=workspace.endpoint.apply(lambda e: f"https://{e}"),
        auth=token.key,
        opts=ctx.child,
    )
    inside = pulumi.ResourceOptions(parent=ctx.parent, provider=provider)
    datasource = grafana.oss.DataSource(
        f"{ctx.name}-grafana-amp",
        name="Amazon Managed Service for Prometheus",
        type="prometheus",
        uid=g.datasource_uid,
        url=amp.workspace.prometheus_endpoint,
        access_mode="proxy",
        is_default=True,
        json_data_encoded=json.dumps(g.datasource_json, sort_keys=True),
        opts=inside,
    )
    dashboards = [
        grafana.oss.Dashboard(
            f"{ctx.name}-grafana-{d.file.removesuffix('.json')}",
            config_json=d.config_json,
            overwrite=True,
            # the panels name the data source's uid: it exists first
            opts=pulumi.ResourceOptions(parent=ctx.parent, provider=provider, depends_on=[datasource]),
        )
        for d in g.dashboards
    ]
    return ManagedGrafana(role, role_policy, workspace, admins, account, token, provider, datasource, dashboards)
