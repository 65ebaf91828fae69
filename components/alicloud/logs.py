"""`monitoring.logs` (layout: `components.layout.alicloud.logs`): the cluster's SLS project, its logstore, the
machine group of the nodes' user-defined identity and one Logtail configuration per file set, each attached to the
group. The nodes' Logtail part is in their user data (the layout's). Children of `CloudCluster`.

ACK (`build_ack`, once the cluster exists): the machine group of ACK's nodes (k8s-group-<cluster id>, their custom
identifier), the two plugin configurations attached to it, then ACK's logtail-ds add-on naming the project."""

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
    machine_group: alicloud.log.MachineGroup | None  # None: no file set to collect (ACK without a login node)
    configs: tuple[alicloud.log.LogTailConfig, ...]

    def output(self, plan: AliLogs) -> dict[str, Any]:
        return {
            "service": "Simple Log Service (SLS)",
            "project": self.project.project_name,
            "logstore": plan.logstore,
            "retentionDays": plan.retention_days,
            "machineGroup": plan.machine_group if self.machine_group is not None else None,
            "identity": plan.identity if self.machine_group is not None else None,
            "files": [f"{s.directory}/{s.pattern}" for s in plan.sources],
            **(
                {
                    "kubernetes": f"{plan.ack.addon} on every ACK node, machine group "
                    f"{plan.ack.machine_group_prefix}<cluster id>: {', '.join(c.name for c in plan.ack.configs)}"
                }
                if plan.ack is not None
                else {}
            ),
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
    if not plan.sources:
        return Logs(project, store, None, ())
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


def build_ack(parent: pulumi.Resource, name: str, plan: AliLogs, logs: Logs, cluster_id: pulumi.Input[str]) -> None:
    """ACK: its nodes' machine group and the plugin configurations on it, then the logtail-ds add-on (its Logtail
    pods find the group and its configurations in the project it names)."""
    ack = plan.ack
    if ack is None:
        return
    child = pulumi.ResourceOptions(parent=parent)
    group_name = pulumi.Output.concat(ack.machine_group_prefix, cluster_id)
    group = alicloud.log.MachineGroup(
        f"{name}-logs-ack-group",
        project=logs.project.project_name,
        name=group_name,
        identify_type="userdefined",
        identify_lists=[group_name],
        opts=child,
    )
    attachments = []
    for config in ack.configs:
        created = alicloud.log.LogTailConfig(
            f"{name}-logs-{config.name}",
            project=logs.project.project_name,
            logstore=logs.store.logstore_name,
            name=config.name,
            input_type="plugin",
            output_type="LogService",
            input_detail=config.input_detail,
            opts=child,
        )
        attachments.append(
            alicloud.log.LogTailAttachment(
                f"{name}-logs-{config.name}-attachment",
                project=logs.project.project_name,
                logtail_config_name=created.name,
                machine_group_name=group.name,
                opts=child,
            )
        )
    alicloud.cs.KubernetesAddon(
        f"{name}-logtail-ds",
        cluster_id=cluster_id,
        name=ack.addon,
        config=logs.project.project_name.apply(ack.addon_config),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[group, *attachments]),
    )
