"""How people reach the nodes: today an EC2 key pair when `sshPublicKey` is set."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from .naming import Context


def build_key_pair(ctx: Context) -> aws.ec2.KeyPair | None:
    spec = ctx.layout.spec
    if not spec.ssh_public_key:
        return None
    return aws.ec2.KeyPair(
        f"{ctx.name}-key",
        public_key=pulumi.Output.secret(spec.ssh_public_key) if spec.secret_config else spec.ssh_public_key,
        tags=ctx.tagged("key"),
        opts=ctx.child,
    )
