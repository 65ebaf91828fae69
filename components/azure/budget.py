"""`budget`: a Consumption budget on the cluster's resource group, one notification per alert, emailed.

What it counts and its amount are decided in `components.layout.budget` (`AzureLayout.budget`). The scope is the
resource group (`/subscriptions/S/resourceGroups/RG`), so the budget counts everything billed there. Azure takes a
period that starts on the first day of a month: the month of the build, kept afterwards (`ignoreChanges`), so a later
deploy in another month does not move it.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure

from ..layout.budget import Budget
from ..resources import invoke_options
from .context import Context


def build(ctx: Context) -> azure.consumption.Budget | None:
    plan: Budget | None = ctx.layout.budget
    if plan is None:
        return None
    pulumi.log.info(f"budget: {plan.note}", resource=ctx.component)
    subscription = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component)).subscription_id
    scope = pulumi.Output.concat("/subscriptions/", subscription, "/resourceGroups/", ctx.resource_group_name)
    notifications = {
        f"{'forecast' if alert.forecast else 'actual'}-{alert.percent:g}".replace(".", "_"): (
            azure.consumption.NotificationArgs(
                enabled=True,
                operator="GreaterThan",
                threshold=alert.percent,
                threshold_type="Forecasted" if alert.forecast else "Actual",
                contact_emails=list(plan.emails),
            )
        )
        for alert in plan.alerts
    }
    return azure.consumption.Budget(
        f"{ctx.name}-budget",
        budget_name=plan.name,
        scope=scope,
        amount=plan.amount,
        category="Cost",
        time_grain="Monthly",
        time_period=azure.consumption.BudgetTimePeriodArgs(start_date=f"{plan.month_start}T00:00:00Z"),
        notifications=notifications,
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(ignore_changes=["timePeriod"])),
    )
