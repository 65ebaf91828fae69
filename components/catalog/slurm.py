"""catalog/slurm.yaml: Slurm's packages, ports, limits and each cloud's MUNGE-key store, with their sources."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml

_DATA = Path(__file__).resolve().parent / "slurm.yaml"


@cache
def data() -> dict[str, Any]:
    """catalog/slurm.yaml."""
    loaded: dict[str, Any] = load_yaml(_DATA)
    return loaded


def cloud_data(cloud: str) -> dict[str, Any]:
    """catalog/slurm.yaml `clouds.<cloud>`: how that cloud keeps the MUNGE key and how its hook reads it."""
    entry: dict[str, Any] = data()["clouds"][cloud]
    return entry


def power_save_refusal(cloud: str) -> str | None:
    """Why `slurm.partitions` (power saving) is not built on `cloud`, or None where it is (catalog/slurm.yaml
    `clouds.<cloud>.powerSave`)."""
    entry = data()["clouds"].get(cloud, {}).get("powerSave")
    if entry is None:
        return "Slurm is not built on this cloud"
    why = entry.get("notBuilt")
    return None if why is None else " ".join(str(why).split())
