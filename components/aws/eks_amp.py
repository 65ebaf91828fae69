"""monitoring.prometheus managed on EKS: Amazon Managed Service for Prometheus's managed collector (amp.Scraper),
scraping the cluster into the workspace components/aws/amp.py builds (its rules and alert manager are VM mode's).

The collector's interfaces sit in the cluster's two subnets (the nodes' and the control plane's: two zones, as AMP
needs) and carry the cluster security group, which every node carries and which admits itself on every port (EKS
User Guide, sec-group-reqs). EKS with authentication mode API: AMP creates the scraper's access entry itself, so
nothing of ours maps it into the cluster. Decisions: layout/aws/eks_amp.py.
"""

from __future__ import annotations

from typing import Any

import pulumi_aws as aws

from .amp import Amp
from .kubernetes import Eks
from .naming import Context
from .network import Network


def build_scraper(ctx: Context, net: Network, eks: Eks, amp: Amp | None) -> aws.amp.Scraper | None:
    plan = ctx.layout.eks_amp
    if plan is None or amp is None:
        return None
    cluster = eks.cluster
    return aws.amp.Scraper(
        f"{ctx.name}-amp-scraper",
        alias=plan.scraper_alias,
        source=aws.amp.ScraperSourceArgs(
            eks=aws.amp.ScraperSourceEksArgs(
                cluster_arn=cluster.arn,
                subnet_ids=[net.subnet.id, eks.control_plane_subnet.id],
                security_group_ids=[cluster.vpc_config.cluster_security_group_id],
            )
        ),
        destination=aws.amp.ScraperDestinationArgs(
            amp=aws.amp.ScraperDestinationAmpArgs(workspace_arn=amp.workspace.arn)
        ),
        scrape_configuration=plan.scrape_configuration,
        tags=ctx.tagged("amp-scraper"),
        opts=ctx.child,
    )


def collector_output(ctx: Context, amp: Amp | None, scraper: aws.amp.Scraper | None) -> dict[str, Any]:
    """The plan's monitoring row: where the samples go and what scrapes them."""
    plan = ctx.layout.eks_amp
    if plan is None or amp is None or scraper is None:
        return {}
    return {
        "prometheus": "managed",
        "service": plan.managed.service,
        "workspace": plan.managed.alias,
        "endpoint": amp.workspace.prometheus_endpoint,
        "collector": f"AMP's managed collector {plan.scraper_alias} (jobs dcgm-exporter and node-exporter)",
        "grafanaNote": plan.managed.grafana_note,
    }
