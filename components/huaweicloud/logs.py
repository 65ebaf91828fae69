"""`monitoring.logs` (layout: `components.layout.huaweicloud.logs`): the cluster's LTS log group (its retention), the
nodes' stream in it, and which files reach the stream (`lts_ingestion`: the host group of the cluster's instances, of
the stack's custom identifier with an AS group, or of the CCE cluster's nodes, and its access configuration, which
pulumi-huaweicloud 0.0.12 lacks). ICAgent is in the ECS nodes' user data and uses their agency (the layout's); CCE's
is CCE's own. Children of `CloudCluster`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..layout.huaweicloud import HuaweiLayout
from ..layout.huaweicloud.logs import HuaweiLogs, data
from .lts_ingestion import LtsIngestion, LtsIngestionProvider


@dataclass
class Logs:
    group: huaweicloud.lts.Group
    stream: huaweicloud.lts.Stream
    ingestion: LtsIngestion | None = field(default=None)
    stdout_stream: huaweicloud.lts.Stream | None = field(default=None)  # with CCE: the GPU software's stdout
    stdout: LtsIngestion | None = field(default=None)
    control_plane: huaweicloud.cce.ClusterLogConfig | None = field(default=None)

    def output(self, plan: HuaweiLogs) -> dict[str, Any]:
        out = {
            "service": "Log Tank Service (LTS)",
            "logGroup": plan.group,
            "logGroupId": self.group.id,
            "logStream": plan.stream,
            "logStreamId": self.stream.id,
            "retentionDays": plan.retention_days,
            "agencyRole": None if plan.cce else plan.role,  # CCE's ICAgent is CCE's, not the agency's
            "files": list(plan.files),
            "hostGroup": plan.host_group,
            "hostGroupId": self.ingestion.hostGroupId if self.ingestion else None,
            "accessConfig": plan.access_config,
            "accessConfigId": self.ingestion.id if self.ingestion else None,
        }
        if plan.cce is not None:  # CCE: the nodes join the host group by this identifier
            out["hostGroupLabel"] = plan.cce.host_group_label
        elif plan.label_hosts is not None:  # an AS group: every node writes this one
            out["hostGroupLabel"] = plan.label_hosts.label
        if plan.stdout is not None:  # the GPU software's containers, to their own stream
            out["containers"] = {
                "logStream": plan.stdout.stream,
                "logStreamId": self.stdout_stream.id if self.stdout_stream else None,
                "namespaces": list(plan.stdout.namespaces),
                "accessConfig": plan.stdout.access_config,
                "accessConfigId": self.stdout.id if self.stdout else None,
            }
        if plan.control_plane:  # CCE ships these itself, to the LTS group it picks
            out["controlPlane"] = {"components": list(plan.control_plane), "retentionDays": plan.retention_days}
        return out


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
    logs = Logs(group, stream)
    if plan.stdout is not None:
        logs.stdout_stream = huaweicloud.lts.Stream(
            f"{name}-logs-containers", group_id=group.id, stream_name=plan.stdout.stream, tags=dict(tags), opts=child
        )
    return logs


def ingest(
    parent: pulumi.Resource,
    name: str,
    layout: HuaweiLayout,
    logs: Logs,
    instances: Sequence[huaweicloud.ecs.Instance],
    tags: Mapping[str, str],
    cluster: huaweicloud.cce.Cluster | None = None,
) -> LtsIngestion:
    """The files on `instances` (every node kind's ECS instance) to the stream; after the instances, whose ids the
    host group lists. With an AS group: the nodes' files, by the custom identifier they write (no id listed). With CCE
    (`cluster`): the CCE nodes' files, by the custom identifier CCE's ICAgent reports."""
    plan = layout.logs
    assert plan is not None  # logs are built only with a plan
    ingestion = data()["ingestion"]
    cce, labelled = plan.cce, plan.label_hosts
    agent_access_type, access_config_type = plan.access_types
    # a dynamic resource is served by Pulumi's own provider: an explicit huaweicloud Provider's keys do not reach it
    if parent.get_provider("huaweicloud:lts/group:Group") is not None:
        pulumi.log.warn(
            "gpu-cluster:cluster.monitoring.logs: an explicit huaweicloud Provider is given, but the LTS host group "
            "and access configuration are made with the stack's huaweicloud:accessKey/secretKey or HW_ACCESS_KEY/"
            "HW_SECRET_KEY (components/huaweicloud/lts_ingestion.py): set those for the same account",
            resource=parent,
        )
    provider = LtsIngestionProvider(
        group_type=str(ingestion["hostGroupType"]),
        agent_access_type=agent_access_type,
        access_config_type=access_config_type,
        wait_minutes=plan.host_wait_minutes,
    )
    props: dict[str, Any] = {
        "region": layout.spec.region,
        "hostGroupName": plan.host_group,
        "accessConfigName": plan.access_config,
        # an AS group's nodes join by their identifier: none is listed, none waited for
        "hostIds": [] if labelled else pulumi.Output.all(*[inst.id for inst in instances]),
        "logGroupId": logs.group.id,
        "logStreamId": logs.stream.id,
        "paths": list(plan.files),
        "singleLineMode": plan.single_line_mode,
        "tags": dict(tags),  # 10 at most (catalog/tags.yaml), under LTS's 20
    }
    if labelled is not None:  # LABEL, as with CCE (the ECS instances' stacks keep their inputs as deployed)
        props["labels"] = [labelled.label]
    if cce is not None:  # only with CCE: the ECS stacks' inputs stay as deployed
        assert cluster is not None  # the layout plans CCE logs only with scheduler kubernetes
        props |= {
            "clusterId": cluster.id,
            "labels": cluster.id.apply(lambda cluster_id: [cce.label(cluster_id)]),
            "pathType": cce.path_type,
        }
    logs.ingestion = LtsIngestion(f"{name}-logs-ingestion", provider, props, pulumi.ResourceOptions(parent=parent))
    if cce is not None and plan.stdout is not None and logs.stdout_stream is not None and cluster is not None:
        out = plan.stdout
        stdout_props = props | {
            "hostGroupName": out.host_group,
            "accessConfigName": out.access_config,
            "logStreamId": logs.stdout_stream.id,
            "paths": [],
            "pathType": out.path_type,
            "stdout": out.stdout,
            "stderr": out.stderr,
            "namespaceRegex": out.namespace_regex,
        }
        logs.stdout = LtsIngestion(
            f"{name}-logs-containers-ingestion", provider, stdout_props, pulumi.ResourceOptions(parent=parent)
        )
    if cluster is not None and plan.control_plane:
        logs.control_plane = control_plane(parent, name, plan, cluster)
    return logs.ingestion


def control_plane(
    parent: pulumi.Resource, name: str, plan: HuaweiLogs, cluster: huaweicloud.cce.Cluster
) -> huaweicloud.cce.ClusterLogConfig:
    """monitoring.logs.controlPlane: CCE's log configuration of the cluster, each named component on; the retention
    is the logs' own (the rules keep it within CCE's 0 to 30 days)."""
    return huaweicloud.cce.ClusterLogConfig(
        f"{name}-control-plane-logs",
        cluster_id=cluster.id,
        ttl_in_days=plan.retention_days,
        log_configs=[
            huaweicloud.cce.ClusterLogConfigLogConfigArgs(name=component, enable=True)
            for component in plan.control_plane
        ],
        opts=pulumi.ResourceOptions(parent=parent),
    )
