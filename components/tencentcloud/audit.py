"""The audit trail of `compliance: mlps3` (layout: `components.layout.tencentcloud.audit`): a CLS logset and topic of
the stack, kept the retention the standard asks (the topic's period), and one CloudAudit tracking set delivering the
account's API events to the topic. The logset and topic hold the audit records: protected and kept on delete.
Children of `CloudCluster`, like every resource of the cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..layout.tencentcloud import TencentLayout
from .logs import logset_topic


@dataclass(frozen=True)
class Audit:
    logset: tencentcloud.cls.Logset
    topic: tencentcloud.cls.Topic
    track: tencentcloud.audit.Track

    def output(self, layout: TencentLayout) -> dict[str, Any]:
        plan = layout.audit
        assert plan is not None
        return {
            "track": plan.track_name,
            "events": plan.action_type,
            "logset": plan.logset,
            "topicId": self.topic.id,
            "retentionDays": plan.retention_days,
        }


def build(parent: pulumi.Resource, name: str, layout: TencentLayout, tags: Mapping[str, str]) -> Audit | None:
    plan = layout.audit
    if plan is None:
        return None
    kept = pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True)
    logset, topic = logset_topic(
        f"{name}-audit",
        plan.logset,
        plan.topic,
        plan.retention_days,
        f"gpu-cluster {layout.spec.name}: CloudAudit records of the account (MLPS level 3)",
        tags,
        kept,
    )
    track = tencentcloud.audit.Track(
        f"{name}-audit-track",
        name=plan.track_name,
        action_type=plan.action_type,
        resource_type=plan.resource_type,
        event_names=list(plan.event_names),
        status=1,  # open
        storage=tencentcloud.audit.TrackStorageArgs(
            storage_type=plan.storage_type,
            storage_name=topic.id,  # "when StorageType is `cls`, StorageName is cls topicId"
            storage_prefix=plan.storage_prefix,
            storage_region=layout.spec.region,
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return Audit(logset, topic, track)
