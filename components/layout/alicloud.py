"""Alibaba Cloud layout: vSwitches, eRDMA interfaces, deployment set, image, disks and bootstrap.

eRDMA: an ERI is an ENI with `NetworkInterfaceTrafficMode=HighPerformance` (Alibaba, "Elastic RDMA
interface (ERI)"). Types with one ERI get it on the primary ENI; types rated for two (ebmgn7ex,
ebmgn8v, ebmgn8is: PAI "eRDMA: use high-performance networks", ALI-EBM-ZH) get one ERI on network
card index 0 (primary) and one on index 1 (secondary): ALI-EBM-ZH documents 160 Gbit/s only with
the two ERIs on different card indices (all on one index: up to 100). `ecs.Instance` takes one
secondary ENI block, so two ERIs is also what the SDK can wire per instance.

Known limits of pulumi-alicloud 4.0.0 that shape managed node groups (ESS): the scaling
configuration has no `deploymentSetId` and its `networkInterfaces` have no `networkCardIndex`.
A managed group therefore gets no deployment set and cannot pin ERIs to card indices. Those limits
are data (`managedGroupLimits` in catalog/capabilities/alicloud.yaml): the warnings, the placement
the layout applies (`placement_applied`) and the fabric it counts come from there, and
`nodeGroup: instances` is the mode for placed, fully wired training nodes.

An ERI beyond the primary one is down in the OS until something runs DHCP on it, and NCCL needs
the MTU set (8500 with jumbo frames, else 1400): the `erdma` bootstrap part does both at every
boot (components/bootstrap/alicloud_erdma.sh), and only then does an ERI count as wired.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from .. import bootstrap, catalog
from ..bootstrap import File, Part
from ..bootstrap.scratch import scratch_part
from ..contract import capabilities
from ..errors import CLUSTER_KEY, ConfigError
from ..spec import ClusterSpec
from . import Scratch, image_for, scratch_for

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
Placement = Literal["cluster", "spread", "none"]
STRATEGIES: dict[Placement, Literal["LowLatency", "Availability"] | None] = {
    "cluster": "LowLatency",
    "spread": "Availability",
    "none": None,
}
ERDMA_ENV = "/etc/gpu-cluster/erdma.env"  # the erdma part's settings; count_wired_gbps reads ERI_COUNT from it
RAM_ROLE_NAME = re.compile(r"[^A-Za-z0-9.-]")  # RAM role names: letters, digits, '.', '-'; 1 to 64


@cache
def alicloud_data() -> dict[str, Any]:
    """The Alibaba keys of the capabilities file beyond the contract's schema (nodeIdentity, erdma, ...)."""
    path = Path(__file__).resolve().parent.parent / "catalog" / "capabilities" / "alicloud.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


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
class NodeIdentity:
    """The RAM role the nodes assume: created here (`create`) or an existing one by name."""

    create: bool
    role_name: str
    policies: tuple[str, ...]  # RAM system policies attached to it by this stack
    trusted_service: str

    @property
    def assume_role_policy(self) -> str:
        statement = {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": [self.trusted_service]}}
        return json.dumps({"Statement": [statement], "Version": "1"}, sort_keys=True)


@dataclass(frozen=True)
class LoginNode:
    """One small CPU VM in the nodes' vSwitch: the only place a public IP or an SSH CIDR lands."""

    instance_type: str
    image_name_regex: str
    public_bandwidth_mbps: int
    ssh_cidrs: tuple[str, ...]


@dataclass(frozen=True)
class Access:
    method: str  # session-manager | ssh | none (spec.access resolved)
    session_manager: bool  # enable Cloud Assistant session manager (account-wide setting)
    login_user: str
    client: str  # the session manager client command, `{instance}` for the instance id


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
    placement_applied: Placement  # what the nodes get (spec.placement is what was asked)
    image: Image
    gpu_driver: GpuDriver | None  # installed by user data when image is auto
    erdma_installer: str | None  # installed by user data when the fabric is wired and missing
    root_gb: int
    scratch: Scratch
    scratch_performance_level: str
    spot: bool
    private_pool_id: str | None
    public_bandwidth_mbps: int  # of each GPU node (0 when a login node exists)
    node_ssh_cidrs: tuple[str, ...]  # SSH rules on the nodes' group (none when a login node exists)
    erdma_mtu: int | None  # MTU the erdma part sets on every ERI
    identity: NodeIdentity
    access: Access
    login: LoginNode | None
    user_data: str
    tags: Mapping[str, str]
    warnings: tuple[str, ...]

    @property
    def eri_count(self) -> int:
        return sum(1 for nic in self.interfaces if nic.is_eri)

    @property
    def fabric_gbps_wired(self) -> float:
        """What the nodes get: ERIs the bootstrap brings up, capped on one network card (same rule as the counter)."""
        cards = {nic.network_card_index for nic in self.interfaces if nic.is_eri}
        up = self.eri_count if self.erdma_mtu is not None else min(self.eri_count, 1)
        return _gbps(up, len(cards), self.spec.instance.gbps_per_fabric_device)

    @property
    def user_data_b64(self) -> str:
        return base64.b64encode(self.user_data.encode()).decode()


def _gbps(eris_up: int, cards: int, per_device: float) -> float:
    gbps = eris_up * per_device
    if eris_up > 1 and cards <= 1:  # ERIs sharing one card index (Alibaba: up to 100 Gbit/s)
        gbps = min(gbps, float(alicloud_data()["erdma"]["maxGbpsOnOneCard"]))
    return gbps


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


def _placement(spec: ClusterSpec, warnings: list[str]) -> Placement:
    """The placement the nodes get: what was asked, less what a managed group or spot cannot have (data)."""
    key, caps = CLUSTER_KEY, capabilities("alicloud")
    asked: Placement = spec.placement
    if asked == "none":
        return "none"
    limit = caps.managed_limit("placement")
    if spec.node_group == "managed" and limit is not None:
        warnings.append(f"{key}.placement: {asked} {limit.message}")
        return "none" if limit.applied == "none" else asked
    if spec.spot and not caps.spot_with_placement:
        # resolved, not refused: `placement: auto` resolves to cluster, and a spot dev cluster should plan
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


def _identity(spec: ClusterSpec) -> NodeIdentity:
    data = alicloud_data()["nodeIdentity"]
    wanted = [*data["defaultPolicies"], *spec.identity.policies]
    if spec.identity.read_storage:
        wanted.append(data["readStoragePolicy"])
    policies = tuple(dict.fromkeys(wanted))  # in order, once
    if spec.identity.existing:
        return NodeIdentity(False, spec.identity.existing, policies, data["trustedService"])
    name = RAM_ROLE_NAME.sub("-", f"{spec.name}-{spec.stack}-nodes")[:64]
    return NodeIdentity(True, name, policies, data["trustedService"])


def _access(spec: ClusterSpec) -> Access:
    data = alicloud_data()
    return Access(
        method=spec.access,
        session_manager=spec.access == "session-manager",
        login_user=data["loginUser"]["default"],
        client=data["sessionManager"]["client"],
    )


def _login(spec: ClusterSpec) -> LoginNode | None:
    if spec.login is None:
        return None
    assert spec.login.instance_type is not None  # resolved by the spec
    return LoginNode(
        instance_type=spec.login.instance_type,
        # a CPU VM: the plain (non-UEFI) public Ubuntu image, no GPU driver
        image_name_regex=image_for("alicloud", spec.login.instance_type)["nameRegex"],
        public_bandwidth_mbps=PUBLIC_BANDWIDTH_MBPS if spec.login.public_ip else 0,
        ssh_cidrs=tuple(spec.network.ssh_cidrs),
    )


def erdma_mtu() -> int:
    erdma = alicloud_data()["erdma"]
    return int(erdma["mtu"]["jumboFrames" if erdma["jumboFrames"] else "standard"])


ERDMA_UNIT = """[Unit]
Description=gpu-cluster: bring up every ERI and set its MTU for NCCL
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile=/etc/gpu-cluster/erdma.env
ExecStart=/usr/local/sbin/gpu-cluster-erdma

[Install]
WantedBy=multi-user.target
"""


def erdma_part(eri_count: int, mtu: int) -> Part:
    """Every ERI up (DHCP on the secondary ones) with the MTU NCCL needs, at every boot (a systemd unit)."""
    if eri_count == 0:
        return Part("erdma")
    return Part(
        "erdma",
        files=(
            File("/usr/local/sbin/gpu-cluster-erdma", bootstrap.script("alicloud_erdma.sh"), "0755"),
            File(ERDMA_ENV, f"ERI_COUNT={eri_count}\nMTU={mtu}\n"),
            File("/etc/systemd/system/gpu-cluster-erdma.service", ERDMA_UNIT),
        ),
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", "--now", "gpu-cluster-erdma.service")),
        summary=f"brings up {eri_count} ERIs with MTU {mtu} at every boot.",
    )


def plan(spec: ClusterSpec) -> AlicloudLayout:
    row = spec.instance
    _check_tags(spec.base_tags)
    _check_sizes(spec)
    warnings: list[str] = []
    key = CLUSTER_KEY
    caps = capabilities("alicloud")

    interfaces = eri_interfaces(row.fabricDevices) if spec.fabric_wired else (NetworkInterface(0, "Standard"),)
    eris = sum(1 for n in interfaces if n.is_eri)
    cards_limit = caps.managed_limit("fabricCards")
    if spec.node_group == "managed" and eris > 1 and cards_limit is not None:
        # what ESS applies: every ERI on one card (its networkInterfaces take no card index)
        interfaces = tuple(NetworkInterface(0, nic.traffic_mode) for nic in interfaces)
        one_card = _gbps(eris, 1, row.gbps_per_fabric_device)
        warnings.append(
            f"{key}.nodeGroup: managed {cards_limit.message}; the {eris} ERIs of {row.instanceType} are on "
            f"{cards_limit.applied}, counted at {one_card:g} of {row.fabricGbps:g} Gb/s"
        )

    placement = _placement(spec, warnings)
    strategy = STRATEGIES[placement]
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
    mtu = erdma_mtu() if eris else None
    scratch = scratch_for(spec, (), DISK_GLOBS)
    parts = [
        scratch_part(scratch),
        bootstrap.commands_part("erdma-stack", [("bash", "-c", _erdma_script(erdma_url))] if erdma_url else []),
        erdma_part(eris, mtu or 0),
        # last: the driver installer reboots the node (the erdma unit runs again after it)
        bootstrap.commands_part("gpu-driver", [("bash", "-c", _driver_script(gpu_driver))] if gpu_driver else []),
    ]
    login = _login(spec)
    return AlicloudLayout(
        spec=spec,
        zone=spec.zone,
        vpc_cidr=spec.network.cidr,
        node_vswitch_cidr=node_cidr,
        nat_vswitch_cidr=nat_cidr if spec.network.egress == "nat" else None,
        nat_eip_bandwidth_mbps=NAT_EIP_BANDWIDTH_MBPS,
        interfaces=interfaces,
        deployment_set_strategy=strategy,
        placement_applied=placement,
        image=image,
        gpu_driver=gpu_driver,
        erdma_installer=erdma_url,
        root_gb=spec.storage.root_gb,
        scratch=scratch,
        scratch_performance_level=spec.alicloud.scratch_performance_level,
        spot=spec.spot,
        private_pool_id=spec.reservation or None,
        # with a login node, the nodes stay private and SSH lands on the login node only
        public_bandwidth_mbps=PUBLIC_BANDWIDTH_MBPS if spec.network.public_ip and login is None else 0,
        node_ssh_cidrs=tuple(spec.network.ssh_cidrs) if login is None else (),
        erdma_mtu=mtu,
        identity=_identity(spec),
        access=_access(spec),
        login=login,
        user_data=bootstrap.cloud_init(parts),
        tags=dict(spec.base_tags),
        warnings=tuple(warnings),
    )


def catalog_erdma_installer() -> str:
    """The eRDMA installer URL from the `images:` section of the catalog (one place for the source)."""
    url: str = catalog.load("alicloud").images["erdmaInstaller"]["url"]
    return url


def _eris_brought_up(user_data: Any) -> int:
    """ERI_COUNT of the erdma part in a node's user data (Base64 cloud-config), 0 when there is none."""
    if not isinstance(user_data, str):
        return 0
    try:
        doc = yaml.safe_load(base64.b64decode(user_data, validate=True).decode())
    except (binascii.Error, UnicodeDecodeError, yaml.YAMLError):
        return 0
    files = doc.get("write_files") if isinstance(doc, dict) else None
    for item in files or []:
        if isinstance(item, dict) and item.get("path") == ERDMA_ENV:
            found = re.search(r"^ERI_COUNT=(\d+)$", str(item.get("content", "")), re.M)
            return int(found.group(1)) if found else 0
    return 0


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from the recorded nodes: ENIs with traffic mode HighPerformance that are up.

    The primary ERI is configured by the image; a further ERI counts only when the node's user data
    brings it up (the erdma part). ERIs on one network card index (always so in ESS, whose interfaces
    take no card index) are capped at Alibaba's one-card rating.
    """
    wired = 0.0
    for res in resources:
        inputs = res["inputs"]
        if res["type"] == "alicloud:ecs/instance:Instance":
            nics = [inputs, inputs.get("networkInterfaces") or {}]
        elif res["type"] == "alicloud:ess/scalingConfiguration:ScalingConfiguration":
            nics = [{**n, "networkCardIndex": 0} for n in inputs.get("networkInterfaces") or []]
        else:
            continue
        eris = [n for n in nics if n.get("networkInterfaceTrafficMode") == "HighPerformance"]
        if not eris:
            continue
        up = min(len(eris), max(1, _eris_brought_up(inputs.get("userData"))))
        cards = {n.get("networkCardIndex", 0) for n in eris}
        wired = max(wired, _gbps(up, len(cards), gbps_per_device))
    return wired
