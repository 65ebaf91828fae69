"""The GPU nodes on AWS: their image, disks' device names and what may buy their type (purchase)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ... import catalog
from ...catalog import releases
from ...catalog.update import cloud_update
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .. import image_for

# by-id names the NVMe driver gives instance-store and EBS volumes on Nitro instances
INSTANCE_STORE_GLOBS = ("/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_*",)
EBS_GLOBS = ("/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_*",)
ROOT_DEVICE = "/dev/sda1"  # Ubuntu DLAMIs register their root volume here
SCRATCH_DEVICE = "/dev/sdf"

Market = Literal["on-demand", "spot", "capacity-block"]


@dataclass(frozen=True)
class Image:
    ssm_parameter: str | None  # resolved at deploy (tracks the parameter's newest AMI)
    ami_id: str | None
    description: str
    ami_name: str | None = None  # a pinned release: the AMI of this exact name and owner (aws.ec2.get_ami at deploy)
    ami_owner: str | None = None


def check_purchase(spec: ClusterSpec) -> None:
    """A type sold only through Capacity Blocks (catalog row extra.purchase: P6e-GB200 inside UltraServers) needs
    one: reservationType capacity-block with the block's reservation id (the launch template's market type)."""
    row = spec.instance
    if row.extra.get("purchase") != "capacity-block" or spec.reservation_type == "capacity-block":
        return
    raise ConfigError(
        f"{CLUSTER_KEY}.reservationType",
        f"{row.instanceType} is sold only through EC2 Capacity Blocks (UltraServers); set reservation to the "
        f"block's id (cr-...) and reservationType: capacity-block{'; spot cannot buy it' if spec.spot else ''}",
    )


def image_of(spec: ClusterSpec) -> Image:
    """The GPU nodes' image: the catalog's for the type (auto), an SSM parameter (ssm:...) or an AMI id."""
    row = spec.instance
    # a Grace (arm64) type takes its architecture's DLAMI (catalog/aws.yaml images.arch), never the x86_64 one
    entry: dict[str, Any] = catalog.arch_image("aws", row) or image_for("aws", row.instanceType)
    chosen = releases.choice("aws", entry, spec.image)
    if chosen is not None:
        if not entry.get("ssmParameter"):
            raise ConfigError(
                f"{CLUSTER_KEY}.image",
                f"{spec.image} has no image for {row.instanceType} ({row.arch}): {entry['reason']}",
            )
        if chosen.release is not None:  # pinned: the AMI of this name, never a newer one behind the SSM parameter
            return Image(None, None, entry["description"], chosen.release, str(entry["owner"]))
        return Image(entry["ssmParameter"], None, entry["description"])
    if spec.image.startswith("ssm:"):
        return Image(spec.image.removeprefix("ssm:"), None, f"AMI from SSM parameter {spec.image[4:]}")
    return Image(None, spec.image, f"AMI {spec.image} as configured")


def market_of(spec: ClusterSpec) -> Market:
    return "spot" if spec.spot else "capacity-block" if spec.reservation_type == "capacity-block" else "on-demand"


@dataclass(frozen=True)
class Refresh:
    """update rolling: the group's instance refresh, started by every launch template change."""

    min_healthy_percent: int
    max_healthy_percent: int  # 100 + maxSurge as a percent of the nodes


@dataclass(frozen=True)
class DrainHook:
    """The termination lifecycle hook: a node leaving the group waits in Terminating:Wait until its handler has
    drained it and completes the action (or the heartbeat timeout continues it)."""

    name: str
    transition: str
    default_result: str
    heartbeat_seconds: int
    actions: tuple[str, ...]  # what the node role may do on its own group
    describe: tuple[str, ...] = ()  # read-only, no resource type: how the node finds its group's name


def rollout_of(spec: ClusterSpec) -> tuple[Refresh | None, DrainHook | None]:
    """A managed group of the VM modes: its instance refresh (update: rolling) and its drain hook (always: a scale-in
    drains too). Instances and EKS node groups (which drain themselves) get neither."""
    if spec.node_group != "managed" or spec.kubernetes is not None:
        return None, None
    update, entry = spec.update, cloud_update("aws")
    assert entry.hook is not None and update.drain_timeout_seconds is not None  # catalog/update.yaml aws
    hook = entry.hook
    drain = DrainHook(
        hook.name, hook.transition, hook.default_result, update.drain_timeout_seconds, hook.actions, hook.describe
    )
    if not update.rolling:
        return None, drain
    return Refresh(update.min_healthy_percent, update.max_in_service_percent(spec.nodes)), drain
