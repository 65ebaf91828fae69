"""What a stack runs besides its GPU nodes, priced as data: `prices/<cloud>.yaml`.

Each cloud's file names its currency, the region and date its prices were read for, one entry per billing item
(NAT gateway, public IP, Kubernetes control plane, boot disk) with `hourly` (per unit per hour), `monthly`,
`perGbMonth`, `perGbHour` or `tiers` (a disk billed per size tier: each tier's size and monthly price) and its source,
or `hourly: null` with `unpriced: <why>`; `sku` names the SKU, tier or disk type a price is for (the bill prices an
item only when the layout chose that one), and the on-demand prices of the non-GPU instance types the stacks run
(Slurm head, login node, Kubernetes system pool; GPU types too where the catalog has no USD price) with their source,
`instances.region` where they hold when that is not the file's region, and `instances.unpriced` the reason a type has
none. Pure and cached; the plan's bill reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from .rows import Cloud

_DIR = Path(__file__).parent / "prices"
HOURS_PER_MONTH = 730  # the month the plan's monthly totals use (365 x 24 / 12)


@dataclass(frozen=True)
class Tier:
    """One size tier of a disk billed per tier (Azure Premium SSD P10, P15, ...): up to `gb`, `monthly` or None."""

    name: str
    gb: int
    monthly: float | None


def tier_for(tiers: tuple[Tier, ...], gb: float) -> Tier | None:
    """The tier a disk of `gb` is billed as: the smallest one that holds it (None: larger than every tier)."""
    return min((t for t in tiers if t.gb >= gb), key=lambda t: t.gb, default=None)


@dataclass(frozen=True)
class Price:
    """One billing item's price: per hour (per unit) or per GB-month, or None with the reason it is not priced."""

    hourly: float | None
    per_gb_month: float | None
    currency: str
    region: str
    date: str
    source: str | None
    unpriced: str | None
    per_vm: bool = False  # `hourly` is per VM that uses it (GCP Cloud NAT), not per unit
    monthly: float | None = None  # the source's monthly price (`hourly` is it / 730)
    sku: str | None = None  # the SKU, tier or disk type the price is for (None: any)
    tiers: tuple[Tier, ...] = ()  # billed per size tier (`per_gb_month` and `hourly` are None)
    per_gb_hour: float | None = None  # the source's GB-hour price (`per_gb_month` is it x 730)

    @property
    def priced(self) -> bool:
        return (
            self.hourly is not None or self.per_gb_month is not None or any(t.monthly is not None for t in self.tiers)
        )

    @property
    def text(self) -> str:
        """The price as the source gives it."""
        if self.monthly is not None:
            return f"{self.monthly:g}/month"
        if self.per_gb_hour is not None:
            return f"{self.per_gb_hour:g}/GB-hour"
        if self.per_gb_month is not None:
            return f"{self.per_gb_month:g}/GB-month"
        return f"{self.hourly:g}/h" + (" per VM" if self.per_vm else "")


@dataclass(frozen=True)
class CloudPrices:
    cloud: Cloud
    currency: str
    region: str
    date: str
    items: dict[str, Price]
    instances: dict[str, float]
    instances_source: str | None
    instances_by_region: dict[str, dict[str, float]]  # where the source prices per region (Alibaba)
    instances_unpriced: dict[str, str] = field(default_factory=dict)  # a type searched for and not found: why
    instances_region: str | None = None  # where the instance table's prices hold, when not the file's region

    def item(self, name: str) -> Price:
        found = self.items.get(name)
        if found is None:
            return Price(
                None, None, self.currency, self.region, self.date, None, f"prices/{self.cloud}.yaml has no {name}"
            )
        return found

    def instance(self, instance_type: str, region: str | None = None) -> Price:
        """The on-demand hourly price of an instance type (head, login, system pool; GPU nodes where the catalog has
        no USD price), in the stack's region where the source prices per region, or why there is none."""
        if region is not None and region in self.instances_by_region:
            hourly, where = self.instances_by_region[region].get(instance_type), region
        else:
            hourly, where = self.instances.get(instance_type), self.instances_region or self.region
        if hourly is None:
            why = self.instances_unpriced.get(instance_type) or (
                f"no sourced on-demand price for {instance_type} in prices/{self.cloud}.yaml"
            )
            if self.instances_by_region and region not in self.instances_by_region:
                why += f" (regions priced: {', '.join(self.instances_by_region)})"
            return Price(None, None, self.currency, where, self.date, None, why)
        return Price(hourly, None, self.currency, where, self.date, self.instances_source, None)


def _tiers(raw: list[dict[str, Any]] | None) -> tuple[Tier, ...]:
    return tuple(
        Tier(str(t["name"]), int(t["gb"]), None if t.get("monthly") is None else float(t["monthly"])) for t in raw or ()
    )


def _price(name: str, raw: dict[str, Any], currency: str, region: str, date: str, cloud: str) -> Price:
    per_vm, monthly = raw.get("hourlyPerVm"), raw.get("monthly")
    hourly = raw.get("hourly", per_vm if per_vm is not None else None if monthly is None else monthly / HOURS_PER_MONTH)
    per_gb_hour = raw.get("perGbHour")
    per_gb = raw.get("perGbMonth", None if per_gb_hour is None else per_gb_hour * HOURS_PER_MONTH)
    tiers = _tiers(raw.get("tiers"))
    source, why = raw.get("source"), raw.get("unpriced")
    priced = hourly is not None or per_gb is not None or any(t.monthly is not None for t in tiers)
    if priced and not source:
        raise ValueError(f"prices/{cloud}.yaml: {name}: a price without a source")
    if not priced and not why:
        raise ValueError(f"prices/{cloud}.yaml: {name}: no price and no `unpriced` reason")
    return Price(
        None if hourly is None else float(hourly),
        None if per_gb is None else float(per_gb),
        str(raw.get("currency") or currency),
        str(raw.get("region") or region),
        str(raw.get("date") or date),
        None if source is None else " ".join(str(source).split()),
        None if why is None else " ".join(str(why).split()),
        per_vm is not None,
        None if monthly is None else float(monthly),
        None if raw.get("sku") is None else str(raw["sku"]),
        tiers,
        None if per_gb_hour is None else float(per_gb_hour),
    )


@cache
def load(cloud: Cloud) -> CloudPrices:
    data: dict[str, Any] = load_yaml(_DIR / f"{cloud}.yaml") or {}
    currency, region, date = str(data["currency"]), str(data["region"]), str(data["date"])
    items = {
        name: _price(name, raw or {}, currency, region, date, cloud) for name, raw in (data.get("items") or {}).items()
    }
    instances = dict(data.get("instances") or {})
    table = {str(k): float(v) for k, v in (instances.get("hourly") or {}).items()}
    by_region = {
        str(where): {str(k): float(v) for k, v in (rows or {}).items()}
        for where, rows in (instances.get("hourlyByRegion") or {}).items()
    }
    if (table or by_region) and not instances.get("source"):
        raise ValueError(f"prices/{cloud}.yaml: instances: prices without a source")
    source = None if instances.get("source") is None else " ".join(str(instances["source"]).split())
    unpriced = {str(k): " ".join(str(v).split()) for k, v in (instances.get("unpriced") or {}).items()}
    where = None if instances.get("region") is None else str(instances["region"])
    return CloudPrices(cloud, currency, region, date, items, table, source, by_region, unpriced, where)
