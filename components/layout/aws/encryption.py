"""Customer-managed keys on AWS (pure): which KMS key encrypts every disk and filesystem the stack creates.

`encryption.key: provider` (the default) gives no `AwsEncryption`: every resource plans exactly as before (the AWS
managed keys). `auto` creates one symmetric KMS key per cluster with rotation, the longest deletion window and a key
policy (`key_policy`) for the account, the services that use it and EC2 Auto Scaling's service-linked role; a key
ARN is used as given and nothing is created. The facts are the `encryption.auto` keys of the capabilities file;
`plan()` runs in the layout's `plan()` (`AwsLayout.encryption`); `components/aws/encryption.py` maps it onto
pulumi-aws.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ...spec import ClusterSpec
from ...text import one_line
from .. import scratch_for
from . import data as capabilities


@dataclass(frozen=True)
class AwsKey:
    """What `key: auto` creates: a KMS key and its alias."""

    description: str
    alias: str
    deletion_window_days: int
    rotation: bool
    via_services: tuple[str, ...]  # kms:ViaService prefixes: <service>.<region>.amazonaws.com
    use_actions: tuple[str, ...]
    autoscaling_role: str  # the service-linked role's path after arn:<partition>:iam::<account>:


@dataclass(frozen=True)
class AwsEncryption:
    create: AwsKey | None  # key auto; None: an existing key
    key_arn: str | None  # the given key ARN (existing key), else None (the created key's ARN, known at deploy)
    notes: tuple[str, ...]  # what the key does not cover, said in the plan


def plan(spec: ClusterSpec) -> AwsEncryption | None:
    if spec.encryption_key == "provider":
        return None
    data = capabilities.encryption()
    nvme = scratch_for(spec, (), ()).kind == "nvme"
    notes = (one_line(data["instanceStoreNote"]),) if nvme else ()
    if spec.encryption_key != "auto":
        return AwsEncryption(None, spec.encryption_key, notes)
    auto = data["auto"]
    key = AwsKey(
        description=f"gpu-cluster {spec.name}: disks and filesystems of the cluster",
        alias=auto["aliasPrefix"] + re.sub(f"[^{auto['aliasCharacters']}]", "-", f"{spec.name}-{spec.stack}"),
        deletion_window_days=int(auto["deletionWindowInDays"]),
        rotation=bool(auto["rotation"]),
        via_services=tuple(auto["viaServices"]),
        use_actions=tuple(auto["useActions"]),
        autoscaling_role=str(auto["autoScalingRole"]),
    )
    return AwsEncryption(key, None, notes)


def key_policy(key: AwsKey, partition: str, account: str, region: str) -> str:
    """The key policy (statements and their sources: capabilities `encryption.auto`)."""
    root = f"arn:{partition}:iam::{account}:root"
    autoscaling = f"arn:{partition}:iam::{account}:{key.autoscaling_role}"
    use = list(key.use_actions)
    statements = [
        {
            "Sid": "AccountAdministersTheKey",
            "Effect": "Allow",
            "Principal": {"AWS": root},
            "Action": "kms:*",
            "Resource": "*",
        },
        {
            "Sid": "AccountUsesTheKeyThroughItsServices",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": [*use, "kms:CreateGrant"],
            "Resource": "*",
            "Condition": {
                "StringEquals": {
                    "kms:CallerAccount": account,
                    "kms:ViaService": [f"{s}.{region}.amazonaws.com" for s in key.via_services],
                }
            },
        },
        {
            "Sid": "AutoScalingUsesTheKey",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": use,
            "Resource": "*",
            "Condition": {"ArnEquals": {"aws:PrincipalArn": autoscaling}},
        },
        {
            "Sid": "AutoScalingAttachesVolumes",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": "kms:CreateGrant",
            "Resource": "*",
            "Condition": {
                "ArnEquals": {"aws:PrincipalArn": autoscaling},
                "Bool": {"kms:GrantIsForAWSResource": "true"},
            },
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)
