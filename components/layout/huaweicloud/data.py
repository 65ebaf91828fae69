"""Reads of Huawei's capability data the layout decides from."""

from __future__ import annotations

from typing import Any

from ...catalog.capabilities import capability_data


def huawei_data() -> dict[str, Any]:
    """The Huawei keys of the capabilities file beyond the contract's schema (nodeIdentity, encryption, nat, ...)."""
    return capability_data("huaweicloud")
