"""Cloud Monitoring email notification channels, one per address: whom a budget's thresholds (budget.py) and the
alert policies of monitoring.notify (observe.py) mail."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout


def email_channels(
    prefix: str, emails: Sequence[str], what: str, layout: GcpLayout, opts: pulumi.ResourceOptions
) -> list[gcp.monitoring.NotificationChannel]:
    """`<prefix>-<i>` per address, shown in the console as "<what> to <address>"."""
    return [
        gcp.monitoring.NotificationChannel(
            f"{prefix}-{i}",
            type="email",
            display_name=f"{what} to {email}",
            labels={"email_address": email},
            user_labels=dict(layout.labels),
            project=layout.project or None,
            opts=opts,
        )
        for i, email in enumerate(emails)
    ]
