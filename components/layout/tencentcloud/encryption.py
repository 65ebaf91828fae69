"""The KMS key of the cluster's CBS data disks (pure): `encryption.key: auto` plans one symmetric key per cluster,
rotated, its deletion window the longest KMS takes; a key id is used as given; `provider` keeps the CBS-managed key
(the disks are still encrypted). The system disks cannot take a key through tencentcloud-iac-pulumi 0.2.3: a key
other than provider says so in a warning. Facts: capabilities/tencentcloud.yaml `encryption:`;
components/tencentcloud/encryption.py builds it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...errors import CLUSTER_KEY
from ...spec import ClusterSpec
from ...text import one_line
from .data import tencent_data

ALIAS_MAX = 60  # CreateKey Alias "1-60个字母数字 - _ 的组合" (tencentcloud-sdk-python-kms CreateKeyRequest)


@dataclass(frozen=True)
class KmsKey:
    """What the stack creates: a symmetric KMS key."""

    alias: str
    description: str
    usage: str
    rotation: bool
    pending_delete_days: int


@dataclass(frozen=True)
class TencentEncryption:
    create: KmsKey | None  # None: an existing key
    key_id: str | None  # the given key id; None with create (known at deploy)


def plan(spec: ClusterSpec, warnings: list[str]) -> TencentEncryption | None:
    """None with `provider`: the disks keep the CBS-managed key."""
    key = spec.encryption_key
    if key == "provider":
        return None
    data: dict[str, Any] = tencent_data()["encryption"]
    warnings.append(f"{CLUSTER_KEY}.encryption.key: {key}: {one_line(data['systemDiskNote'])}")
    if key != "auto":
        return TencentEncryption(None, key)
    auto = data["auto"]
    return TencentEncryption(
        KmsKey(
            # alias: letters, digits, '_' and '-', starting with a letter or digit (kms.Key docstring)
            alias=re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.name}-{spec.stack}")[:ALIAS_MAX],
            description=f"gpu-cluster {spec.name}: CBS data disks of the cluster",
            usage=str(auto["keyUsage"]),
            rotation=bool(auto["rotation"]),
            pending_delete_days=int(auto["pendingDeleteDays"]),
        ),
        None,
    )
