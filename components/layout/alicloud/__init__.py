"""Alibaba Cloud layout: vSwitches, eRDMA interfaces, deployment set, image, disks and bootstrap.

eRDMA: an ERI is an ENI with `NetworkInterfaceTrafficMode=HighPerformance` (Alibaba, "Elastic RDMA
interface (ERI)"). Types with one ERI get it on the primary ENI; types rated for two (ebmgn7ex,
ebmgn8v, ebmgn8is: PAI "eRDMA: use high-performance networks", ALI-EBM-ZH) get one ERI on network
card index 0 (primary) and one on index 1 (secondary): ALI-EBM-ZH documents 160 Gbit/s only with
the two ERIs on different card indices (all on one index: up to 100). `ecs.Instance` takes one
secondary ENI block, so two ERIs is also what the SDK can wire per instance.

Known limits of pulumi-alicloud 4.0.0 that shape managed node groups (ESS): the scaling
configuration has no `deploymentSetId`, and it cannot carry ERIs at all (the provider wants top-level
security groups, which ESS refuses beside a primary ENI). A managed group therefore gets no
deployment set and no ERI. Those limits are data (`managedGroupLimits` in
catalog/capabilities/alicloud.yaml): the warnings, the placement the layout applies
(`placement_applied`) and the interfaces it wires come from there, and
`nodeGroup: instances` is the mode for placed, fully wired training nodes.

An ERI beyond the primary one is down in the OS until something runs DHCP on it, and NCCL needs
the MTU set (8500 with jumbo frames, else 1400): the `erdma` bootstrap part does both at every
boot (components/bootstrap/alicloud_erdma.sh), and only then does an ERI count as wired. The same
unit installs Alibaba's eRDMA stack for GPU instances when the image lacks it, after the GPU
driver (Alibaba's eRDMA-only install is for a host whose driver and CUDA are installed), and the
`fabric` part writes the NCCL environment Alibaba presets for eRDMA (PAI) to /etc/gpu-cluster/nccl.env.

The whole node bootstrap is `layout.node.node_parts` (scratch, fabric, MIG, health check,
metrics), then the GPU driver installer, which reboots the node and therefore goes last. In a
managed (ESS) group the health check's hook marks the instance Unhealthy (ess:SetInstanceHealth,
components/bootstrap/alicloud_unhealthy.sh) so ESS replaces it; instances mode only reports.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import ipaddress
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import yaml

from ... import bootstrap, catalog
from ...bootstrap import File, Part
from ...bootstrap.fabric import NCCL_ENV, FabricUsability, nccl_env_part
from ...bootstrap.slurm import compute_parts, head_parts, login_parts
from ...bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ...catalog import kubernetes as kubernetes_offers
from ...catalog.capabilities import capabilities, capability_data
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch, arch, image_for, scratch_for
from ..kubernetes import GPU_TAINT, Release, gpu_labels, releases
from ..node import node_parts
from ..shared import Shared, shared_for
from ..slurm import CloudSlurm, slurm_layout
from .scaling import AlicloudFleet
from .scaling import plan as fleet_plan

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
# Written by the GPU-driver step when it starts: the boot id of the boot in which the installer runs
# (it reboots the node when done). The erdma unit defers the eRDMA stack and the unhealthy hook
# holds back while it matches the current boot.
DRIVER_BOOT_FILE = "/var/lib/gpu-cluster/gpu-driver-install-boot"
RAM_ROLE_NAME = re.compile(r"[^A-Za-z0-9.-]")  # RAM role names: letters, digits, '.', '-'; 1 to 64


def alicloud_data() -> dict[str, Any]:
    """The Alibaba keys of the capabilities file beyond the contract's schema (nodeIdentity, erdma, ...)."""
    return capability_data("alicloud")


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
class ErdmaController:
    """The ACK eRDMA Controller add-on and the RRSA role it calls ECS with (catalog/kubernetes/alicloud.yaml)."""

    addon: str
    config: str  # the add-on's JSON config (cs.KubernetesAddon `config`)
    role_prefix: str  # the add-on's RAM role is <prefix><cluster id>
    namespace: str
    service_account: str
    actions: tuple[str, ...]
    eris: int  # ERIs it wires per node: one per network card, min(cards, ERIs of the type)
    mtu: int


@dataclass(frozen=True)
class AckLayout:
    """`scheduler: kubernetes` on alicloud: an ACK Pro cluster, a CPU system pool and the GPU pool."""

    version: str  # ACK's full version string of spec.kubernetes.version
    cluster_spec: str
    network_addon: str
    pod_cidr: str
    service_cidr: str
    proxy_mode: str
    image_type: str
    system_instance_type: str
    system_nodes: int
    gpu_labels: Mapping[str, str]  # gpu_labels(spec) and ACK's driver-version label
    gpu_taint: Mapping[str, str]
    driver_version: str
    secrets_key: Mapping[str, Any]  # kms.Key arguments (camelCase keys of the data)
    erdma: ErdmaController | None  # None: no ERI-capable fabric wired
    releases: tuple[Release, ...]
    user_data_b64: str | None  # the GPU nodes' bootstrap (a bash script: ACK runs it after joining the node)
    pre_user_data_b64: str | None  # before ACK's own init: keep ACK off the scratch disk
    min_nodes: int
    max_nodes: int
    cluster_tags: Mapping[str, str]  # the cluster's tags as ACK takes them: Kubernetes labels (`ack_tags`)


@dataclass(frozen=True)
class AliSlurm(CloudSlurm):
    """`scheduler: slurm` on alicloud: a private head node, the MUNGE key KMS-encrypted, a client login node.

    The key is `random.RandomBytes` (a secret), encrypted with the cluster's own KMS key (`kms.Ciphertext`): only the
    ciphertext reaches the nodes, and only the cluster's node RAM role may call kms:Decrypt on that one key. A KMS
    *secret* would need a KMS instance (KMS 3.0: pulumi-alicloud 4.0.0 kms/secret.py, dkms_instance_id "In KMS 3.0,
    this parameter is required"); a key without one is a default key, free and region-wide (kms/key.py).
    """

    head_image_regex: str
    kms_endpoint: str  # the KMS shared gateway's VPC domain the hook calls
    encryption_context: Mapping[str, str]
    head_user_data: str  # CIPHERTEXT_PLACEHOLDER until deploy
    login_user_data: str  # HEAD_PLACEHOLDER and CIPHERTEXT_PLACEHOLDER until deploy
    # the GPU nodes' user data (AlicloudLayout.user_data) carries both placeholders too


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
    fabric_usability: FabricUsability  # does NCCL get everything eRDMA needs on this image
    health_hook: bool  # the ESS unhealthy hook is on the nodes (the role needs ess:SetInstanceHealth)
    shared: Shared | None = None  # storage.shared: General-purpose NAS or an existing filesystem
    kubernetes: AckLayout | None = None  # scheduler: kubernetes (ACK); None builds the nodes as today
    slurm: AliSlurm | None = None  # scheduler: slurm: the head node, the MUNGE key's delivery, the login client
    fleet: AlicloudFleet | None = None  # elastic fleet: minNodes and the Spot mix of the ESS group

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
        """The cloud-config gzip-compressed, then Base64 (cloud-init uncompresses gzip user data)."""
        return self.user_data_b64_for(self.user_data)

    def user_data_b64_for(self, user_data: str) -> str:
        return base64.b64encode(gzip_user_data(user_data)).decode()


def gzip_user_data(text: str) -> bytes:
    """The user data as the nodes get it: gzip (fixed mtime, so a plan is reproducible), under Alibaba's 16 KB.

    cloud-init: "Content found to be gzip compressed will be uncompressed ... useful because user-data is
    limited to ~16384 bytes" (canonical/cloud-init doc/rtd/topics/format.rst, 20.2). The whole bootstrap
    (scratch, eRDMA, health check, metrics, driver installer) is about 25 KB as text.
    """
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


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
            'rm -rf "$INSTALL_DIR" && mkdir -p "$INSTALL_DIR" && cd "$INSTALL_DIR" || exit 1',
            'wget -t 10 --timeout=10 "$script_download_url" && bash "$INSTALL_DIR/$auto_install_script" '
            '"$DRIVER_VERSION" "$CUDA_VERSION" "$CUDNN_VERSION" "$IS_INSTALL_RDMA" "$IS_INSTALL_eRDMA"',
        ]
    )


def _tag_problems(tags: Mapping[str, str]) -> Iterator[ConfigError]:
    for key, value in tags.items():
        bad = key.lower().startswith(TAG_FORBIDDEN_PREFIXES) or value.lower().startswith(TAG_FORBIDDEN_PREFIXES)
        if bad or len(key) > TAG_KEY_MAX or len(value) > TAG_VALUE_MAX:
            yield ConfigError(
                f"{CLUSTER_KEY}.tags.{key}",
                f"alicloud tag keys are 1-{TAG_KEY_MAX} characters, values at most {TAG_VALUE_MAX}, and neither "
                f"may start with {', '.join(repr(p) for p in TAG_FORBIDDEN_PREFIXES)}",
            )


def _size_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
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


def _placement(spec: ClusterSpec, warnings: list[str], ack: bool = False) -> Placement:
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
        # a CPU VM: the plain (non-UEFI) public Ubuntu image of its architecture, no GPU driver (catalog images.login)
        image_name_regex=catalog.cpu_image("alicloud", spec.login.instance_type)["nameRegex"],
        public_bandwidth_mbps=PUBLIC_BANDWIDTH_MBPS if spec.login.public_ip else 0,
        ssh_cidrs=tuple(spec.network.ssh_cidrs),
    )


def erdma_mtu() -> int:
    erdma = alicloud_data()["erdma"]
    return int(erdma["mtu"]["jumboFrames" if erdma["jumboFrames"] else "standard"])


ERDMA_UNIT = bootstrap.oneshot_unit(
    "gpu-cluster: the eRDMA stack, every ERI up and its MTU set for NCCL",
    name="erdma",
    wants=["network-online.target"],
    after=["network-online.target", "nvidia-persistenced.service"],
)


# The health check counts eRDMA ports: it must run after the ERIs are up and the stack installed.
HEALTH_AFTER_ERDMA = """[Unit]
Wants=gpu-cluster-erdma.service
After=gpu-cluster-erdma.service
"""


def erdma_part(eri_count: int, mtu: int, installer: str | None = None) -> Part:
    """The eRDMA stack when missing, every ERI up (DHCP on the secondary ones) with NCCL's MTU, at every boot."""
    if eri_count == 0:
        return Part("erdma")
    env = f"ERI_COUNT={eri_count}\nMTU={mtu}\nERDMA_INSTALLER={installer or ''}\nDRIVER_BOOT_FILE={DRIVER_BOOT_FILE}\n"
    return Part(
        "erdma",
        files=(
            File("/usr/local/sbin/gpu-cluster-erdma", bootstrap.script("alicloud_erdma.sh"), "0755"),
            File(ERDMA_ENV, env),
            File("/etc/systemd/system/gpu-cluster-erdma.service", ERDMA_UNIT),
            File("/etc/systemd/system/gpu-cluster-health.service.d/10-after-erdma.conf", HEALTH_AFTER_ERDMA),
        ),
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", "--now", "gpu-cluster-erdma.service")),
        summary=f"installs the eRDMA stack when missing and brings up {eri_count} ERIs with MTU {mtu} at every boot.",
    )


def nccl_env() -> tuple[dict[str, str], str]:
    """The NCCL environment Alibaba presets for eRDMA (data: `erdma.ncclEnv` in the capabilities file)."""
    data = alicloud_data()["erdma"]
    return {str(k): str(v) for k, v in data["ncclEnv"].items()}, one_line(data["ncclEnvSource"])


def fabric_usability(spec: ClusterSpec, eris: int, image_entry: Mapping[str, Any]) -> FabricUsability:
    """Usable when the bootstrap brings what eRDMA needs on this image: stack, every ERI up, MTU, NCCL env."""
    if eris == 0:
        return FabricUsability(False, ("no fabric wired",))
    if spec.image != "auto":
        return FabricUsability(
            False,
            (
                f"image {spec.image}: the catalog cannot vouch that it is an eRDMA-capable image with the GPU driver "
                "the eRDMA stack is installed after (Alibaba supports eRDMA on some images only)",
            ),
        )
    vouched = (image_entry.get("fabricSupport") or {}).get(spec.instance.fabric)
    if not vouched:
        return FabricUsability(False, (f"image {image_entry['nameRegex']}: no source that it supports eRDMA",))
    data = alicloud_data()["erdma"]
    return FabricUsability(
        True,
        provides=(
            "Alibaba's eRDMA stack for GPU instances (env_setup.sh --egs, after the GPU driver)",
            f"{eris} ERI(s) up with MTU {erdma_mtu()}",
            f"the NCCL environment Alibaba presets for eRDMA in {NCCL_ENV} (NCCL >= {data['minNccl']} in the job)",
        ),
    )


def _driver_mark_part(driver: GpuDriver | None) -> Part:
    """First of the fabric parts: the boot id the driver installer will run in (its own step is last)."""
    if driver is None:
        return Part("gpu-driver-mark")
    mark = f"mkdir -p {DRIVER_BOOT_FILE.rsplit('/', 1)[0]} && cat /proc/sys/kernel/random/boot_id > {DRIVER_BOOT_FILE}"
    return bootstrap.commands_part("gpu-driver-mark", [("sh", "-c", mark)])


def unhealthy_hook() -> str:
    """The ESS hook: mark this instance Unhealthy in its scaling group (shellcheck-clean, tested on stubs)."""
    return bootstrap.script("alicloud_unhealthy.sh")


def _health_hook(spec: ClusterSpec, warnings: list[str]) -> bool:
    if spec.health_action != "replace":
        return False
    if spec.scheduler == "kubernetes":
        warnings.append(
            f"{CLUSTER_KEY}.health.action: replace acts as report on ACK: the node pool's scaling group belongs to "
            "ACK, so the health check does not mark instances Unhealthy; it writes /var/lib/gpu-cluster/health.json "
            "and the journal"
        )
        return False
    if spec.node_group == "managed":
        return True
    warnings.append(
        f"{CLUSTER_KEY}.health.action: replace acts as report on alicloud instances: nothing replaces an ECS "
        "instance outside a scaling group; the health check writes /var/lib/gpu-cluster/health.json and the journal"
    )
    return False


def plan(spec: ClusterSpec) -> AlicloudLayout:
    row = spec.instance
    ack = spec.scheduler == "kubernetes"
    refuse(
        [
            *_tag_problems(spec.base_tags),
            *_size_problems(spec),
            *arch.problems(spec),
            *(ack_tags(spec)[1] if ack else ()),
        ]
    )
    warnings: list[str] = []
    key = CLUSTER_KEY
    caps = capabilities("alicloud")

    if ack and spec.fabric_wired:  # the eRDMA controller: one ERI per network card (module docstring of ack_layout)
        interfaces = tuple(NetworkInterface(card, "HighPerformance") for card in range(ack_eri_count(row)))
    elif spec.fabric_wired:
        interfaces = eri_interfaces(row.fabricDevices)
    else:
        interfaces = (NetworkInterface(0, "Standard"),)
    eris = sum(1 for n in interfaces if n.is_eri)
    fabric_limit = caps.managed_limit("fabric")
    if spec.node_group == "managed" and eris and fabric_limit is not None and not ack:
        # what ESS can be given: the primary ENI as it comes (the provider's request and ESS's API agree on no ERI)
        interfaces = (NetworkInterface(0, "Standard"),)
        warnings.append(
            f"{key}.nodeGroup: managed {one_line(fabric_limit.message)}; the {eris} ERI(s) of {row.instanceType} "
            f"are {fabric_limit.applied}: 0 of {row.fabricGbps:g} Gb/s wired"
        )
        eris = 0

    placement = _placement(spec, warnings, ack)
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

    erdma_url: str | None = catalog_erdma_installer() if eris and not ack else None
    mtu = (ack_erdma_mtu() if ack else erdma_mtu()) if eris else None
    scratch = scratch_for(spec, (), DISK_GLOBS)
    shared = shared_for(spec)
    fabric: list[Part] = [_driver_mark_part(gpu_driver)]
    if eris:
        env, source = nccl_env()
        fabric += [erdma_part(eris, mtu or 0, erdma_url), nccl_env_part(env, source)]
    hook = _health_hook(spec, warnings)
    slurm = ali_slurm(spec, placement, shared) if spec.scheduler == "slurm" else None
    parts = [
        *node_parts(
            spec,
            scratch,
            fabric_devices=eris,
            nvme_globs=(),  # no gn/ebmgn family has local NVMe (scratch is a cloud disk)
            fabric=fabric,
            unhealthy_hook=unhealthy_hook() if hook else None,
            mounts=shared.mount if shared else None,
        ),
        *(slurm_compute_parts(spec, slurm, placement) if slurm else ()),
        # last: the driver installer reboots the node (every unit above runs again after it)
        bootstrap.commands_part("gpu-driver", [("bash", "-c", _driver_script(gpu_driver))] if gpu_driver else []),
    ]
    login = _login(spec)
    kubernetes = ack_layout(spec, scratch, eris, shared, warnings) if ack else None
    usability = ack_fabric_usability(eris) if ack and eris else fabric_usability(spec, eris, entry)
    fleet = fleet_plan(spec)  # before any resource: refusals are keyed; its warnings join the plan's
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
        warnings=tuple(warnings) + (fleet.warnings if fleet else ()),
        fabric_usability=usability,
        health_hook=hook,
        shared=shared,
        kubernetes=kubernetes,
        slurm=slurm,
        fleet=fleet,
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
        raw = base64.b64decode(user_data, validate=True)
        doc = yaml.safe_load((gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode())
    except (binascii.Error, UnicodeDecodeError, yaml.YAMLError, OSError, EOFError):
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
    return max(wired, _count_ack_pools(resources, gbps_per_device))


# --- scheduler: kubernetes (ACK) -------------------------------------------------------------------------
# What is wired where on ACK: pulumi-alicloud 4.0.0 cs.NodePool has no ENI, ERI or network-card argument, so
# the node pool itself registers no eRDMA. The ACK eRDMA Controller add-on (cs.KubernetesAddon) does it on
# every node that joins: it converts the primary ENI to HighPerformance on network card 0 and creates and
# attaches one more ERI per further card, min(NetworkCardQuantity, EriQuantity) of the type, then loads the
# eRDMA driver (preferDriver) and sets the jumbo-frame MTU (catalog/kubernetes/alicloud.yaml erdmaController).
# The fabric is therefore counted from the GPU pool's instance type, and only when the add-on is registered
# on the same cluster; without it the pool counts 0.
ACK_CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
ACK_NODE_POOL = "alicloud:cs/nodePool:NodePool"
ACK_ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
ACK_BOOTSTRAP = "/var/lib/gpu-cluster/ack-bootstrap.sh"  # where the GPU nodes' user data unpacks the bootstrap
ACK_DATA_DISK_GB = (40, 32768)  # cs.NodePool data_disks.size "valid value range [40~32768] in GB" (SDK docstring)


def ack_user_data(script: str) -> str:
    """The bootstrap as a small bash script carrying itself gzip-compressed.

    ACK puts the node pool's user data into the one user-data script it runs with its own init (ACK node
    initialization), so it cannot be gzip user data itself; compressed inside, it stays far under the ECS
    16 KB user-data limit next to ACK's script (the whole bootstrap is about 14 KB as text).
    """
    packed = base64.b64encode(gzip.compress(script.encode(), compresslevel=9, mtime=0)).decode()
    lines = [packed[i : i + 76] for i in range(0, len(packed), 76)]
    # written to a file first: a script piped into bash would lose its rest to any command that reads stdin
    return "\n".join(
        [
            "#!/bin/bash",
            "set -euo pipefail",
            f"mkdir -p {ACK_BOOTSTRAP.rsplit('/', 1)[0]}",
            f"base64 -d <<'GPU_CLUSTER_EOF' | gunzip > {ACK_BOOTSTRAP}",
            *lines,
            "GPU_CLUSTER_EOF",
            f"exec bash {ACK_BOOTSTRAP}",
            "",
        ]
    )


def ack_bootstrap(user_data_b64: str) -> str:
    """The bootstrap script inside an ACK node pool's user data (the inverse of `ack_user_data`)."""
    wrapper = base64.b64decode(user_data_b64).decode()
    body = wrapper.split(f"<<'GPU_CLUSTER_EOF' | gunzip > {ACK_BOOTSTRAP}\n", 1)[1].split("\nGPU_CLUSTER_EOF", 1)[0]
    return gzip.decompress(base64.b64decode("".join(body.split()))).decode()


def ack_offer() -> dict[str, Any]:
    """catalog/kubernetes/alicloud.yaml: the ACK keys beyond the common schema."""
    found = kubernetes_offers.offer("alicloud")
    assert found is not None  # shipped with the package
    return {**found.model_dump(), **found.extra}


def ack_eri_count(row: Any) -> int:
    """ERIs the eRDMA controller wires on one node of this type: one per network card, at most the type's ERIs."""
    return max(0, min(int(row.fabricDevices or 0), int(row.networkCards or 1)))


def ack_erdma_mtu() -> int:
    return int(ack_offer()["erdmaController"]["mtu"])


def ack_fabric_usability(eris: int) -> FabricUsability:
    data = ack_offer()["erdmaController"]
    return FabricUsability(
        True,
        provides=(
            f"the ACK eRDMA Controller add-on ({data['addon']}): {eris} ERI(s), one per network card, with MTU "
            f"{data['mtu']} and the eRDMA driver in {data['config']['agent']['preferDriver']} mode",
            "pods get every ERI of their node as aliyun/erdma (allocateAllDevices); the NCCL environment for eRDMA "
            "is the job's (NCCL_IB_* in the pod spec)",
        ),
    )


def _ack_erdma(row: Any, eris: int) -> ErdmaController | None:
    if eris == 0:
        return None
    data = ack_offer()["erdmaController"]
    rrsa = data["rrsa"]
    return ErdmaController(
        addon=str(data["addon"]),
        config=json.dumps(data["config"], sort_keys=True, separators=(",", ":")),
        role_prefix=str(rrsa["rolePrefix"]),
        namespace=str(rrsa["namespace"]),
        service_account=str(rrsa["serviceAccount"]),
        actions=tuple(str(a) for a in rrsa["actions"]),
        eris=ack_eri_count(row),
        mtu=int(data["mtu"]),
    )


def ack_layout(spec: ClusterSpec, scratch: Scratch, eris: int, shared: Shared | None, warnings: list[str]) -> AckLayout:
    """The ACK cluster, its pools and the GPU nodes' bootstrap (`scheduler: kubernetes`)."""
    kube = spec.kubernetes
    assert kube is not None  # resolved by the spec with scheduler kubernetes
    data = ack_offer()
    # kubernetes.publicEndpoint is refused by the spec (catalog/kubernetes/alicloud.yaml publicEndpointRefused)
    driver = str(data["nvidiaDriverVersion"])
    labels = {**gpu_labels(spec), str(data["driverLabel"]): driver}
    # GPU nodes: the node bootstrap as a bash script (ACK concatenates user data into the cloud-init script it
    # runs after joining the node: "ACK node initialization"). No driver (ACK's), no eRDMA part (the add-on's),
    # no metrics part (the in-cluster DCGM exporter replaces the Docker one), no ESS unhealthy hook.
    fabric: list[Part] = []
    if eris:
        env, source = nccl_env()
        fabric.append(nccl_env_part(env, source))
    parts = node_parts(
        replace(spec, dcgm_exporter=False),
        scratch,
        fabric_devices=eris,
        nvme_globs=(),
        fabric=fabric,
        unhealthy_hook=None,
        mounts=shared.mount if shared else None,
    )
    script = bootstrap.startup_script(parts, header=(f"gpu-cluster {spec.name}: ACK GPU node bootstrap",))
    if scratch.kind == "disk" and spec.storage.scratch_gb < ACK_DATA_DISK_GB[0]:
        raise ConfigError(
            f"{CLUSTER_KEY}.storage.scratchGb",
            f"got {spec.storage.scratch_gb}; an ACK node pool data disk is {ACK_DATA_DISK_GB[0]} to "
            f"{ACK_DATA_DISK_GB[1]} GB",
        )
    # ACK formats the node pool's last data disk for the container runtime unless /var/.skip-auto-fdisk exists
    # before its init ("ACK node initialization", step 3.1): the scratch disk stays ours.
    pre = "#!/bin/bash\ntouch /var/.skip-auto-fdisk\n" if scratch.kind == "disk" else None
    if spec.max_nodes > spec.nodes:
        warnings.append(
            f"{CLUSTER_KEY}.maxNodes: the ACK GPU pool scales from {spec.nodes} to {spec.max_nodes} nodes "
            "(cs.NodePool scaling_config); ACK adds nodes only when node autoscaling is enabled for the cluster "
            "(ACK console or API, not built here)"
        )
    return AckLayout(
        version=str(data["patchVersions"][kube.version]),
        cluster_spec=str(data["clusterSpec"]),
        network_addon=str(data["networkAddon"]),
        pod_cidr=str(data["podCidr"]),
        service_cidr=str(data["serviceCidr"]),
        proxy_mode=str(data["proxyMode"]),
        image_type=str(data["imageType"]),
        system_instance_type=kube.system_instance_type,
        system_nodes=kube.system_nodes,
        gpu_labels=labels,
        gpu_taint=dict(GPU_TAINT),
        driver_version=driver,
        secrets_key=dict(data["secretsKey"]),
        erdma=_ack_erdma(spec.instance, eris),
        releases=releases(spec),
        user_data_b64=base64.b64encode(ack_user_data(script).encode()).decode() if script else None,
        pre_user_data_b64=base64.b64encode(pre.encode()).decode() if pre else None,
        min_nodes=spec.nodes,
        max_nodes=spec.max_nodes,
        cluster_tags=ack_tags(spec)[0],
    )


def ack_tags(spec: ClusterSpec) -> tuple[dict[str, str], list[ConfigError]]:
    """The cluster's tags for cs.ManagedKubernetes, and one error per tag ACK cannot take.

    ACK puts the cluster's tags on its nodes as Kubernetes labels (catalog/kubernetes/alicloud.yaml `clusterTags`):
    a key's ':' becomes '_' (gpu-cluster:cluster -> gpu-cluster_cluster, the GCP labels' spelling, so the
    required-tags policy still finds it); what is still no label is refused, naming the config key it comes from.
    """
    data = ack_offer()["clusterTags"]
    out: dict[str, str] = {}
    problems: list[ConfigError] = []
    for key, value in spec.base_tags.items():
        label = key
        for old, new in dict(data["keyReplace"]).items():
            label = label.replace(str(old), str(new))
        where = (
            f"{CLUSTER_KEY}.tags.{key}"
            if key in spec.tags
            else f"{CLUSTER_KEY}.name"
            if key == "gpu-cluster:cluster"
            else f"{CLUSTER_KEY}.tags"
        )
        if not re.fullmatch(str(data["labelKey"]), label) or not re.fullmatch(str(data["labelValue"]), value):
            problems.append(
                ConfigError(
                    where,
                    f"tag {key}={value!r} becomes the ACK cluster tag {label}={value!r}, which ACK puts on the nodes "
                    f"as a Kubernetes label: {one_line(data['rule'])}",
                )
            )
        elif label in out:
            problems.append(ConfigError(where, f"tag {key} becomes the ACK cluster tag {label}, as another tag does"))
        out[label] = value
    return out, problems


def _count_ack_pools(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """The GPU pools' fabric: ERIs per node from the pool's instance type, when its cluster has the eRDMA add-on."""
    served = {
        str(r["inputs"].get("clusterId"))
        for r in resources
        if r["type"] == ACK_ADDON and r["inputs"].get("name") == ack_offer()["erdmaController"]["addon"]
    }
    wired = 0.0
    for res in resources:
        if res["type"] != ACK_NODE_POOL or str(res["inputs"].get("clusterId")) not in served:
            continue
        for instance_type in (res["inputs"].get("instanceTypes") or [])[:1]:
            rows = catalog.find("alicloud", str(instance_type))
            if rows and rows[0].fabric == "erdma":
                eris = ack_eri_count(rows[0])
                wired = max(wired, _gbps(eris, eris, gbps_per_device))
    return wired


# --- scheduler: slurm ------------------------------------------------------------------------------------
MUNGE_HOOK = "alicloud_munge_key.sh"
CIPHERTEXT_PLACEHOLDER = "@@GPU_CLUSTER_MUNGE_CIPHERTEXT@@"  # the key's KMS ciphertext, known at deploy
# KMS Decrypt through the shared gateway's VPC domain (KMS API Decrypt: "VPC domain names:
# kms-vpc.<REGION_ID>.aliyuncs.com")
KMS_VPC_ENDPOINT = "https://kms-vpc.{region}.aliyuncs.com"
# The GPU driver installer reboots a fresh node: slurmd registers only in a boot with the driver (the same test the
# erdma unit makes), so a node never joins without its GPUs (ExecCondition: a non-zero exit skips the unit).
SLURM_AFTER_DRIVER = f"""[Service]
ExecCondition=/bin/sh -c '! [ "$(cat {DRIVER_BOOT_FILE} 2>/dev/null)" = "$(cat /proc/sys/kernel/random/boot_id)" ]'
"""


def munge_hook() -> str:
    """The key hook: KMS Decrypt of the key's ciphertext with the node's RAM role (tested on stubs)."""
    return bootstrap.script(MUNGE_HOOK)


def _hook_env(spec: ClusterSpec) -> dict[str, str]:
    context = json.dumps(slurm_encryption_context(spec), sort_keys=True, separators=(",", ":"))
    return {
        "MUNGE_CIPHERTEXT": CIPHERTEXT_PLACEHOLDER,
        "KMS_ENDPOINT": KMS_VPC_ENDPOINT.format(region=spec.region),
        "ENCRYPTION_CONTEXT": context,
    }


def slurm_encryption_context(spec: ClusterSpec) -> dict[str, str]:
    """Bound to the ciphertext: Decrypt succeeds only with the same context (KMS Encrypt EncryptionContext)."""
    return {"gpu-cluster": spec.name, "stack": spec.stack, "purpose": "munge-key"}


def _switches(spec: ClusterSpec, placement: Placement) -> tuple[str, ...]:
    """One switch per deployment set the nodes are in (what the nodes get, not what was asked)."""
    return (f"{spec.name}-ds",) if placement == "cluster" else ()


def ali_slurm(spec: ClusterSpec, placement: Placement, shared: Shared | None) -> AliSlurm | None:
    layout = slurm_layout(spec, switches=_switches(spec, placement))
    if layout is None:
        return None
    assert spec.slurm is not None and spec.slurm.head_instance_type is not None
    hook, env = munge_hook(), _hook_env(spec)
    mount = shared.mount if shared else None
    head = head_parts(layout, key_hook=hook, key_hook_env=env, mount=mount)
    login = login_parts(layout, head_address=HEAD_PLACEHOLDER, key_hook=hook, key_hook_env=env, mount=mount)
    return AliSlurm(
        layout=layout,
        head_instance_type=spec.slurm.head_instance_type,
        # a CPU VM: the plain public Ubuntu image of its architecture, as the login node's
        head_image_regex=str(catalog.cpu_image("alicloud", spec.slurm.head_instance_type)["nameRegex"]),
        kms_endpoint=env["KMS_ENDPOINT"],
        encryption_context=slurm_encryption_context(spec),
        head_user_data=bootstrap.cloud_init(head),
        login_user_data=bootstrap.cloud_init(login),
    )


def slurm_compute_parts(spec: ClusterSpec, slurm: AliSlurm, placement: Placement) -> tuple[Part, ...]:
    switches = _switches(spec, placement)
    parts = compute_parts(
        slurm.layout,
        head_address=HEAD_PLACEHOLDER,
        key_hook=munge_hook(),
        key_hook_env=_hook_env(spec),
        switch=switches[0] if switches else None,
    )
    after_driver = Part(
        "slurm-after-driver",
        files=(
            File("/etc/systemd/system/gpu-cluster-slurm-compute.service.d/10-after-driver.conf", SLURM_AFTER_DRIVER),
        ),
        summary="slurmd registers only in a boot with the GPU driver installed",
    )
    return (after_driver, *parts)
