"""Reference spot prices per GPU instance type, and where a source says a type is not sold as spot.

Data in `spot/<cloud>.yaml` (SCHEMA.md, "Spot"), loaded once, validated (unknown keys are errors). Three answers,
never a guess: a spot USD/hour in the catalog's price region (a snapshot: spot prices move), "not offered" (a
source says the type is not sold as spot), or unknown (no entry; a cloud without a file). Only "not offered" is
ever a finding; unknown never is. "Not offered" also comes from what the catalog already says, so it is written
once: a row bought only through Capacity Blocks (`extra.purchase: capacity-block`) and a type the cloud's
`rules.consumption.noSpot` prefixes name (reservation-bound only).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..datafile import load_yaml
from . import CLOUDS, InstanceType, find
from . import load as load_catalog

_DIR = Path(__file__).parent / "spot"
DIGITS = 6  # GCP sums VM + GPU parts: rounded so a sum reads as the source's decimals do


class SpotError(ValueError):
    """A spot data file is malformed (caught by the schema test, never at a user's run)."""


class Entry(BaseModel):
    """One type's row of a spot file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    instanceType: str = Field(min_length=1)
    gpus: int | None = Field(default=None, ge=1)  # only where the catalog has several rows of the type (GCP n1)
    hourlyUsd: float | None = Field(default=None, gt=0)
    vmUsd: float | None = Field(default=None, gt=0)  # GCP: the VM row's spot price ...
    gpuUsd: float | None = Field(default=None, gt=0)  # ... plus the GPU row's (gpuRow names it)
    gpuRow: str | None = None
    highUsd: float | None = Field(default=None, gt=0)  # AWS: the dearest zone of the region
    zones: int | None = Field(default=None, ge=1)
    offered: bool = True
    source: str | None = None  # required with offered false: who says so
    note: str | None = None

    @model_validator(mode="after")
    def _one_answer(self) -> Entry:
        parts = (self.vmUsd, self.gpuUsd, self.gpuRow)
        if any(p is not None for p in parts) and (None in parts or self.hourlyUsd is not None):
            raise ValueError(f"{self.instanceType}: give hourlyUsd, or vmUsd + gpuRow + gpuUsd (not both)")
        if not self.offered:
            if self.price is not None or not self.source:
                raise ValueError(f"{self.instanceType}: offered false takes a source and no price")
        elif self.price is None:
            raise ValueError(f"{self.instanceType}: give a price or offered: false (leave an unknown type out)")
        if self.highUsd is not None and self.price is not None and self.highUsd < self.price:
            raise ValueError(f"{self.instanceType}: highUsd {self.highUsd} is below hourlyUsd {self.price}")
        return self

    @property
    def price(self) -> float | None:
        if self.vmUsd is not None and self.gpuUsd is not None:
            return round(self.vmUsd + self.gpuUsd, DIGITS)
        return self.hourlyUsd


class _File(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(min_length=1)
    date: str = Field(min_length=1)
    region: str = Field(min_length=1)
    types: tuple[Entry, ...]


@dataclass(frozen=True)
class Spot:
    """What the data says about one type: a price (None when not offered), and the file's region and date."""

    offered: bool
    hourly_usd: float | None
    region: str
    date: str
    source: str  # the file's source, or the entry's own when it says "not offered"


@dataclass(frozen=True)
class CloudSpot:
    cloud: str
    source: str
    date: str
    region: str
    entries: tuple[Entry, ...]


@cache
def load(cloud: str) -> CloudSpot:
    """One cloud's spot file, validated against the cloud's catalog (cached: the files never change at run time)."""
    path = _DIR / f"{cloud}.yaml"
    if not path.exists():
        return CloudSpot(cloud, "", "", "", ())
    raw: Any = load_yaml(path) or {}
    try:
        data = _File.model_validate(raw)
    except ValidationError as exc:
        raise SpotError(f"{path.name}: {exc}") from None
    if cloud not in CLOUDS:
        raise SpotError(f"{path.name}: {cloud!r} is not a cloud")
    price_region = load_catalog(cloud).prices.get("region")
    if data.region != price_region:
        raise SpotError(f"{path.name}: region {data.region} is not the catalog's price region {price_region}")
    seen: set[tuple[str, int | None]] = set()
    for entry in data.types:
        rows = find(cloud, entry.instanceType)
        if not rows:
            raise SpotError(f"{path.name}: {entry.instanceType} is not in catalog/{cloud}.yaml")
        if len(rows) > 1 and entry.gpus is None:
            raise SpotError(f"{path.name}: {entry.instanceType} has {len(rows)} catalog rows; give gpus")
        if entry.gpus is not None and entry.gpus not in {r.gpus for r in rows}:
            raise SpotError(f"{path.name}: {entry.instanceType} has no catalog row with {entry.gpus} GPUs")
        key = (entry.instanceType, entry.gpus)
        if key in seen:
            raise SpotError(f"{path.name}: {entry.instanceType} listed twice")
        seen.add(key)
    return CloudSpot(cloud, data.source, data.date, data.region, data.types)


def _entry(cloud: str, instance_type: str, gpus: int | None) -> Entry | None:
    matches = [e for e in load(cloud).entries if e.instanceType == instance_type and e.gpus in (None, gpus)]
    return next((e for e in matches if e.gpus == gpus), matches[0] if matches else None)


def _catalog_says_not_spot(row: InstanceType) -> str | None:
    """Why the catalog itself rules spot out for the row (its source), or None."""
    data = load_catalog(row.cloud)
    if row.extra.get("purchase") == "capacity-block":
        key = str(row.extra.get("purchaseSource") or "")
        return f"sold only through Capacity Blocks: {data.sources.get(key, key) or f'catalog/{row.cloud}.yaml'}"
    prefixes = (data.rules.get("consumption") or {}).get("noSpot") or ()
    if any(row.instanceType.startswith(str(p)) for p in prefixes):
        return f"reservation-bound only: catalog/{row.cloud}.yaml rules.consumption.noSpot"
    return None


def lookup(row: InstanceType) -> Spot | None:
    """The spot answer for a catalog row, or None when the data does not say (unknown)."""
    data = load(row.cloud)
    ruled_out = _catalog_says_not_spot(row)
    if ruled_out is not None:
        return Spot(False, None, data.region, data.date, ruled_out)
    entry = _entry(row.cloud, row.instanceType, row.gpus)
    if entry is None:
        return None
    return Spot(entry.offered, entry.price, data.region, data.date, entry.source or data.source)


def hourly_usd(row: InstanceType) -> float | None:
    found = lookup(row)
    return None if found is None else found.hourly_usd


def offered(row: InstanceType) -> bool | None:
    """True (a spot price is known), False (a source says not sold as spot), None (unknown)."""
    found = lookup(row)
    return None if found is None else found.offered


def refusal(cloud: str, instance_type: str) -> str | None:
    """Why `spot: true` cannot work for the type (one sentence with the source), or None when it may."""
    if cloud not in CLOUDS:
        return None
    answers = [found for row in find(cloud, instance_type) if (found := lookup(row)) is not None]
    why = next((a.source for a in answers if not a.offered), None)
    if why is None:
        return None
    return (
        f"{instance_type} is not sold as spot ({why}); set spot: false, or pick a type offered as spot "
        f"(gpu-cluster compare shows the spot column)"
    )
