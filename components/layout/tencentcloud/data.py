"""Reads of Tencent's capability data the layout decides from."""

from __future__ import annotations

from typing import Any

from ...catalog.capabilities import capability_data


def tencent_data() -> dict[str, Any]:
    """The Tencent keys of the capabilities file beyond the contract's schema (nodeIdentity, hcc, ...)."""
    return capability_data("tencentcloud")
