"""`budget`: what the cloud's budget resource is told, decided once for every cloud that builds one (capabilities
`budget:`): its name, amount and currency, the alerts, the recipients and what the budget counts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ..spec import ClusterSpec
from ..text import one_line

CLUSTER_TAG = "gpu-cluster:cluster"  # ClusterSpec.base_tags: on every resource the stack tags, the cluster's name


@dataclass(frozen=True)
class Alert:
    percent: float  # of the amount
    forecast: bool  # False: actual spend; True: the month's forecast


@dataclass(frozen=True)
class Budget:
    name: str  # the budget's name in the cloud (`<cluster>-budget`)
    amount: float  # per calendar month
    currency: str
    alerts: tuple[Alert, ...]  # actual thresholds, then the forecast one
    emails: tuple[str, ...]
    tag_key: str  # the cluster's tag (GCP: label) as the cloud's resources carry it
    tag_value: str
    month_start: str  # the first day of the build's month (Azure's period must start on a first of a month)
    billing_account: str | None  # GCP
    note: str  # what the budget counts, and its caveat (capabilities `budget.note`)


def now() -> datetime:
    """The build's clock (UTC): an Azure budget's period starts on the first day of this month."""
    return datetime.now(UTC)


def budget_plan(spec: ClusterSpec, tag_key: str, tag_value: str, note: str) -> Budget | None:
    """The budget of `spec` (None: no `budget` key); `tag_key`/`tag_value`: the cluster's tag in the cloud's form."""
    budget = spec.budget
    if budget is None:
        return None
    alerts = tuple(Alert(p, False) for p in budget.thresholds)
    if budget.forecast is not None:
        alerts = (*alerts, Alert(budget.forecast, True))
    return Budget(
        name=f"{spec.name}-budget",
        amount=budget.monthly,
        currency=budget.currency,
        alerts=alerts,
        emails=budget.notify,
        tag_key=tag_key,
        tag_value=tag_value,
        month_start=f"{now():%Y-%m}-01",
        billing_account=budget.billing_account,
        note=one_line(note),
    )
