"""`monitoring.logs` (layout: `components.layout.tencentcloud.logs`): the cluster's CLS logset and topic, the machine
group of the nodes' label, one collection config per file attached to it, and LogListener's credentials: a CAM
sub-user (API key only) allowed pushLog on this topic, its key in an SSM secret, and the nodes' role allowed to read
that secret only. The nodes' LogListener part is in their user data (the layout's). With scheduler kubernetes: one
topic and one kubernetes.LogConfig per TKE source (the cluster's log_agent is kubernetes.py's). Children of
`CloudCluster`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..layout.tencentcloud import TencentLayout
from ..layout.tencentcloud.logs import TencentLogs
from ..resources import invoke_options


@dataclass(frozen=True)
class Listener:
    """LogListener's side (VM and Slurm nodes, a TKE cluster's login node): its topic, group, configs and key."""

    topic: tencentcloud.cls.Topic
    machine_group: tencentcloud.cls.MachineGroup
    configs: tuple[tencentcloud.cls.Config, ...]
    user: tencentcloud.cam.User


@dataclass(frozen=True)
class Logs:
    logset: tencentcloud.cls.Logset
    listener: Listener | None  # None on TKE without a login node
    tke_topics: tuple[tencentcloud.cls.Topic, ...] = ()
    tke_configs: tuple[tencentcloud.kubernetes.LogConfig, ...] = ()

    def output(self, plan: TencentLogs) -> dict[str, Any]:
        out: dict[str, Any] = {"service": "Cloud Log Service (CLS)", "logset": plan.logset}
        if self.listener is not None:
            out |= {
                "topicId": self.listener.topic.id,
                "retentionDays": plan.retention_days,
                "machineGroup": plan.machine_group,
                "label": plan.label,
                "credentials": {"camUser": plan.user, "ssmSecret": plan.secret},
                "files": [s.path for s in plan.sources],
            }
        if plan.tke is not None:
            out["retentionDays"] = plan.retention_days
            out["tke"] = {
                "logAgent": plan.tke.log_agent,
                "writer": f"TKE's log components with the service role {plan.tke.identity}",
                "logConfigs": {
                    c.name: {"topic": c.topic, "topicId": t.id, "input": c.input_detail}
                    for c, t in zip(plan.tke.configs, self.tke_topics, strict=True)
                },
            }
        return out


def logset_topic(
    resource: str,
    logset_name: str,
    topic_name: str,
    retention_days: int,
    describes: str,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> tuple[tencentcloud.cls.Logset, tencentcloud.cls.Topic]:
    """A CLS logset and its one topic kept `retention_days` (the nodes' logs, compliance mlps3's audit records)."""
    logset = tencentcloud.cls.Logset(resource, logset_name=logset_name, tags=dict(tags), opts=opts)
    topic = tencentcloud.cls.Topic(
        f"{resource}-topic",
        logset_id=logset.id,
        topic_name=topic_name,
        period=retention_days,
        describes=describes,
        tags=dict(tags),
        opts=opts,
    )
    return logset, topic


def build(
    parent: pulumi.Resource,
    name: str,
    layout: TencentLayout,
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
    cluster: tencentcloud.kubernetes.Cluster | None = None,
) -> Logs | None:
    """The logset; LogListener's topic, group, configs and key where a node runs it; TKE's LogConfigs on `cluster`."""
    plan = layout.logs
    if plan is None:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    if plan.loglistener:
        logset, topic = logset_topic(
            f"{name}-logs",
            plan.logset,
            plan.topic,
            plan.retention_days,
            f"gpu-cluster {layout.spec.name}: the nodes' logs (monitoring.logs)",
            tags,
            child,
        )
        listener = _listener(parent, name, layout, plan, topic, role_name, tags, child)
    else:
        logset = tencentcloud.cls.Logset(f"{name}-logs", logset_name=plan.logset, tags=dict(tags), opts=child)
        listener = None
    if plan.tke is None:
        return Logs(logset, listener)
    assert cluster is not None  # scheduler kubernetes: components/tencentcloud/kubernetes.py built it
    topics, configs = _tke(name, layout, plan, logset, cluster, tags, child)
    return Logs(logset, listener, topics, configs)


def _tke(
    name: str,
    layout: TencentLayout,
    plan: TencentLogs,
    logset: tencentcloud.cls.Logset,
    cluster: tencentcloud.kubernetes.Cluster,
    tags: Mapping[str, str],
    child: pulumi.ResourceOptions,
) -> tuple[tuple[tencentcloud.cls.Topic, ...], tuple[tencentcloud.kubernetes.LogConfig, ...]]:
    """One topic per LogConfig (TKE takes no topic another collection config uses), kept retentionDays."""
    tke = plan.tke
    assert tke is not None
    region = layout.spec.region
    topics, configs = [], []
    for config in tke.configs:
        topic = tencentcloud.cls.Topic(
            f"{name}-logs-{config.topic}",
            logset_id=logset.id,
            topic_name=config.topic,
            period=plan.retention_days,
            describes=f"gpu-cluster {layout.spec.name}: TKE LogConfig {config.name} (monitoring.logs)",
            tags=dict(tags),
            opts=child,
        )
        log_config = tencentcloud.kubernetes.LogConfig(
            f"{name}-logs-{config.topic}-config",
            cluster_id=cluster.id,
            cluster_type=tke.cluster_type,
            log_config_name=config.name,
            logset_id=logset.id,
            log_config=topic.id.apply(lambda topic_id, c=config: c.body(region, topic_id)),
            opts=child,
        )
        topics.append(topic)
        configs.append(log_config)
    return tuple(topics), tuple(configs)


def _listener(
    parent: pulumi.Resource,
    name: str,
    layout: TencentLayout,
    plan: TencentLogs,
    topic: tencentcloud.cls.Topic,
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
    child: pulumi.ResourceOptions,
) -> Listener:
    """The machine group of the nodes' label, one collection config per file, and LogListener's key."""
    region = layout.spec.region
    group = tencentcloud.cls.MachineGroup(
        f"{name}-logs-group",
        group_name=plan.machine_group,
        machine_group_type=tencentcloud.cls.MachineGroupMachineGroupTypeArgs(type="label", values=[plan.label]),
        tags=dict(tags),
        opts=child,
    )
    configs = []
    for source in plan.sources:
        config = tencentcloud.cls.Config(
            f"{name}-logs-{source.name}",
            name=source.name,
            output=topic.id,
            path=source.path,
            log_type="minimalist_log",  # each line one log, its text in __CONTENT__
            # required by the provider; -1 is full collection: the boot's lines from before LogListener started too
            extract_rule=tencentcloud.cls.ConfigExtractRuleArgs(backtracking=-1),
            opts=child,
        )
        tencentcloud.cls.ConfigAttachment(
            f"{name}-logs-{source.name}-attachment", config_id=config.id, group_id=group.id, opts=child
        )
        configs.append(config)
    account = tencentcloud.user.get_info_output(opts=invoke_options(parent))
    user = _credentials(name, plan, region, topic, account, role_name, tags, child)
    return Listener(topic, group, tuple(configs), user)


def _credentials(
    name: str,
    plan: TencentLogs,
    region: str,
    topic: tencentcloud.cls.Topic,
    account: pulumi.Output[Any],
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
    child: pulumi.ResourceOptions,
) -> tencentcloud.cam.User:
    """LogListener's key: a sub-user allowed pushLog on this topic; the key in SSM, readable by the nodes' role."""
    user = tencentcloud.cam.User(
        f"{name}-logs-user",
        name=plan.user,
        remark=f"gpu-cluster {plan.logset}: LogListener's API key (monitoring.logs)",
        console_login=False,
        use_api=True,
        force_delete=True,  # its API key would block the deletion when logs are turned off
        tags=dict(tags),
        opts=child,
    )
    policy = tencentcloud.cam.Policy(
        f"{name}-logs-user-policy",
        name=f"{plan.user}-push",
        document=pulumi.Output.all(account.owner_uin, topic.id).apply(
            lambda a: plan.user_policy(region, str(a[0]), str(a[1]))
        ),
        description=f"gpu-cluster {plan.logset}: pushLog on the cluster's topic only",
        opts=child,
    )
    tencentcloud.cam.UserPolicyAttachment(
        f"{name}-logs-user-push", user_name=user.name, policy_id=policy.id, opts=child
    )
    secret = tencentcloud.ssm.Secret(
        f"{name}-logs-secret",
        secret_name=plan.secret,
        description=f"gpu-cluster {plan.logset}: LogListener's API key (CAM user {plan.user})",
        recovery_window_in_days=0,  # deleted with the logs: no name held for a week
        tags=dict(tags),
        opts=child,
    )
    key: pulumi.Output[str] = pulumi.Output.secret(
        pulumi.Output.all(user.secret_id, user.secret_key).apply(
            lambda k: json.dumps({"SecretId": k[0], "SecretKey": k[1]})
        )
    )
    tencentcloud.ssm.SecretVersion(
        f"{name}-logs-secret-v1",
        secret_name=secret.secret_name,
        version_id=plan.secret_version,
        secret_string=key,
        opts=child,
    )
    read = tencentcloud.cam.Policy(
        f"{name}-logs-read-policy",
        name=f"{plan.user}-read",
        document=pulumi.Output.all(account.owner_uin, account.uin).apply(
            lambda a: plan.node_policy(region, str(a[0]), str(a[1]))
        ),
        description=f"gpu-cluster {plan.logset}: the nodes read LogListener's key",
        opts=child,
    )
    tencentcloud.cam.RolePolicyAttachmentByName(
        f"{name}-logs-read", policy_name=read.name, role_name=role_name, opts=child
    )
    return user
