"""Elastic fleets on Alibaba Cloud: the ESS scheduled tasks of `AlicloudFleet` (metric schedule).

The ESS group itself (floor, Spot mix) is built in `nodes`. Each task sets the group's desired capacity by a UTC
cron; its end date is as far as ESS allows from the day it is built, and a later build's end date recreates it
(delete first: a task's name is unique per account and region). Everything here is a child of `CloudCluster`.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from ..layout.alicloud.scaling import data


def build(
    parent: pulumi.Resource, name: str, layout: AlicloudLayout, group: alicloud.ess.ScalingGroup | None
) -> tuple[alicloud.ess.ScheduledTask, ...]:
    fleet = layout.fleet
    if fleet is None or group is None or not fleet.schedule:
        return ()
    kind = data()["schedule"]["recurrenceType"]
    return tuple(
        alicloud.ess.ScheduledTask(
            f"{name}-{task.name.removeprefix(f'{layout.spec.name}-')}",
            scheduled_task_name=task.name,
            description=f"gpu-cluster {task.name}: desired capacity {task.nodes}",
            scaling_group_id=group.id,
            desired_capacity=task.nodes,
            launch_time=task.launch_time,
            recurrence_type=kind,
            recurrence_value=task.cron,
            recurrence_end_time=task.recurrence_end_time,
            task_enabled=True,
            opts=pulumi.ResourceOptions(
                parent=parent,
                # a new end date means a new year of repeats, which ESS counts from the task's creation
                replace_on_changes=["recurrence_end_time"],
                delete_before_replace=True,
            ),
        )
        for task in fleet.schedule
    )


def output(layout: AlicloudLayout) -> dict[str, Any] | None:
    """`scaling`: the UTC crons ESS runs and when they stop, for the stack outputs (None without a schedule)."""
    fleet = layout.fleet
    if fleet is None or not fleet.schedule or layout.spec.scaling is None:
        return None
    return {
        "metric": "schedule",
        "minNodes": fleet.min_size,
        "timeZone": layout.spec.scaling.time_zone,
        "schedule": [
            {"cron": t.cron, "timeZone": "UTC", "nodes": t.nodes, "until": t.recurrence_end_time}
            for t in fleet.schedule
        ],
    }
