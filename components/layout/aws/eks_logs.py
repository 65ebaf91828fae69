"""monitoring.logs with scheduler kubernetes (EKS), pure: the Amazon CloudWatch Observability EKS add-on with only its
container logs on, the log groups its Fluent Bit writes to, and the node role's writes on them.

EKS nodes get no CloudWatch agent in their user data (EKS merges its own bootstrap into it, and the files of interest
live in the journal and /var/log/containers): the add-on runs Fluent Bit as a DaemonSet on every node, the GPU pool
included (its tolerations default to `operator: Exists`). Fluent Bit writes kubelet and containerd (dataplane), the
pods' output (application) and the journal's kernel and system messages (host: cloud-init, our bootstrap units, the
health checks) to /aws/containerinsights/<EKS cluster name>/<group> (catalog/monitoring.yaml logs.aws.kubernetes).
The groups are created by the stack with the spec's retention and the cluster's key, before the add-on; the EKS name
is known at deploy, so their names are filled there (`{cluster}`). The metrics parts of the add-on stay off: the
in-cluster kube-prometheus-stack and the GPU operator's DCGM exporter already collect them.

The control plane's own logs (monitoring.logs.controlPlane) go to /aws/eks/<EKS cluster name>/cluster, which EKS
creates itself, never expiring and without a key, unless it exists first: the stack creates it before the cluster
with the same retention and key, which needs the EKS name written (kubernetes.clusterName; the spec refuses the types
without it: catalog/monitoring.yaml logs.aws.kubernetes.controlPlane).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec

CLUSTER = "{cluster}"  # the EKS cluster's name, known at deploy


@dataclass(frozen=True)
class EksLogs:
    addon: str
    version: str
    configuration: str  # the add-on's configurationValues (JSON)
    group_prefix: str  # /aws/containerinsights/{cluster}/
    groups: tuple[str, ...]  # application, dataplane, host
    retention_days: int
    actions: tuple[str, ...]  # the node role's writes, on these groups and their streams only
    replaces_policy: str  # the managed policy the scoped grant stands in for
    cluster_name: str | None = None  # kubernetes.clusterName: the EKS name, known before the cluster
    control_plane: tuple[str, ...] = ()  # the control plane's log types (EKS enabledClusterLogTypes)
    control_plane_group: str | None = None  # /aws/eks/<cluster_name>/cluster, with control_plane

    def group_name(self, cluster: str, group: str) -> str:
        return self.group_prefix.replace(CLUSTER, cluster) + group

    @property
    def key_pattern(self) -> str:
        """The groups' names and `*` for the group: what the key policy names (`{cluster}` still in it where the EKS
        name is generated at deploy)."""
        prefix = self.group_prefix.replace(CLUSTER, self.cluster_name) if self.cluster_name else self.group_prefix
        return f"{prefix}*"


def plan(spec: ClusterSpec) -> EksLogs | None:
    if not spec.monitoring.logs.enabled or spec.kubernetes is None:
        return None
    entry: dict[str, Any] | None = catalog_monitoring.logs("aws")
    assert entry is not None  # the spec refuses logs where catalog/monitoring.yaml has no entry
    kube = entry["kubernetes"]
    name = spec.kubernetes.cluster_name
    types = spec.monitoring.logs.control_plane
    return EksLogs(
        addon=str(kube["addon"]),
        version=str(kube["version"]),
        configuration=json.dumps(kube["configuration"], sort_keys=True),
        group_prefix=str(kube["groupPrefix"]),
        groups=tuple(str(g) for g in kube["groups"]),
        retention_days=spec.monitoring.logs.retention_days,
        actions=tuple(entry["grant"]),
        replaces_policy=str(entry["replacesPolicy"]),
        cluster_name=name,
        # the spec refuses types without a name: the group is created before the cluster, named after it
        control_plane=types if name else (),
        control_plane_group=str(kube["controlPlane"]["group"]).replace(CLUSTER, name) if types and name else None,
    )
