"""monitoring.logs on EKS: the Container Insights log groups, the node role's writes on them and the Amazon CloudWatch
Observability add-on with its container logs only (layout/aws/eks_logs.py decides them).

The groups come first, named after the cluster's EKS name, with the retention and the cluster's key (the key policy
lets CloudWatch Logs use it for them: layout/aws/encryption.py); the add-on waits for them, for the grant and for the
node groups (a DaemonSet: EKS waits for its pods to run, as for the Pod Identity agent).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ..layout.aws import EksLogs
from .identity import Identity
from .naming import Context


@dataclass(frozen=True)
class EksLogging:
    groups: dict[str, aws.cloudwatch.LogGroup]
    policy: aws.iam.RolePolicy
    addon: aws.eks.Addon
    control_plane: aws.cloudwatch.LogGroup | None = None  # monitoring.logs.controlPlane: /aws/eks/<name>/cluster


def build_control_plane_group(ctx: Context, logs: EksLogs) -> aws.cloudwatch.LogGroup | None:
    """The group EKS writes the control plane's logs to, before the cluster (which depends on it): EKS would create
    it itself, never expiring and without a key. Its name is the written EKS name's (the layout filled it in)."""
    if logs.control_plane_group is None:
        return None
    return aws.cloudwatch.LogGroup(
        f"{ctx.name}-logs-control-plane",
        name=logs.control_plane_group,
        retention_in_days=logs.retention_days,
        kms_key_id=ctx.kms_key,
        tags=ctx.tagged("logs-control-plane"),
        opts=ctx.child,
    )


def build_eks_logs(
    ctx: Context,
    logs: EksLogs,
    cluster: aws.eks.Cluster,
    identity: Identity,
    node_groups: list[aws.eks.NodeGroup],
    control_plane: aws.cloudwatch.LogGroup | None = None,
) -> EksLogging:
    assert identity.role is not None  # EKS refuses identity.existing
    groups = {
        group: aws.cloudwatch.LogGroup(
            f"{ctx.name}-logs-{group}",
            name=cluster.name.apply(lambda n, g=group: logs.group_name(n, g)),
            retention_in_days=logs.retention_days,
            kms_key_id=ctx.kms_key,
            tags=ctx.tagged(f"logs-{group}"),
            opts=ctx.child,
        )
        for group in logs.groups
    }
    actions = list(logs.actions)

    def document(arns: list[str]) -> str:
        statement = {
            "Sid": "ShipLogsToClusterGroups",
            "Effect": "Allow",
            "Action": actions,
            "Resource": [r for arn in arns for r in (arn, f"{arn}:*")],
        }
        return json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    policy = aws.iam.RolePolicy(
        f"{ctx.name}-node-role-logs",
        role=identity.role.name,
        policy=pulumi.Output.all(*[g.arn for g in groups.values()]).apply(document),
        opts=ctx.child,
    )
    addon = aws.eks.Addon(
        f"{ctx.name}-cloudwatch-observability",
        cluster_name=cluster.name,
        addon_name=logs.addon,
        addon_version=logs.version,
        configuration_values=logs.configuration,
        tags=ctx.tagged("cloudwatch-observability"),
        opts=pulumi.ResourceOptions.merge(
            ctx.child, pulumi.ResourceOptions(depends_on=[*groups.values(), policy, *node_groups])
        ),
    )
    return EksLogging(groups, policy, addon, control_plane)


def eks_logs_output(logging: EksLogging, logs: EksLogs) -> dict[str, Any]:
    first = next(iter(logging.groups.values()))
    plane = logging.control_plane
    return {
        "service": "CloudWatch Logs",
        "groups": [g.name for g in logging.groups.values()],
        **({"controlPlane": {"group": plane.name, "types": list(logs.control_plane)}} if plane is not None else {}),
        "retentionDays": logs.retention_days,
        "shipper": f"EKS add-on {logs.addon} {logs.version} (Fluent Bit; its metrics off)",
        "streams": "<node name>-<source>, one per node and container or journal source",
        "read": pulumi.Output.concat("aws logs tail ", first.name, " --follow"),
    }
