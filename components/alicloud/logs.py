"""`monitoring.logs` (layout: `components.layout.alicloud.logs`): the cluster's SLS project, its logstore, the
machine group of the nodes' user-defined identity and one Logtail configuration per file set, each attached to the
group. The nodes' Logtail part is in their user data (the layout's). Children of `CloudCluster`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud
import pulumi_random as random

from ..layout.alicloud import AlicloudLayout
from ..layout.alicloud.logs import AliLogs, LogSource


@dataclass(frozen=True)
class Logs:
    project: alicloud.log.Project
    store: alicloud.log.Store
    machine_group: alicloud.log.MachineGroup
    configs: tuple[alicloud.log.LogTailConfig, ...]

    def output(self, plan: AliLogs) -> dict[str, Any]:
        return {
            "service": "Simple Log Service (SLS)",
            "project": self.project.project_name,
            "logstore": plan.logstore,
            "retentionDays": plan.retention_days,
            "machineGroup": plan.machine_group,
            "identity": plan.identity,
            "files": [f"{s.directory}/{s.pattern}" for s in plan.sources],
        }


def input_detail(source: LogSource) -> str:
    """Each line one log in a `content` field (the full-regex mode with `(.*)`), the files of `directory` itself
    (maxDepth 0); the fields of SLS's "Logtail configurations (Legacy)" inputDetail (doc-detail/29058) and its
    CreateConfig example (logType common_reg_log, logBeginRegex, regex, key, localStorage)."""
    return json.dumps(
        {
            "logType": "common_reg_log",
            "logPath": source.directory,
            "filePattern": source.pattern,
            "maxDepth": 0,
            "logBeginRegex": ".*",
            "regex": "(.*)",
            "key": ["content"],
            "localStorage": True,
            "fileEncoding": "utf8",
            "topicFormat": "none",
        },
        sort_keys=True,
    )


def build(parent: pulumi.Resource, name: str, layout: AlicloudLayout, tags: Mapping[str, str]) -> Logs | None:
    plan = layout.logs
    if plan is None:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    # SLS project names are unique across Alibaba Cloud: the cluster's prefix and a suffix chosen once
    suffix = random.RandomString(f"{name}-logs-suffix", length=8, special=False, upper=False, opts=child)
    project = alicloud.log.Project(
        f"{name}-logs",
        project_name=suffix.result.apply(lambda s: f"{plan.project_prefix}-{s}"),
        description=f"gpu-cluster {layout.spec.name}: the nodes' logs (monitoring.logs)",
        tags=dict(tags),
        opts=child,
    )
    encrypt = (
        alicloud.log.StoreEncryptConfArgs(enable=True, encrypt_type=plan.encrypt_type)
        if plan.encrypt_type is not None
        else None
    )
    store = alicloud.log.Store(
        f"{name}-logs-store",
        project_name=project.project_name,
        logstore_name=plan.logstore,
        retention_period=plan.retention_days,
        encrypt_conf=encrypt,
        opts=child,
    )
    group = alicloud.log.MachineGroup(
        f"{name}-logs-group",
        project=project.project_name,
        name=plan.machine_group,
        identify_type="userdefined",
        identify_lists=[plan.identity],
        opts=child,
    )
    configs = []
    for source in plan.sources:
        config = alicloud.log.LogTailConfig(
            f"{name}-logs-{source.name}",
            project=project.project_name,
            logstore=store.logstore_name,
            name=source.name,
            input_type="file",
            output_type="LogService",
            input_detail=input_detail(source),
            opts=child,
        )
        alicloud.log.LogTailAttachment(
            f"{name}-logs-{source.name}-attachment",
            project=project.project_name,
            logtail_config_name=config.name,
            machine_group_name=group.name,
            opts=child,
        )
        configs.append(config)
    return Logs(project, store, group, tuple(configs))
