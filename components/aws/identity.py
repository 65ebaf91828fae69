"""The nodes' IAM identity: a role EC2 may assume, its managed policies and an instance profile.

With `identity.existing` the named instance profile is used and nothing is created. The launch
template (managed groups), the instances (instances mode) and the login node all carry the profile.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ..layout.aws import health_hook_action
from ..resources import from_config, invoke_options
from .naming import Context


@dataclass(frozen=True)
class Identity:
    profile_name: pulumi.Input[str]  # what EC2 takes (`iamInstanceProfile`)
    role: aws.iam.Role | None  # None with an existing profile
    profile: aws.iam.InstanceProfile | None
    grants: tuple[pulumi.Input[str], ...]  # the managed policy ARNs the role carries: all that nodes may do
    attachments: tuple[aws.iam.RolePolicyAttachment, ...] = ()  # what must exist before EKS uses the role

    def output(self, kind: str, inline: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The stack output `identity`: everything the nodes are allowed, listed (`inline`: the inline grants)."""
        out = {
            "kind": kind,
            "name": self.profile_name if self.profile is None else self.profile.name,
            "existing": self.profile is None,
            "grants": list(self.grants),
        }
        if inline:
            out["inline"] = inline
        return out


def _attachment_suffix(arn: str) -> str:
    """A stable logical-name suffix per policy: its name, and the account for customer policies."""
    account, _, path = arn.split(":", 4)[4].partition(":policy/")
    slug = re.sub(r"[^a-z0-9-]+", "-", path.lower()).strip("-")
    return slug if account == "aws" else f"{account}-{slug}"


def service_role(ctx: Context, suffix: str, service: str, description: str) -> aws.iam.Role:
    """An IAM role only `service` (a service principal) may assume, named and tagged `<cluster>-<suffix>`."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    }
    return aws.iam.Role(
        f"{ctx.name}-{suffix}",
        assume_role_policy=json.dumps(trust),
        description=description,
        tags=ctx.tagged(suffix),
        opts=ctx.child,
    )


def build_identity(ctx: Context) -> Identity:
    ident = ctx.layout.identity
    spec = ctx.layout.spec
    if ident.existing_profile is not None:
        return Identity(from_config(spec, ident.existing_profile), None, None, ())
    role = service_role(ctx, "node-role", ident.trust_service, f"gpu-cluster {spec.name} nodes")
    grants: list[pulumi.Input[str]] = []
    attachments = []
    for arn in ident.policies:
        # ARNs from identity.policies are config values (secret when the config holds secrets)
        value = from_config(spec, arn) if arn in spec.identity.policies else arn
        grants.append(value)
        attachments.append(
            aws.iam.RolePolicyAttachment(
                f"{ctx.name}-node-role-{_attachment_suffix(arn)}",
                role=role.name,
                policy_arn=value,
                opts=ctx.child,
            )
        )
    profile = aws.iam.InstanceProfile(
        f"{ctx.name}-node-profile",
        role=role.name,
        tags=ctx.tagged("node-profile"),
        opts=ctx.child,
    )
    return Identity(profile.name, role, profile, tuple(grants), tuple(attachments))


def build_health_policy(
    ctx: Context, identity: Identity, group: aws.autoscaling.Group | None
) -> tuple[aws.iam.RolePolicy, dict[str, Any]] | None:
    """health.action replace: the node role may mark instances Unhealthy in exactly its own Auto Scaling group.

    An inline policy whose only statement is `autoscaling:SetInstanceHealth` on the group's ARN (the action's
    resource type is the Auto Scaling group: catalog/capabilities/aws.yaml `healthHook`). With
    identity.existing there is no role of ours to put it on: the hook then needs that grant from its owner.
    """
    if not ctx.layout.health_hook or identity.role is None or group is None:
        return None
    action = health_hook_action()
    policy = aws.iam.RolePolicy(
        f"{ctx.name}-node-role-self-removal",
        role=identity.role.name,
        policy=group.arn.apply(
            lambda arn: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {"Sid": "SelfRemovalFromOwnGroup", "Effect": "Allow", "Action": action, "Resource": arn}
                    ],
                }
            )
        ),
        opts=ctx.child,
    )
    return policy, {"action": action, "resource": group.arn}


def build_drain_policy(
    ctx: Context, identity: Identity, group: aws.autoscaling.Group | None
) -> tuple[aws.iam.RolePolicy, list[dict[str, Any]]] | None:
    """The drain hook: the node role may complete (and extend, by heartbeat) the lifecycle action of exactly its own
    Auto Scaling group, once the node has drained (catalog/update.yaml aws.hook.actions: the resource type is the
    group), and find that group's name from its instance id (a Describe action: no resource type, Resource "*").
    With identity.existing the grant is the profile owner's to make."""
    drain = ctx.layout.drain_hook
    if drain is None or identity.role is None or group is None:
        return None
    actions, describe = list(drain.actions), list(drain.describe)

    def document(arn: str) -> str:
        statements: list[dict[str, Any]] = [
            {"Sid": "DrainOwnGroup", "Effect": "Allow", "Action": actions, "Resource": arn}
        ]
        if describe:
            statements.append({"Sid": "FindOwnGroup", "Effect": "Allow", "Action": describe, "Resource": "*"})
        return json.dumps({"Version": "2012-10-17", "Statement": statements})

    policy = aws.iam.RolePolicy(
        f"{ctx.name}-node-role-drain", role=identity.role.name, policy=group.arn.apply(document), opts=ctx.child
    )
    inline: list[dict[str, Any]] = [{"action": actions, "resource": group.arn}]
    if describe:
        inline.append({"action": describe, "resource": "*"})
    return policy, inline


def build_scaling_policy(
    ctx: Context, identity: Identity, queue: aws.sqs.Queue | None
) -> tuple[aws.iam.RolePolicy, list[dict[str, Any]]] | None:
    """Elastic fleets: the node role may put the GPU metric into its one namespace, and consume its own queue.

    `cloudwatch:PutMetricData` has no resource ARN; the `cloudwatch:namespace` condition is what scopes it
    (catalog/scaling/aws.yaml gpuUtilization.permissionSource). With queue auto the workers on the nodes receive
    and delete messages of that queue only. With identity.existing the grant is the profile owner's to make.
    """
    scaling = ctx.layout.scaling
    if scaling is None or identity.role is None:
        return None
    metric = scaling.permission
    if metric is None and queue is None:
        return None
    consume = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]

    def document(queue_arn: str | None) -> str:
        statements = [metric] if metric is not None else []
        if queue_arn is not None:
            statements.append({"Sid": "ConsumeOwnQueue", "Effect": "Allow", "Action": consume, "Resource": queue_arn})
        return json.dumps({"Version": "2012-10-17", "Statement": statements})

    policy_doc: pulumi.Input[str] = queue.arn.apply(document) if queue is not None else document(None)
    policy = aws.iam.RolePolicy(
        f"{ctx.name}-node-role-scaling",
        role=identity.role.name,
        policy=policy_doc,
        opts=ctx.child,
    )
    inline: list[dict[str, Any]] = []
    if metric is not None:
        inline.append({"action": metric["Action"], "namespace": scaling.gpu.namespace if scaling.gpu else None})
    if queue is not None:
        inline.append({"action": consume, "resource": queue.arn})
    return policy, inline


def build_monitoring_policy(ctx: Context, identity: Identity) -> tuple[aws.iam.RolePolicy, dict[str, Any]] | None:
    """monitoring.prometheus selfHosted: the login node's Prometheus lists the instances (ec2_sd_configs).

    The login node carries the node instance profile, so the grant is on the node role: ec2:DescribeInstances, which
    has no resource type (Resource "*"; catalog/monitoring.yaml selfHosted.aws) and reads nothing but instance
    metadata. With identity.existing there is no role of ours: the profile's owner grants it (docs/monitoring.md).
    """
    plan = ctx.layout.monitoring
    if plan is None or identity.role is None:
        return None
    actions = list(plan.actions)
    document = {
        "Version": "2012-10-17",
        "Statement": [{"Sid": "DiscoverClusterNodes", "Effect": "Allow", "Action": actions, "Resource": "*"}],
    }
    policy = aws.iam.RolePolicy(
        f"{ctx.name}-node-role-monitoring", role=identity.role.name, policy=json.dumps(document), opts=ctx.child
    )
    return policy, {"action": actions, "resource": "*"}


def build_driver_policy(ctx: Context, identity: Identity) -> tuple[aws.iam.RolePolicy, dict[str, Any]] | None:
    """A vGPU slice (g6f/gr6f on `image: auto`): the node role may read its GRID driver's runfile, s3:GetObject on
    that one object of AWS's ec2-linux-nvidia-drivers bucket in the deploy's partition (layout/aws/identity.py
    driver_grant). Only when a slice node exists; with identity.existing the profile's owner grants it
    (docs/aws.md)."""
    grants = ctx.layout.driver_grants
    if not grants or identity.role is None:
        return None
    partition = aws.get_partition_output(opts=invoke_options(ctx.parent)).partition
    actions = sorted({g.action for g in grants})

    def document(part: str) -> str:
        resources = [f"arn:{part}:s3:::{g.bucket}/{g.key}" for g in grants]
        statement = {"Sid": "ReadGridDriver", "Effect": "Allow", "Action": actions, "Resource": resources}
        return json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    policy = aws.iam.RolePolicy(
        f"{ctx.name}-node-role-grid-driver",
        role=identity.role.name,
        policy=partition.apply(document),
        opts=ctx.child,
    )
    objects = [f"s3://{g.bucket}/{g.key}" for g in grants]
    return policy, {"action": actions, "resource": objects}
