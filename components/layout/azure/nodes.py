"""Azure node decisions: the node group (one scale set, an availability set or loose VMs) and what it cannot hold,
the image, the disks and the nodes' custom data."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ... import bootstrap, catalog
from ...bootstrap import Part
from ...catalog import releases
from ...catalog.update import cloud_update
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch, image_for
from ..node import node_parts
from ..shared import Shared
from .network import AZURE_RESERVED_IPS_PER_SUBNET

# Local NVMe: Azure's directly attached local disks report the NVMe model "Microsoft NVMe Direct Disk"
# (v1, e.g. Lsv3) or "Microsoft NVMe Direct Disk v2" (v6 sizes) (Azure/azure-vm-utils@f6b3854
# doc/disk-identification.md; udev/80-azure-disk.rules matches ENV{ID_MODEL}=="Microsoft NVMe Direct Disk"),
# so systemd's persistent-storage rules name them /dev/disk/by-id/nvme-Microsoft_NVMe_Direct_Disk_<serial>
# (v2: ..._Direct_Disk_v2_<serial>; one glob matches both). azure-vm-utils also links every local NVMe
# disk at /dev/disk/azure/local/by-serial/<serial>. The generic /dev/nvme*n1 is what Azure's own HPC image
# stripes (Azure/azhpc-images components/customizations/setup_nvme.sh); the scratch script skips the
# root disk and de-duplicates, and no data disk exists when scratch is nvme, so it only adds robustness.
NVME_GLOBS = (
    "/dev/disk/by-id/nvme-Microsoft_NVMe_Direct_Disk_*",
    "/dev/disk/azure/local/by-serial/*",
    "/dev/nvme*n1",
)
SCRATCH_LUN = 0
# Data disk at LUN 0: WALinuxAgent's udev rules link SCSI data disks at /dev/disk/azure/scsi1/lun<N>,
# azure-vm-utils links SCSI and NVMe data disks at /dev/disk/azure/data/by-lun/<N> (disk-identification.md).
DATA_DISK_GLOBS = (f"/dev/disk/azure/scsi1/lun{SCRATCH_LUN}", f"/dev/disk/azure/data/by-lun/{SCRATCH_LUN}")
# The health check counts local NVMe through one glob only (it does not de-duplicate across globs, and the three
# above name every disk up to three times): systemd's by-id link, present on every image; azure-vm-utils'
# by-serial links are not on every image, and a missing glob would fail a healthy node.
HEALTH_NVME_GLOBS = (NVME_GLOBS[0],)
# setup-infiniband.md: singlePlacementGroup=true caps a scale set at 100 VMs; availability sets hold 200.
SCALE_SET_IB_CAP = 100
AVAILABILITY_SET_CAP = 200
DISK_TYPE = "Premium_LRS"  # Premium SSD for the OS disk and the scratch data disk

Group = Literal["scale-set", "availability-set", "vms"]


@dataclass(frozen=True)
class Image:
    """A marketplace image (publisher:offer:sku:version) or an image resource id."""

    publisher: str | None
    offer: str | None
    sku: str | None
    version: str | None
    id: str | None
    description: str

    @property
    def ref(self) -> str:
        """The URN or the id: what the plan shows as `imageId`."""
        if self.id is not None:
            return self.id
        return f"{self.publisher}:{self.offer}:{self.sku}:{self.version}"


@dataclass(frozen=True)
class DataDisk:
    lun: int
    size_gb: int
    storage_account_type: str
    delete_with_vm: bool


def image_of(spec: ClusterSpec) -> Image:
    # a non-NVIDIA GPU (ND MI300X v5) takes its vendor's image (catalog/azure.yaml images.vendors), a Grace
    # (arm64) host its architecture's (images.arch): the default and families are x86_64 NVIDIA images
    vendor = catalog.vendor_image("azure", spec.instance) or catalog.arch_image("azure", spec.instance)
    entry: dict[str, Any] = vendor if vendor is not None else image_for("azure", spec.instance.instanceType)
    chosen = releases.choice("azure", entry, spec.image)
    if chosen is not None:
        if not entry.get("urn"):
            reason = one_line(entry["reason"])
            raise ConfigError(
                f"{CLUSTER_KEY}.image", f"{spec.image} has no image for {spec.instance.instanceType}: {reason}"
            )
        publisher, offer, sku, version = entry["urn"].split(":")
        # pinned: this version, never the marketplace's newer `latest`
        return Image(publisher, offer, sku, chosen.release or version, None, one_line(entry["description"]))
    if spec.image.startswith("/subscriptions/"):
        return Image(None, None, None, None, spec.image, f"image {spec.image} as configured")
    publisher, offer, sku, version = spec.image.split(":")
    return Image(publisher, offer, sku, version, None, f"marketplace image {spec.image} as configured")


def custom_data(
    spec: ClusterSpec,
    scratch: Scratch,
    ib_devices: int,
    fabric: tuple[Part, ...],
    endpoint: Part,
    replace_unhealthy: bool,
    shared: Shared | None = None,
    slurm: tuple[Part, ...] = (),
) -> str:
    """The GPU nodes' cloud-init: the node parts, the health endpoint part (health.py) and the Slurm parts."""
    parts = node_parts(
        spec,
        scratch,
        fabric_devices=ib_devices,
        nvme_globs=HEALTH_NVME_GLOBS if scratch.kind == "nvme" else (),
        fabric=fabric,
        unhealthy_hook=bootstrap.script("azure_unhealthy.sh") if replace_unhealthy else None,
        mounts=shared.mount if shared else None,
    )
    # scheduler slurm: slurmd after the node's own parts (its HealthCheckProgram runs the same check)
    return bootstrap.cloud_init([*parts, endpoint, *slurm])


def group_problems(spec: ClusterSpec, group: Group, ib: bool, node_cidr: str) -> Iterator[ConfigError]:
    """What the node group cannot hold: spot or a zone in an availability set, no SSH key, more nodes than fit."""
    k = f"{CLUSTER_KEY}."
    if group == "availability-set" and spec.spot:
        yield ConfigError(
            f"{k}spot",
            "true with nodeGroup: instances on an InfiniBand size: IB between single VMs needs an availability set, "
            "and Azure does not allow spot VMs in one (AzureSpotVMNotSupportedInAvailabilitySet); "
            "use nodeGroup: managed (a spot scale set) or spot: false",
        )
    if group == "availability-set" and spec.zone is not None:
        yield ConfigError(
            f"{k}zone",
            "set with nodeGroup: instances on an InfiniBand size: the VMs share an availability set, and a VM "
            "cannot be in an availability set and a zone at once; remove zone or use nodeGroup: managed",
        )
    if spec.ssh_public_key is None:
        yield ConfigError(
            f"{k}sshPublicKey",
            "required on azure: gpu-cluster disables password login, and Azure refuses a Linux VM with neither "
            '("Authentication using either SSH or by user name and password must be enabled in Linux profile"); '
            "set it with: cat ~/.ssh/id_ed25519.pub | pulumi config set --path 'gpu-cluster:cluster.sshPublicKey'",
        )
    if group == "scale-set" and ib and spec.max_nodes > SCALE_SET_IB_CAP:
        key = f"{k}maxNodes" if spec.max_nodes > spec.nodes else f"{k}nodes"
        yield ConfigError(
            key,
            f"{spec.max_nodes} nodes, but InfiniBand on {spec.instance.instanceType} needs the scale set limited to "
            f"one placement group (singlePlacementGroup: true), which Azure caps at {SCALE_SET_IB_CAP} VMs "
            "(setup-infiniband.md; more needs a support request); use at most 100, split the job over "
            "several clusters (IB does not cross scale sets), or set fabric: none",
        )
    if group == "availability-set" and spec.nodes > AVAILABILITY_SET_CAP:
        yield ConfigError(
            f"{k}nodes",
            f"{spec.nodes} nodes, but InfiniBand between single VMs needs them in one availability set, which holds "
            f"at most {AVAILABILITY_SET_CAP} VMs (setup-infiniband.md); use at most {AVAILABILITY_SET_CAP}",
        )
    usable = ipaddress.IPv4Network(node_cidr).num_addresses - AZURE_RESERVED_IPS_PER_SUBNET
    if spec.max_nodes > usable:
        yield ConfigError(
            f"{k}network.cidr",
            f"{spec.network.cidr} gives a node subnet {node_cidr} with {usable} usable addresses "
            f"(Azure reserves {AZURE_RESERVED_IPS_PER_SUBNET}), fewer than {spec.max_nodes} nodes; use a larger range",
        )


def single_placement_group(spec: ClusterSpec, group: Group, ib: bool) -> bool | None:
    """True is the InfiniBand scope. Otherwise unset (Azure's default, no IB setting at all on sizes
    without IB), except False where the default would be wrong: an IB size with `fabric: none` (say
    plainly that IB does not span the set) and sets that may grow past the 100-VM single group."""
    if group != "scale-set":
        return None
    if ib:
        return True
    if spec.instance.fabric == "infiniband" or spec.max_nodes > SCALE_SET_IB_CAP:
        return False
    return None


@dataclass(frozen=True)
class ScaleSetRollout:
    """How the scale set brings its VMs to a new model (image, custom data): its upgrade policy, and the Terminate
    notification that lets a node being deleted drain first (Scheduled Events, acknowledged by the node)."""

    mode: Literal["Manual", "Rolling"]
    max_batch_percent: int | None  # Rolling: the VMs one batch takes (or creates first, with a surge)
    max_unhealthy_percent: int | None  # Rolling: abort when more are unhealthy (at least one batch)
    max_surge: bool | None  # Rolling: new VMs first, the old ones deleted after each batch
    terminate_not_before: str  # ISO 8601: how long a VM being deleted may take to drain (update.drainTimeoutSeconds)


def scale_set_rollout(spec: ClusterSpec, group: Group, health: bool, warnings: list[str]) -> ScaleSetRollout | None:
    """The scale set's rollout (None: no scale set). Rolling needs a health signal, the Application Health extension
    (`health`): without it the set stays Manual and the plan says so."""
    if group != "scale-set" or spec.kubernetes is not None:
        return None
    update = spec.update
    assert update.drain_timeout_seconds is not None  # catalog/update.yaml azure: a scale set has one
    notice = f"PT{update.drain_timeout_seconds // 60}M"
    if not update.rolling:
        return ScaleSetRollout("Manual", None, None, None, notice)
    if not health:
        warnings.append(
            f"{CLUSTER_KEY}.update: rolling needs a health signal and health.enabled is false (no Application Health "
            "extension): the scale set stays Manual; roll a new model by hand, a batch at a time: az vmss "
            "update-instances --resource-group <group> --name <scale set> --instance-ids <ids>"
        )
        return ScaleSetRollout("Manual", None, None, None, notice)
    feature = cloud_update("azure").surge_feature
    if update.max_surge and feature:
        warnings.append(
            f"{CLUSTER_KEY}.update.maxSurge: a scale set's MaxSurge is a preview feature: register {feature} on the "
            "subscription first (catalog/update.yaml); surged VMs get new instance ids and IPs"
        )
    nodes = max(spec.nodes, 1)
    batch = update.max_surge or update.max_unavailable(spec.nodes)
    batch_percent = min(100, math.ceil(batch * 100 / nodes))
    unhealthy = min(100, max(100 - update.min_healthy_percent, batch_percent))
    return ScaleSetRollout("Rolling", batch_percent, unhealthy, update.max_surge > 0, notice)


def aks_upgrade(spec: ClusterSpec) -> tuple[str, str, int | None]:
    """The AKS GPU pool's upgradeSettings: maxSurge, maxUnavailable (with a surge nothing else goes down: AKS's own
    default maxUnavailable 0) and drainTimeoutInMinutes."""
    update = spec.update
    drain = None if update.drain_timeout_seconds is None else update.drain_timeout_seconds // 60
    if update.max_surge:
        return str(update.max_surge), "0", drain
    return "0", str(update.max_unavailable(spec.nodes)), drain
