"""The DEW (KMS) key that encrypts every EVS disk the stack creates (pure).

Huawei EVS disks are encrypted only when given a KMS key id (ecs.Instance system_disk_kms_key_id, data_disks
kms_key_id): there is no provider-managed encryption to fall back on. So `auto` and `provider` (the default) both
plan one DEW key per cluster, rotated yearly, and `provider` says so in a warning; a key id is used as given.
Facts: capabilities/huaweicloud.yaml `encryption:`; components/huaweicloud/encryption.py maps this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...errors import CLUSTER_KEY
from ...spec import ClusterSpec
from ...text import one_line
from .data import huawei_data


@dataclass(frozen=True)
class DewKey:
    """What the stack creates: a symmetric DEW key."""

    alias: str
    description: str
    algorithm: str
    usage: str
    rotation_enabled: bool
    rotation_interval_days: int
    pending_days: int


@dataclass(frozen=True)
class HuaweiEncryption:
    create: DewKey | None  # None: an existing key
    key_id: str | None  # the given key id, else None (the created key's id, known at deploy)


def plan(spec: ClusterSpec, warnings: list[str]) -> HuaweiEncryption:
    data: dict[str, Any] = huawei_data()["encryption"]
    if spec.encryption_key not in ("provider", "auto"):
        return HuaweiEncryption(None, spec.encryption_key)
    if spec.encryption_key == "provider":
        warnings.append(f"{CLUSTER_KEY}.encryption.key: {one_line(data['providerNote'])}")
    auto = data["auto"]
    key = DewKey(
        # key_alias: letters, digits, _ - : / only (dew.Key docstring)
        alias=re.sub(r"[^A-Za-z0-9_:/-]", "-", f"gpu-cluster/{spec.name}-{spec.stack}")[:255],
        description=f"gpu-cluster {spec.name}: EVS disks of the cluster",
        algorithm=str(auto["keyAlgorithm"]),
        usage=str(auto["keyUsage"]),
        rotation_enabled=bool(auto["rotationEnabled"]),
        rotation_interval_days=int(auto["rotationIntervalDays"]),
        pending_days=int(auto["pendingDays"]),
    )
    return HuaweiEncryption(key, None)
