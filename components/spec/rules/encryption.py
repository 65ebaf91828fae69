"""`encryption`: the key and algorithm the cloud takes (its capabilities' `encryption:` data)."""

from __future__ import annotations

import re
from collections.abc import Iterator

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
    if enc.algorithm == "sm4":
        sm4_regions = data.get("sm4Regions")
        if sm4_regions is None:
            yield ConfigError(f"{k}.algorithm", f"sm4 is an Alibaba Cloud KMS key spec; {ctx.cloud} has none")
        elif enc.key != "auto":
            yield ConfigError(f"{k}.algorithm", "sm4 applies to the key the stack creates: set key: auto")
        elif ctx.region not in sm4_regions:
            where = f"in {ctx.region} (only in {', '.join(sm4_regions)})" if sm4_regions else "in any region"
            yield ConfigError(
                f"{k}.algorithm",
                f"sm4 keys are not built {where}: {one_line(data.get('sm4Source', ''))}",
            )
