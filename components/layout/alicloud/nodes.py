"""The GPU nodes: image and GPU driver installer, disk sizes and tags refused before deploy, the placement they
get (deployment set), and the user data as the nodes get it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ... import bootstrap
from ...bootstrap import Part
from ...catalog.capabilities import capabilities
from ...catalog.update import cloud_update
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .data import alicloud_data

# Virtio cloud disks are /dev/vd[a-z] (the system disk is vda); NVMe-attached cloud disks are
# /dev/nvme<X>n1 (Alibaba, "Query the serial number of a disk"). No family here has local NVMe.
# The by-id names carry the disk id, unknown before deploy, so the script matches kernel names and
# skips the root disk (EXCLUDE_ROOT=1).
DISK_GLOBS = ("/dev/vd[b-z]", "/dev/nvme*n1")


ESS_MAX_SIZE = 2000  # ess.ScalingGroup max_size range [0, 2000] (pulumi-alicloud docstring)
SYSTEM_DISK_GB = (20, 2048)  # ESSD system disk, PL1 (ess.ScalingConfiguration system_disk_size docstring)
DATA_DISK_MAX_GB = 32768  # cloud_essd data disk (ecs.Instance data_disks.size docstring)
# Smallest ESSD per performance level (ess.ScalingConfiguration system_disk_size docstring).
ESSD_MIN_GB = {"PL0": 1, "PL1": 20, "PL2": 461, "PL3": 1261}


# Tag rules shared by every resource here (ESS tags: key <= 64 characters; values <= 128; neither
# may start with these prefixes; pulumi-alicloud ess.ScalingGroup / ecs.Instance docstrings).
TAG_FORBIDDEN_PREFIXES = ("aliyun", "acs:", "http://", "https://")
TAG_KEY_MAX, TAG_VALUE_MAX = 64, 128


Placement = Literal["cluster", "spread", "none"]
STRATEGIES: dict[Placement, Literal["LowLatency", "Availability"] | None] = {
    "cluster": "LowLatency",
    "spread": "Availability",
    "none": None,
}


# Written by the GPU-driver step when it starts: the boot id of the boot in which the installer runs
# (it reboots the node when done). The erdma unit defers the eRDMA stack and the unhealthy hook
# holds back while it matches the current boot.
DRIVER_BOOT_FILE = "/var/lib/gpu-cluster/gpu-driver-install-boot"


@dataclass(frozen=True)
class Image:
    image_id: str | None  # explicit id; None = newest system image matching name_regex at deploy
    name_regex: str | None
    description: str


@dataclass(frozen=True)
class GpuDriver:
    """The NVIDIA stack Alibaba's documented user-data installer puts on a plain image."""

    driver: str
    cuda: str
    cudnn: str
    script_url_path: str
    source: str

    def describe(self) -> str:
        return f"NVIDIA {self.driver}, CUDA {self.cuda}, cuDNN {self.cudnn} (Alibaba auto-install user data)"


@dataclass(frozen=True)
class GridPlugin:
    """The GRID driver of a vGPU slice: Alibaba's Cloud Assistant plugin, run by the node at boot (`gridPlugin`)."""

    plugin: str
    driver: str
    cuda: str
    timeout_seconds: int
    source: str

    def describe(self) -> str:
        return f"NVIDIA GRID {self.driver}, CUDA {self.cuda} (Alibaba's Cloud Assistant plugin {self.plugin}, at boot)"

    def as_part_data(self) -> dict[str, str | int]:
        return {"plugin": self.plugin, "driver": self.driver, "timeoutSeconds": self.timeout_seconds}


def image_drivers(entry: Mapping[str, Any], spec: ClusterSpec) -> tuple[GpuDriver | None, GridPlugin | None]:
    """The driver a catalog image entry installs at boot: the Tesla stack (`gpuDriver`, Alibaba's auto-install user
    data) or, on a vGPU slice, the GRID driver (`gridPlugin`). ACK installs its own driver: a slice is refused there,
    since ACK's node pools install the Tesla driver and no source read says they install GRID."""
    plugin = entry.get("gridPlugin")
    if plugin is not None and spec.scheduler == "kubernetes":
        raise ConfigError(
            f"{CLUSTER_KEY}.gpu",
            f"{spec.instance.instanceType} is a vGPU slice, which takes the NVIDIA GRID driver; an ACK node pool "
            "installs the Tesla driver (its node-pool label), so vGPU slices are not built on ACK; use a whole-GPU "
            "type or scheduler none/slurm",
        )
    if plugin is not None:
        grid = GridPlugin(
            str(plugin["plugin"]),
            str(plugin["driver"]),
            str(plugin["cuda"]),
            int(plugin["timeoutSeconds"]),
            str(plugin["source"]),
        )
        return None, grid
    drv = entry["gpuDriver"]
    return GpuDriver(drv["driver"], drv["cuda"], drv["cudnn"], drv["scriptUrlPath"], drv["source"]), None


def driver_script(driver: GpuDriver) -> str:
    """Alibaba's documented auto-install user data (v4.0 form), with the versions pinned."""
    return "\n".join(
        [
            f'DRIVER_VERSION="{driver.driver}"',
            f'CUDA_VERSION="{driver.cuda}"',
            f'CUDNN_VERSION="{driver.cudnn}"',
            'IS_INSTALL_RDMA="FALSE"',
            'IS_INSTALL_eRDMA="FALSE"',  # the eRDMA stack has its own step (ordered before this one)
            'INSTALL_DIR="/root/auto_install"',
            'auto_install_script="auto_install_v4.0.sh"',
            # Alibaba's form reads source-address without a token; the nodes' metadata is token-only
            # (capabilities file `metadata`), so a token first, as catalog/interruption.yaml clouds.alicloud says
            "metadata_token=$(curl -sS -X PUT -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300' "
            "http://100.100.100.200/latest/api/token)",
            'script_download_url=$(curl -sS -H "X-aliyun-ecs-metadata-token: ${metadata_token}" '
            "http://100.100.100.200/latest/meta-data/source-address | head -1)"
            f'"{driver.script_url_path}/${{auto_install_script}}"',
            'rm -rf "$INSTALL_DIR" && mkdir -p "$INSTALL_DIR" && cd "$INSTALL_DIR" || exit 1',
            'wget -t 10 --timeout=10 "$script_download_url" && bash "$INSTALL_DIR/$auto_install_script" '
            '"$DRIVER_VERSION" "$CUDA_VERSION" "$CUDNN_VERSION" "$IS_INSTALL_RDMA" "$IS_INSTALL_eRDMA"',
        ]
    )


def tag_problems(tags: Mapping[str, str]) -> Iterator[ConfigError]:
    for key, value in tags.items():
        bad = key.lower().startswith(TAG_FORBIDDEN_PREFIXES) or value.lower().startswith(TAG_FORBIDDEN_PREFIXES)
        if bad or len(key) > TAG_KEY_MAX or len(value) > TAG_VALUE_MAX:
            yield ConfigError(
                f"{CLUSTER_KEY}.tags.{key}",
                f"alicloud tag keys are 1-{TAG_KEY_MAX} characters, values at most {TAG_VALUE_MAX}, and neither "
                f"may start with {', '.join(repr(p) for p in TAG_FORBIDDEN_PREFIXES)}",
            )


def size_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    low, high = SYSTEM_DISK_GB
    if not low <= spec.storage.root_gb <= high:
        yield ConfigError(
            f"{CLUSTER_KEY}.storage.rootGb",
            f"got {spec.storage.root_gb}; an ESSD system disk on alicloud is {low} to {high} GB",
        )
    if spec.scratch == "disk":
        level = spec.alicloud.scratch_performance_level
        size = spec.storage.scratch_gb
        if size > DATA_DISK_MAX_GB:
            yield ConfigError(
                f"{CLUSTER_KEY}.storage.scratchGb", f"got {size}; an ESSD data disk is at most {DATA_DISK_MAX_GB} GB"
            )
        if size < ESSD_MIN_GB[level]:
            yield ConfigError(
                f"{CLUSTER_KEY}.alicloud.scratchPerformanceLevel",
                f"{level} needs an ESSD of at least {ESSD_MIN_GB[level]} GB but scratchGb is {size}; "
                "raise scratchGb or pick a lower level (PL0 from 1 GB, PL1 from 20 GB)",
            )
    if spec.node_group == "managed" and spec.max_nodes > ESS_MAX_SIZE:
        yield ConfigError(
            f"{CLUSTER_KEY}.maxNodes",
            f"got {spec.max_nodes}; an ESS scaling group holds at most {ESS_MAX_SIZE} instances",
        )


def applied_placement(spec: ClusterSpec, warnings: list[str], ack: bool = False) -> Placement:
    """The placement the nodes get: what was asked, less what a managed group or spot cannot have (data).

    `ack`: the GPU nodes are an ACK node pool, which takes a deployment set (cs.NodePool deployment_set_id),
    so the ESS limit does not apply.
    """
    key, caps = CLUSTER_KEY, capabilities("alicloud")
    asked: Placement = spec.placement
    if asked == "none":
        return "none"
    limit = caps.managed_limit("placement")
    if spec.node_group == "managed" and limit is not None and not ack:
        warnings.append(f"{key}.placement: {asked} {limit.message}")
        return "none" if limit.applied == "none" else asked
    if spec.spot and not caps.spot_with_placement:
        # an explicit cluster or spread (auto is none for spot already, spec _placement): resolved, not refused
        warnings.append(
            f"{key}.spot: Alibaba cannot create spot (preemptible) instances in a deployment set (deployment-set "
            f"doc, doc-detail/91258); placement {asked} is not applied, the nodes get no deployment set"
        )
        return "none"
    strategy = STRATEGIES[asked]
    sets = alicloud_data()["deploymentSets"]
    cap = int(sets["maxInstancesPerZone"][strategy])
    if spec.max_nodes > cap:
        # refused: a larger set fails at deploy on instance cap + 1, and no smaller placement is equivalent
        raise ConfigError(
            f"{key}.placement",
            f"{asked} is a {strategy} deployment set, which holds at most {cap} instances in one zone "
            f"(Alibaba deployment-set doc), but nodes is {spec.max_nodes}; use at most {cap} nodes, "
            "or placement: none",
        )
    return asked


def driver_mark_part(driver: GpuDriver | None) -> Part:
    """First of the fabric parts: the boot id the driver installer will run in (its own step is last)."""
    if driver is None:
        return Part("gpu-driver-mark")
    mark = f"mkdir -p {DRIVER_BOOT_FILE.rsplit('/', 1)[0]} && cat /proc/sys/kernel/random/boot_id > {DRIVER_BOOT_FILE}"
    return bootstrap.commands_part("gpu-driver-mark", [("sh", "-c", mark)])


@dataclass(frozen=True)
class EssDrainHook:
    """The ESS group's scale-in lifecycle hook: an instance being removed waits until the node has drained and
    completed the action, or until the heartbeat timeout continues it (catalog/update.yaml alicloud.hook)."""

    name: str
    transition: str
    default_result: str
    heartbeat_seconds: int


def ess_drain_hook(spec: ClusterSpec) -> EssDrainHook | None:
    """A managed ESS group of the VM modes: its scale-in hook (update.drainTimeoutSeconds); None otherwise."""
    if spec.node_group != "managed" or spec.kubernetes is not None:
        return None
    hook = cloud_update("alicloud").hook
    seconds = spec.update.drain_timeout_seconds
    assert hook is not None and seconds is not None  # catalog/update.yaml alicloud
    return EssDrainHook(hook.name, hook.transition, hook.default_result, seconds)
