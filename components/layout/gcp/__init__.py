"""GCP layout: VPCs and NICs (GPUDirect), placement, image, disks, labels and bootstrap for one cluster.

GPU networks follow Google's own blueprints (Cluster Toolkit, research notes gcp-alicloud-gpu.md 1.2):

- a3-highgpu-8g (GPUDirect-TCPX): the host VPC plus 4 GPU VPCs, one subnet and one gVNIC each
  (CT a3high-slurm-blueprint.yaml: `multivpc` with `network_count: 4`).
- a3-megagpu-8g (GPUDirect-TCPXO): the host VPC plus 8 GPU VPCs (CT a3mega-slurm-blueprint.yaml:
  `network_count: 8`; Google's "8+1" NIC arrangement).
- a3-ultragpu-8g, a4-highgpu-8g (GPUDirect-RDMA over RoCE): the host VPC, a second gVNIC VPC, and one
  VPC created with the zone's RDMA network profile `<zone>-vpc-roce` holding 8 subnets, one MRDMA NIC
  on each (CT a3ultra-vm.yaml / a4high-vm.yaml; docs.cloud.google.com/vpc/docs/rdma-network-profiles).
  The RoCE VPC gets no firewall rule: CT's vpc modules refuse firewall rules on a `roce` profile.

The MTU is the catalog row's `extra.mtu` (8244 for A3 High/Mega as CT's system VPC and dstack set it,
8896 for A3 Ultra/A4 as CT's a3ultra/a4high VPCs and `gpu-rdma-vpc` set it).

GPU subnet ranges are derived from `network.cidr` and never overlap it: they come from its *buddy
block*, the other half of the smallest block that contains `network.cidr` and one more block of the
same size (10.42.0.0/16 -> 10.43.0.0/16; 10.43.0.0/16 -> 10.42.0.0/16). The buddy block is split
into 16 equal subnets (4 more prefix bits) and the GPU subnets take them in order: 10.43.0.0/20,
10.43.16.0/20, ... Same input, same ranges; the buddy must itself be private (so 10.0.0.0/8 is refused).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .. import bootstrap, catalog, placeholders
from ..bootstrap import File, Part
from ..bootstrap.fabric import NCCL_ENV, FabricUsability, nccl_env_part
from ..bootstrap.health import RESULT_PATH
from ..bootstrap.mounts import Mount
from ..bootstrap.scratch import scratch_part
from ..bootstrap.slurm import cluster_parts
from ..catalog import kubernetes as kubernetes_offers
from ..catalog.capabilities import capability_data
from ..catalog.slurm import cloud_data
from ..cidr import PRIVATE_RANGES
from ..errors import CLUSTER_KEY, ConfigError, refuse
from ..spec import ClusterSpec
from . import Scratch, arch, image_for, scratch_for
from .gcp_scaling import Elastic
from .gcp_scaling import plan as elastic_plan
from .kubernetes import GPU_TAINT, gpu_labels
from .node import node_parts
from .shared import Shared, shared_for
from .slurm import CloudSlurm, slurm_layout

NicType = Literal["GVNIC", "MRDMA"]
# by-id names Google's guest udev rules give local SSDs (NVMe interface) and a PD with device_name
# "scratch" (research notes 1.1, SkyPilot constants.py; CT vm-instance local SSD defaults)
LOCAL_SSD_GLOBS = ("/dev/disk/by-id/google-local-nvme-ssd-*",)
SCRATCH_DEVICE_NAME = "scratch"
SCRATCH_DISK_GLOBS = (f"/dev/disk/by-id/google-{SCRATCH_DEVICE_NAME}",)
GPU_SUBNET_BITS = 4  # the buddy block is split into 16 subnets; the largest layout needs 9
LABEL_MAX = 63  # cloud.google.com/compute/docs/labeling-resources: keys and values at most 63 characters
LABELS_MAX = 64  # at most 64 labels per resource (same page)
MAX_N1_GPU = {  # SkyPilot gcp_catalog.py _NUM_ACC_TO_MAX_CPU_AND_MEMORY (research notes 1.2): count -> max vCPU
    "T4": {1: 48, 2: 48, 4: 96},
    "V100": {1: 12, 2: 24, 4: 48, 8: 96},
}


@dataclass(frozen=True)
class Subnet:
    role: str  # stable child-name suffix: "nodes", "gpu-0-subnet", "roce-3"
    cidr: str
    secondary: tuple[tuple[str, str], ...] = ()  # (range name, CIDR): GKE's pods and services ranges


@dataclass(frozen=True)
class Vpc:
    role: str  # "host", "gpu-0" .. "gpu-7", "gvnic-1", "roce"
    mtu: int | None
    subnets: tuple[Subnet, ...]
    network_profile: str | None = None  # RDMA profile URL for the RoCE VPC
    internal_firewall: bool = True  # allow all traffic from the VPC's own ranges (never on RoCE)

    @property
    def is_roce(self) -> bool:
        return self.network_profile is not None


@dataclass(frozen=True)
class Nic:
    vpc: str  # Vpc.role
    subnet: str  # Subnet.role
    nic_type: NicType
    gpu: bool  # a GPU NIC: counts toward the fabric Gb/s
    external_ip: bool = False


@dataclass(frozen=True)
class Image:
    project: str | None  # with family: resolved at deploy with compute.get_image
    family: str | None
    ref: str  # what the template would boot without resolution
    description: str


@dataclass(frozen=True)
class Scheduling:
    provisioning_model: Literal["STANDARD", "SPOT", "RESERVATION_BOUND", "FLEX_START"]
    preemptible: bool
    automatic_restart: bool
    on_host_maintenance: Literal["TERMINATE"]
    instance_termination_action: Literal["STOP", "DELETE"] | None
    max_run_seconds: int | None = None  # flex-start only


@dataclass(frozen=True)
class Placement:
    """compact: a COLLOCATED policy on the template; workload: a HIGH_THROUGHPUT policy on the MIG."""

    kind: Literal["compact", "workload"]
    vm_count: int | None  # compact only
    max_vms: int | None  # the cap applied (compact only)
    max_distance: int | None = None  # compact only: gcp.placementMaxDistance


@dataclass(frozen=True)
class NodeIdentity:
    """The service account of the nodes (and login node): created, or an existing one by email."""

    account_id: str | None  # the account to create; None with `existing`
    existing: str | None
    roles: tuple[str, ...]  # granted on the project to a created account (none to an existing one)
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class Login:
    instance_type: str
    public_ip: bool
    image: str  # projects/P/global/images/family/F
    tag: str  # network tag the sshCidrs rule targets


@dataclass(frozen=True)
class Access:
    method: str  # iap | ssh | none (spec.access, resolved)
    iap: bool  # IAP's range on the SSH rule (access: iap, or gcp.iap)
    node_ssh_ranges: tuple[str, ...]  # the `-ssh` rule, on every instance of the host VPC
    login_ssh_ranges: tuple[str, ...]  # the `-login-ssh` rule, on the login node's tag only
    login: Login | None
    user_roles: tuple[str, ...]


NO_FABRIC = FabricUsability(False, ("no fabric wired",))


@dataclass(frozen=True)
class HealthProbe:
    """The MIG's autohealing: an HTTP health check on the node's own health endpoint (catalog rules `healthCheck`)."""

    port: int
    path: str
    check_interval_sec: int
    timeout_sec: int
    healthy_threshold: int
    unhealthy_threshold: int
    initial_delay_sec: int
    source_ranges: tuple[str, ...]  # Google's health-check probers, admitted to `port` only


@dataclass(frozen=True)
class NodeNetwork:
    """One extra network of the GPU pool (`additionalNodeNetworkConfigs`) and its in-cluster objects' name."""

    vpc: str  # Vpc.role
    subnet: str  # Subnet.role
    name: str  # the Network / GKENetworkParamSet the workloads' interface annotations name
    device_mode: Literal["NetDevice", "RDMA"]


@dataclass(frozen=True)
class GkePool:
    """A GKE node pool: the system pool (CPU) or the GPU pool, from the same spec keys as the VMs."""

    name: str
    machine_type: str
    nodes: int
    max_nodes: int  # > nodes: the pool autoscales between the two
    disk_gb: int | None  # None: GKE's default boot disk
    disk_type: str | None
    labels: Mapping[str, str]  # Kubernetes node labels
    taints: tuple[Mapping[str, str], ...]  # in the GKE API's spelling (effect NO_SCHEDULE)
    accelerator: tuple[str, int] | None = None  # (accelerator type, count): GKE installs the driver
    local_ssd_count: int | None = None  # local SSDs behind the pods' ephemeral storage
    spot: bool = False
    reservation: str | None = None
    compact: bool = False  # placementPolicy COMPACT
    networks: tuple[NodeNetwork, ...] = ()


@dataclass(frozen=True)
class Gke:
    """`scheduler: kubernetes` on GCP (catalog/kubernetes/gcp.yaml): what components/gcp/kubernetes.py builds."""

    name: str
    version: str
    release_channel: str
    exclusion: Mapping[str, str]  # exclusionName, startTime, scope, endTimeBehavior
    daily_window: str
    public_endpoint: bool
    authorized_cidrs: tuple[str, ...]  # masterAuthorizedNetworksConfig: publicCidrs, else the host VPC's range
    pods_range: str  # secondary range names on the host subnet ...
    services_range: str
    pods_cidr: str  # ... and their CIDRs
    services_cidr: str
    multi_networking: bool  # extra node networks: multi-networking on GKE Dataplane V2
    monitoring_components: tuple[str, ...]
    image_type: str
    gpu_driver_version: str
    secure_boot: bool
    system: GkePool
    gpu: GkePool
    key_role: str  # granted on the cluster's KMS key to the service agents below
    secrets_agent: str  # "service-{projectNumber}@...": filled in with the project's number at deploy
    disks_agent: str
    daemonsets: tuple[Mapping[str, Any], ...]  # the fabric's NCCL installers (Kubernetes objects, camelCase)
    network_api_version: str
    fabric_source: str  # where the DaemonSets come from (repository@commit)

    @property
    def pools(self) -> tuple[GkePool, ...]:
        return (self.system, self.gpu)


@dataclass(frozen=True)
class GcpSlurm(CloudSlurm):
    """`scheduler: slurm` on GCP: the head VM, the MUNGE secret and the three bootstraps (catalog/slurm.yaml
    `clouds.gcp`)."""

    head_image: str  # projects/P/global/images/family/F (the login node's Ubuntu 22.04)
    secret_id: str  # the Secret Manager secret holding the MUNGE key
    secret_role: str  # granted on that secret to the nodes' service account
    head_script: str  # the head's startup-script (SOURCE_PLACEHOLDER until deploy with storage.shared)
    login_script: str  # HEAD_PLACEHOLDER (and SOURCE_PLACEHOLDER) until deploy
    compute_parts: tuple[Part, ...]  # appended to the GPU nodes' bootstrap; HEAD_PLACEHOLDER until deploy


@dataclass(frozen=True)
class GcpLayout:
    spec: ClusterSpec
    project: str
    zone: str
    vpcs: tuple[Vpc, ...]
    nics: tuple[Nic, ...]
    ssh_source_ranges: tuple[str, ...]
    nat: bool
    placement: Placement | None
    image: Image
    boot_disk_type: str
    root_gb: int
    scratch: Scratch
    scratch_disk_type: str | None
    scheduling: Scheduling
    guest_accelerator: tuple[str, int] | None  # n1 only: (accelerator type, count)
    reservation: str | None
    labels: Mapping[str, str]
    metadata: Mapping[str, str]
    startup_script: str | None
    identity: NodeIdentity
    access: Access
    fabric_usability: FabricUsability = NO_FABRIC
    placement_applied: Literal["cluster", "spread", "none"] = "none"
    health_probe: HealthProbe | None = None  # managed groups with health.action replace
    warnings: tuple[str, ...] = field(default=())
    shared: Shared | None = None  # storage.shared: Managed Lustre on the host VPC, or an existing filesystem
    kubernetes: Gke | None = None  # scheduler kubernetes: the GKE cluster, its pools and in-cluster objects
    slurm: GcpSlurm | None = None  # scheduler slurm: the head node, the MUNGE secret, the Slurm bootstraps
    elastic: Elastic | None = None  # scaling / spot.onDemandBase: the autoscaler and the standard floor group

    @property
    def placement_vm_count(self) -> int | None:
        """vmCount of the compact placement policy, when there is one."""
        return self.placement.vm_count if self.placement and self.placement.kind == "compact" else None

    @property
    def host(self) -> Vpc:
        return self.vpcs[0]

    @property
    def gpu_nic_count(self) -> int:
        return sum(1 for n in self.nics if n.gpu)

    @property
    def fabric_gbps_wired(self) -> float:
        return self.gpu_nic_count * self.spec.instance.gbps_per_fabric_device


# --- labels ---------------------------------------------------------------------------------


def label_key(key: str) -> str:
    """A GCP label key: lowercase letters, digits, '_' and '-', starting with a letter, <= 63 chars."""
    text = re.sub(r"[^a-z0-9_-]", "_", key.lower())
    if not text or not text[0].isalpha() or not text[0].isascii():
        text = "k" + text
    return text[:LABEL_MAX]


def label_value(value: str) -> str:
    """A GCP label value: lowercase letters, digits, '_' and '-' (may be empty), <= 63 chars."""
    return re.sub(r"[^a-z0-9_-]", "_", value.lower())[:LABEL_MAX]


def labels_for(spec: ClusterSpec) -> dict[str, str]:
    """`spec.base_tags` as GCP labels; two user tags that sanitise to one key are an error."""
    owned = {"gpu-cluster:cluster", "gpu-cluster:stack"}
    labels: dict[str, str] = {}
    origin: dict[str, str] = {}
    for key, value in spec.base_tags.items():
        name = label_key(key)
        if name in origin and key not in owned and origin[name] not in owned:
            raise ConfigError(
                f"{CLUSTER_KEY}.tags.{key}",
                f"becomes GCP label {name!r}, as does tag {origin[name]!r} (labels are lowercase "
                "letters, digits, '_' and '-'); rename one of them",
            )
        labels[name] = label_value(value)
        origin[name] = key
    added = [k for k in _capability_data()["labelsAdded"] if k not in labels]
    if len(labels) + len(added) > LABELS_MAX:
        raise ConfigError(
            f"{CLUSTER_KEY}.tags",
            f"{len(labels)} labels, and {len(added)} more on some resources ({', '.join(added)}); GCP allows at most "
            f"{LABELS_MAX} per resource: remove {len(labels) + len(added) - LABELS_MAX} tag(s)",
        )
    return labels


# --- networks -------------------------------------------------------------------------------


def buddy_block(cidr: str) -> ipaddress.IPv4Network:
    """The other half of the block one bit shorter than `cidr` (see the module docstring)."""
    net = ipaddress.IPv4Network(cidr)
    parent = net.supernet(prefixlen_diff=1)
    low, high = parent.subnets(prefixlen_diff=1)
    return high if low == net else low


def gpu_subnet_cidrs(cidr: str, count: int) -> tuple[str, ...]:
    """`count` GPU subnets carved from the buddy block of `cidr`, in order (deterministic)."""
    key = f"{CLUSTER_KEY}.network.cidr"
    net = ipaddress.IPv4Network(cidr)
    if net.prefixlen + GPU_SUBNET_BITS > 29:
        raise ConfigError(
            key,
            f"{cidr} is too small for the GPU networks: they take /{net.prefixlen + GPU_SUBNET_BITS} "
            "subnets of the block beside it, and GCP subnets are at most /29; use /25 or larger",
        )
    buddy = buddy_block(cidr)
    if not any(buddy.subnet_of(r) for r in PRIVATE_RANGES):  # type: ignore[arg-type]
        raise ConfigError(
            key,
            f"{cidr} leaves no private block beside it for the GPU networks (they use the other half of "
            f"{net.supernet(prefixlen_diff=1)}); use a smaller range such as 10.42.0.0/16",
        )
    subnets = buddy.subnets(prefixlen_diff=GPU_SUBNET_BITS)
    return tuple(str(next(subnets)) for _ in range(count))


def gpu_networks(spec: ClusterSpec, zone: str, project: str) -> tuple[tuple[Vpc, ...], tuple[Nic, ...]]:
    """The extra VPCs and NICs a fabric type needs (layouts in the module docstring)."""
    row = spec.instance
    extra = row.extra
    mtu = int(extra["mtu"])
    if row.fabric in ("gpudirect-tcpx", "gpudirect-tcpxo"):
        count = int(extra["gpuNics"])
        ranges = gpu_subnet_cidrs(spec.network.cidr, count)
        vpcs = tuple(Vpc(f"gpu-{i}", mtu, (Subnet(f"gpu-{i}-subnet", ranges[i]),)) for i in range(count))
        nics = tuple(Nic(f"gpu-{i}", f"gpu-{i}-subnet", "GVNIC", gpu=True) for i in range(count))
        return vpcs, nics
    if row.fabric == "gpudirect-rdma":
        count = int(extra["gpuNics"])
        extra_gvnics = int(extra["gvnicCount"]) - 1
        ranges = gpu_subnet_cidrs(spec.network.cidr, extra_gvnics + count)
        gvnic_vpcs = tuple(
            Vpc(f"gvnic-{i + 1}", mtu, (Subnet(f"gvnic-{i + 1}-subnet", ranges[i]),)) for i in range(extra_gvnics)
        )
        roce = Vpc(
            "roce",
            mtu,
            tuple(Subnet(f"roce-{i}", ranges[extra_gvnics + i]) for i in range(count)),
            network_profile=f"projects/{project}/global/networkProfiles/{zone}-vpc-roce",
            internal_firewall=False,
        )
        nics = (
            *(Nic(v.role, v.subnets[0].role, "GVNIC", gpu=False) for v in gvnic_vpcs),
            *(Nic("roce", s.role, "MRDMA", gpu=True) for s in roce.subnets),
        )
        return (*gvnic_vpcs, roce), nics
    raise ValueError(f"{row.instanceType}: fabric {row.fabric} has no GCP network layout")


# --- bootstrap ------------------------------------------------------------------------------

FABRIC_SCRIPT = "/usr/local/sbin/gpu-cluster-gcp-fabric"
FABRIC_ENV = "/etc/gpu-cluster/gcp-fabric.env"
HEALTH_HTTP_SCRIPT = "/usr/local/sbin/gpu-cluster-health-http"

FABRIC_UNIT = """[Unit]
Description=gpu-cluster fabric enablement for NCCL ({kind})
Wants=network-online.target
After=network-online.target nvidia-persistenced.service gpu-cluster-scratch.service

[Service]
Type=oneshot
RemainAfterExit=yes
TimeoutStartSec=1800
Environment=HOME=/root
EnvironmentFile={env}
ExecStart={script}
"""

# slurm-gcp receive-data-path-manager-mega's `docker run` of the RxDM (catalog rules fabricEnablement)
RXDM_UNIT = """[Unit]
Description=GPUDirect-TCPXO receive-datapath manager (RxDM)
Requires=docker.service
After=docker.service

[Service]
Restart=always
RestartSec=10
Environment=HOME=/root
ExecStartPre=-/usr/bin/docker rm -f gpu-cluster-rxdm
ExecStart=/usr/bin/docker run --rm --name gpu-cluster-rxdm --cap-add=NET_ADMIN --network=host --privileged \\
  --gpus all --volume /var/lib/nvidia/lib64:/usr/local/nvidia/lib64 \\
  --volume /dev/dmabuf_import_helper:/dev/dmabuf_import_helper --env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu \\
  {image} --num_hops=2 --num_nics={nics} --uid= --alsologtostderr
ExecStop=/usr/bin/docker stop gpu-cluster-rxdm
"""

# Cluster Toolkit a3mega-slurm-gcsfuse-lssd-blueprint.yaml `aperture_devices.yml` (catalog rules fabricEnablement)
APERTURE_RULE = """ACTION=="add", SUBSYSTEM=="pci", ATTR{vendor}=="0x1ae0", ATTR{device}=="0x0084", TAG+="systemd", \\
    RUN+="/usr/bin/mkdir --mode=0755 -p /dev/aperture_devices", \\
    RUN+="/usr/bin/systemd-mount --type=none --options=bind --collect %S/%p /dev/aperture_devices/%k", \\
    RUN+="/usr/bin/bash -c '/usr/bin/chmod 0666 /dev/aperture_devices/%k/resource*'"
"""

HEALTH_HTTP_UNIT = """[Unit]
Description=gpu-cluster health endpoint for the MIG's autohealing (:{port}{path})
Wants=network-online.target
After=network-online.target

[Service]
Restart=always
RestartSec=5
Environment=HEALTH_PORT={port} HEALTH_PATH={path} HEALTH_RESULT={result}
ExecStart={script}

[Install]
WantedBy=multi-user.target
"""


def _env_file(values: Mapping[str, str]) -> str:
    return "".join(f"{k}={json.dumps(v)}\n" for k, v in values.items())


def _words(value: Any) -> str:
    return " ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _vouched_image(image: Image) -> str | None:
    return f"{image.project}/{image.family}" if image.project and image.family else None


def fabric_enablement(
    spec: ClusterSpec, image: Image, gpu_nics: int, rules: Mapping[str, Any]
) -> tuple[tuple[Part, ...], FabricUsability]:
    """The parts that make the wired fabric usable by NCCL, and whether they do on this image (catalog data)."""
    row = spec.instance
    if not spec.fabric_wired or gpu_nics == 0:
        return (), NO_FABRIC
    data: Mapping[str, Any] | None = rules["fabricEnablement"].get(row.fabric)
    if data is None:
        return (), FabricUsability(False, (f"{row.fabric}: no enablement is known to gpu-cluster",))
    if row.arch != "x86_64":  # the packages and images above are x86_64 ones: the arch's own entry wins
        data = {**data, **(data.get("arch") or {}).get(row.arch, {"missing": [f"{row.fabric} on {row.arch}"]})}
    if "missing" in data:
        return (), FabricUsability(False, tuple(str(m) for m in data["missing"]))
    env = {**data["env"], **data.get("envByType", {}).get(row.instanceType, {})}
    settings: dict[str, str] = {"FABRIC_KIND": row.fabric, "NCCL_ENV": NCCL_ENV}
    files = [File(FABRIC_SCRIPT, bootstrap.script("gcp_fabric.sh"), "0755")]
    keys = {
        "arTransportRepo": "AR_TRANSPORT_REPO",
        "aptRepo": "APT_REPO",
        "packages": "PACKAGES",
        "module": "MODULE",
        "ncclPluginImage": "NCCL_PLUGIN_IMAGE",
        "envProfile": "ENV_PROFILE",
        "containerPackages": "CONTAINER_PACKAGES",
        "signingKeys": "SIGNING_KEYS",
        "hold": "HOLD",
        "libDir": "LIB_DIR",
    }
    settings.update({name: _words(data[key]) for key, name in keys.items() if key in data})
    if row.fabric == "gpudirect-tcpxo":
        files += [
            File("/etc/udev/rules.d/00-a3-megagpu.rules", APERTURE_RULE),
            File(
                "/etc/systemd/system/gpu-cluster-rxdm.service",
                RXDM_UNIT.format(image=data["rxdmImage"], nics=gpu_nics),
            ),
        ]
        provides: tuple[str, ...] = (
            "DMABUF import helper and aperture devices",
            f"TCPXO NCCL plugin ({data['ncclPluginImage'].rsplit('/', 1)[1]})",
            f"receive-datapath manager ({data['rxdmImage'].rsplit('/', 1)[1]})",
            f"NCCL environment in {NCCL_ENV}",
        )
    else:
        files.append(File("/etc/ld.so.conf.d/000_nccl-gib.conf", f"{data['libDir']}\n"))
        provides = (f"gIB NCCL plugin ({' '.join(data['packages'])})", f"NCCL environment in {NCCL_ENV}")
    files += [
        File(FABRIC_ENV, _env_file(settings)),
        File(
            "/etc/systemd/system/gpu-cluster-gcp-fabric.service",
            FABRIC_UNIT.format(kind=row.fabric, env=FABRIC_ENV, script=FABRIC_SCRIPT),
        ),
    ]
    parts = (
        nccl_env_part(env, "catalog/gcp.yaml rules.fabricEnablement"),
        Part(
            "gcp-fabric",
            files=tuple(files),
            # started (not enabled) by the startup script at every boot, after it has rewritten nccl.env
            commands=(
                ("systemctl", "daemon-reload"),
                ("systemctl", "restart", "--no-block", "gpu-cluster-gcp-fabric.service"),
            ),
            summary=f"enables {row.fabric} for NCCL: {', '.join(provides[:-1])}.",
        ),
    )
    vouched = _vouched_image(image)
    if vouched not in data["images"]:
        return parts, FabricUsability(
            False,
            (
                f"image {image.ref}: the catalog cannot vouch that the {row.fabric} enablement works on it "
                f"(sourced on {', '.join(data['images'])}; image: auto uses it)",
            ),
        )
    return parts, FabricUsability(True, (), provides)


def health_probe(spec: ClusterSpec, rules: Mapping[str, Any]) -> HealthProbe | None:
    """MIG autohealing on the node's health result: managed groups with health.action replace."""
    if spec.node_group != "managed" or spec.health_action != "replace":
        return None
    hc = rules["healthCheck"]
    return HealthProbe(
        port=int(hc["port"]),
        path=str(hc["path"]),
        check_interval_sec=int(hc["checkIntervalSec"]),
        timeout_sec=int(hc["timeoutSec"]),
        healthy_threshold=int(hc["healthyThreshold"]),
        unhealthy_threshold=int(hc["unhealthyThreshold"]),
        initial_delay_sec=int(hc["initialDelaySec"]),
        source_ranges=tuple(hc["sourceRanges"]),
    )


def health_http_part(probe: HealthProbe | None) -> Part:
    if probe is None:
        return Part("health-http")
    unit = HEALTH_HTTP_UNIT.format(port=probe.port, path=probe.path, result=RESULT_PATH, script=HEALTH_HTTP_SCRIPT)
    return Part(
        "health-http",
        files=(
            File(HEALTH_HTTP_SCRIPT, bootstrap.script("gcp_health_http.sh"), "0755"),
            File("/etc/systemd/system/gpu-cluster-health-http.service", unit),
        ),
        commands=(
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "--no-block", "gpu-cluster-health-http.service"),
        ),
        summary=f"serves the health result on :{probe.port}{probe.path} for the MIG's autohealing.",
    )


def node_bootstrap(
    spec: ClusterSpec,
    scratch: Scratch,
    fabric: Sequence[Part],
    gpu_nics: int,
    probe: HealthProbe | None,
    mounts: Mount | None = None,
) -> tuple[Part, ...]:
    """Scratch, fabric enablement, MIG, health check (+ its endpoint for autohealing), metrics."""
    nvme_globs = scratch.device_globs if scratch.kind == "nvme" else ()
    parts = node_parts(
        spec,
        scratch,
        fabric_devices=gpu_nics if spec.fabric_wired else 0,
        nvme_globs=nvme_globs,
        fabric=fabric,
        # only a MIG can replace a node (autohealing); standalone instances report (health.sh logs it)
        unhealthy_hook=bootstrap.script("gcp_unhealthy.sh") if probe is not None else None,
        mounts=mounts,
    )
    return (*parts, health_http_part(probe))


def startup_script(parts: Sequence[Part] | Scratch) -> str | None:
    """The `startup-script` metadata: the same bootstrap parts the other clouds get as cloud-init.

    A `Scratch` alone renders the scratch part only (the form callers outside the layout used before).

    Compute Engine's guest agent runs `startup-script` on every boot on all public images
    (docs.cloud.google.com/compute/docs/instances/startup-scripts), whether or not the image runs
    cloud-init, so one bootstrap works on Deep Learning VM and Ubuntu accelerator images alike.
    """
    if isinstance(parts, Scratch):
        parts = (scratch_part(parts),)
    header = [
        "gpu-cluster node bootstrap (GCP startup-script, runs at every boot; idempotent):",
        *(p.summary for p in parts if p.summary and not p.empty),
    ]
    return bootstrap.startup_script(parts, header)


# --- Kubernetes (GKE) -----------------------------------------------------------------------
# scheduler: kubernetes builds a GKE Standard cluster on the same VPCs: the host subnet carries the pods and
# services ranges, the GPU pool takes the GPU VPCs the VM layout builds as extra node networks, and the
# fabric's NCCL plugin comes from Google's DaemonSets (data: catalog/kubernetes/gcp.yaml, sources there).

GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"  # set by GKE on GPU nodes; Google's DaemonSets select on it


def _gke_data() -> dict[str, Any]:
    offer = kubernetes_offers.offer("gcp")
    if offer is None:  # packaging mistake: the capabilities offer kubernetes on gcp
        raise ValueError("catalog/kubernetes/gcp.yaml is missing")
    return offer.extra


def pod_ranges(spec: ClusterSpec, data: Mapping[str, Any]) -> tuple[str, str]:
    """(pods, services) CIDRs: slots of the buddy block beside the GPU subnets (catalog podRanges)."""
    gpu_subnet_cidrs(spec.network.cidr, 0)  # the same size and privacy checks as the GPU subnets
    ranges = data["podRanges"]
    buddy = buddy_block(spec.network.cidr)
    slots = list(buddy.subnets(prefixlen_diff=GPU_SUBNET_BITS))
    first, count = ranges["podsSlots"]
    (pods,) = ipaddress.collapse_addresses(slots[first : first + count])
    services = slots[int(ranges["servicesSlot"])]
    per_node = int(ranges["addressesPerNode"])
    assert spec.kubernetes is not None
    most = spec.kubernetes.system_nodes + spec.max_nodes
    if pods.num_addresses // per_node < most:
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves pods the range {pods}: {pods.num_addresses // per_node} nodes of "
            f"{per_node} addresses (110 pods each), but the cluster may have {most} "
            f"({spec.kubernetes.system_nodes} system + {spec.max_nodes} GPU); use a larger network.cidr "
            "(one bit shorter doubles it)",
        )
    return str(pods), str(services)


def node_networks(spec: ClusterSpec, nics: Sequence[Nic], data: Mapping[str, Any]) -> tuple[NodeNetwork, ...]:
    """The GPU pool's extra node networks: every NIC after nic0, named as Google's workloads expect."""
    extra = [n for n in nics[1:]]
    if not extra:
        return ()
    names = data["networkObjects"]["names"][spec.instance.fabric]
    out: list[NodeNetwork] = []
    gvnic = rdma = 0
    for nic in extra:
        if nic.nic_type == "MRDMA":
            out.append(NodeNetwork(nic.vpc, nic.subnet, f"{names['rdmaPrefix']}{names['rdmaStart'] + rdma}", "RDMA"))
            rdma += 1
        else:
            out.append(
                NodeNetwork(nic.vpc, nic.subnet, f"{names['gvnicPrefix']}{names['gvnicStart'] + gvnic}", "NetDevice")
            )
            gvnic += 1
    return tuple(out)


def _container(name: str, image: str, entry: Mapping[str, Any], fw: Mapping[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        "resources": {"requests": {"cpu": fw["cpuRequest"]}},
        "securityContext": {"privileged": True},
    }
    mounts = entry.get("mounts") or {}
    if mounts:
        container["volumeMounts"] = [{"name": k, "mountPath": v} for k, v in mounts.items()]
    return container


def fabric_daemonsets(spec: ClusterSpec, data: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """Google's NCCL plugin DaemonSets for the fabric (catalog fabricWorkloads), on this type's GPU nodes only."""
    fw = data["fabricWorkloads"]
    if not spec.fabric_wired:
        return ()
    accelerator = str(spec.instance.extra["acceleratorType"])
    out = []
    for name in fw["byFabric"].get(spec.instance.fabric) or []:
        entry = fw["daemonSets"][name]
        create = set(entry.get("createHostDirs") or [])
        volumes = [
            {"name": k, "hostPath": {"path": v, **({"type": "DirectoryOrCreate"} if k in create else {})}}
            for k, v in (entry.get("volumes") or {}).items()
        ]
        term = {"matchExpressions": [{"key": GKE_ACCELERATOR_LABEL, "operator": "In", "values": [accelerator]}]}
        pod: dict[str, Any] = {
            "priorityClassName": fw["priorityClassName"],
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
            },
            "tolerations": [{"operator": "Exists"}],  # as upstream: the GPU taint and any other
            "hostNetwork": True,
            "hostPID": True,
            "volumes": volumes,
        }
        if entry.get("daemon"):
            pod["containers"] = [_container(name, entry["image"], entry, fw)]
        else:
            init = []
            setup = entry.get("hostSetup")
            if setup:
                init.append(
                    {
                        "name": "pre-installation",
                        "image": setup["image"],
                        "securityContext": {"privileged": True},
                        "command": ["nsenter", "-at", "1", "--", "sh", "-c"],
                        "args": [setup["script"]],
                    }
                )
            installer = _container(name, entry["image"], entry, fw)
            installer.update({"command": ["/bin/sh", "-c"], "args": [entry["script"]]})
            init.append(installer)
            pod["initContainers"] = init
            pod["containers"] = [{"name": "pause", "image": fw["pause"]}]  # keeps the pod: the install is done once
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": fw["namespace"], "labels": {"k8s-app": name}},
                "spec": {
                    "selector": {"matchLabels": {"k8s-app": name}},
                    "updateStrategy": {"type": "RollingUpdate"},
                    "template": {"metadata": {"labels": {"name": name, "k8s-app": name}}, "spec": pod},
                },
            }
        )
    return tuple(out)


def gke_fabric_usability(
    spec: ClusterSpec, daemonsets: Sequence[Mapping[str, Any]], data: Mapping[str, Any]
) -> FabricUsability:
    """On GKE the DaemonSets give every GPU node the NCCL plugin; the pods add Google's per-workload parts."""
    if not spec.fabric_wired:
        return NO_FABRIC
    if not daemonsets:
        return FabricUsability(False, (f"{spec.instance.fabric}: no GKE NCCL plugin is known to gpu-cluster",))
    fw = data["fabricWorkloads"]
    images = [
        c["image"].rsplit("/", 1)[1].split("@")[0]
        for ds in daemonsets
        for c in (
            *ds["spec"]["template"]["spec"].get("initContainers", []),
            *ds["spec"]["template"]["spec"]["containers"],
        )
        if c["name"] not in ("pause", "pre-installation")
    ]
    return FabricUsability(
        True,
        (),
        (
            f"GKE DaemonSets {', '.join(str(d['metadata']['name']) for d in daemonsets)} ({', '.join(images)})",
            f"workloads add {fw['workloadParts'][spec.instance.fabric]} (docs/gcp.md)",
        ),
    )


def _gke_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    assert spec.kubernetes is not None
    if spec.network.existing is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.network.existing",
            "set with scheduler kubernetes: GKE needs pods and services ranges on the nodes' subnet, which "
            "gpu-cluster adds only to a VPC it creates; remove network.existing",
        )
    if spec.storage.shared is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.storage.shared",
            "set with scheduler kubernetes on gcp: the node bootstrap that mounts it does not run on GKE nodes "
            "and no PersistentVolume for GKE's CSI drivers is built; remove storage.shared",
        )
    if spec.kubernetes.service_monitor:
        yield ConfigError(
            f"{CLUSTER_KEY}.kubernetes.serviceMonitor",
            "true on gcp: GKE exports the GPU metrics itself (managed DCGM metrics into Managed Service for "
            "Prometheus) and no exporter chart runs for a ServiceMonitor to watch; set it false",
        )


def gke_layout(spec: ClusterSpec, nics: Sequence[Nic], placement: bool, warnings: list[str]) -> Gke:
    """The GKE cluster of `scheduler: kubernetes` (catalog/kubernetes/gcp.yaml)."""
    kube = spec.kubernetes
    assert kube is not None
    refuse(_gke_problems(spec))
    data = _gke_data()
    hold, nodes_data = data["versionHold"], data["nodes"]
    pods, services = pod_ranges(spec, data)
    effects: Mapping[str, str] = nodes_data["taintEffects"]
    row = spec.instance
    local_ssd = row.localNvmeCount if spec.scratch == "nvme" and row.localNvmeCount else None
    if spec.scratch == "disk":
        warnings.append(
            f"{CLUSTER_KEY}.storage.scratch: GKE nodes take no extra data disk; pods use ephemeral storage on the "
            f"boot disk ({spec.storage.root_gb} GB, storage.rootGb)"
        )
    gpu_pool = GkePool(
        name="gpu",
        machine_type=row.instanceType,
        nodes=spec.nodes,
        max_nodes=spec.max_nodes,
        disk_gb=spec.storage.root_gb,
        disk_type=_disk_type(row.instanceType, catalog.load("gcp").rules),
        labels=gpu_labels(spec),
        taints=({**GPU_TAINT, "effect": effects[GPU_TAINT["effect"]]},),
        accelerator=(str(row.extra["acceleratorType"]), row.gpus),
        local_ssd_count=local_ssd,
        spot=spec.spot,
        reservation=spec.reservation or None,
        compact=placement,
        networks=node_networks(spec, nics, data),
    )
    system = GkePool(
        name="system",
        machine_type=kube.system_instance_type,
        nodes=kube.system_nodes,
        max_nodes=kube.system_nodes,
        disk_gb=None,
        disk_type=None,
        labels={},
        taints=(),
    )
    monitoring = tuple(data["monitoring"]["components"])
    if spec.dcgm_exporter:
        monitoring += (str(data["monitoring"]["dcgmComponent"]),)
    enc = data["encryption"]
    return Gke(
        name=spec.name,
        version=kube.version,
        release_channel=str(hold["releaseChannel"]),
        exclusion={k: str(hold[k]) for k in ("exclusionName", "startTime", "scope", "endTimeBehavior")},
        daily_window=str(hold["dailyWindowStart"]),
        public_endpoint=kube.public_endpoint,
        authorized_cidrs=kube.public_cidrs if kube.public_endpoint else (spec.network.cidr,),
        pods_range=str(data["podRanges"]["podsName"]),
        services_range=str(data["podRanges"]["servicesName"]),
        pods_cidr=pods,
        services_cidr=services,
        multi_networking=bool(gpu_pool.networks),
        monitoring_components=monitoring,
        image_type=str(nodes_data["imageType"]),
        gpu_driver_version=str(nodes_data["gpuDriverVersion"]),
        secure_boot=bool(nodes_data["secureBoot"]),
        system=system,
        gpu=gpu_pool,
        key_role=str(enc["keyRole"]),
        secrets_agent=str(enc["secretsAgent"]),
        disks_agent=str(enc["disksAgent"]),
        daemonsets=fabric_daemonsets(spec, data),
        network_api_version=str(data["networkObjects"]["apiVersion"]),
        fabric_source=str(data["fabricWorkloads"]["source"]),
    )


# --- Slurm ----------------------------------------------------------------------------------
# scheduler: slurm on GCP (components/layout/slurm.py is the cloud-neutral layer): the head is a private VM in the
# host subnet on the nodes' service account, which may read exactly the cluster's MUNGE secret. The host VPC's
# internal rule already admits every port between the head, the GPU nodes and the login node (all in the host
# subnet), and nothing from outside: no Slurm firewall rule of its own.

MUNGE_KEY_HOOK = "gcp_munge_key.sh"


def _slurm_data() -> dict[str, Any]:
    return cloud_data("gcp")


def munge_secret_id(spec: ClusterSpec) -> str:
    """One secret per stack and cluster in the project: letters, digits, '-' and '_' (catalog/slurm.yaml clouds.gcp)."""
    text = re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.stack}-{spec.name}-munge-key")
    return text[: int(_slurm_data()["secret"]["idMaxLength"])]


def slurm_plan(spec: ClusterSpec, project: str, mount: Mount | None) -> GcpSlurm | None:
    """None unless scheduler slurm. `mount`: storage.shared's (the head and the login node mount it too)."""
    layout = slurm_layout(spec)
    if layout is None:
        return None
    assert spec.slurm is not None and spec.slurm.head_instance_type is not None
    data = _slurm_data()
    secret_id = munge_secret_id(spec)
    hook = bootstrap.script(MUNGE_KEY_HOOK)
    hook_env = {
        "MUNGE_SECRET": f"projects/{project}/secrets/{secret_id}",
        "METADATA_TOKEN_URL": str(data["hook"]["tokenUrl"]),
        "SECRET_MANAGER_URL": str(data["hook"]["apiUrl"]),
    }
    entry = catalog.cpu_image("gcp", spec.slurm.head_instance_type)  # images.login of the head's architecture
    head, login, compute = cluster_parts(layout, key_hook=hook, key_hook_env=hook_env, mount=mount)
    head_script, login_script = startup_script(head), startup_script(login)
    assert head_script is not None and login_script is not None
    return GcpSlurm(
        layout=layout,
        head_instance_type=spec.slurm.head_instance_type,
        head_image=f"projects/{entry['project']}/global/images/family/{entry['family']}",
        secret_id=secret_id,
        secret_role=str(data["secret"]["accessorRole"]),
        head_script=head_script,
        login_script=login_script,
        compute_parts=compute,
    )


# --- the plan -------------------------------------------------------------------------------


def _zone(spec: ClusterSpec) -> str:
    if not spec.zone:
        raise ConfigError(
            f"{CLUSTER_KEY}.zone",
            "required on gcp: GPU machine types, compact placement and RoCE network profiles are zonal; "
            f"set it (or gcp:zone) to a zone of {spec.region} that offers {spec.instance.instanceType}, "
            f"for example {spec.region}-a",
        )
    return spec.zone


def _image(spec: ClusterSpec) -> Image:
    if spec.image == "auto":
        # a Grace (arm64) type takes its architecture's image (catalog/gcp.yaml images.arch), never an x86_64 one
        entry: dict[str, Any] = catalog.arch_image("gcp", spec.instance) or image_for("gcp", spec.instance.instanceType)
        if not entry.get("family"):
            raise ConfigError(
                f"{CLUSTER_KEY}.image",
                f"auto has no image for {spec.instance.instanceType} ({spec.instance.arch}): {entry['reason']}",
            )
        ref = f"projects/{entry['project']}/global/images/family/{entry['family']}"
        return Image(entry["project"], entry["family"], ref, entry["description"])
    match = re.fullmatch(r"projects/([a-z0-9-]+)/global/images/family/([a-z0-9-]+)", spec.image)
    if match:
        return Image(match.group(1), match.group(2), spec.image, f"latest image of family {spec.image}")
    return Image(None, None, spec.image, f"image {spec.image} as configured")


def _disk_type(instance_type: str, rules: Mapping[str, Any]) -> str:
    table: dict[str, str] = rules["diskTypes"]
    match = max((p for p in table if p != "default" and instance_type.startswith(p)), key=len, default="default")
    return table[match]


def _check_n1(spec: ClusterSpec) -> tuple[str, int] | None:
    row = spec.instance
    if not row.extra.get("guestAccelerator"):
        return None
    limits = MAX_N1_GPU.get(row.gpu or "")
    if limits is None or row.gpus not in limits:
        allowed = ", ".join(str(c) for c in sorted(limits or {}))
        raise ConfigError(
            f"{CLUSTER_KEY}.gpu", f"{row.gpus} x {row.gpu} cannot attach to n1; counts allowed: {allowed or 'none'}"
        )
    if row.vcpus is not None and row.vcpus > limits[row.gpus]:
        raise ConfigError(
            f"{CLUSTER_KEY}.instanceType",
            f"{row.instanceType} has {row.vcpus} vCPUs; "
            f"n1 with {row.gpus} x {row.gpu} allows at most {limits[row.gpus]}",
        )
    return str(row.extra["acceleratorType"]), row.gpus


def _by_prefix(table: Mapping[Any, Any], instance_type: str) -> Any:
    """The entry of the longest key that prefixes `instance_type`, else `default`."""
    match = max((p for p in table if p != "default" and instance_type.startswith(p)), key=len, default="default")
    return table[match]


def compact_cap(rules: Mapping[str, Any], instance_type: str, max_distance: int | None) -> int:
    """VMs one compact placement policy may hold, for a type and a maxDistance (None: not set)."""
    table: Mapping[Any, Any] = rules["compactPlacementMaxVms"]
    row = table["none" if max_distance is None else max_distance]
    return int(_by_prefix(row, instance_type))


def _placement(spec: ClusterSpec, rules: Mapping[str, Any]) -> Placement | None:
    """The placement policy, or None. Kinds, limits and sources in docs/gcp.md and catalog/gcp.yaml."""
    if spec.placement != "cluster":
        return None
    itype = spec.instance.instanceType
    if spec.node_group == "managed" and itype in rules["workloadPolicyTypes"]:
        # A workload policy has no VM count: the group may be resized within it.
        return Placement("workload", None, None) if spec.max_nodes >= 2 else None
    max_distance = spec.gcp.placement_max_distance
    limit = compact_cap(rules, itype, max_distance)
    distance = "no maxDistance" if max_distance is None else f"maxDistance {max_distance}"
    if spec.max_nodes > limit:
        key = "nodes" if spec.max_nodes == spec.nodes else "maxNodes"
        raise ConfigError(
            f"{CLUSTER_KEY}.{key}",
            f"{spec.max_nodes} nodes in one compact placement policy; {itype} with {distance} allows at most "
            f"{limit} (Cluster Toolkit slurm-gcp limits, catalog/gcp.yaml); use several clusters or placement: none",
        )
    if spec.node_group == "managed" and spec.max_nodes != spec.nodes:
        raise ConfigError(
            f"{CLUSTER_KEY}.maxNodes",
            f"{spec.max_nodes} with nodes {spec.nodes}: a COLLOCATED placement policy fixes its VM count "
            "(vmCount) and all of them are created together; set maxNodes equal to nodes, or placement: none",
        )
    if spec.nodes < 2:
        return None  # one VM has no neighbour to be placed close to
    return Placement("compact", spec.nodes, limit, max_distance)


def _consumption(spec: ClusterSpec, rules: Mapping[str, Any]) -> Scheduling:
    """Provisioning model and its scheduling fields (rules `consumption:` in catalog/gcp.yaml)."""
    data: Mapping[str, Any] = rules["consumption"]
    itype = spec.instance.instanceType
    key = f"{CLUSTER_KEY}.gcp.flexStart"
    no_on_demand = any(itype.startswith(p) for p in data["noOnDemand"])
    flex_ok = any(itype.startswith(p) for p in data["flexStart"])
    if spec.gcp.flex_start:
        if spec.spot or spec.reservation:
            raise ConfigError(key, f"true with {'spot' if spec.spot else 'a reservation'}: they are exclusive; set one")
        if not flex_ok:
            raise ConfigError(
                key,
                f"{itype} cannot be a flex-start VM; flex-start takes accelerator-optimized types "
                f"{', '.join(p.rstrip('-') for p in data['flexStart'])} only "
                "(catalog/gcp.yaml rules.consumption.flexStart)",
            )
        if spec.node_group == "managed":
            raise ConfigError(
                key,
                "true with nodeGroup: managed: flex-start VMs join a MIG only through resize requests, which "
                "gpu-cluster does not build; use nodeGroup: instances",
            )
        return Scheduling("FLEX_START", False, False, "TERMINATE", "DELETE", int(data["flexStartMaxRunSeconds"]))
    reservation_only = any(itype.startswith(p) for p in data.get("noSpot", ()))
    if spec.spot:  # a type not sold as spot (rules.consumption.noSpot) is refused by the spec (catalog/spot.py)
        return Scheduling("SPOT", True, False, "TERMINATE", "STOP")
    if no_on_demand:
        if not spec.reservation:
            others = "" if reservation_only else ", spot: true, or gcp.flexStart: true with nodeGroup: instances"
            raise ConfigError(
                f"{CLUSTER_KEY}.instanceType",
                f"{itype} is not sold on demand; set reservation (reservation-bound){others}",
            )
        return Scheduling("RESERVATION_BOUND", False, True, "TERMINATE", None)
    return Scheduling("STANDARD", False, True, "TERMINATE", None)


def _capability_data() -> dict[str, Any]:
    """The GCP capabilities file, for the keys only this layout reads (identity roles, user roles)."""
    return capability_data("gcp")


def account_id(cluster: str) -> str:
    """A service-account id for the cluster within GCP's 6-30 character rule, stable per name."""
    low, high = _capability_data()["identity"]["accountIdLength"]
    suffix = "-nodes"
    text = f"{cluster}{suffix}"
    if len(text) > high:  # keep it unique per name with a short hash of the whole name
        digest = hashlib.sha256(cluster.encode()).hexdigest()[:4]
        text = f"{cluster[: high - len(suffix) - 5].rstrip('-')}-{digest}{suffix}"
    return text.ljust(low, "0") if len(text) < low else text


def _identity(spec: ClusterSpec) -> NodeIdentity:
    ident = _capability_data()["identity"]
    scopes = tuple(ident["scopes"])
    if spec.identity.existing:
        return NodeIdentity(None, spec.identity.existing, tuple(spec.identity.policies), scopes)
    roles = list(ident["roles"])
    if spec.identity.read_storage:
        roles.append(ident["readStorageRole"])
    if spec.scheduler == "kubernetes":  # what GKE nodes also report (catalog/kubernetes/gcp.yaml nodes.roles)
        roles += [r for r in _gke_data()["nodes"]["roles"] if r not in roles]
    roles += [r for r in spec.identity.policies if r not in roles]
    return NodeIdentity(account_id(spec.name), None, tuple(roles), scopes)


def _access(spec: ClusterSpec, rules: Mapping[str, Any], warnings: list[str]) -> Access:
    """The SSH rules and the login node. Without a login node sshCidrs stay on the nodes, as before."""
    iap = spec.access == "iap" or spec.gcp.iap
    iap_ranges = (str(rules["iapRange"]),) if iap else ()
    cidrs = tuple(spec.network.ssh_cidrs)
    user_roles = tuple(_capability_data()["access"]["userRoles"])
    if spec.login is None:
        return Access(spec.access, iap, tuple(sorted({*cidrs, *iap_ranges})), (), None, user_roles)
    entry = catalog.cpu_image("gcp", str(spec.login.instance_type))  # images.login of the login type's architecture
    login = Login(
        instance_type=str(spec.login.instance_type),
        public_ip=spec.login.public_ip,
        image=f"projects/{entry['project']}/global/images/family/{entry['family']}",
        tag=f"{spec.name}-login",
    )
    if spec.network.public_ip:
        warnings.append(
            f"{CLUSTER_KEY}.network.publicIp: a login node exists, so the nodes get no public IP; "
            "set login.publicIp to reach the login node from sshCidrs"
        )
    return Access(spec.access, iap, iap_ranges, cidrs, login, user_roles)


def _check_existing_subnetworks(spec: ClusterSpec, nics: tuple[Nic, ...]) -> None:
    """`network.existing.subnetIds`: one subnetwork per NIC, in NIC order (the GPU VPCs' too)."""
    existing = spec.network.existing
    if existing is None or len(existing.subnet_ids) == len(nics):
        return
    gpu = len(nics) - 1
    why = f" and {gpu} for the GPU NICs ({spec.instance.fabric}), each in its own GPU VPC" if gpu else ""
    raise ConfigError(
        f"{CLUSTER_KEY}.network.existing.subnetIds",
        f"{len(existing.subnet_ids)} subnetworks; {spec.instance.instanceType} has {len(nics)} NICs: give one "
        f"subnetwork per NIC in this order: the host subnetwork{why} ({', '.join(n.subnet for n in nics)})",
    )


def plan(spec: ClusterSpec) -> GcpLayout:
    arch.check(spec)
    row = spec.instance
    rules = catalog.load("gcp").rules
    zone = _zone(spec)
    project = spec.gcp_project or ""
    warnings: list[str] = []

    mtu = int(row.extra["mtu"]) if "mtu" in row.extra else None
    host = Vpc("host", mtu, (Subnet("nodes", spec.network.cidr),))
    vpcs: tuple[Vpc, ...] = (host,)
    nics: tuple[Nic, ...] = (Nic("host", "nodes", "GVNIC", gpu=False, external_ip=spec.network.public_ip),)
    if spec.fabric_wired:
        extra_vpcs, extra_nics = gpu_networks(spec, zone, project)
        vpcs, nics = (*vpcs, *extra_vpcs), (*nics, *extra_nics)
    _check_existing_subnetworks(spec, nics)

    guest = _check_n1(spec)
    k8s = spec.scheduler == "kubernetes"
    if k8s and spec.gcp.flex_start:  # before _consumption, whose advice (nodeGroup: instances) is VM mode's
        raise ConfigError(
            f"{CLUSTER_KEY}.gcp.flexStart",
            "true with scheduler kubernetes: GKE's flex-start node pools are not built; drop gcp.flexStart",
        )
    if k8s and spec.gcp.placement_max_distance is not None:
        warnings.append(
            f"{CLUSTER_KEY}.gcp.placementMaxDistance: GKE's COMPACT placement policy takes no maxDistance "
            "(pulumi-gcp NodePoolPlacementPolicyArgs: type, policy_name, tpu_topology); ignored"
        )
    scheduling = _consumption(spec, rules)
    # GKE places the GPU pool itself (placementPolicy COMPACT): no resource policy of ours
    placement = None if k8s else _placement(spec, rules)
    if placement is not None and placement.kind == "compact":
        # Cluster Toolkit vm-instance main.tf: automatic_restart false whenever a COLLOCATED policy is set.
        scheduling = replace(scheduling, automatic_restart=False)
    access = _access(spec, rules, warnings)
    if access.login is not None:
        nics = tuple(replace(n, external_ip=False) for n in nics)
    no_on_demand = any(row.instanceType.startswith(p) for p in rules["consumption"]["noOnDemand"])
    elastic = None if k8s else elastic_plan(spec, no_on_demand)
    if elastic is not None:
        warnings.extend(elastic.warnings)
    if spec.node_group == "managed" and spec.max_nodes > spec.nodes and not k8s and spec.scaling is None:
        warnings.append(
            f"{CLUSTER_KEY}.maxNodes: the managed instance group starts at {spec.nodes} nodes and has no "
            f"autoscaler (GPU training has no useful CPU signal); resize it up to {spec.max_nodes} yourself"
        )
    if spec.ssh_public_key:
        warnings.append(
            f"{CLUSTER_KEY}.sshPublicKey: OS Login is enabled, so instance-metadata SSH keys are ignored; add the "
            "key to your OS Login profile (gcloud compute os-login ssh-keys add) instead"
        )
    image = _image(spec)
    gpu_nics = sum(1 for n in nics if n.gpu)
    fabric, usability = fabric_enablement(spec, image, gpu_nics, rules) if not k8s else ((), NO_FABRIC)
    if spec.fabric_wired and gpu_nics and not usability.usable and not k8s:
        warnings.append(
            f"{row.instanceType}: the GPU NICs are wired, but {row.fabric} is {usability.describe()}; see docs/gcp.md"
        )
    if spec.node_group == "instances" and spec.health_action == "replace":
        warnings.append(
            f"{CLUSTER_KEY}.health.action: replace with nodeGroup: instances: GCP replaces only members of a managed "
            "instance group (autohealing); an unhealthy standalone node is reported (health.json, journal), "
            "not replaced"
        )

    scratch = scratch_for(spec, LOCAL_SSD_GLOBS, SCRATCH_DISK_GLOBS)
    disk_type = _disk_type(row.instanceType, rules)
    probe = health_probe(spec, rules) if not k8s else None  # GKE repairs its nodes (management.autoRepair)
    shared = shared_for(spec)
    gke: Gke | None = None
    if k8s:
        gke = gke_layout(spec, nics, spec.placement == "cluster" and spec.max_nodes >= 2, warnings)
        usability = gke_fabric_usability(spec, gke.daemonsets, _gke_data())
        host = replace(
            host,
            subnets=(
                replace(
                    host.subnets[0],
                    secondary=((gke.pods_range, gke.pods_cidr), (gke.services_range, gke.services_cidr)),
                ),
            ),
        )
        vpcs = (host, *vpcs[1:])
        # GKE builds the local SSDs' RAID-0 for the pods' ephemeral storage; no extra data disk on GKE nodes
        scratch = (
            replace(scratch, path="the pods' ephemeral storage (GKE)", device_globs=())
            if scratch.kind == "nvme"
            else Scratch("none", spec.storage.scratch_path, 0, None, ())
        )
    slurm = slurm_plan(spec, project, shared.mount if shared else None)
    parts = () if k8s else node_bootstrap(spec, scratch, fabric, gpu_nics, probe, shared.mount if shared else None)
    if slurm is not None:  # after the health part: the HealthCheckProgram runs the same check
        parts = (*parts, *slurm.compute_parts)
    if elastic is not None:
        parts = (*parts, *elastic.parts)
    # GKE reserves the startup-script and user-data metadata keys of its nodes: no node bootstrap there
    script = None if k8s else startup_script(parts)
    metadata = {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"}
    if script:
        metadata["startup-script"] = script
    return GcpLayout(
        spec=spec,
        project=project,
        zone=zone,
        vpcs=vpcs,
        nics=nics,
        ssh_source_ranges=access.node_ssh_ranges,
        nat=spec.network.egress == "nat" and spec.network.existing is None,
        placement=placement,
        image=image,
        boot_disk_type=disk_type,
        root_gb=spec.storage.root_gb,
        scratch=scratch,
        scratch_disk_type=disk_type if scratch.kind == "disk" else None,
        scheduling=scheduling,
        guest_accelerator=guest,
        reservation=spec.reservation or None,
        labels=labels_for(spec),
        metadata=metadata,
        startup_script=script,
        identity=_identity(spec),
        access=access,
        fabric_usability=usability,
        placement_applied="cluster" if placement is not None or (gke is not None and gke.gpu.compact) else "none",
        health_probe=probe,
        warnings=tuple(warnings),
        shared=shared,
        kubernetes=gke,
        slurm=slurm,
        elastic=elastic,
    )


_NETWORK_TYPE = "gcp:compute/network:Network"
_NODE_POOL_TYPE = "gcp:container/nodePool:NodePool"
_TEMPLATE_TYPES = (
    "gcp:compute/instanceTemplate:InstanceTemplate",
    "gcp:compute/instance:Instance",
    "gcp:compute/instanceFromTemplate:InstanceFromTemplate",
)


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from the recorded templates/instances (the plan's proof).

    GPU NICs are the MRDMA NICs when there are any (A3 Ultra, A4: the second gVNIC carries no GPU
    traffic); otherwise every NIC after the first (A3 High/Mega: nic0 is the host NIC, nic1.. the
    GPU NICs). A template wired with one GPU NIC counts as one device.

    A GKE node pool counts its own extra node networks (`networkConfig.additionalNodeNetworkConfigs`)
    the same way: the ones on a RoCE network (a recorded network with a `networkProfile`) when there
    are any, else all of them.
    """
    wired = 0
    roce = {r["name"] for r in resources if r["type"] == _NETWORK_TYPE and r["inputs"].get("networkProfile")}
    for res in resources:
        if res["type"] == _NODE_POOL_TYPE:
            extra = (res["inputs"].get("networkConfig") or {}).get("additionalNodeNetworkConfigs") or []
            rdma = sum(1 for n in extra if roce & set(placeholders.referenced(str(n.get("network") or ""))))
            wired = max(wired, rdma if rdma else len(extra))
            continue
        if res["type"] not in _TEMPLATE_TYPES:
            continue
        nics = res["inputs"].get("networkInterfaces") or []
        mrdma = sum(1 for n in nics if n.get("nicType") == "MRDMA")
        wired = max(wired, mrdma if mrdma else max(len(nics) - 1, 0))
    return wired * gbps_per_device
