"""The GPU nodes: disks and user-data limits, the image, the placement they get (an anti-affinity server group for
spread, nothing for cluster), the managed group (an AS group and its configuration) and the refusals of what Huawei
here cannot build.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ...catalog.capabilities import capabilities
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from .data import huawei_data

# KVM ECSs (every catalog flavor, HW-ECS-GPU "Virtualization KVM") see EVS disks as virtio /dev/vd[b-z] (system: vda);
# no catalog flavor has local NVMe.
NVME_GLOBS: tuple[str, ...] = ()
DISK_GLOBS = ("/dev/vd[b-z]",)

Placement = Literal["cluster", "spread", "none"]


@dataclass(frozen=True)
class Image:
    image_id: str | None  # explicit id; None = newest public image matching name_regex at deploy
    name_regex: str | None
    description: str


def disk_type() -> str:
    return str(huawei_data()["disks"]["type"])


def user_data_max() -> int:
    return int(huawei_data()["userData"]["maxBytes"])


def applied_placement(spec: ClusterSpec, warnings: list[str]) -> tuple[Placement, str | None]:
    """The placement the nodes get and the server group policy that applies it (None: no server group)."""
    key = f"{CLUSTER_KEY}.placement"
    data = huawei_data()["placement"]
    if spec.placement == "none" or (spec.nodes < 2 and spec.placement == "cluster"):
        return "none", None
    if spec.placement == "cluster":
        warnings.append(f"{key}: {one_line(data['clusterWhy'])}; the nodes are placed as the cloud chooses")
        return "none", None
    return "spread", str(data["spread"])


def node_problems(spec: ClusterSpec, user_data: str | bytes) -> Iterator[ConfigError]:
    """`user_data`: as the nodes get it (bytes: gzip-compressed, scheduler slurm's)."""
    if spec.spot:
        yield ConfigError(
            f"{CLUSTER_KEY}.spot",
            "true, but spot nodes are not built on huaweicloud: ecs.Instance charging_mode spot exists, but no source "
            "read here says how a Huawei spot ECS learns it is reclaimed, so no interruption watcher is built; use "
            "on-demand nodes",
        )
    if spec.login is not None and not capabilities("huaweicloud").login:
        yield ConfigError(f"{CLUSTER_KEY}.login", "no login node is built on huaweicloud")
    packed = isinstance(user_data, bytes)
    size = len(user_data if isinstance(user_data, bytes) else user_data.encode())
    if size > user_data_max():
        yield ConfigError(
            CLUSTER_KEY,
            f"the nodes' bootstrap is {size} bytes{' (gzip)' if packed else ''}, over Huawei's {user_data_max()}-byte "
            "user data limit "
            f"({one_line(huawei_data()['userData']['source'])}); turn off a node part (health, dcgmExporter)",
        )


@dataclass(frozen=True)
class ManagedGroup:
    """`nodeGroup: managed` without a scheduler: an as_.Group of `desired` nodes between its bounds, launched from one
    as_.Configuration (capabilities `asGroup`). No scaling policy and no lifecycle hook: the group holds its desired
    count and relaunches a node that goes away; a new configuration reaches new nodes only."""

    min_size: int
    max_size: int
    desired: int


def as_data() -> dict[str, Any]:
    """capabilities/huaweicloud.yaml `asGroup`."""
    data: dict[str, Any] = huawei_data()["asGroup"]
    return data


def managed_group(spec: ClusterSpec) -> ManagedGroup | None:
    if spec.node_group != "managed" or spec.scheduler == "kubernetes":  # CCE's pool: layout/huaweicloud/kubernetes.py
        return None
    return ManagedGroup(spec.min_nodes, spec.max_nodes, spec.nodes)


def managed_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """What a Huawei AS group cannot take, each by key with the setting to change (reasons: capabilities `asGroup`)."""
    if managed_group(spec) is None:
        return
    k, data = CLUSTER_KEY, as_data()
    if spec.scheduler == "slurm":
        yield ConfigError(
            f"{k}.nodeGroup", f"managed with scheduler slurm on huaweicloud: {one_line(data['slurmWhy'])}"
        )
    if spec.max_nodes > int(data["maxInstances"]):
        yield ConfigError(
            f"{k}.maxNodes",
            f"{spec.max_nodes}: a Huawei AS group holds at most {data['maxInstances']} instances (as_.Group "
            "max_instance_number); allowed: that many, or nodeGroup: instances",
        )
    # the group's 10 tags (asGroup.maxTags), which its nodes get, hold the cluster's: catalog/tags.yaml allows 10 per
    # resource on huaweicloud, Name included, and refuses more before this
    if spec.scaling is not None:
        yield ConfigError(f"{k}.scaling", f"{spec.scaling.metric} is not wired: {one_line(data['scalingWhy'])}")
    if not spec.ssh_public_key:  # the key pair (components/huaweicloud/access.py) is built from it
        yield ConfigError(
            f"{k}.sshPublicKey", f"not set, with nodeGroup managed on huaweicloud: {one_line(data['accessWhy'])}"
        )


def managed_warnings(spec: ClusterSpec) -> tuple[str, ...]:
    """What an AS group's nodes lack beside ECS instances, said once in the plan."""
    if managed_group(spec) is None:
        return ()
    return (f"{CLUSTER_KEY}.nodeGroup: managed on huaweicloud: {one_line(as_data()['systemDiskWhy'])}",)
