"""How people reach the nodes: the key pair (when `sshPublicKey` is set)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout


@dataclass(frozen=True)
class Access:
    key_pair: alicloud.ecs.EcsKeyPair | None


def build(parent: pulumi.Resource, name: str, layout: AlicloudLayout, tags: Mapping[str, str]) -> Access:
    spec = layout.spec
    key_pair = (
        alicloud.ecs.EcsKeyPair(
            f"{name}-key",
            key_pair_name=f"{spec.name}-{spec.stack}",
            public_key=spec.ssh_public_key,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=parent),
        )
        if spec.ssh_public_key
        else None
    )
    return Access(key_pair)
