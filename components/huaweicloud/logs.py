"""`monitoring.logs` (layout: `components.layout.huaweicloud.logs`): the cluster's LTS log group (its retention) and
the nodes' stream in it. ICAgent is in the nodes' user data and uses their agency (the layout's); which files reach
the stream is the console step the plan warns about (no host access configuration in pulumi-huaweicloud 0.0.12).
Children of `CloudCluster`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..layout.huaweicloud import HuaweiLayout
from ..layout.huaweicloud.logs import HuaweiLogs


@dataclass(frozen=True)
class Logs:
    group: huaweicloud.lts.Group
    stream: huaweicloud.lts.Stream

    def output(self, plan: HuaweiLogs) -> dict[str, Any]:
        return {
            "service": "Log Tank Service (LTS)",
            "logGroup": plan.group,
            "logGroupId": self.group.id,
            "logStream": plan.stream,
            "logStreamId": self.stream.id,
            "retentionDays": plan.retention_days,
            "agencyRole": plan.role,
            "files": list(plan.files),
            "todo": "bind the files to the stream once in the LTS console (see the plan's warning)",
        }


def build(parent: pulumi.Resource, name: str, layout: HuaweiLayout, tags: Mapping[str, str]) -> Logs | None:
    plan = layout.logs
    if plan is None:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    group = huaweicloud.lts.Group(
        f"{name}-logs", group_name=plan.group, ttl_in_days=plan.retention_days, tags=dict(tags), opts=child
    )
    # the stream inherits the group's retention (ttl_in_days unset: -1, "inherit the log group settings")
    stream = huaweicloud.lts.Stream(
        f"{name}-logs-stream", group_id=group.id, stream_name=plan.stream, tags=dict(tags), opts=child
    )
    return Logs(group, stream)
