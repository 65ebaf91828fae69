"""The GPU nodes: disks and user-data limits, the image, HCC types, the placement they get (HPC cluster or
placement group), the managed group (an auto scaling group and its launch configuration) and the refusals of a node
group Tencent cannot build.
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
# as_.ScalingConfig system_disk_size and as_.ScalingGroup max_size as the provider validates them
# (terraform-provider-tencentcloud@f06792c8 resource_tc_as_scaling_config.go ValidateIntegerInRange(50, 500);
# @2f241606 resource_tc_as_scaling_group.go max_size ValidateIntegerInRange(0, 2000))
GROUP_ROOT_GB = (50, 500)
GROUP_MAX_SIZE = 2000
# AS CreateLaunchConfiguration InstanceTags "最多支持指定10个标签" (tencentcloud-sdk-python-autoscaling 3.1.169): the
# cluster's tags and the node's Name
GROUP_INSTANCE_TAGS = 10


Placement = Literal["cluster", "spread", "none"]


@dataclass(frozen=True)
class Image:
    image_id: str | None  # explicit id; None = newest public image with os_name at deploy
    os_name: str | None
    description: str


@dataclass(frozen=True)
class ManagedGroup:
    """`nodeGroup: managed`: an as_.ScalingGroup of `desired` nodes between its bounds, launched from one
    as_.ScalingConfig. No scaling policy is wired: the group holds its desired count and relaunches a node that
    goes away."""

    min_size: int
    max_size: int
    desired: int


def managed_group(spec: ClusterSpec) -> ManagedGroup | None:
    if spec.node_group != "managed":
        return None
    return ManagedGroup(spec.min_nodes, spec.max_nodes, spec.nodes)


def managed_scratch(spec: ClusterSpec, warnings: list[str]) -> bool:
    """Whether a managed group's nodes keep the scratch cloud disk: never. as_.ScalingConfigDataDiskArgs has no
    encrypt argument and every disk this toolkit makes is encrypted, so `scratch: auto` goes to none here, said in a
    warning (an explicit `scratch: disk` is refused in `node_problems`)."""
    if spec.node_group == "managed" and spec.scratch == "disk":
        warnings.append(
            f"{CLUSTER_KEY}.storage.scratch: auto is none in a managed group on tencentcloud: tencentcloud-iac-pulumi "
            "0.2.3 as_.ScalingConfig data disks take no encrypt argument, and an unencrypted scratch disk is not "
            "built; use nodeGroup: instances for an encrypted scratch cloud disk"
        )
        return False
    return spec.scratch == "disk"


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
    if spec.node_group == "managed" and spec.scheduler == "slurm":
        yield ConfigError(
            f"{CLUSTER_KEY}.nodeGroup",
            "managed with scheduler slurm on tencentcloud: Slurm's nodes are CVM instances the head knows by address "
            "(elastic partitions are not built here); set nodeGroup: instances",
        )
    elif spec.node_group == "managed" and spec.scheduler != "kubernetes":  # a TKE pool is checked by tke_problems
        yield from _managed_problems(spec)
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


def _managed_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """What a Tencent auto scaling group cannot take, each with the setting to change."""
    k = CLUSTER_KEY
    if spec.scratch == "disk" and spec.storage.scratch == "disk":
        yield ConfigError(
            f"{k}.storage.scratch",
            "disk, but nodeGroup is managed: tencentcloud-iac-pulumi 0.2.3 as_.ScalingConfig data disks take no "
            "encrypt argument, and an unencrypted disk is not built; allowed: none, or nodeGroup: instances",
        )
    low, high = GROUP_ROOT_GB
    if not low <= spec.storage.root_gb <= high:
        yield ConfigError(
            f"{k}.storage.rootGb",
            f"{spec.storage.root_gb}: a Tencent launch configuration's system disk is {low} to {high} GB "
            "(as_.ScalingConfig system_disk_size); allowed: that range, or nodeGroup: instances",
        )
    if spec.max_nodes > GROUP_MAX_SIZE:
        yield ConfigError(
            f"{k}.maxNodes", f"{spec.max_nodes}: a Tencent auto scaling group holds at most {GROUP_MAX_SIZE} instances"
        )
    if len(spec.base_tags) + 1 > GROUP_INSTANCE_TAGS:
        yield ConfigError(
            f"{k}.tags",
            f"{len(spec.base_tags)} tags with the toolkit's own, and a Tencent launch configuration gives its nodes "
            f"at most {GROUP_INSTANCE_TAGS} (with Name); remove {len(spec.base_tags) + 1 - GROUP_INSTANCE_TAGS}, "
            "or use nodeGroup: instances",
        )
    if spec.scaling is not None:
        yield ConfigError(
            f"{k}.scaling",
            f"{spec.scaling.metric} is not wired on tencentcloud (no as_.ScalingPolicy or as_.Schedule is built): "
            "the group holds nodes between minNodes and maxNodes; remove scaling",
        )
    if spec.spot and (spec.spot_on_demand_base or spec.spot_fallback != "none"):
        yield ConfigError(
            f"{k}.spot",
            "onDemandBase and fallback are not built on tencentcloud: an as_.ScalingConfig has one charge type "
            "(SPOTPAID or POSTPAID_BY_HOUR) for all its nodes; remove them",
        )
