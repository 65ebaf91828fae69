"""catalog/interruption.yaml: how each cloud tells a node it is about to go, and who drains Kubernetes nodes."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml

_DATA = Path(__file__).resolve().parent / "interruption.yaml"


@cache
def data() -> dict[str, Any]:
    """catalog/interruption.yaml."""
    loaded: dict[str, Any] = load_yaml(_DATA)
    return loaded


def cloud_data(cloud: str) -> dict[str, Any]:
    """`clouds.<cloud>`: the metadata endpoints, fields and notice of that cloud's interruptions."""
    entry: dict[str, Any] = data()["clouds"][cloud]
    return entry


def kubernetes_drain(cloud: str) -> dict[str, Any]:
    """`kubernetes.<cloud>`: who cordons and drains a Kubernetes node before it goes (handler null: its pool)."""
    entry: dict[str, Any] = data()["kubernetes"][cloud]
    return entry
