"""The DEW (KMS) key of the cluster's EVS disks, as the layout decided (components/layout/huaweicloud/encryption.py).

Deleting the key makes every disk and snapshot encrypted with it unreadable: the created key is protected and kept
on delete (a `pulumi destroy` leaves it; DEW deletes a key only after its pending days when asked to).
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..layout.huaweicloud import HuaweiLayout


def build(parent: pulumi.Resource, name: str, layout: HuaweiLayout, tags: Mapping[str, str]) -> pulumi.Output[str]:
    enc = layout.encryption
    if enc.create is None:
        assert enc.key_id is not None
        return pulumi.Output.from_input(enc.key_id)
    key = enc.create
    created = huaweicloud.dew.Key(
        f"{name}-key",
        key_alias=key.alias,
        key_description=key.description,
        key_algorithm=key.algorithm,
        key_usage=key.usage,
        rotation_enabled=key.rotation_enabled,
        rotation_interval=key.rotation_interval_days,
        pending_days=str(key.pending_days),
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True),
    )
    key_id: pulumi.Output[str] = created.id
    return key_id
