"""Customer-managed keys on Alibaba Cloud (pure): which KMS key encrypts the ESSD disks the stack creates.

`encryption.key: provider` (the default) gives no `AliEncryption`: every disk plans exactly as before (the ECS
service key). `auto` creates one KMS default key per cluster, rotated and deletion-protected; a key id is used as
given. The key goes on every ESSD the stack creates: the nodes' (ECS instances or the ESS scaling configuration)
and the ACK pools' system and data disks, the login and Slurm head nodes' system disks. General-purpose NAS takes no
customer key (a warning). SM4 (`algorithm: sm4`) is refused by the spec until the data lists regions (capabilities
`encryption.sm4Regions`). Facts: capabilities `encryption:`; `components/alicloud/encryption.py` maps this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...catalog.capabilities import capability_data
from ...spec import ClusterSpec
from ...text import one_line


@dataclass(frozen=True)
class AliKey:
    """What `key: auto` creates: a KMS default key."""

    description: str
    key_spec: str
    key_usage: str
    protection_level: str
    automatic_rotation: str
    rotation_interval: str
    pending_window_days: int
    deletion_protection: str


@dataclass(frozen=True)
class AliEncryption:
    create: AliKey | None  # key auto; None: an existing key
    key_id: str | None  # the given key id, else None (the created key's id, known at deploy)
    notes: tuple[str, ...]  # what the key does not cover, said in the plan


def plan(spec: ClusterSpec) -> AliEncryption | None:
    if spec.encryption_key == "provider":
        return None
    data: dict[str, Any] = capability_data("alicloud")["encryption"]
    nas = spec.storage.shared is not None and not spec.storage.shared.existing  # the NAS the stack creates
    notes = (
        one_line(data["ecsRoleNote"]),
        *((one_line(data["nasNote"]),) if nas else ()),
    )
    if spec.encryption_key != "auto":
        return AliEncryption(None, spec.encryption_key, notes)
    auto = data["auto"]
    key = AliKey(
        description=f"gpu-cluster {spec.name}: ESSD disks of the cluster",
        key_spec=str(auto["keySpec"]),
        key_usage=str(auto["keyUsage"]),
        protection_level=str(auto["protectionLevel"]),
        automatic_rotation=str(auto["automaticRotation"]),
        rotation_interval=str(auto["rotationInterval"]),
        pending_window_days=int(auto["pendingWindowInDays"]),
        deletion_protection=str(auto["deletionProtection"]),
    )
    return AliEncryption(key, None, notes)
