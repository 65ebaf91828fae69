"""The GPU nodes: disks and user-data limits, the image, HCC types, the placement they get (HPC cluster or
placement group), and the refusals of a node group Tencent cannot build.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ...catalog.capabilities import capabilities
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .data import tencent_data

# Local NVMe of the HCC types; cloud disks (CBS) are virtio /dev/vd[b-z] (system disk vda).
NVME_GLOBS = ("/dev/nvme[0-9]*n1",)
DISK_GLOBS = ("/dev/vd[b-z]",)
DISK_TYPE = "CLOUD_SSD"  # instance.Instance system_disk_type / data_disk_type valid value
USER_DATA_MAX = 16 * 1024  # user_data "Must be base64 encoded and up to 16 KB" (instance.Instance docstring)


Placement = Literal["cluster", "spread", "none"]


@dataclass(frozen=True)
class Image:
    image_id: str | None  # explicit id; None = newest public image with os_name at deploy
    os_name: str | None
    description: str


def is_hcc(spec: ClusterSpec) -> bool:
    return bool(spec.instance.extra.get("hcc"))


def applied_placement(spec: ClusterSpec, hcc: bool, warnings: list[str]) -> tuple[Placement, str | None]:
    key = f"{CLUSTER_KEY}.placement"
    asked: Placement = spec.placement
    if hcc and spec.fabric_wired:
        # the HPC cluster is the placement HCC nodes need; a placement group beside it is not documented
        return "cluster", None
    if asked == "none":  # at any count: a group takes one member and keeps it to grow back in place (docs/day2.md)
        return "none", None
    if spec.spot and not capabilities("tencentcloud").spot_with_placement:
        warnings.append(
            f"{key}: {asked} is not applied to spot nodes (no source that SPOTPAID nodes may join a placement group)"
        )
        return "none", None
    groups = tencent_data()["placementGroups"]
    return asked, str(groups[asked])


def node_problems(spec: ClusterSpec, hcc: bool) -> Iterator[ConfigError]:
    if hcc and spec.node_group == "managed" and spec.scheduler != "kubernetes":  # TKE's own: tke_problems
        limit = capabilities("tencentcloud").managed_limit("hccCluster")
        assert limit is not None
        yield ConfigError(f"{CLUSTER_KEY}.nodeGroup", f"managed {limit.message} ({spec.instance.instanceType})")
    if spec.spot and spec.max_hourly_usd is None:
        yield ConfigError(
            "gpu-cluster:maxHourlyUsd",
            "not set, but spot is true: Tencent's SPOTPAID nodes need a maximum price (spot_max_price); "
            "set maxHourlyUsd (the cap per node is maxHourlyUsd / nodes, in the account's billing currency)",
        )
    if hcc and spec.spot:
        yield ConfigError(
            f"{CLUSTER_KEY}.spot",
            f"true, but {spec.instance.instanceType} is an HCC type; spot (SPOTPAID) is offered for non-HCC types only",
        )
