"""`budget`: an amount, a currency the cloud bills in, thresholds in range, email targets, and a cloud whose SDK has
a budget resource (its capabilities' `budget:` data), every problem at once."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from ...catalog.capabilities import capability_data
from ...errors import CLUSTER_KEY, ConfigError
from ...text import one_line
from ..context import Context
from ..messages import describe
from .emails import email_errors


def budget_data(cloud: str) -> dict[str, Any]:
    """The cloud's `budget:` block of its capabilities file ({} when it has none)."""
    data: dict[str, Any] = capability_data(cloud).get("budget") or {}
    return data


def _budget(ctx: Context) -> Iterator[ConfigError]:
    """`budget`: refused where the cloud's SDK has no budget resource; else every bad value, one line each."""
    budget, k = ctx.cfg.budget, f"{CLUSTER_KEY}.budget"
    if budget is None:
        return
    data = budget_data(ctx.cloud)
    if not data.get("resource"):
        why = one_line(data.get("why", "")) or "no budget resource is built for this cloud"
        yield ConfigError(k, f"not built on {ctx.cloud}: {why}")
        return
    if not (budget.monthly > 0 and math.isfinite(budget.monthly)):
        yield ConfigError(f"{k}.monthly", f"got {budget.monthly:g}; a positive amount per month")
    currencies: list[str] = data["currencies"]
    if budget.currency != "auto" and budget.currency not in currencies:
        yield ConfigError(
            f"{k}.currency",
            f"got {budget.currency!r}; {ctx.cloud} bills in {', '.join(currencies)} "
            f"({one_line(data['currencySource'])})",
        )
    yield from _thresholds(ctx, data, k)
    yield from _notify(budget.notify, data, k)
    yield from _billing_account(ctx, data, k)


def _thresholds(ctx: Context, data: dict[str, Any], k: str) -> Iterator[ConfigError]:
    budget = ctx.cfg.budget
    assert budget is not None
    low, high = data["thresholdPercent"]["min"], data["thresholdPercent"]["max"]
    for i, value in enumerate(budget.thresholds):
        if not low <= value <= high:
            yield ConfigError(f"{k}.thresholds[{i}]", f"got {value:g}; percent of the amount, {low} to {high}")
    if len(set(budget.thresholds)) != len(budget.thresholds):
        yield ConfigError(f"{k}.thresholds", f"got {list(budget.thresholds)}; each percent once")
    if budget.forecast is not None and not low <= budget.forecast <= high:
        yield ConfigError(f"{k}.forecast", f"got {budget.forecast:g}; percent of the amount, {low} to {high}")
    count = len(budget.thresholds) + (budget.forecast is not None)
    most = data.get("maxNotifications")
    if most is not None and count > most:
        yield ConfigError(
            f"{k}.thresholds",
            f"{count} alerts (thresholds and forecast); a {ctx.cloud} budget takes at most {most} "
            f"({one_line(data['limitsSource'])})",
        )
    if count == 0:
        yield ConfigError(f"{k}.thresholds", "no alert: give at least one threshold or a forecast percent")


def _notify(notify: tuple[str, ...], data: dict[str, Any], k: str) -> Iterator[ConfigError]:
    if not notify:
        yield ConfigError(f"{k}.notify", "no one to alert; give at least one email address")
    most = data.get("maxEmails")
    limit = f"a budget alert takes at most {most} ({one_line(data.get('limitsSource', ''))})"
    yield from email_errors(notify, f"{k}.notify", most, limit)


def _billing_account(ctx: Context, data: dict[str, Any], k: str) -> Iterator[ConfigError]:
    budget = ctx.cfg.budget
    assert budget is not None
    pattern = data.get("billingAccountPattern")
    if pattern is None:
        if budget.billing_account is not None:
            yield ConfigError(
                f"{k}.billingAccount",
                f"a GCP key; on {ctx.cloud} the budget belongs to the account the stack deploys in: remove it",
            )
        return
    if budget.billing_account is None:
        yield ConfigError(
            f"{k}.billingAccount",
            f"required on {ctx.cloud}: the Cloud Billing account the budget belongs to, such as 012345-567890-ABCDEF",
        )
    elif not re.fullmatch(pattern, budget.billing_account):
        yield ConfigError(
            f"{k}.billingAccount",
            f"got {describe(budget.billing_account)}; a billing account id such as 012345-567890-ABCDEF "
            f"({one_line(data['billingAccountSource'])})",
        )
