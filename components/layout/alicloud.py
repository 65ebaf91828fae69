"""Alibaba Cloud layout: vSwitches, eRDMA interfaces, deployment set, image, disks and bootstrap.

eRDMA: an ERI is an ENI with `NetworkInterfaceTrafficMode=HighPerformance` (Alibaba, "Elastic RDMA
interface (ERI)"). Types with one ERI get it on the primary ENI; types rated for two (ebmgn7ex,
ebmgn8v, ebmgn8is: PAI "eRDMA: use high-performance networks", ALI-EBM-ZH) get one ERI on network
card index 0 (primary) and one on index 1 (secondary): ALI-EBM-ZH documents 160 Gbit/s only with
the two ERIs on different card indices (all on one index: up to 100). `ecs.Instance` takes one
secondary ENI block, so two ERIs is also what the SDK can wire per instance.

Known limits of pulumi-alicloud 4.0.0 that shape managed node groups (ESS): the scaling
configuration has no `deploymentSetId` and its `networkInterfaces` have no `networkCardIndex`.
A managed group therefore gets no deployment set and cannot pin ERIs to card indices; the layout
says so in warnings and `nodeGroup: instances` is the mode for placed, fully wired training nodes.
"""

from __future__ import annotations

import base64
import ipaddress
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .. import catalog
from ..errors import CLUSTER_KEY, ConfigError
from ..spec import ClusterSpec
from . import Scratch, cloud_init, image_for, scratch_for

# Virtio cloud disks are /dev/vd[a-z] (the system disk is vda); NVMe-attached cloud disks are
# /dev/nvme<X>n1 (Alibaba, "Query the serial number of a disk"). No family here has local NVMe.
# The by-id names carry the disk id, unknown before deploy, so the script matches kernel names and
# skips the root disk (EXCLUDE_ROOT=1).
DISK_GLOBS = ("/dev/vd[b-z]", "/dev/nvme*n1")
VSWITCH_PREFIX = (16, 29)  # vSwitch mask lengths (alibabacloud.com/help/en/vpc/vpc-and-vswitch)
MAX_ERIS_PER_INSTANCE = 2  # primary ENI + the one `network_interfaces` block of ecs.Instance
ESS_MAX_SIZE = 2000  # ess.ScalingGroup max_size range [0, 2000] (pulumi-alicloud docstring)
SYSTEM_DISK_GB = (20, 2048)  # ESSD system disk, PL1 (ess.ScalingConfiguration system_disk_size docstring)
DATA_DISK_MAX_GB = 32768  # cloud_essd data disk (ecs.Instance data_disks.size docstring)
# Smallest ESSD per performance level (ess.ScalingConfiguration system_disk_size docstring).
ESSD_MIN_GB = {"PL0": 1, "PL1": 20, "PL2": 461, "PL3": 1261}
PUBLIC_BANDWIDTH_MBPS = 100  # ecs.Instance internet_max_bandwidth_out range [0, 100]
NAT_EIP_BANDWIDTH_MBPS = 200  # PayAsYouGo + PayByTraffic EIP range [1, 200] (ecs.EipAddress docstring)
# Tag rules shared by every resource here (ESS tags: key <= 64 characters; values <= 128; neither
# may start with these prefixes; pulumi-alicloud ess.ScalingGroup / ecs.Instance docstrings).
TAG_FORBIDDEN_PREFIXES = ("aliyun", "acs:", "http://", "https://")
TAG_KEY_MAX, TAG_VALUE_MAX = 64, 128

TrafficMode = Literal["Standard", "HighPerformance"]


@dataclass(frozen=True)
class NetworkInterface:
    """One ENI of a node: index 0 is the primary ENI."""

    network_card_index: int
    traffic_mode: TrafficMode

    @property
    def is_eri(self) -> bool:
        return self.traffic_mode == "HighPerformance"


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
class AlicloudLayout:
    spec: ClusterSpec
    zone: str | None  # None: first zone that sells the type, looked up at deploy
    vpc_cidr: str
    node_vswitch_cidr: str
    nat_vswitch_cidr: str | None  # only for the NAT gateway (egress: nat)
    nat_eip_bandwidth_mbps: int
    interfaces: tuple[NetworkInterface, ...]
    deployment_set_strategy: Literal["LowLatency", "Availability"] | None
    image: Image
    gpu_driver: GpuDriver | None  # installed by user data when image is auto
    erdma_installer: str | None  # installed by user data when the fabric is wired and missing
    root_gb: int
    scratch: Scratch
    scratch_performance_level: str
    spot: bool
    private_pool_id: str | None
    public_bandwidth_mbps: int
    user_data: str
    tags: Mapping[str, str]
    warnings: tuple[str, ...]

    @property
    def eri_count(self) -> int:
        return sum(1 for nic in self.interfaces if nic.is_eri)

    @property
    def fabric_gbps_wired(self) -> float:
        return self.eri_count * self.spec.instance.gbps_per_fabric_device

    @property
    def user_data_b64(self) -> str:
        return base64.b64encode(self.user_data.encode()).decode()


def eri_interfaces(eri_devices: int) -> tuple[NetworkInterface, ...]:
    """ERIs one per network card index, primary ENI first (scheme in the module docstring)."""
    eris = min(eri_devices, MAX_ERIS_PER_INSTANCE)
    if eris == 0:
        return (NetworkInterface(0, "Standard"),)
    return tuple(NetworkInterface(card, "HighPerformance") for card in range(eris))


def vswitch_cidrs(cidr: str) -> tuple[str, str]:
    """Two equal vSwitches from the VPC range (nodes, NAT), each at least /16 as vSwitches must be."""
    net = ipaddress.IPv4Network(cidr)
    prefix = max(net.prefixlen + 1, VSWITCH_PREFIX[0])
    first, second, *_ = net.subnets(new_prefix=prefix)
    return str(first), str(second)


def _driver_script(driver: GpuDriver) -> str:
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
            "script_download_url=$(curl http://100.100.100.200/latest/meta-data/source-address | head -1)"
            f'"{driver.script_url_path}/${{auto_install_script}}"',
            'rm -rf "$INSTALL_DIR" && mkdir -p "$INSTALL_DIR" && cd "$INSTALL_DIR"',
            'wget -t 10 --timeout=10 "$script_download_url" && bash "$INSTALL_DIR/$auto_install_script" '
            '"$DRIVER_VERSION" "$CUDA_VERSION" "$CUDNN_VERSION" "$IS_INSTALL_RDMA" "$IS_INSTALL_eRDMA"',
        ]
    )


def _erdma_script(url: str) -> str:
    """Alibaba's eRDMA installer for GPU instances, skipped when the image already has it (eadm)."""
    install = f"cd /tmp && rm -f env_setup.sh && wget {shlex.quote(url)} && bash env_setup.sh --egs"
    return f"command -v eadm >/dev/null 2>&1 || ({install})"


def _check_tags(tags: Mapping[str, str]) -> None:
    for key, value in tags.items():
        bad = key.lower().startswith(TAG_FORBIDDEN_PREFIXES) or value.lower().startswith(TAG_FORBIDDEN_PREFIXES)
        if bad or len(key) > TAG_KEY_MAX or len(value) > TAG_VALUE_MAX:
            raise ConfigError(
                f"{CLUSTER_KEY}.tags.{key}",
                f"alicloud tag keys are 1-{TAG_KEY_MAX} characters, values at most {TAG_VALUE_MAX}, and neither "
                f"may start with {', '.join(repr(p) for p in TAG_FORBIDDEN_PREFIXES)}",
            )


def _check_sizes(spec: ClusterSpec) -> None:
    low, high = SYSTEM_DISK_GB
    if not low <= spec.storage.root_gb <= high:
        raise ConfigError(
            f"{CLUSTER_KEY}.storage.rootGb",
            f"got {spec.storage.root_gb}; an ESSD system disk on alicloud is {low} to {high} GB",
        )
    if spec.scratch == "disk":
        level = spec.alicloud.scratch_performance_level
        size = spec.storage.scratch_gb
        if size > DATA_DISK_MAX_GB:
            raise ConfigError(
                f"{CLUSTER_KEY}.storage.scratchGb", f"got {size}; an ESSD data disk is at most {DATA_DISK_MAX_GB} GB"
            )
        if size < ESSD_MIN_GB[level]:
            raise ConfigError(
                f"{CLUSTER_KEY}.alicloud.scratchPerformanceLevel",
                f"{level} needs an ESSD of at least {ESSD_MIN_GB[level]} GB but scratchGb is {size}; "
                "raise scratchGb or pick a lower level (PL0 from 1 GB, PL1 from 20 GB)",
            )
    if spec.node_group == "managed" and spec.max_nodes > ESS_MAX_SIZE:
        raise ConfigError(
            f"{CLUSTER_KEY}.maxNodes",
            f"got {spec.max_nodes}; an ESS scaling group holds at most {ESS_MAX_SIZE} instances",
        )


def plan(spec: ClusterSpec) -> AlicloudLayout:
    row = spec.instance
    _check_tags(spec.base_tags)
    _check_sizes(spec)
    warnings: list[str] = []
    key = CLUSTER_KEY

    interfaces = eri_interfaces(row.fabricDevices) if spec.fabric_wired else (NetworkInterface(0, "Standard"),)
    eris = sum(1 for n in interfaces if n.is_eri)

    strategy: Literal["LowLatency", "Availability"] | None = {
        "cluster": "LowLatency",
        "spread": "Availability",
        "none": None,
    }[spec.placement]
    if spec.node_group == "managed" and strategy is not None:
        warnings.append(
            f"{key}.placement: {spec.placement} is not applied to a managed (ESS) group: pulumi-alicloud's "
            "scaling configuration takes no deployment set; use nodeGroup: instances for a "
            f"{strategy} deployment set"
        )
        strategy = None
    if spec.node_group == "managed" and eris > 1:
        warnings.append(
            f"{key}.nodeGroup: managed cannot pin the {eris} ERIs of {row.instanceType} to different network "
            "card indices (the ESS scaling configuration has no networkCardIndex); Alibaba rates ERIs on one "
            "index at up to 100 Gb/s; use nodeGroup: instances for the full rating"
        )
    if spec.zone is None:
        warnings.append(
            f"{key}.zone: not set; the vSwitch goes into the first zone of {spec.region} that sells "
            f"{row.instanceType} (alicloud.get_zones at the first deploy; later answers are ignored so a sold-out "
            "zone never moves the cluster); set zone to choose"
        )

    node_cidr, nat_cidr = vswitch_cidrs(spec.network.cidr)

    entry: dict[str, Any] = image_for("alicloud", row.instanceType)
    gpu_driver: GpuDriver | None = None
    if spec.image == "auto":
        image = Image(None, entry["nameRegex"], entry["description"])
        drv = entry["gpuDriver"]
        gpu_driver = GpuDriver(drv["driver"], drv["cuda"], drv["cudnn"], drv["scriptUrlPath"], drv["source"])
    else:
        image = Image(spec.image, None, f"image {spec.image} as configured (its GPU driver is not managed here)")

    erdma_url: str | None = catalog_erdma_installer() if eris else None
    steps: list[tuple[str, ...]] = []
    if erdma_url:
        steps.append(("bash", "-c", _erdma_script(erdma_url)))
    if gpu_driver:
        steps.append(("bash", "-c", _driver_script(gpu_driver)))  # last: the installer reboots the node

    scratch = scratch_for(spec, (), DISK_GLOBS)
    return AlicloudLayout(
        spec=spec,
        zone=spec.zone,
        vpc_cidr=spec.network.cidr,
        node_vswitch_cidr=node_cidr,
        nat_vswitch_cidr=nat_cidr if spec.network.egress == "nat" else None,
        nat_eip_bandwidth_mbps=NAT_EIP_BANDWIDTH_MBPS,
        interfaces=interfaces,
        deployment_set_strategy=strategy,
        image=image,
        gpu_driver=gpu_driver,
        erdma_installer=erdma_url,
        root_gb=spec.storage.root_gb,
        scratch=scratch,
        scratch_performance_level=spec.alicloud.scratch_performance_level,
        spot=spec.spot,
        private_pool_id=spec.reservation or None,
        public_bandwidth_mbps=PUBLIC_BANDWIDTH_MBPS if spec.network.public_ip else 0,
        user_data=cloud_init(scratch, tuple(steps)),
        tags=dict(spec.base_tags),
        warnings=tuple(warnings),
    )


def catalog_erdma_installer() -> str:
    """The eRDMA installer URL from the `images:` section of the catalog (one place for the source)."""
    url: str = catalog.load("alicloud").images["erdmaInstaller"]["url"]
    return url


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from the recorded ENIs with traffic mode HighPerformance."""
    wired = 0
    for res in resources:
        inputs = res["inputs"]
        if res["type"] == "alicloud:ecs/instance:Instance":
            nics = [inputs, inputs.get("networkInterfaces") or {}]
        elif res["type"] == "alicloud:ess/scalingConfiguration:ScalingConfiguration":
            nics = list(inputs.get("networkInterfaces") or [])
        else:
            continue
        wired = max(wired, sum(1 for n in nics if n.get("networkInterfaceTrafficMode") == "HighPerformance"))
    return wired * gbps_per_device
