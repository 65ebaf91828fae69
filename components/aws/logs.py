"""monitoring.logs: the cluster's CloudWatch Logs group and the node role's writes into it (layout/aws/logs.py decides
the name, the retention, the files and the actions).

The group carries the cluster's key when `encryption` is set (the key policy lets CloudWatch Logs use it for this
group: layout/aws/encryption.py). The role may create streams, list them and put events in this group only; with
identity.existing there is no role of ours, and the profile's owner grants the same (docs/aws.md).
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from .identity import Identity
from .naming import Context


def build_log_group(ctx: Context) -> aws.cloudwatch.LogGroup | None:
    logs = ctx.layout.logs
    if logs is None:
        return None
    return aws.cloudwatch.LogGroup(
        f"{ctx.name}-logs",
        name=logs.group_name,
        retention_in_days=logs.retention_days,
        kms_key_id=ctx.kms_key,
        tags=ctx.tagged("logs"),
        opts=ctx.child,
    )


def build_logs_policy(
    ctx: Context, identity: Identity, group: aws.cloudwatch.LogGroup | None, label: str = "node-role"
) -> tuple[aws.iam.RolePolicy, dict[str, Any]] | None:
    """The agent's writes: on the group's ARN (CreateLogStream, DescribeLogStreams: the log-group resource) and its
    streams (`<arn>:*`, PutLogEvents: the log-stream resource). `label`: whose role (node-role, head-role)."""
    logs = ctx.layout.logs
    if logs is None or group is None or identity.role is None:
        return None
    actions = list(logs.actions)

    def document(arn: str) -> str:
        statement = {
            "Sid": "ShipLogsToClusterGroup",
            "Effect": "Allow",
            "Action": actions,
            "Resource": [arn, f"{arn}:*"],
        }
        return json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    policy = aws.iam.RolePolicy(
        f"{ctx.name}-{label}-logs", role=identity.role.name, policy=group.arn.apply(document), opts=ctx.child
    )
    return policy, {"action": actions, "resource": group.arn}


def logs_output(group: aws.cloudwatch.LogGroup | None, ctx: Context) -> dict[str, Any] | None:
    logs = ctx.layout.logs
    if group is None or logs is None:
        return None
    return {
        "service": "CloudWatch Logs",
        "group": group.name,
        "retentionDays": logs.retention_days,
        "streams": "<instance id>/<file name>, one per node and file",
        "read": pulumi.Output.concat("aws logs tail ", group.name, " --follow --log-stream-name-prefix <instance id>"),
    }
