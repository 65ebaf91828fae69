"""Capacity: spot, reservations and what the capacity asked for can buy (catalog/spot.yaml, catalog/capacity.yaml)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...catalog import capacity as capacity_offers
from ...catalog import spot as spot_offers
from ...catalog.capabilities import capabilities
from ...errors import CLUSTER_KEY, ConfigError
from ..context import Context


def _capacity(ctx: Context) -> Iterator[ConfigError]:
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}."
    spot = cfg.spot
    if spot.enabled and cfg.reservation:
        yield ConfigError(f"{k}reservation", "a reservation and spot are exclusive; set one of them")
    if spot.enabled and ctx.row is not None and (why := spot_offers.refusal(ctx.cloud, ctx.row.instanceType)):
        yield ConfigError(f"{k}spot", why)  # the spot data, or the catalog's own word (catalog/spot.py)
    if cfg.reservation and not re.fullmatch(ctx.rules["reservationPattern"], cfg.reservation):
        yield ConfigError(f"{k}reservation", f"got {cfg.reservation!r}; not a reservation id for {ctx.cloud}")
    if cfg.reservation_type == "capacity-block" and (ctx.cloud != "aws" or not cfg.reservation):
        yield ConfigError(f"{k}reservationType", "capacity-block needs cloud aws and a reservation id")
    if spot.enabled and spot.on_demand_base > ctx.max_nodes:
        yield ConfigError(f"{k}spot.onDemandBase", f"{spot.on_demand_base} is more than maxNodes {ctx.max_nodes}")
    if not spot.enabled and (spot.on_demand_base or spot.fallback != "none"):
        yield ConfigError(f"{k}spot", "onDemandBase and fallback apply only with enabled: true")
    if spot.enabled and (spot.on_demand_base or spot.fallback != "none") and cfg.node_group == "instances":
        yield ConfigError(
            f"{k}spot", "onDemandBase and fallback need nodeGroup: managed (a fixed set of instances has no mix)"
        )
    if spot.enabled:
        ctx.warn(
            "spot", "spot nodes can be reclaimed at any time; cost shows the on-demand price as an upper bound", "info"
        )
        eviction = capabilities(ctx.cloud).spot_eviction
        if eviction:
            ctx.warn("spot", eviction)


def _capacity_offers(ctx: Context) -> Iterator[ConfigError]:
    """What the capacity asked for can buy (catalog/capacity.yaml): a Capacity Block only for the families AWS sells
    as such; GCP flex-start VMs placed compactly only on the series that allow it."""
    cfg, row, k = ctx.cfg, ctx.row, f"{CLUSTER_KEY}."
    if row is None:
        return
    if ctx.cloud == "aws" and cfg.reservation_type == "capacity-block":
        why = capacity_offers.capacity_block_refusal(row.instanceType)
        if why is not None:
            yield ConfigError(f"{k}reservationType", f"capacity-block, but {why}")
    gcp = cfg.gcp
    if (
        ctx.cloud == "gcp"
        and gcp is not None
        and gcp.flex_start
        and cfg.placement == "cluster"
        and ctx.max_nodes > 1
        and cfg.scheduler != "kubernetes"
        and any(row.instanceType.startswith(p) for p in ctx.rules["consumption"]["flexStart"])
        and not capacity_offers.flex_start_compact_ok(row.instanceType)
    ):
        yield ConfigError(
            f"{k}placement",
            f"cluster with gcp.flexStart on {row.instanceType}: flex-start VMs are placed compactly only on "
            f"{capacity_offers.flex_start_compact_series()} (catalog/capacity.yaml: Cluster Toolkit "
            'dws-flex-start-compact-placement; its Slurm guide: flex-start "cannot be used in tandem with a ... '
            'placement policy"); use placement: none or auto, or drop gcp.flexStart',
        )


def flex_start_loose(ctx: Context) -> str | None:
    """Why `placement: auto` resolves to none for GCP flex-start VMs of a series that cannot be placed compactly."""
    cfg, row = ctx.cfg, ctx.row
    if ctx.cloud != "gcp" or cfg.gcp is None or not cfg.gcp.flex_start or row is None or ctx.max_nodes < 2:
        return None  # one node has no neighbour to be placed near (layout/gcp/placement.py placement_of)
    if capacity_offers.flex_start_compact_ok(row.instanceType):
        return None
    return (
        f"auto resolves to none with gcp.flexStart: {row.instanceType} flex-start VMs get no compact placement "
        f"(only {capacity_offers.flex_start_compact_series()} allow it, catalog/capacity.yaml); the nodes may land "
        "far apart"
    )
