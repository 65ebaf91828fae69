"""Customer-managed keys (`encryption.key`): the cluster's KMS key (`auto`) or the key id given.

Decisions are in `components.layout.alicloud.encryption`, made by the layout's `plan()` (`layout.encryption`); the
modules that create disks take the key as `kms_key` (None: the ECS service key, every input as before). Destroying
the key makes every disk and snapshot encrypted with it unreadable: the created key is protected, kept on delete and
deletion-protected in KMS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from ..layout.alicloud.encryption import AliEncryption


@dataclass(frozen=True)
class Encryption:
    plan: AliEncryption
    key_id: pulumi.Input[str]
    key: alicloud.kms.Key | None  # key auto

    def output(self) -> dict[str, Any]:
        create = self.plan.create
        return {
            "key": self.key_id,
            "created": self.key is not None,
            "keySpec": create.key_spec if create else None,
            "rotation": create.rotation_interval if create else None,
            **({"kmsInstance": create.kms_instance} if create and create.kms_instance else {}),
        }


def build(parent: pulumi.Resource, name: str, layout: AlicloudLayout, tags: Mapping[str, str]) -> Encryption | None:
    enc = layout.encryption  # decided (and any refusal raised) in the layout's plan(), before any resource
    if enc is None:
        return None
    for note in enc.notes:
        pulumi.log.warn(note, resource=parent)
    if enc.create is None:
        assert enc.key_id is not None
        return Encryption(enc, enc.key_id, None)
    create = enc.create
    key = alicloud.kms.Key(
        f"{name}-kms",
        description=create.description,
        key_spec=create.key_spec,
        key_usage=create.key_usage,
        protection_level=create.protection_level,
        automatic_rotation=create.automatic_rotation,
        rotation_interval=create.rotation_interval,
        pending_window_in_days=create.pending_window_days,
        deletion_protection=create.deletion_protection,
        deletion_protection_description="gpu-cluster: the cluster's disks are encrypted with this key",
        dkms_instance_id=create.kms_instance,
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True),
    )
    return Encryption(enc, key.id, key)
