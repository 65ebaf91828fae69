"""Where each GPU instance type is sold: regions, and zones where the cloud publishes them.

Data in `availability/<cloud>.yaml` (SCHEMA.md, "Availability"), loaded once and cached. Three answers,
never a guess: True (the source lists the type there), False (the source covers the region and does not
list the type there), None (unknown: no data for the type, or a region the source does not cover).
Only False refuses a stack; None never does.

Most entries are keyed by the instance type alone. Where the type's catalog rows carry different GPU models
(GCP n1: the machine type takes T4 or V100, sold in different zones), the entry is per GPU (`byGpu:`) and the
lookups answer for the `gpu=` they are given; without it, or for a model the entry does not list, unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

from ..datafile import load_yaml
from .rows import Cloud, find

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
    offers: dict[str, Offer]  # entries keyed by the type alone (its catalog rows carry one GPU model)
    zone_default: bool = True  # False: an unset zone is left to the deploy's own lookup (zones_selling says None)
    by_gpu: dict[str, dict[str, Offer]] = field(default_factory=dict)  # type -> GPU model -> offer (`byGpu:`)


class AvailabilityError(ValueError):
    """The data file is malformed (caught by the schema test, never at a user's run)."""


def _zone_region(zone: str) -> str:
    """`us-central1-a` -> `us-central1`, `ap-guangzhou-3` -> `ap-guangzhou` (GCP and Alibaba zone names end in
    `-<letter>`, Tencent's in `-<number>`)."""
    head, sep, _ = zone.rpartition("-")
    return head if sep else zone


def _offer(where: str, entry: Any, covered: frozenset[str]) -> Offer:
    """One `{regions, zones}` entry, validated (`where` names it in the error)."""
    if not isinstance(entry, dict) or set(entry) - {"regions", "zones"} or not entry:
        raise AvailabilityError(f"{where}: give regions and/or zones")
    zones = tuple(str(z) for z in entry.get("zones") or [])
    regions = tuple(dict.fromkeys([*(str(r) for r in entry.get("regions") or []), *map(_zone_region, zones)]))
    outside = [r for r in regions if r not in covered]
    if outside:
        raise AvailabilityError(f"{where}: regions {outside} are not in the file's regions list")
    return Offer(tuple(sorted(regions)), tuple(sorted(zones)))


def _models(cloud: str, instance_type: str) -> set[str | None]:
    """The GPU models the catalog's rows of the type carry."""
    return {r.gpu for r in find(cast(Cloud, cloud), instance_type)}  # cloud: a file's name, one of CLOUDS


@cache
def load(cloud: str) -> CloudAvailability:
    """One cloud's availability file, validated (cached: the files never change at run time)."""
    path = _DIR / f"{cloud}.yaml"
    if not path.exists():
        return CloudAvailability(cloud, "", "", frozenset(), {})
    data: dict[str, Any] = load_yaml(path) or {}
    unknown = set(data) - {"source", "date", "regions", "types", "zoneDefault"}
    if unknown:
        raise AvailabilityError(f"{path.name}: unknown keys {sorted(unknown)}")
    if not data.get("source") or not data.get("date"):
        raise AvailabilityError(f"{path.name}: needs a source and a date")
    covered = frozenset(str(r) for r in data.get("regions") or [])
    offers: dict[str, Offer] = {}
    by_gpu: dict[str, dict[str, Offer]] = {}
    for name, entry in (data.get("types") or {}).items():
        where, models = f"{path.name}: {name}", _models(cloud, str(name))
        if not (isinstance(entry, dict) and "byGpu" in entry):
            if len(models) > 1:  # one list would refuse or default a zone wrongly for one of the models
                raise AvailabilityError(f"{where}: its catalog rows carry {sorted(map(str, models))}; give byGpu")
            offers[str(name)] = _offer(where, entry, covered)
            continue
        per = entry["byGpu"]
        if set(entry) != {"byGpu"} or not isinstance(per, dict) or not per:
            raise AvailabilityError(f"{where}: byGpu alone, mapping GPU models to regions and/or zones")
        strays = sorted(str(m) for m in per if m not in models)
        if strays:
            carried = sorted(str(m) for m in models if m)
            raise AvailabilityError(f"{where}: byGpu: {strays} not among the GPUs its catalog rows carry {carried}")
        by_gpu[str(name)] = {str(m): _offer(f"{where}: byGpu: {m}", e, covered) for m, e in per.items()}
    zone_default = data.get("zoneDefault", True)
    if not isinstance(zone_default, bool):
        raise AvailabilityError(f"{path.name}: zoneDefault must be true or false")
    return CloudAvailability(cloud, str(data["source"]), str(data["date"]), covered, offers, zone_default, by_gpu)


def offer(cloud: str, instance_type: str, *, gpu: str | None = None) -> Offer | None:
    """Where the type (with `gpu`, for a per-GPU entry) is sold, or None when the data does not say."""
    data = load(cloud)
    if instance_type in data.by_gpu:
        return None if gpu is None else data.by_gpu[instance_type].get(gpu)
    return data.offers.get(instance_type)


def label(cloud: str, instance_type: str, *, gpu: str | None = None) -> str:
    """What the data's answer is about: `n1-standard-96 with T4` for a per-GPU entry, else the type."""
    return f"{instance_type} with {gpu}" if gpu is not None and instance_type in load(cloud).by_gpu else instance_type


def sold_in(cloud: str, instance_type: str, region: str, *, gpu: str | None = None) -> bool | None:
    """True / False / None (unknown), as the module docstring says."""
    found = offer(cloud, instance_type, gpu=gpu)
    if found is None or region not in load(cloud).covered:
        return None
    return region in found.regions


def zones_selling(cloud: str, instance_type: str, region: str, *, gpu: str | None = None) -> tuple[str, ...] | None:
    """The zones of `region` that sell the type, sorted (the zone to default to); None when the cloud's zones are
    not known for it, or the file says `zoneDefault: false` (the deploy looks the zone up itself)."""
    found = offer(cloud, instance_type, gpu=gpu)
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


def why_not(
    cloud: str, instance_type: str, region: str, zone: str | None = None, *, gpu: str | None = None
) -> str | None:
    """Why the type (with `gpu`, for a per-GPU entry) cannot be had in region/zone (one sentence naming where it
    is sold), or None if it can or availability is unknown."""
    data = load(cloud)
    found = offer(cloud, instance_type, gpu=gpu)
    if found is None:
        return None
    what = label(cloud, instance_type, gpu=gpu)
    if sold_in(cloud, instance_type, region, gpu=gpu) is False:
        where = nearest_first(region, found.regions)
        return (
            f"{what} is not sold in {region}; regions that sell it (nearest first): {', '.join(where)} "
            f"(catalog/availability/{cloud}.yaml: {_short(data.source)}, read {data.date})"
        )
    if zone is not None and found.zones and region in found.regions and zone not in found.zones:
        return (
            f"{what} is not sold in zone {zone}; zones of {region} that sell it: "
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
