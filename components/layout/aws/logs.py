"""The nodes' logs in CloudWatch Logs (monitoring.logs.enabled), pure: one log group per cluster, the CloudWatch agent
on every node kind shipping its files there, one stream per node and file, and the node role's writes on that group.

Every node runs the agent with the files of its kind (catalog/monitoring.yaml logs.aws.files): cloud-init's two logs
and syslog everywhere (Ubuntu's rsyslog receives the journal, so every unit of ours, the health checks and kubelet
land there), slurmctld's (and slurmdbd's) log on the Slurm head, slurmd's on the GPU nodes. An elastic fleet's agent
publishes its GPU metric with the same configuration (scaling.py agent_config). The group is created here, with the
retention asked and the cluster's key when `encryption` is set, so the agent never creates one: the role may create
streams and put events in that group only. The broad CloudWatchAgentServerPolicy (every group, every namespace) is
left off the role then, as a gpuUtilization fleet already does.

With scheduler kubernetes (EKS) the nodes run no agent of ours: the CloudWatch Observability add-on's Fluent Bit
ships them (layout/aws/eks_logs.py), and `plan` here gives None.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ...bootstrap import Part
from ...bootstrap.slurm_conf import SLURMCTLD_LOG, SLURMD_LOG, SLURMDBD_LOG
from ...catalog import monitoring as catalog_monitoring
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .scaling import GpuMetric, agent_part

# a GPU node, one that runs slurmd (the cluster's nodes under scheduler slurm, an elastic partition's), the Slurm head,
# the login node
NodeKind = Literal["gpu", "slurm-gpu", "head", "login"]


@dataclass(frozen=True)
class AwsLogs:
    group_name: str
    retention_days: int
    actions: tuple[str, ...]  # the node role's writes, on this group and its streams only
    replaces_policy: str  # the managed policy the scoped grant stands in for
    files: dict[NodeKind, tuple[str, ...]]

    def collect_list(self, kind: NodeKind) -> list[dict[str, str]]:
        """The agent's `logs.logs_collected.files.collect_list` for a node of this kind: one stream per node and
        file ({instance_id} is the agent's own placeholder)."""
        return [
            {
                "file_path": path,
                "log_group_name": self.group_name,
                "log_stream_name": f"{{instance_id}}/{posixpath.basename(path)}",
            }
            for path in self.files[kind]
        ]

    def agent(self, kind: NodeKind, metric: GpuMetric | None = None) -> Part:
        return agent_part(metric, self.collect_list(kind), self.group_name)


def _files(spec: ClusterSpec) -> dict[NodeKind, tuple[str, ...]]:
    entry = catalog_monitoring.logs("aws") or {}
    every = tuple(str(f) for f in entry["files"])
    slurm = spec.slurm is not None
    head = (SLURMCTLD_LOG, *((SLURMDBD_LOG,) if spec.slurm is not None and spec.slurm.accounting else ()))
    return {
        "gpu": every,
        "slurm-gpu": (*every, SLURMD_LOG),
        "head": (*every, *head) if slurm else every,
        "login": every,
    }


def group_name(spec: ClusterSpec) -> str:
    """One group per stack and cluster (log group names take [.-_/#A-Za-z0-9], 1..512)."""
    return re.sub(r"[^.\-_/#A-Za-z0-9]", "-", f"/gpu-cluster/{spec.stack}/{spec.name}")


def problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    # EKS refuses egress none itself (layout/aws/kubernetes.py): one line per key
    if spec.monitoring.logs.enabled and spec.network.egress == "none" and spec.kubernetes is None:
        yield ConfigError(
            f"{CLUSTER_KEY}.network.egress",
            "none, but monitoring.logs needs the nodes to download the CloudWatch agent and reach CloudWatch Logs "
            "(no VPC endpoint is built for it); use egress nat or monitoring.logs.enabled false",
        )


def plan(spec: ClusterSpec) -> AwsLogs | None:
    if not spec.monitoring.logs.enabled or spec.kubernetes is not None:
        return None
    entry: dict[str, Any] | None = catalog_monitoring.logs("aws")
    assert entry is not None  # the spec refuses logs where catalog/monitoring.yaml has no entry
    return AwsLogs(
        group_name=group_name(spec),
        retention_days=spec.monitoring.logs.retention_days,
        actions=tuple(entry["grant"]),
        replaces_policy=str(entry["replacesPolicy"]),
        files=_files(spec),
    )
