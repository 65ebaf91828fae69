"""The GPU nodes: disks and user-data limits, the image, the placement they get (an anti-affinity server group for
spread, nothing for cluster), and the refusals of what Huawei here cannot build.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

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
