"""The cost ceiling (gpu-cluster:maxHourlyUsd) against the stack's reference price."""

from __future__ import annotations

from collections.abc import Iterator

from ..model import CLUSTER_TYPE, CONFIG, Facts, Issue, Resource


def cost_ceiling(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type != CLUSTER_TYPE or facts.max_hourly_usd is None or facts.hourly_usd is None:
        return  # no price: the cost-ceiling-unchecked rule says so
    if facts.hourly_usd > facts.max_hourly_usd:
        yield Issue(
            f"costs about ${facts.hourly_usd:,.2f}/h, over the ceiling ${facts.max_hourly_usd:,.2f}/h",
            fix=f"lower {CONFIG}.maxNodes or raise gpu-cluster:maxHourlyUsd",
        )


def cost_ceiling_unchecked(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    """A ceiling that cannot be judged is said, never skipped silently (advisory by default)."""
    if res.type != CLUSTER_TYPE or facts.max_hourly_usd is None or facts.hourly_usd is not None:
        return
    yield Issue(
        f"has no reference price for {facts.instance_type or 'its instance type'}: "
        f"the cost ceiling ${facts.max_hourly_usd:,.2f}/h cannot be checked",
        fix="check the cloud's price for that type at maxNodes yourself",
    )
