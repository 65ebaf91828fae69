"""Reads of the Azure capability data the layout decides from (catalog/capabilities/azure.yaml, catalog/azure.yaml
images, catalog/kubernetes/azure.yaml, catalog/encryption/azure.yaml): one place, typed where the layout reads one
value, the raw mapping where a concern reads a whole section."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ... import catalog
from ...catalog import kubernetes as kubernetes_offers
from ...catalog import releases
from ...catalog.capabilities import capability_data
from ...datafile import load_yaml


def access_data() -> dict[str, Any]:
    """The Azure-only keys of catalog/capabilities/azure.yaml (`bastion:`), as written there."""
    return capability_data("azure")


def health_data() -> dict[str, Any]:
    """`health:` of catalog/capabilities/azure.yaml (extension settings, repairs policy, sources)."""
    data: dict[str, Any] = access_data()["health"]
    return data


def read_storage_role() -> str:
    """`readStorageRole.roleDefinitionId`: the role `identity.readStorage` grants."""
    return str(access_data()["readStorageRole"]["roleDefinitionId"])


@cache
def computer_name_prefix_limit() -> int:
    """`computerName.prefixMaxLength`: the longest computerNamePrefix the compute API takes."""
    return int(capability_data("azure")["computerName"]["prefixMaxLength"])


def ib_image_data() -> dict[str, Any]:
    """`images.default.fabric.infiniband` of catalog/azure.yaml: what the default HPC image gives NCCL."""
    data: dict[str, Any] = catalog.load("azure").images["default"]["fabric"]["infiniband"]
    return data


def default_image_ref() -> str:
    """The default (HPC) image's URN in catalog/azure.yaml."""
    return str(catalog.load("azure").images["default"]["urn"])


def is_default_image(ref: str) -> bool:
    """Whether `ref` boots the default (HPC) image: its tracking URN, or a version of it (the pinned release)."""
    default: dict[str, Any] = catalog.load("azure").images["default"]
    return ref == default_image_ref() or releases.release_in("azure", default, ref) is not None


def aks_data() -> dict[str, Any]:
    """The Azure-only keys of catalog/kubernetes/azure.yaml."""
    offer = kubernetes_offers.offer("azure")
    assert offer is not None  # the spec refuses scheduler kubernetes without it
    return offer.extra


@cache
def encryption_data() -> dict[str, Any]:
    """catalog/encryption/azure.yaml: the key vault, the key, the roles and what keeps a platform key."""
    loaded: dict[str, Any] = load_yaml(Path(__file__).parents[2] / "catalog/encryption/azure.yaml")
    return loaded
