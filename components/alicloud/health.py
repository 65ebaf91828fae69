"""What the nodes' health hook may do: mark an instance of this cluster's own ESS group Unhealthy, nothing else.

Only for a managed group with `health.action: replace` (`layout.health_hook`): a custom RAM policy
(`ram.Policy`) allowing exactly `ess:SetInstanceHealth` on this scaling group's ARN
(`acs:ess:<region>:<account>:scalinggroup/<id>`, the resource type Alibaba's SetInstanceHealth
authorization table names), attached to the nodes' RAM role (`ram.RolePolicyAttachment`,
policyType Custom). The hook itself is components/bootstrap/alicloud_unhealthy.sh. Instances mode
gets no grant: the health check only reports there (catalog/capabilities/alicloud.yaml `health`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from ..layout.alicloud.data import alicloud_data
from ..resources import invoke_options
from .context import Context
from .identity import CustomGrant, allow_document, custom_grant, ram_policy_name


@dataclass(frozen=True)
class HealthGrant:
    grant: CustomGrant
    resource: pulumi.Output[str]  # the scaling group ARN the grant is scoped to


def build(ctx: Context, group: alicloud.ess.ScalingGroup | None) -> HealthGrant | None:
    layout = ctx.layout
    if not layout.health_hook or group is None:
        return None
    data = alicloud_data()["health"]["managed"]
    spec = layout.spec
    account = alicloud.get_caller_identity_output(opts=invoke_options(ctx.parent)).account_id
    resource = pulumi.Output.all(account, group.id).apply(
        lambda args: str(data["resource"]).format(region=spec.region, account=args[0], group=args[1])
    )
    grant = custom_grant(
        ctx.parent,
        (f"{ctx.name}-health-policy", f"{ctx.name}-role-health"),
        ram_policy_name(spec, "set-instance-health"),
        f"gpu-cluster {spec.name}: nodes mark themselves Unhealthy in their own ESS group only",
        resource.apply(lambda arn: allow_document([str(data["action"])], [arn])),
        ctx.role_name,
        ctx.tags,
    )
    return HealthGrant(grant, resource)


def output(layout: AlicloudLayout, grant: HealthGrant | None) -> dict[str, Any]:
    """The `health` stack output: what a failed check does on this cluster and what it may call."""
    spec = layout.spec
    if spec.health_action is None:
        return {"enabled": False}
    return {
        "enabled": True,
        "action": "replace" if grant else "report",
        "result": "/var/lib/gpu-cluster/health.json",
        "grant": {"action": alicloud_data()["health"]["managed"]["action"], "resource": grant.resource}
        if grant
        else None,
    }
