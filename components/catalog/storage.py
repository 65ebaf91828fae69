"""Shared filesystems per cloud, as data: `storage/<cloud>.yaml` (services, sizes, tiers, ports, mount, prices).

Pure and cached. `problems` says what is wrong with a `storage.shared` request (one message per key, naming
what is allowed); `resolve` turns a valid request into the service, size and tier the cloud creates. The
spec's cross-field rule and every cloud's layout call these two, so `plan` and `up` agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ..datafile import load_yaml

_DIR = Path(__file__).parent / "storage"
Kind = Literal["lustre", "nfs", "existing"]


def _text(value: Any) -> str:
    return " ".join(str(value or "").split())


@dataclass(frozen=True)
class Sizes:
    first: tuple[int, ...]  # the allowed sizes below the first multiple of `increment`
    increment: int
    max: int
    source: str
    ranges: tuple[tuple[int, int, int], ...] = ()  # (from, to, step): sizes in ranges of their own steps

    @property
    def min(self) -> int:
        if self.ranges:
            return self.ranges[0][0]
        return self.first[0] if self.first else self.increment

    def allowed(self, size: int, increment: int | None = None, top: int | None = None) -> bool:
        """`increment` is a tier's own step (and minimum), `top` its maximum, where sizes depend on the tier."""
        if self.ranges:
            return any(lo <= size <= hi and (size - lo) % step == 0 for lo, hi, step in self.ranges)
        step = increment or self.increment
        if increment is None and size in self.first:
            return True
        return (increment or self.min) <= size <= (top or self.max) and size % step == 0

    def describe(self, increment: int | None = None, top: int | None = None) -> str:
        if self.ranges:
            return ", ".join(f"{lo} to {hi} in steps of {step}" for lo, hi, step in self.ranges) + " GiB"
        step = increment or self.increment
        head = ", ".join(str(s) for s in self.first) + ", then " if self.first and increment is None else ""
        return f"{head}multiples of {step} up to {top or self.max} GiB"

    def nearest(self, size: int, increment: int | None = None, top: int | None = None) -> tuple[int, ...]:
        """The allowed sizes just below and just above `size`."""
        if self.ranges:
            fits = [
                lo + ((min(max(size, lo), hi) - lo) // step + k) * step for lo, hi, step in self.ranges for k in (0, 1)
            ]
            fits = [c for c in fits if self.allowed(c)]
            below = max((c for c in fits if c < size), default=None)
            above = min((c for c in fits if c > size), default=None)
            return tuple(c for c in (below, above) if c is not None)
        step = increment or self.increment
        candidates = [] if increment is not None else list(self.first)
        candidates += [c for c in ((size // step) * step, (size // step + 1) * step) if c >= step]
        allowed = [c for c in candidates if (increment or self.min) <= c <= (top or self.max)]
        below = max((c for c in allowed if c < size), default=None)
        above = min((c for c in allowed if c > size), default=None)
        return tuple(c for c in (below, above) if c is not None)


@dataclass(frozen=True)
class Service:
    kind: Literal["lustre", "nfs"]
    name: str
    resource: str  # the Pulumi type token of the filesystem
    sizes: Sizes | None  # None: elastic (nothing provisioned; sizeGb only estimates the cost)
    throughputs: tuple[int, ...]  # MB/s per TiB tiers, empty where the service has none
    default_throughput: int | None
    throughput_source: str
    efa_increments: dict[int, int]  # AWS: EFA-enabled sizes step per tier
    efa_source: str
    ports: tuple[tuple[str, int, int], ...]  # (protocol, from, to) the clients reach the service on
    ports_source: str
    fstype: str
    options: str
    source_form: str  # the mount source with `{output}` fields the resources fill in
    mount_source: str
    client: dict[str, str]
    regions: tuple[str, ...] | None  # None: no data (never refused by region)
    regions_source: str
    regions_complete: bool  # False: the list may miss regions (a region not in it is not refused)
    price: dict[str, Any]
    data: dict[str, Any]  # the whole entry, for cloud-only keys

    def monthly_usd(self, size_gb: int, throughput: int | None) -> float | None:
        """The reference price: GiB x USD per GB-month (the tier's, where prices differ by tier)."""
        by_tier = self.price.get("usdPerGbMonthByThroughput")
        rate = by_tier.get(throughput) if by_tier and throughput is not None else self.price.get("usdPerGbMonth")
        return None if rate is None else round(float(rate) * size_gb, 2)

    @property
    def price_source(self) -> str:
        return _text(self.price.get("source"))


@dataclass(frozen=True)
class StorageCatalog:
    auto: Literal["lustre", "nfs"]
    services: dict[str, Service]
    not_built: dict[str, str] = field(default_factory=dict)  # a kind the cloud has but the toolkit does not build: why

    def service(self, kind: str) -> Service | None:
        return self.services.get(self.auto if kind == "auto" else kind)


def _service(kind: str, raw: dict[str, Any]) -> Service:
    sizes = raw.get("sizes")
    tp = raw.get("throughput") or {}
    efa = raw.get("efa") or {}
    mount = raw["mount"]
    regions = raw.get("regions")
    return Service(
        kind=kind,  # type: ignore[arg-type]
        name=str(raw["service"]),
        resource=str(raw["resource"]),
        sizes=(
            Sizes(
                tuple(int(s) for s in sizes.get("first") or ()),
                int(sizes.get("increment") or sizes["ranges"][0][2]),
                int(sizes.get("max") or sizes["ranges"][-1][1]),
                _text(sizes.get("source")),
                tuple((int(lo), int(hi), int(step)) for lo, hi, step in sizes.get("ranges") or ()),
            )
            if sizes
            else None
        ),
        throughputs=tuple(int(v) for v in tp.get("values") or ()),
        default_throughput=int(tp["default"]) if tp.get("default") is not None else None,
        throughput_source=_text(tp.get("source")),
        efa_increments={int(k): int(v) for k, v in (efa.get("increments") or {}).items()},
        efa_source=_text(efa.get("source")),
        ports=tuple((str(p["protocol"]), int(p["from"]), int(p["to"])) for p in raw.get("ports") or ()),
        ports_source=_text(raw.get("portsSource")),
        fstype=str(mount["fstype"]),
        options=str(mount["options"]),
        source_form=str(mount["source"]),
        mount_source=_text(mount.get("sourceDoc")),
        client={str(k): _text(v) for k, v in (raw.get("client") or {}).items()},
        regions=None if regions is None else tuple(str(r) for r in regions),
        regions_source=_text(raw.get("regionsSource")),
        regions_complete=bool(raw.get("regionsComplete", True)),
        price={**(raw.get("price") or {})},
        data=raw,
    )


@cache
def load(cloud: str) -> StorageCatalog | None:
    """The cloud's storage data; None for a cloud without a file (no shared filesystem there yet)."""
    path = _DIR / f"{cloud}.yaml"
    if not path.exists():
        return None
    data: dict[str, Any] = load_yaml(path)
    services = {kind: _service(kind, raw) for kind, raw in (data.get("services") or {}).items()}
    not_built = {str(kind): _text(why) for kind, why in (data.get("notBuilt") or {}).items()}
    return StorageCatalog(data["auto"], services, not_built)


@dataclass(frozen=True)
class Resolved:
    """What the cloud creates (or mounts) for `storage.shared`."""

    kind: Kind
    service: Service | None  # None for kind existing
    size_gb: int | None  # None: elastic or existing
    throughput: int | None
    path: str
    retain: bool
    existing: str = ""

    @property
    def fstype(self) -> str:
        if self.service is not None:
            return self.service.fstype
        return "lustre" if "@tcp" in self.existing else "nfs4"

    @property
    def monthly_usd(self) -> float | None:
        if self.service is None or self.size_gb is None:
            return None
        return self.service.monthly_usd(self.size_gb, self.throughput)


def problems(
    cloud: str,
    region: str,
    kind: str,
    size_gb: int | None,
    throughput: int | None,
    existing: str,
) -> list[tuple[str, str]]:
    """(sub-key under storage.shared, message) for every problem of the request; empty when it is valid."""
    out: list[tuple[str, str]] = []
    data = load(cloud)
    if data is None:  # the cloud's layout does not mount one yet (no catalog/storage/<cloud>.yaml)
        return [("kind", f"{kind}: gpu-cluster does not build or mount a shared filesystem on {cloud} yet")]
    if kind == "existing":
        if not existing.strip():
            out.append(
                (
                    "existing",
                    "kind existing needs the filesystem's mount source (existing: HOST@tcp:/NAME or HOST:/EXPORT)",
                )
            )
        return out
    if existing:
        out.append(("existing", f"set, but kind is {kind}; use kind: existing to mount it, or drop existing"))
    service = data.service(kind)
    if service is None:
        why = data.not_built.get(kind)
        out.append(("kind", f"{kind}: {cloud} offers {', '.join(data.services)} here{f'; {why}' if why else ''}"))
        return out
    if service.regions is not None and service.regions_complete and region not in service.regions:
        out.append(
            ("kind", f"{kind if kind != 'auto' else 'auto (' + service.kind + ')'}: {service.name} is not offered in "
             f"{region} (catalog/storage/{cloud}.yaml: {service.regions_source}); regions: {', '.join(service.regions)}"
             f"{'; or kind: nfs' if service.kind == 'lustre' and 'nfs' in data.services else ''}")
        )  # fmt: skip
    if throughput is not None:
        if not service.throughputs:
            out.append(("throughput", f"{service.name} has no throughput tiers; remove throughput"))
        elif throughput not in service.throughputs:
            out.append(
                (
                    "throughput",
                    f"got {throughput}; {service.name} takes {', '.join(map(str, service.throughputs))} MB/s per TiB",
                )
            )
    sizes = service.sizes
    tier = throughput if throughput in service.throughputs else service.default_throughput
    raw_sizes = service.data.get("sizes") or {}
    step = (raw_sizes.get("byThroughput") or {}).get(tier)
    top = (raw_sizes.get("maxByThroughput") or {}).get(tier)
    if size_gb is not None and sizes is not None and not sizes.allowed(size_gb, step, top):
        near = sizes.nearest(size_gb, step, top)
        nearest = f" (nearest: {' or '.join(map(str, near))})" if near else ""
        out.append(("sizeGb", f"got {size_gb}; {service.name} takes {sizes.describe(step, top)}{nearest}"))
    return out


def resolve(
    cloud: str,
    kind: str,
    size_gb: int | None,
    throughput: int | None,
    path: str,
    retain: bool,
    existing: str,
) -> Resolved:
    """The request resolved (call after `problems` found nothing)."""
    if kind == "existing":
        return Resolved("existing", None, None, None, path, retain, existing.strip())
    data = load(cloud)
    assert data is not None
    service = data.service(kind)
    assert service is not None
    tier = throughput if throughput is not None else service.default_throughput
    if size_gb is None and service.sizes is not None:
        step = service.data["sizes"].get("byThroughput", {}).get(tier)
        size_gb = step or service.sizes.min
    return Resolved(service.kind, service, size_gb, tier, path, retain)
