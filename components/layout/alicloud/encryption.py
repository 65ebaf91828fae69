"""Customer-managed keys on Alibaba Cloud (pure): which KMS key encrypts the ESSD disks the stack creates.

`encryption.key: provider` (the default) gives no `AliEncryption`: every disk plans exactly as before (the ECS
service key). `auto` creates one KMS default key per cluster, rotated and deletion-protected; a key id is used as
given. The key goes on every ESSD the stack creates: the nodes' (ECS instances or the ESS scaling configuration)
and the ACK pools' system and data disks, the login and Slurm head nodes' system disks, and the General-purpose NAS
the stack creates (`encrypt_type` 2 with the key: `nas_encrypt_type`). SM4 (`algorithm: sm4`, with `kmsInstance`):
the key is an Aliyun_SM4 key created in that existing KMS instance and the system disks' own cipher is SM4-128; the
spec refuses what has no SM4 path (ACK pools, launch templates, data disks); the NAS is given the SM4 key with a
warning (NAS's acceptance of an SM4 key is unsourced). Facts: capabilities `encryption:` (`sm4:`, `nas:`);
`components/alicloud/encryption.py` maps this.
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
    protection_level: str | None  # None: the KMS instance's kind decides (kms/key.py protection_level)
    automatic_rotation: str
    rotation_interval: str | None
    pending_window_days: int
    deletion_protection: str
    kms_instance: str | None = None  # created in this existing KMS instance (kst-...); None: a KMS default key


@dataclass(frozen=True)
class AliEncryption:
    create: AliKey | None  # key auto; None: an existing key
    key_id: str | None  # the given key id, else None (the created key's id, known at deploy)
    notes: tuple[str, ...]  # what the key does not cover, said in the plan
    # sm4: the system disks' own cipher (ecs.Instance and ess.ScalingConfiguration spell it differently); None: the
    # provider's default (aes-256), every input as before
    instance_disk_algorithm: str | None = None
    ess_disk_algorithm: str | None = None
    # the NAS the stack creates (storage.shared): encrypt_type 2 with the key; None: no such NAS, the inputs as before
    nas_encrypt_type: int | None = None


def plan(spec: ClusterSpec) -> AliEncryption | None:
    if spec.encryption_key == "provider":
        return None
    data: dict[str, Any] = capability_data("alicloud")["encryption"]
    nas = spec.storage.shared is not None and not spec.storage.shared.existing  # the NAS the stack creates
    sm4 = spec.encryption_key == "auto" and spec.encryption_algorithm == "sm4"
    nas_notes = (data["nas"]["note"], *((data["nas"]["sm4Note"],) if sm4 else ())) if nas else ()
    notes = (one_line(data["ecsRoleNote"]), *map(one_line, nas_notes))
    nas_encrypt_type = int(data["nas"]["encryptType"]) if nas else None
    if spec.encryption_key != "auto":
        return AliEncryption(None, spec.encryption_key, notes, nas_encrypt_type=nas_encrypt_type)
    if sm4:
        return _sm4(spec, data["sm4"], notes, nas_encrypt_type)
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
    return AliEncryption(key, None, notes, nas_encrypt_type=nas_encrypt_type)


def _sm4(spec: ClusterSpec, sm4: dict[str, Any], notes: tuple[str, ...], nas_encrypt_type: int | None) -> AliEncryption:
    """An Aliyun_SM4 key in the given KMS instance (the spec has refused sm4 without one)."""
    assert spec.encryption_kms_instance is not None
    key = AliKey(
        description=f"gpu-cluster {spec.name}: ESSD disks of the cluster (SM4)",
        key_spec=str(sm4["keySpec"]),
        key_usage=str(sm4["keyUsage"]),
        protection_level=None,
        automatic_rotation=str(sm4["automaticRotation"]),
        rotation_interval=None,
        pending_window_days=int(sm4["pendingWindowInDays"]),
        deletion_protection=str(sm4["deletionProtection"]),
        kms_instance=spec.encryption_kms_instance,
    )
    return AliEncryption(
        key, None, notes, str(sm4["instanceDiskAlgorithm"]), str(sm4["essDiskAlgorithm"]), nas_encrypt_type
    )
