"""What a stack runs besides its GPU nodes, priced as data: `prices/<cloud>.yaml`.

Each cloud's file names its currency, the region and date its prices were read for, one entry per billing item
(NAT gateway, public IP, Kubernetes control plane, boot disk) with `hourly` (per unit per hour) or `perGbMonth` and its
source, or `hourly: null` with `unpriced: <why>`, and the on-demand prices of the non-GPU instance types the stacks
run (Slurm head, login node, Kubernetes system pool) with their source. Pure and cached; the plan's bill reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from .rows import Cloud

_DIR = Path(__file__).parent / "prices"
HOURS_PER_MONTH = 730  # the month the plan's monthly totals use (365 x 24 / 12)


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

    @property
    def priced(self) -> bool:
        return self.hourly is not None or self.per_gb_month is not None

    @property
    def text(self) -> str:
        """The price as the source gives it."""
        if self.monthly is not None:
            return f"{self.monthly:g}/month"
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
            hourly, where = self.instances.get(instance_type), self.region
        if hourly is None:
            why = f"no sourced on-demand price for {instance_type} in prices/{self.cloud}.yaml"
            if self.instances_by_region and region not in self.instances_by_region:
                why += f" (regions priced: {', '.join(self.instances_by_region)})"
            return Price(None, None, self.currency, where, self.date, None, why)
        return Price(hourly, None, self.currency, where, self.date, self.instances_source, None)


def _price(name: str, raw: dict[str, Any], currency: str, region: str, date: str, cloud: str) -> Price:
    per_vm, monthly = raw.get("hourlyPerVm"), raw.get("monthly")
    hourly = raw.get("hourly", per_vm if per_vm is not None else None if monthly is None else monthly / HOURS_PER_MONTH)
    per_gb = raw.get("perGbMonth")
    source, why = raw.get("source"), raw.get("unpriced")
    if (hourly is not None or per_gb is not None) and not source:
        raise ValueError(f"prices/{cloud}.yaml: {name}: a price without a source")
    if hourly is None and per_gb is None and not why:
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
    return CloudPrices(cloud, currency, region, date, items, table, source, by_region)
