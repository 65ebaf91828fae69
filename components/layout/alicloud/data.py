"""Reads of Alibaba's data files the layout decides from: the capabilities file's Alibaba keys, the ACK offer
(catalog/kubernetes/alicloud.yaml) and the eRDMA installer of the catalog's `images:` section.
"""

from __future__ import annotations

from typing import Any

from ... import catalog
from ...catalog import kubernetes as kubernetes_offers
from ...catalog.capabilities import capability_data


def alicloud_data() -> dict[str, Any]:
    """The Alibaba keys of the capabilities file beyond the contract's schema (nodeIdentity, erdma, ...)."""
    return capability_data("alicloud")


def catalog_erdma_installer() -> str:
    """The eRDMA installer URL from the `images:` section of the catalog (one place for the source)."""
    url: str = catalog.load("alicloud").images["erdmaInstaller"]["url"]
    return url


def ack_offer() -> dict[str, Any]:
    """catalog/kubernetes/alicloud.yaml: the ACK keys beyond the common schema."""
    found = kubernetes_offers.offer("alicloud")
    assert found is not None  # shipped with the package
    return {**found.model_dump(), **found.extra}


def metadata_http_tokens() -> str:
    """The metadata access mode of every node the stack builds (capabilities file `metadata.httpTokens`)."""
    tokens: str = alicloud_data()["metadata"]["httpTokens"]
    return tokens
