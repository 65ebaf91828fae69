"""catalog/accounting.yaml: slurmdbd's settings, SchedMD's MySQL settings and each cloud's managed database (or why
`slurm.accounting` is not built there), with their sources."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml

_DATA = Path(__file__).resolve().parent / "accounting.yaml"


@cache
def data() -> dict[str, Any]:
    """catalog/accounting.yaml."""
    loaded: dict[str, Any] = load_yaml(_DATA)
    return loaded


def cloud_offer(cloud: str) -> dict[str, Any]:
    """`clouds.<cloud>`: the managed database that cloud builds for slurmdbd."""
    entry: dict[str, Any] = data()["clouds"][cloud]
    return entry


def refusal(cloud: str) -> str | None:
    """Why `slurm.accounting: true` is not built on `cloud`, or None where it is (`clouds.<cloud>.notBuilt`)."""
    entry = data()["clouds"].get(cloud)
    if entry is None:
        return "Slurm is not built on this cloud"
    why = entry.get("notBuilt")
    return None if why is None else " ".join(str(why).split())
