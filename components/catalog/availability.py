"""Where each GPU instance type is sold: regions, and zones where the cloud publishes them.

Data in `availability/<cloud>.yaml` (SCHEMA.md, "Availability"), loaded once and cached. Three answers,
never a guess: True (the source lists the type there), False (the source covers the region and does not
list the type there), None (unknown: no data for the type, or a region the source does not cover).
Only False refuses a stack; None never does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

_DIR = Path(__file__).parent / "availability"

# Nearest first: the same region prefix (us, eu, asia, ...), then the same part of the world,
# then the rest, each alphabetically. Names only: no distance table is claimed.
_WORLD = {
    "us": "americas", "ca": "americas", "sa": "americas", "mx": "americas", "northamerica": "americas",
    "southamerica": "americas", "na": "americas", "eu": "emea", "europe": "emea", "me": "emea", "af": "emea",
    "il": "emea",
    "ap": "apac", "asia": "apac", "australia": "apac", "cn": "apac",
}  # fmt: skip


@dataclass(frozen=True)
class Offer:
    """Where one type is sold: regions, and zones (empty when the cloud's zones are not published)."""

    regions: tuple[str, ...]
    zones: tuple[str, ...] = ()

    def zones_in(self, region: str) -> tuple[str, ...]:
        return tuple(z for z in self.zones if _zone_region(z) == region)


@dataclass(frozen=True)
class CloudAvailability:
    cloud: str
    source: str
    date: str
    covered: frozenset[str]  # regions the source covers: outside them, availability is unknown
    offers: dict[str, Offer]
    zone_default: bool = True  # False: an unset zone is left to the deploy's own lookup (zones_selling says None)


class AvailabilityError(ValueError):
    """The data file is malformed (caught by the schema test, never at a user's run)."""


def _zone_region(zone: str) -> str:
    """`us-central1-a` -> `us-central1`, `ap-guangzhou-3` -> `ap-guangzhou` (GCP and Alibaba zone names end in
    `-<letter>`, Tencent's in `-<number>`)."""
    head, sep, _ = zone.rpartition("-")
    return head if sep else zone


@cache
def load(cloud: str) -> CloudAvailability:
    """One cloud's availability file, validated (cached: the files never change at run time)."""
    path = _DIR / f"{cloud}.yaml"
    if not path.exists():
        return CloudAvailability(cloud, "", "", frozenset(), {})
    data: dict[str, Any] = yaml.safe_load(path.read_text()) or {}
    unknown = set(data) - {"source", "date", "regions", "types", "zoneDefault"}
    if unknown:
        raise AvailabilityError(f"{path.name}: unknown keys {sorted(unknown)}")
    if not data.get("source") or not data.get("date"):
        raise AvailabilityError(f"{path.name}: needs a source and a date")
    covered = frozenset(str(r) for r in data.get("regions") or [])
    offers: dict[str, Offer] = {}
    for name, entry in (data.get("types") or {}).items():
        if not isinstance(entry, dict) or set(entry) - {"regions", "zones"} or not entry:
            raise AvailabilityError(f"{path.name}: {name}: give regions and/or zones")
        zones = tuple(str(z) for z in entry.get("zones") or [])
        regions = tuple(dict.fromkeys([*(str(r) for r in entry.get("regions") or []), *map(_zone_region, zones)]))
        outside = [r for r in regions if r not in covered]
        if outside:
            raise AvailabilityError(f"{path.name}: {name}: regions {outside} are not in the file's regions list")
        offers[str(name)] = Offer(tuple(sorted(regions)), tuple(sorted(zones)))
    zone_default = data.get("zoneDefault", True)
    if not isinstance(zone_default, bool):
        raise AvailabilityError(f"{path.name}: zoneDefault must be true or false")
    return CloudAvailability(cloud, str(data["source"]), str(data["date"]), covered, offers, zone_default)


def offer(cloud: str, instance_type: str) -> Offer | None:
    """Where the type is sold, or None when the data does not say."""
    return load(cloud).offers.get(instance_type)


def sold_in(cloud: str, instance_type: str, region: str) -> bool | None:
    """True / False / None (unknown), as the module docstring says."""
    data = load(cloud)
    found = data.offers.get(instance_type)
    if found is None or region not in data.covered:
        return None
    return region in found.regions


def zones_selling(cloud: str, instance_type: str, region: str) -> tuple[str, ...] | None:
    """The zones of `region` that sell the type, sorted (the zone to default to); None when the cloud's zones are
    not known for it, or the file says `zoneDefault: false` (the deploy looks the zone up itself)."""
    found = offer(cloud, instance_type)
    if found is None or not found.zones or not load(cloud).zone_default:
        return None
    return found.zones_in(region)


def nearest_first(region: str, regions: tuple[str, ...] | list[str]) -> list[str]:
    """`regions` ordered by closeness of name to `region` (module constant `_WORLD`)."""
    prefix = region.split("-", 1)[0]
    world = _WORLD.get(prefix)

    def key(other: str) -> tuple[int, str]:
        other_prefix = other.split("-", 1)[0]
        if other_prefix == prefix:
            return (0, other)
        return (1 if world is not None and _WORLD.get(other_prefix) == world else 2, other)

    return sorted(regions, key=key)


def why_not(cloud: str, instance_type: str, region: str, zone: str | None = None) -> str | None:
    """Why the type cannot be had in region/zone (one sentence naming where it is sold), or None if it can
    or availability is unknown."""
    data = load(cloud)
    found = data.offers.get(instance_type)
    if found is None:
        return None
    if sold_in(cloud, instance_type, region) is False:
        where = nearest_first(region, found.regions)
        return (
            f"{instance_type} is not sold in {region}; regions that sell it (nearest first): {', '.join(where)} "
            f"(catalog/availability/{cloud}.yaml: {_short(data.source)}, read {data.date})"
        )
    if zone is not None and found.zones and region in found.regions and zone not in found.zones:
        return (
            f"{instance_type} is not sold in zone {zone}; zones of {region} that sell it: "
            f"{', '.join(found.zones_in(region))} (catalog/availability/{cloud}.yaml: {_short(data.source)}, "
            f"read {data.date})"
        )
    return None


def _short(source: str) -> str:
    """`owner/repo@<40 hex> path (...)` -> `owner/repo@<12 hex> path`: the citation, short enough for one line."""
    head = source.split(" (", 1)[0]
    repo, at, rest = head.partition("@")
    if not at:
        return head
    commit, _, path = rest.partition(" ")
    return f"{repo}@{commit[:12]} {path}".strip()
