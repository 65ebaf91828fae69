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
    # monitoring.logs: CloudWatch Logs encrypts this group with the key (with EKS a pattern with `{cluster}`, which
    # components/aws fills with the EKS name's pattern)
    logs_group: str | None = None
    sns: bool = False  # monitoring.notify: the alert topic is encrypted with the key
    amp: bool = False  # monitoring.prometheus managed: the AMP workspace is encrypted with the key
    control_plane_group: str | None = None  # monitoring.logs.controlPlane: EKS's /aws/eks/<name>/cluster group


# CloudWatch Logs User Guide, encrypt-log-data-kms ("Step 2: Set permissions on the KMS key"): the regional service
# principal, these actions, the encryption context naming the group; SNS Developer Guide, sns-key-management: a
# publisher to an encrypted topic needs kms:GenerateDataKey* and kms:Decrypt on its key
LOGS_ACTIONS = ("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*")
SNS_PUBLISH_ACTIONS = ("kms:GenerateDataKey*", "kms:Decrypt")
# AMP encryption-at-rest-Amazon-Service-Prometheus: AMP uses a customer managed key through grants it creates for the
# workspace's callers (kms:CreateGrant, kms:DescribeKey, kms:Decrypt, kms:GenerateDataKey via aps.<region>); SNS
# Developer Guide, sns-key-management (AWS services publishing to an encrypted topic): the service principal needs
# kms:GenerateDataKey* and kms:Decrypt on the topic's key
AMP_PRINCIPAL = "aps.amazonaws.com"


def plan(
    spec: ClusterSpec, logs_group: str | None = None, control_plane_group: str | None = None
) -> AwsEncryption | None:
    """`logs_group`: monitoring.logs' group (layout/aws/logs.py), encrypted with the key too; `control_plane_group`:
    EKS's control plane group (layout/aws/eks_logs.py), too."""
    if spec.encryption_key == "provider":
        return None
    data = capabilities.encryption()
    nvme = scratch_for(spec, (), ()).kind == "nvme"
    notes = (one_line(data["instanceStoreNote"]),) if nvme else ()
    sns = bool(spec.monitoring.notify) and spec.kubernetes is None
    amp = spec.prometheus == "managed" and spec.kubernetes is None
    if spec.encryption_key != "auto":
        users = [
            *(
                [f"CloudWatch Logs (logs.{spec.region}.amazonaws.com, for {_and(logs_group, control_plane_group)})"]
                if logs_group
                else []
            ),
            *(["the node role publishing to the alert topic through SNS"] if sns and not amp else []),
            *([f"Amazon Managed Service for Prometheus (aps.{spec.region}.amazonaws.com)"] if amp else []),
            *([f"{AMP_PRINCIPAL} publishing to the alert topic"] if sns and amp else []),
        ]
        if users:  # a key we did not create: its policy is its owner's to extend
            notes = (*notes, f"the given key's policy must let {' and '.join(users)} use it (docs/aws.md)")
        return AwsEncryption(None, spec.encryption_key, notes, logs_group, sns, amp, control_plane_group)
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
    return AwsEncryption(key, None, notes, logs_group, sns, amp, control_plane_group)


def _and(logs_group: str, control_plane_group: str | None) -> str:
    return f"{logs_group} and {control_plane_group}" if control_plane_group else logs_group


def key_policy(
    key: AwsKey,
    partition: str,
    account: str,
    region: str,
    logs_group: str | None = None,
    sns: bool = False,
    amp: bool = False,
    control_plane_group: str | None = None,
) -> str:
    """The key policy (statements and their sources: capabilities `encryption.auto`; CloudWatch Logs and SNS only
    when monitoring.logs / monitoring.notify use the key, so other clusters' policies stay as they were)."""
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
    if logs_group is not None:
        groups = [logs_group, *([control_plane_group] if control_plane_group else [])]
        arns = [f"arn:{partition}:logs:{region}:{account}:log-group:{g}" for g in groups]
        statements.append(
            {
                "Sid": "CloudWatchLogsEncryptsTheClusterGroup",
                "Effect": "Allow",
                "Principal": {"Service": f"logs.{region}.amazonaws.com"},
                "Action": list(LOGS_ACTIONS),
                "Resource": "*",
                "Condition": {
                    # EKS's groups are a pattern (their cluster's generated name, each group): ArnLike matches it
                    ("ArnLike" if any("*" in g for g in groups) else "ArnEquals"): {
                        # one group: the string as before (a deployed key's policy stays byte-identical)
                        "kms:EncryptionContext:aws:logs:arn": arns[0] if len(arns) == 1 else arns
                    }
                },
            }
        )
    if amp:
        statements.append(
            {
                "Sid": "AccountUsesTheKeyThroughAmp",
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": [*use, "kms:CreateGrant"],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"kms:CallerAccount": account, "kms:ViaService": f"aps.{region}.amazonaws.com"}
                },
            }
        )
    if sns and amp:  # the workspace's alert manager publishes to the encrypted topic as the service
        statements.append(
            {
                "Sid": "AmpPublishesToTheAlertTopic",
                "Effect": "Allow",
                "Principal": {"Service": AMP_PRINCIPAL},
                "Action": list(SNS_PUBLISH_ACTIONS),
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:SourceAccount": account}},
            }
        )
    elif sns:
        statements.append(
            {
                "Sid": "AccountPublishesToTheAlertTopic",
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": list(SNS_PUBLISH_ACTIONS),
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"kms:CallerAccount": account, "kms:ViaService": f"sns.{region}.amazonaws.com"}
                },
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)
