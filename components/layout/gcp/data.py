"""Reads of the GCP capability data the layout decides from (catalog/gcp.yaml rules, catalog/capabilities/gcp.yaml,
catalog/kubernetes/gcp.yaml, catalog/slurm.yaml clouds.gcp, catalog/encryption/gcp.yaml): one place for the loads."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ...catalog import kubernetes as kubernetes_offers
from ...catalog.capabilities import capability_data
from ...catalog.slurm import cloud_data
from ...datafile import load_yaml


def capability() -> dict[str, Any]:
    """The GCP capabilities file, for the keys only this layout reads (identity roles, user roles)."""
    return capability_data("gcp")


def gke_data() -> dict[str, Any]:
    offer = kubernetes_offers.offer("gcp")
    if offer is None:  # packaging mistake: the capabilities offer kubernetes on gcp
        raise ValueError("catalog/kubernetes/gcp.yaml is missing")
    return offer.extra


def slurm_data() -> dict[str, Any]:
    return cloud_data("gcp")


@cache
def encryption_data() -> dict[str, Any]:
    """catalog/encryption/gcp.yaml: the key's settings, the role and the service agents granted it."""
    loaded: dict[str, Any] = load_yaml(Path(__file__).parents[2] / "catalog/encryption/gcp.yaml")
    return loaded
