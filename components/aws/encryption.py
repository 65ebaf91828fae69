"""Customer-managed keys (`encryption.key`): the cluster's KMS key and alias (`auto`) or the key ARN given.

Decisions are in `components.layout.aws.encryption`, taken by the layout's `plan()` with every other refusal
(`AwsLayout.encryption`); the modules that create disks and filesystems read the key from `Context.kms_key` (None:
the AWS managed keys, every input as before). Destroying the key destroys every disk, snapshot and filesystem
encrypted with it, so the created key is protected and kept on delete (a `pulumi destroy` leaves it, scheduled for
nothing, until someone deletes it by hand).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pulumi
import pulumi_aws as aws

from ..layout.aws import AwsEncryption, key_policy
from ..layout.aws.eks_logs import CLUSTER as EKS_CLUSTER
from ..resources import invoke_options
from .naming import Context


@dataclass(frozen=True)
class Encryption:
    plan: AwsEncryption
    key_arn: pulumi.Input[str]
    key: aws.kms.Key | None  # key auto
    alias: aws.kms.Alias | None

    def output(self) -> dict[str, Any]:
        return {
            "key": self.key_arn,
            "created": self.key is not None,
            "alias": self.alias.name if self.alias else None,
            "rotation": self.plan.create.rotation if self.plan.create else None,
        }


def build_key(ctx: Context) -> tuple[Context, Encryption | None]:
    """The key, and the context the other modules build with (its `kms_key` set)."""
    enc = ctx.layout.encryption
    if enc is None:
        return ctx, None
    for note in enc.notes:
        pulumi.log.warn(note, resource=ctx.parent)
    if enc.create is None:
        assert enc.key_arn is not None
        return replace(ctx, kms_key=enc.key_arn), Encryption(enc, enc.key_arn, None, None)
    create, region = enc.create, ctx.layout.spec.region
    caller = aws.get_caller_identity_output(opts=invoke_options(ctx.parent))
    partition = aws.get_partition_output(opts=invoke_options(ctx.parent)).partition
    # EKS's Container Insights groups carry the cluster's EKS name, generated at deploy after the key: the key
    # names them by the name's pattern (Pulumi's auto-name: the logical name, a dash and a random suffix), or by the
    # name itself where kubernetes.clusterName writes it (the layout filled it in)
    logs_group = enc.logs_group.replace(EKS_CLUSTER, f"{ctx.name}-eks-*") if enc.logs_group else None
    policy = pulumi.Output.all(partition, caller.account_id).apply(
        lambda v: key_policy(
            create, str(v[0]), str(v[1]), region, logs_group, enc.sns, enc.amp, enc.control_plane_group
        )
    )
    key = aws.kms.Key(
        f"{ctx.name}-kms",
        description=create.description,
        enable_key_rotation=create.rotation,
        deletion_window_in_days=create.deletion_window_days,
        policy=policy,
        tags=ctx.tagged("kms"),
        opts=pulumi.ResourceOptions(parent=ctx.parent, protect=True, retain_on_delete=True),
    )
    alias = aws.kms.Alias(f"{ctx.name}-kms-alias", name=create.alias, target_key_id=key.key_id, opts=ctx.child)
    return replace(ctx, kms_key=key.arn), Encryption(enc, key.arn, key, alias)
