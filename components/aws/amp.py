"""monitoring.prometheus managed: the Amazon Managed Service for Prometheus workspace, its rule groups namespace (the
alert rules), its alert manager definition (monitoring.notify: to the cluster's SNS topic, whose access policy lets
AMP publish for this workspace and account only), and the node role's writes and queries on this workspace only
(the login node's Prometheus agent remote-writes, its Grafana queries; both sign with the instance role).

The workspace is encrypted with the cluster's key when `encryption` is set (the key policy lets AMP use it:
layout/aws/encryption.py). Decisions are layout/aws/monitoring.py's `AwsManaged`; this module only builds them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ..layout.aws.monitoring import AMP_PRINCIPAL, AMP_TOPIC_ACTIONS, RULES_NAMESPACE, TOPIC_PLACEHOLDER
from ..resources import invoke_options
from .identity import Identity
from .naming import Context


@dataclass(frozen=True)
class Amp:
    workspace: aws.amp.Workspace
    rules: aws.amp.RuleGroupNamespace
    alert_manager: aws.amp.AlertManagerDefinition | None
    topic_policy: aws.sns.TopicPolicy | None


def build_workspace(ctx: Context, topic: aws.sns.Topic | None) -> Amp | None:
    """The workspace and its rules; with monitoring.notify its alert manager and the topic's access policy. VM
    mode's and EKS's alike (`layout.amp`: the login node's agent or AMP's collector writes; eks_amp.py)."""
    managed = ctx.layout.amp
    if managed is None:
        return None
    workspace = aws.amp.Workspace(
        f"{ctx.name}-amp",
        alias=managed.alias,
        kms_key_arn=ctx.kms_key,
        tags=ctx.tagged("amp"),
        opts=ctx.child,
    )
    rules = aws.amp.RuleGroupNamespace(
        f"{ctx.name}-amp-rules",
        workspace_id=workspace.id,
        name=RULES_NAMESPACE,
        data=managed.rules,
        tags=ctx.tagged("amp-rules"),
        opts=ctx.child,
    )
    if managed.alert_manager is None or topic is None:
        return Amp(workspace, rules, None, None)
    account = aws.get_caller_identity_output(opts=invoke_options(ctx.parent)).account_id
    policy = aws.sns.TopicPolicy(
        f"{ctx.name}-alerts-amp",
        arn=topic.arn,
        policy=pulumi.Output.all(topic.arn, workspace.arn, account).apply(
            lambda v: _topic_policy(str(v[0]), str(v[1]), str(v[2]))
        ),
        opts=ctx.child,
    )
    definition = managed.alert_manager
    alert_manager = aws.amp.AlertManagerDefinition(
        f"{ctx.name}-amp-alertmanager",
        workspace_id=workspace.id,
        definition=topic.arn.apply(lambda arn: definition.replace(TOPIC_PLACEHOLDER, arn)),
        # the topic's policy first: AMP cannot publish (and says so only in its logs) without it
        opts=pulumi.ResourceOptions(parent=ctx.parent, depends_on=[policy]),
    )
    return Amp(workspace, rules, alert_manager, policy)


def _topic_policy(topic_arn: str, workspace_arn: str, account: str) -> str:
    """AMP-alertmanager-receiver: aps.amazonaws.com may publish for this workspace, from this account."""
    statement = {
        "Sid": "AmpPublishesClusterAlerts",
        "Effect": "Allow",
        "Principal": {"Service": AMP_PRINCIPAL},
        "Action": list(AMP_TOPIC_ACTIONS),
        "Resource": topic_arn,
        "Condition": {
            "ArnEquals": {"aws:SourceArn": workspace_arn},
            "StringEquals": {"aws:SourceAccount": account},
        },
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def build_workspace_policy(
    ctx: Context, identity: Identity, amp: Amp | None
) -> tuple[aws.iam.RolePolicy, dict[str, Any]] | None:
    """The node role (the login node's) may write to and query this workspace only."""
    plan = ctx.layout.monitoring
    if amp is None or plan is None or plan.managed is None or identity.role is None:
        return None
    actions = list(plan.managed.role_actions)

    def document(arn: str) -> str:
        statement = {"Sid": "WriteAndQueryClusterWorkspace", "Effect": "Allow", "Action": actions, "Resource": arn}
        return json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    policy = aws.iam.RolePolicy(
        f"{ctx.name}-node-role-amp",
        role=identity.role.name,
        policy=amp.workspace.arn.apply(document),
        opts=ctx.child,
    )
    return policy, {"action": actions, "resource": amp.workspace.arn}
