"""`budget`: an AWS Budgets cost budget of the cluster's tagged resources, one notification per alert, emailed.

What it counts and its amount are decided in `components.layout.budget` (`AwsLayout.budget`). The cost filter is the
cluster's tag (`TagKeyValue`, `user:<key>$<value>`: pulumi-aws budgets/budget.py cost_filters example); AWS counts a
tag only once it is activated as a cost allocation tag, which the plan says as a warning.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ..layout.budget import Budget
from .naming import Context


def amount_text(amount: float) -> str:
    """A budget amount as AWS takes it: a decimal string (botocore NumericValue `([0-9]*\\.)?[0-9]+`), no exponent."""
    return f"{amount:.2f}".rstrip("0").rstrip(".")


def build_budget(ctx: Context) -> aws.budgets.Budget | None:
    plan: Budget | None = ctx.layout.budget
    if plan is None:
        return None
    pulumi.log.warn(f"budget: {plan.note}", resource=ctx.parent)
    return aws.budgets.Budget(
        f"{ctx.name}-budget",
        name=plan.name,
        budget_type="COST",
        time_unit="MONTHLY",
        limit_amount=amount_text(plan.amount),
        limit_unit=plan.currency,
        cost_filters=[
            aws.budgets.BudgetCostFilterArgs(name="TagKeyValue", values=[f"user:{plan.tag_key}${plan.tag_value}"])
        ],
        notifications=[
            aws.budgets.BudgetNotificationArgs(
                comparison_operator="GREATER_THAN",
                notification_type="FORECASTED" if alert.forecast else "ACTUAL",
                threshold=alert.percent,
                threshold_type="PERCENTAGE",
                subscriber_email_addresses=list(plan.emails),
            )
            for alert in plan.alerts
        ],
        tags=ctx.tagged("budget"),
        opts=ctx.child,
    )
