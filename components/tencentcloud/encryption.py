"""The KMS key of the cluster's CBS data disks, as the layout decided (components/layout/tencentcloud/encryption.py).

Deleting the key makes every disk and snapshot encrypted with it unreadable: the created key is protected and kept
on delete (a `pulumi destroy` leaves it; KMS deletes a key only after its pending window when asked to).
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..layout.tencentcloud import TencentLayout


def build(
    parent: pulumi.Resource, name: str, layout: TencentLayout, tags: Mapping[str, str]
) -> pulumi.Output[str] | None:
    """The key id the data disks take; None with the CBS-managed key (encryption.key provider)."""
    enc = layout.encryption
    if enc is None:
        return None
    if enc.create is None:
        assert enc.key_id is not None
        return pulumi.Output.from_input(enc.key_id)
    key = enc.create
    created = tencentcloud.kms.Key(
        f"{name}-key",
        alias=key.alias,
        description=key.description,
        key_usage=key.usage,
        key_rotation_enabled=key.rotation,
        is_enabled=True,  # "Default value is `false`": a disabled key encrypts no disk
        pending_delete_window_in_days=key.pending_delete_days,
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True),
    )
    key_id: pulumi.Output[str] = created.id
    return key_id
