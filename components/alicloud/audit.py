"""The audit trail of `compliance: mlps3` (layout: `components.layout.alicloud.audit`): an SLS project of the stack
and one ActionTrail trail delivering the account's API events to it. SLS makes the trail's Logstore
(actiontrail_<trail name>, kept permanently by default). The project holds the audit records: protected and kept on
delete. A child of `CloudCluster`, like every resource of the cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud
import pulumi_random as random

from ..layout.alicloud import AlicloudLayout
from ..resources import invoke_options


@dataclass(frozen=True)
class Audit:
    project: alicloud.log.Project
    trail: alicloud.actiontrail.Trail

    def output(self, layout: AlicloudLayout) -> dict[str, Any]:
        plan = layout.audit
        assert plan is not None
        return {
            "trail": plan.trail_name,
            "events": plan.event_rw,
            "slsProject": self.project.project_name,
            "logstore": f"actiontrail_{plan.trail_name}",
            "retention": f"permanent (SLS default; at least {plan.retention_days} days required)",
        }


def build(parent: pulumi.Resource, name: str, layout: AlicloudLayout, tags: Mapping[str, str]) -> Audit | None:
    plan = layout.audit
    if plan is None:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    # SLS project names are unique across Alibaba Cloud: the cluster name and a suffix chosen once
    suffix = random.RandomString(f"{name}-audit-suffix", length=8, special=False, upper=False, opts=child)
    project = alicloud.log.Project(
        f"{name}-audit",
        project_name=suffix.result.apply(lambda s: f"{layout.spec.name}-audit-{s}"),
        description=f"gpu-cluster {layout.spec.name}: ActionTrail audit records (MLPS level 3)",
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True),
    )
    account = alicloud.get_caller_identity_output(opts=invoke_options(parent)).account_id
    role = alicloud.ram.get_roles_output(name_regex=plan.service_role, opts=invoke_options(parent))
    trail = alicloud.actiontrail.Trail(
        f"{name}-audit-trail",
        trail_name=plan.trail_name,
        event_rw=plan.event_rw,
        sls_project_arn=pulumi.Output.all(account, project.project_name).apply(
            lambda v: f"acs:log:{layout.spec.region}:{v[0]}:project/{v[1]}"
        ),
        sls_write_role_arn=role.roles[0].arn,
        status="Enable",
        opts=child,
    )
    return Audit(project, trail)
