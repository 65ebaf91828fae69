"""Elastic fleets on Alibaba Cloud (pure): the ESS group's floor, its Spot mix and its scheduled tasks (UTC crons
converted exactly from a fixed-offset zone); what is not built is refused.

Facts and the reasons for each refusal are in `catalog/scaling/alicloud.yaml`. A cluster that uses none of
minNodes, scaling, spot.onDemandBase or spot.fallback gets no `AlicloudFleet`, and its group plans as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cronsim import CronSim

from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ..scaling import elastic, scaling_data


def data() -> dict[str, Any]:
    return scaling_data("alicloud")


@dataclass(frozen=True)
class SpotMix:
    multi_az_policy: str
    on_demand_base: int
    on_demand_percentage_above_base: int
    compensate_with_on_demand: bool  # spot.fallback onDemand


@dataclass(frozen=True)
class ScheduledTask:
    """One ESS scheduled task: a UTC cron (ESS takes no time zone) that sets the group's desired capacity."""

    name: str
    cron: str  # UTC, five fields
    nodes: int
    launch_time: str  # the cron's first UTC fire after the build (YYYY-MM-DDThh:mmZ), at most 90 days ahead
    recurrence_end_time: str  # as far as ESS allows: 365 days after the day the task is built (YYYY-MM-DDThh:mm:ssZ)


@dataclass(frozen=True)
class AlicloudFleet:
    min_size: int
    spot: SpotMix | None  # None: pay-as-you-go, or `spot: true` as before
    schedule: tuple[ScheduledTask, ...] = ()
    warnings: tuple[str, ...] = ()


def now() -> datetime:
    """The build's clock (UTC): ESS dates a task's first run and the end of its recurrence from it."""
    return datetime.now(UTC)


def _fixed_offset(key: str, zone: str, start: datetime, end: datetime) -> timedelta:
    """The zone's one UTC offset from start to end, or a keyed refusal when it changes (DST) in that window."""
    tz = ZoneInfo(zone)
    offset = start.astimezone(tz).utcoffset() or timedelta(0)
    t = start
    while t <= end:  # hourly: no zone changes its offset for less than an hour
        other = t.astimezone(tz).utcoffset() or timedelta(0)
        if other != offset:
            raise ConfigError(
                key,
                f"{zone} changes its UTC offset on {t:%Y-%m-%d} (daylight saving), within the year an ESS "
                "scheduled task repeats; ESS crons are UTC only, and one UTC cron cannot follow a local time across "
                "the change; use a zone with a fixed offset (UTC, Etc/GMT-8, Asia/Shanghai, ...)",
            )
        t += timedelta(hours=1)
    return offset


def _to_utc(key: str, cron: str, offset: timedelta) -> list[str]:
    """The local cron as UTC crons, exactly: one per day shift; a day shift needs day-of-month and month `*`."""
    if not offset:
        return [cron]
    sim = CronSim(cron, datetime(2026, 1, 1))
    _, _, dom, month, dow = cron.split()
    shift = int(offset.total_seconds()) // 60
    groups: dict[int, set[tuple[int, int]]] = {}
    for h in sorted(sim.hours):
        for m in sorted(sim.minutes):
            days, at = divmod(h * 60 + m - shift, 24 * 60)
            groups.setdefault(days, set()).add(divmod(at, 60))
    out = []
    for days, pairs in sorted(groups.items()):
        hours = sorted({h for h, _ in pairs})
        minutes = sorted({m for _, m in pairs})
        if pairs != {(h, m) for h in hours for m in minutes}:
            raise ConfigError(key, f"got {cron!r}; its UTC times are not one minute x hour cron for ESS; simplify it")
        days_field = dow
        if days:
            if (dom, month) != ("*", "*"):
                raise ConfigError(
                    key,
                    f"got {cron!r}; in UTC it fires on another day, and a day of month or month cannot be moved "
                    "exactly across a month's end; use `*` for both (a day of week moves)",
                )
            if dow != "*":
                weekdays = [d for d in sim.weekdays if isinstance(d, int)]
                if len(weekdays) != len(sim.weekdays):
                    raise ConfigError(key, f"got {cron!r}; L or # in day of week cannot be moved to UTC")
                days_field = ",".join(str(d) for d in sorted({(d + days) % 7 for d in weekdays}))
        out.append(f"{','.join(map(str, minutes))} {','.join(map(str, hours))} {dom} {month} {days_field}")
    return out


def _schedule(spec: ClusterSpec, at: datetime) -> tuple[tuple[ScheduledTask, ...], tuple[str, ...]]:
    scaling = spec.scaling
    assert scaling is not None
    limits = data()["schedule"]
    start = at.replace(hour=0, minute=0, second=0, microsecond=0)
    end = start + timedelta(days=int(limits["recurrenceEndDays"]))
    offset = _fixed_offset(f"{CLUSTER_KEY}.scaling.timeZone", scaling.time_zone, start, end)
    tasks = []
    for i, entry in enumerate(scaling.schedule):
        key = f"{CLUSTER_KEY}.scaling.schedule[{i}].cron"
        crons = _to_utc(key, entry.cron, offset)
        for j, cron in enumerate(crons):
            first = CronSim(cron, at.replace(second=0, microsecond=0, tzinfo=None)).__next__()
            if first - at.replace(tzinfo=None) > timedelta(days=int(limits["launchTimeDays"])):
                raise ConfigError(
                    key,
                    f"got {entry.cron!r}; it next fires on {first:%Y-%m-%d}, more than {limits['launchTimeDays']} "
                    "days ahead, and an ESS scheduled task's first run (LaunchTime) must be within that",
                )
            tasks.append(
                ScheduledTask(
                    f"{spec.name}-schedule-{i}" + (f"-{j}" if len(crons) > 1 else ""),
                    cron,
                    entry.nodes,
                    f"{first:%Y-%m-%dT%H:%MZ}",
                    f"{end:%Y-%m-%dT%H:%M:%SZ}",
                )
            )
    warning = (
        f"{CLUSTER_KEY}.scaling.schedule: ESS scheduled tasks stop repeating on {end:%Y-%m-%d} (UTC), "
        f"{limits['recurrenceEndDays']} days after the day they are created: ESS allows no later end; any "
        "`pulumi up` on a later day recreates them with a new end date (catalog/scaling/alicloud.yaml schedule)"
    )
    return tuple(tasks), (warning,)


def plan(spec: ClusterSpec) -> AlicloudFleet | None:
    if not elastic(spec):
        return None
    if spec.kubernetes is not None:
        # minNodes is the ACK GPU pool's floor, which ACK's cluster-autoscaler keeps (layout.alicloud.kubernetes)
        if spec.spot_on_demand_base or spec.spot_fallback != "none":
            raise ConfigError(
                f"{CLUSTER_KEY}.spot",
                "onDemandBase and fallback are not built for scheduler kubernetes on Alibaba Cloud (the ACK node "
                "pool is one spot strategy); remove them",
            )
        return None  # `scaling` is refused by the spec with scheduler kubernetes
    schedule: tuple[ScheduledTask, ...] = ()
    warnings: tuple[str, ...] = ()
    if spec.scaling is not None and spec.scaling.metric == "schedule":
        schedule, warnings = _schedule(spec, now())
    elif spec.scaling is not None:
        metric = spec.scaling.metric
        why = data()["notBuilt"][metric]["why"]
        raise ConfigError(
            f"{CLUSTER_KEY}.scaling.metric",
            f"{metric} is not built on Alibaba Cloud: {why} (catalog/scaling/alicloud.yaml notBuilt); remove "
            "scaling and size the group between minNodes and maxNodes yourself",
        )
    s = data()["spot"]
    spot = (
        SpotMix(
            s["multiAzPolicy"],
            spec.spot_on_demand_base,
            int(s["onDemandPercentageAboveBase"]),
            spec.spot_fallback == "onDemand",
        )
        if spec.spot and (spec.spot_on_demand_base or spec.spot_fallback != "none")
        else None
    )
    return AlicloudFleet(min_size=spec.min_nodes, spot=spot, schedule=schedule, warnings=warnings)
