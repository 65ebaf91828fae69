"""monitoring.notify: the cluster's SNS topic, one email subscription per address, and the node role's sns:Publish
on that topic only (the login node carries the node instance profile; its Alertmanager signs with it: sigv4).

The topic is encrypted with the cluster's key when `encryption` is set (the key policy lets the account's principals
use it through SNS: layout/aws/encryption.py). An email subscription stays pending until its address confirms it
(SNS sends the confirmation mail); the plan says so.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi_aws as aws

from ..layout.aws.monitoring import PUBLISH_ACTION
from ..resources import email_suffixes
from .identity import Identity
from .naming import Context


def build_alerts(ctx: Context) -> tuple[aws.sns.Topic, list[aws.sns.TopicSubscription]] | None:
    notify = ctx.layout.notify  # the login node's Alertmanager or AMP's alert manager publishes
    if not notify:
        return None
    topic = aws.sns.Topic(
        f"{ctx.name}-alerts",
        display_name=f"gpu-cluster {ctx.layout.spec.name} alerts"[:100],
        kms_master_key_id=ctx.kms_key,
        tags=ctx.tagged("alerts"),
        opts=ctx.child,
    )
    subscriptions = [
        aws.sns.TopicSubscription(
            f"{ctx.name}-alerts-{suffix}", topic=topic.arn, protocol="email", endpoint=email, opts=ctx.child
        )
        for email, suffix in zip(notify, email_suffixes(notify), strict=True)
    ]
    return topic, subscriptions


def build_alerts_policy(
    ctx: Context, identity: Identity, topic: aws.sns.Topic | None
) -> tuple[aws.iam.RolePolicy, dict[str, Any]] | None:
    if topic is None or identity.role is None:
        return None

    def document(arn: str) -> str:
        statement = {"Sid": "PublishClusterAlerts", "Effect": "Allow", "Action": PUBLISH_ACTION, "Resource": arn}
        return json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    policy = aws.iam.RolePolicy(
        f"{ctx.name}-node-role-alerts", role=identity.role.name, policy=topic.arn.apply(document), opts=ctx.child
    )
    return policy, {"action": PUBLISH_ACTION, "resource": topic.arn}
