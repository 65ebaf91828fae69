"""`encryption`: the key and algorithm the cloud takes (its capabilities' `encryption:` data)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ...catalog.capabilities import capability_data
from ...errors import CLUSTER_KEY, ConfigError
from ...text import one_line
from ..context import Context
from ..messages import describe


def _encryption(ctx: Context) -> Iterator[ConfigError]:
    """`encryption`: a key the cloud takes (its capabilities' `encryption:` patterns), SM4 only where it is sold."""
    enc, k = ctx.cfg.encryption, f"{CLUSTER_KEY}.encryption"
    data = capability_data(ctx.cloud).get("encryption")
    if data is None:
        if enc.key != "provider" or enc.algorithm != "aes256":
            yield ConfigError(f"{k}.key", f"customer-managed keys are not built on {ctx.cloud}; allowed: provider")
        return
    if enc.key not in ("provider", "auto") and not re.fullmatch(data["keyPattern"], enc.key):
        yield ConfigError(f"{k}.key", f"got {describe(enc.key)}; allowed: provider, auto or {data['keyHint']}")
    sm4 = data.get("sm4")
    if enc.kms_instance is not None:
        yield from _kms_instance(ctx, sm4)
    if enc.algorithm == "sm4":
        yield from _sm4(ctx, sm4)


def _kms_instance(ctx: Context, sm4: dict[str, Any] | None) -> Iterator[ConfigError]:
    """`kmsInstance`: an existing Alibaba KMS instance (kst-...) the key auto is created in."""
    enc, k = ctx.cfg.encryption, f"{CLUSTER_KEY}.encryption.kmsInstance"
    given = enc.kms_instance or ""
    if sm4 is None:
        yield ConfigError(k, f"KMS instances are Alibaba Cloud's; {ctx.cloud} has none")
    elif given == "create":
        yield ConfigError(k, one_line(sm4["createRefusal"]))
    elif not re.fullmatch(sm4["instancePattern"], given):
        yield ConfigError(k, f"got {describe(given)}; allowed: {sm4['instanceHint']}")
    elif enc.key != "auto":
        yield ConfigError(k, "the stack creates its key in the KMS instance: set encryption.key: auto")


def _sm4(ctx: Context, sm4: dict[str, Any] | None) -> Iterator[ConfigError]:
    """`algorithm: sm4`: an Aliyun_SM4 key in an existing KMS instance, on disks whose cipher can be SM4."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}.encryption"
    if sm4 is None:
        yield ConfigError(f"{k}.algorithm", f"sm4 is an Alibaba Cloud KMS key spec; {ctx.cloud} has none")
        return
    if cfg.encryption.key != "auto":
        yield ConfigError(f"{k}.algorithm", "sm4 applies to the key the stack creates: set key: auto")
    elif cfg.encryption.kms_instance is None:
        yield ConfigError(
            f"{k}.kmsInstance",
            f"sm4 keys live in a KMS instance: set kmsInstance to {sm4['instanceHint']} (a KMS default key is "
            "Aliyun_AES_256 only)",
        )
    no_path = sm4["noPath"]
    if cfg.scheduler == "kubernetes":
        yield ConfigError(
            f"{k}.algorithm", f"sm4 is not built with scheduler kubernetes: {one_line(no_path['kubernetes'])}"
        )
    if cfg.slurm is not None and cfg.slurm.partitions:
        yield ConfigError(
            f"{k}.algorithm", f"sm4 is not built with slurm.partitions: {one_line(no_path['partitions'])}"
        )
    if cfg.storage.scratch != "none":
        yield ConfigError(
            f"{CLUSTER_KEY}.storage.scratch", f"sm4 has no scratch disk: {one_line(no_path['scratchDisk'])}"
        )
