"""`budget`: a Cloud Billing budget on `budget.billingAccount`, counting this project's cost that carries the
cluster's label, with one threshold rule per alert and the Cloud Monitoring email channels it notifies.

What it counts and its amount are decided in `components.layout.budget` (`GcpLayout.budget`). Budget emails to
chosen addresses go through Monitoring notification channels of type email, created here before the budget names them
(billingbudgets v1 NotificationsRule.monitoringNotificationChannels: email channels only, at most 5). The project
filter takes `projects/{number}` (pulumi-gcp billing/_inputs.py BudgetBudgetFilterArgs.projects), read at deploy.
"""

from __future__ import annotations

import math

import pulumi
import pulumi_gcp as gcp

from ..layout.budget import Budget
from ..layout.gcp import GcpLayout
from ..resources import invoke_options
from .channels import email_channels


def money(amount: float) -> tuple[str, int]:
    """google.type.Money: whole units as text and the nanos (10^-9 units) of the rest."""
    units = math.floor(amount)
    return str(units), round((amount - units) * 1e9)


def build_budget(name: str, layout: GcpLayout, parent: pulumi.Resource) -> gcp.billing.Budget | None:
    plan: Budget | None = layout.budget
    if plan is None:
        return None
    assert plan.billing_account is not None  # the spec requires it on GCP
    pulumi.log.info(f"budget: {plan.note}", resource=parent)
    child = pulumi.ResourceOptions(parent=parent)
    project = layout.project or None
    channels = email_channels(f"{name}-budget-email", plan.emails, f"{plan.name} alert", layout, child)
    number = gcp.organizations.get_project_output(project_id=project, opts=invoke_options(parent)).number
    units, nanos = money(plan.amount)
    return gcp.billing.Budget(
        f"{name}-budget",
        billing_account=plan.billing_account,
        display_name=plan.name,
        amount=gcp.billing.BudgetAmountArgs(
            specified_amount=gcp.billing.BudgetAmountSpecifiedAmountArgs(
                currency_code=plan.currency, units=units, nanos=nanos
            )
        ),
        budget_filter=gcp.billing.BudgetBudgetFilterArgs(
            projects=[number.apply(lambda n: f"projects/{n}")],
            labels={plan.tag_key: plan.tag_value},
            calendar_period="MONTH",
        ),
        threshold_rules=[
            gcp.billing.BudgetThresholdRuleArgs(
                threshold_percent=alert.percent / 100,  # 1.0-based: 0.5 is 50%
                spend_basis="FORECASTED_SPEND" if alert.forecast else "CURRENT_SPEND",
            )
            for alert in plan.alerts
        ],
        all_updates_rule=gcp.billing.BudgetAllUpdatesRuleArgs(
            monitoring_notification_channels=[c.id for c in channels]
        ),
        opts=child,
    )
