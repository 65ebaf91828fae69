"""Azure layout: network, NSG rules, placement, InfiniBand scope, image, disks and bootstrap for one cluster.

How InfiniBand is obtained on Azure (MicrosoftDocs azure-compute-docs `virtual-machines/setup-infiniband.md`,
research notes aws-azure-gpu.md 2.2): the IB HCAs of an `...r` size (ND96isr_H100_v5: 8 x 400 Gb/s NDR) come
with the VM; nothing is attached per NIC. What decides whether two VMs can talk over IB is where they are
placed: "VMs must be in the same scale set or the same availability set", and a scale set must be limited to
a single placement group (`singlePlacementGroup: true`), which caps it at 100 VMs (availability sets: 200).
So the layout "wires" the fabric by choosing that scope:

- `nodeGroup: managed` -> one Uniform VM scale set with `singlePlacementGroup: true`. Uniform is explicit
  because single placement groups are a Uniform feature (docs.azure.cn virtual-machine-scale-sets-placement-groups:
  "This document covers ... Uniform Orchestration mode"). No source says IB spans a Flexible scale set, so
  Flexible is not used.
- `nodeGroup: instances` -> N VMs in one availability set (Microsoft's documented alternative). Spot VMs
  cannot join an availability set (learn.microsoft.com/azure/virtual-machines/error-codes-spot,
  AzureSpotVMNotSupportedInAvailabilitySet), and availability sets exclude zones, so both are refused there.

The wired Gb/s per node is counted back from the recorded resources by `count_wired_gbps` (rule below).
"""

from __future__ import annotations

import base64
import fnmatch
import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ... import bootstrap, catalog
from ...bootstrap import File, Part
from ...bootstrap.fabric import NCCL_ENV, FabricUsability, nccl_env_part
from ...bootstrap.health import RESULT_PATH
from ...bootstrap.metrics import Endpoint, endpoints
from ...catalog import kubernetes as kubernetes_offers
from ...catalog.capabilities import capability_data
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch, arch, image_for, scratch_for, split_cidr
from ..kubernetes import GPU_TAINT, Manifest, Release, gpu_labels, manifests, releases
from ..node import node_parts
from ..shared import Shared, shared_for
from . import slurm as azure_slurm
from .scaling import AzureElastic
from .scaling import plan as elastic_plan
from .slurm import AzureSlurm

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
AZURE_RESERVED_IPS_PER_SUBNET = 5  # VNet FAQ: Azure reserves 5 addresses in every subnet
DISK_TYPE = "Premium_LRS"  # Premium SSD for the OS disk and the scratch data disk

Group = Literal["scale-set", "availability-set", "vms"]
# The cluster VNet's second half (the first is the node subnet, unchanged) is cut into /26 blocks at fixed
# places, so turning Bastion or the login node on or off never moves another subnet: block 0 is
# AzureBastionSubnet (Azure needs exactly that name and at least a /26), block 1 the login subnet.
ACCESS_BLOCK_PREFIX = 26
BASTION_SUBNET_NAME = "AzureBastionSubnet"


def access_data() -> dict[str, Any]:
    """The Azure-only keys of catalog/capabilities/azure.yaml (`bastion:`), as written there."""
    return capability_data("azure")


@dataclass(frozen=True)
class SecurityRule:
    """One NSG rule, in the order Azure evaluates them (lower priority number first)."""

    name: str
    priority: int
    direction: Literal["Inbound", "Outbound"]
    access: Literal["Allow", "Deny"]
    protocol: Literal["*", "Tcp", "Udp"]
    sources: tuple[str, ...]  # CIDRs or service tags (VirtualNetwork, Internet)
    destination: str
    port: str  # "*" or a port
    description: str


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


@dataclass(frozen=True)
class RoleGrant:
    """One role assignment to the node identity, on the cluster's resource group."""

    role_definition_id: str  # /providers/Microsoft.Authorization/roleDefinitions/GUID or the subscription form
    why: str  # "identity.readStorage" or "identity.policies[i]"


@dataclass(frozen=True)
class NodeIdentity:
    """A user-assigned managed identity on every VM of the cluster (nodes and login node)."""

    existing_id: str | None  # an existing identity's resource id; None = create one
    grants: tuple[RoleGrant, ...]  # nothing by default: least privilege


@dataclass(frozen=True)
class Bastion:
    """Azure Bastion, Standard SKU with native-client tunnelling (`az network bastion ssh`)."""

    subnet_cidr: str
    sku: str
    hourly_usd: float | None  # None: not priced (capabilities file says why)
    price_note: str


@dataclass(frozen=True)
class LoginNode:
    """One small CPU VM in its own subnet: where sshCidrs and a public IP land when it exists."""

    instance_type: str
    subnet_cidr: str
    public_ip: bool
    security_rules: tuple[SecurityRule, ...]


@dataclass(frozen=True)
class HealthExtension:
    """The Application Health extension on the scale set (catalog/capabilities/azure.yaml `health.extension`)."""

    name: str
    publisher: str
    type: str
    type_handler_version: str
    settings: Mapping[str, Any]  # protocol, port, requestPath, gracePeriod


@dataclass(frozen=True)
class AutomaticRepairs:
    """The scale set's automatic instance repairs (`health.action: replace`)."""

    grace_period: str
    repair_action: str


@dataclass(frozen=True)
class AksPool:
    """One AKS agent pool (`containerservice` agent pool profile or `AgentPool`)."""

    name: str  # ARM agent pool name: lowercase letters and digits, at most 12 (Linux)
    mode: Literal["System", "User"]
    vm_size: str
    count: int
    min_count: int | None  # the cluster autoscaler's range when maxNodes > nodes; None: a fixed count
    max_count: int | None
    os_sku: str
    os_disk_gb: int
    taints: tuple[str, ...]  # "key=value:Effect"
    labels: Mapping[str, str]
    gpu_driver: str | None  # gpuProfile.driver (GPU pool): None when the GPU operator installs the driver
    spot: bool
    zones: tuple[str, ...]
    capacity_reservation_group: str | None
    proximity_placement_group: bool  # in the layout's PPG (the GPU pool with placement cluster)


@dataclass(frozen=True)
class AksKms:
    """KMS etcd encryption with a key in a private Key Vault (catalog/kubernetes/azure.yaml `kms`)."""

    vault_sku: str
    key_type: str
    key_size: int
    soft_delete_days: int
    purge_protection: bool
    network_access: str


@dataclass(frozen=True)
class Aks:
    """`scheduler: kubernetes` on Azure: one AKS cluster in the cluster VNet (catalog/kubernetes/azure.yaml)."""

    version: str
    sku_name: str  # ManagedClusterSKU name / tier (catalog controlPlaneSku)
    sku_tier: str
    private: bool  # enablePrivateCluster: the API server only inside the VNet
    authorized_ranges: tuple[str, ...]  # public endpoint: who may reach it (kubernetes.publicCidrs)
    api_subnet_cidr: str  # API Server VNet Integration: the delegated subnet
    api_subnet_delegation: str
    network_plugin: str
    network_plugin_mode: str
    pod_cidr: str
    service_cidr: str
    dns_service_ip: str
    outbound_type: str
    system: AksPool
    gpu: AksPool
    kms: AksKms
    roles: Mapping[str, str]  # role name -> role definition id (tenant-relative)
    infiniband_feature: str | None  # the subscription feature IB needs (None: no IB wired)
    releases: tuple[Release, ...]
    manifests: tuple[Manifest, ...]


@dataclass(frozen=True)
class AzureLayout:
    spec: ClusterSpec
    location: str
    resource_group: str | None  # an existing group by name; None = create one
    vnet_cidr: str
    node_subnet_cidr: str
    nat_gateway: bool
    security_rules: tuple[SecurityRule, ...]
    proximity_placement_group: bool
    group: Group
    single_placement_group: bool | None  # scale sets only: True when InfiniBand is wired
    platform_fault_domain_count: int | None  # scale sets only: 1 for the InfiniBand (HPC) scale set
    ib_devices: int  # IB HCAs that the placement scope lets nodes use (0 = fabric not wired)
    image: Image
    os_disk_gb: int
    os_disk_type: str
    scratch: Scratch
    scratch_disk: DataDisk | None
    priority: Literal["Regular", "Spot"]
    eviction_policy: Literal["Delete", "Deallocate"] | None
    accelerated_networking: bool
    encryption_at_host: bool
    admin_user: str
    ssh_public_key: str
    public_ip: bool
    zones: tuple[str, ...]
    capacity_reservation_group: str | None  # a capacity reservation group id (`reservation`)
    custom_data: str
    fabric_usability: FabricUsability  # whether NCCL can use the wired IB on this image, and what is missing
    placement_applied: Literal["cluster", "spread", "none"]  # what the resources apply (a PPG or nothing)
    health_extension: HealthExtension | None  # scale sets with the health check on
    automatic_repairs: AutomaticRepairs | None  # scale sets with health.action: replace
    metrics_endpoints: tuple[Endpoint, ...]  # DCGM and node exporter; reachable only inside the VNet (NSG)
    tags: Mapping[str, str]
    warnings: tuple[str, ...]
    access: str  # bastion | ssh | none (spec.access, resolved)
    identity: NodeIdentity
    bastion: Bastion | None
    login: LoginNode | None
    shared: Shared | None = None  # storage.shared: Azure Managed Lustre, an Azure Files NFS share or an existing one
    shared_subnet_cidr: str | None = None  # AMLFS's own subnet: the last /24 of the VNet's second half
    aks: Aks | None = None  # scheduler kubernetes: the AKS cluster replaces the scale set / VMs
    slurm: AzureSlurm | None = None  # scheduler slurm: the head node, the MUNGE key's vault, the Slurm parts
    elastic: AzureElastic | None = None  # scaling: the scale set's autoscale setting, its queue and metric

    @property
    def fabric_gbps_wired(self) -> float:
        return self.ib_devices * self.spec.instance.gbps_per_fabric_device

    @property
    def custom_data_b64(self) -> str:
        return self.custom_data_b64_for(self.custom_data)

    def custom_data_b64_for(self, custom_data: str) -> str:
        return base64.b64encode(custom_data.encode()).decode()

    @property
    def ssh_key_path(self) -> str:
        return f"/home/{self.admin_user}/.ssh/authorized_keys"


def _image(spec: ClusterSpec) -> Image:
    if spec.image == "auto":
        # a non-NVIDIA GPU (ND MI300X v5) takes its vendor's image (catalog/azure.yaml images.vendors), a Grace
        # (arm64) host its architecture's (images.arch): the default and families are x86_64 NVIDIA images
        vendor = catalog.vendor_image("azure", spec.instance) or catalog.arch_image("azure", spec.instance)
        entry: dict[str, Any] = vendor if vendor is not None else image_for("azure", spec.instance.instanceType)
        if not entry.get("urn"):
            reason = one_line(entry["reason"])
            raise ConfigError(f"{CLUSTER_KEY}.image", f"auto has no image for {spec.instance.instanceType}: {reason}")
        publisher, offer, sku, version = entry["urn"].split(":")
        return Image(publisher, offer, sku, version, None, one_line(entry["description"]))
    if spec.image.startswith("/subscriptions/"):
        return Image(None, None, None, None, spec.image, f"image {spec.image} as configured")
    publisher, offer, sku, version = spec.image.split(":")
    return Image(publisher, offer, sku, version, None, f"marketplace image {spec.image} as configured")


# --- fabric enablement: what NCCL needs over InfiniBand on the HPC image ----------------------------

IB_UNIT = """[Unit]
Description=gpu-cluster: NCCL over InfiniBand prerequisites (topology file, nvidia-peermem, IB ports)
After=openibd.service sku-customizations.service nvidia-fabricmanager.service
Before=gpu-cluster-health.service

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile={env}
Environment=EXPECTED_IB_DEVICES={devices}
ExecStart=/usr/local/sbin/gpu-cluster-azure-ib

[Install]
WantedBy=multi-user.target
"""


def ib_image_data() -> dict[str, Any]:
    """`images.default.fabric.infiniband` of catalog/azure.yaml: what the default HPC image gives NCCL."""
    data: dict[str, Any] = catalog.load("azure").images["default"]["fabric"]["infiniband"]
    return data


def ib_family(instance_type: str) -> tuple[str, dict[str, Any]] | None:
    """The image's topology family of a size, matched as the image matches it (lower-cased case patterns)."""
    size = instance_type.lower()
    for name, family in ib_image_data()["families"].items():
        if any(fnmatch.fnmatchcase(size, pattern) for pattern in family["sizes"]):
            return name, family
    return None


def _default_image_ref() -> str:
    return str(catalog.load("azure").images["default"]["urn"])


def ib_part(devices: int) -> Part:
    return Part(
        "azure-ib",
        files=(
            File("/usr/local/sbin/gpu-cluster-azure-ib", bootstrap.script("azure_ib.sh"), "0755"),
            File("/etc/systemd/system/gpu-cluster-azure-ib.service", IB_UNIT.format(env=NCCL_ENV, devices=devices)),
        ),
        commands=(
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "--no-block", "gpu-cluster-azure-ib.service"),
        ),
        summary=f"checks the NCCL topology file, nvidia-peermem and {devices} InfiniBand ports at boot.",
    )


def _fabric(spec: ClusterSpec, ib: bool, image: Image) -> tuple[tuple[Part, ...], FabricUsability]:
    """The fabric parts and whether NCCL can use the wired InfiniBand: only on the catalog's HPC image (or the
    same URN given explicitly), for a size whose topology family the image knows."""
    row = spec.instance
    if not ib:
        return (), FabricUsability(False, ("no fabric wired",))
    vendor = catalog.vendor_image("azure", row) or catalog.arch_image("azure", row)
    if vendor is not None:  # the IB parts below are for the x86_64 NVIDIA image; the vendor/arch entry says why not
        reason = ((vendor.get("fabric") or {}).get("infiniband") or {}).get("reason") or "no image vouches for it"
        return (), FabricUsability(False, (one_line(reason),))
    found = ib_family(row.instanceType)
    if found is None:
        return (), FabricUsability(
            False,
            (
                f"the catalog's image entry has no NCCL topology family for {row.instanceType} "
                "(images.default.fabric.infiniband.families in catalog/azure.yaml)",
            ),
        )
    name, family = found
    env = {str(k): str(v) for k, v in family["env"].items()}
    parts = (nccl_env_part(env, f"Azure HPC image, {name}"), ib_part(row.fabricDevices))
    if image.ref != _default_image_ref():
        return parts, FabricUsability(
            False,
            (
                f"image {image.ref} is not the catalog's HPC image ({_default_image_ref()}): nothing vouches for "
                f"DOCA OFED, NCCL, nvidia-peermem and {family['topoFile']} on it (the boot check "
                "gpu-cluster-azure-ib reports what is missing)",
            ),
        )
    provides = (*(str(p) for p in ib_image_data()["provides"]), f"{name}: {family['topoFile']}", f"NCCL env {NCCL_ENV}")
    return parts, FabricUsability(True, (), provides)


# --- health self-removal: Application Health extension + automatic repairs ---------------------------

HEALTH_HTTP_SOCKET = """[Unit]
Description=gpu-cluster health endpoint for the Azure Application Health extension (127.0.0.1:{port})

[Socket]
ListenStream=127.0.0.1:{port}
Accept=yes

[Install]
WantedBy=sockets.target
"""

HEALTH_HTTP_SERVICE = """[Unit]
Description=gpu-cluster health endpoint: one probe answered from {result}

[Service]
ExecStart=/usr/local/sbin/gpu-cluster-health-http
Environment=HEALTH_RESULT={result}
StandardInput=socket
StandardOutput=socket
StandardError=journal
DynamicUser=yes
RuntimeMaxSec=15
"""


def health_data() -> dict[str, Any]:
    """`health:` of catalog/capabilities/azure.yaml (extension settings, repairs policy, sources)."""
    data: dict[str, Any] = access_data()["health"]
    return data


def health_endpoint_part(port: int) -> Part:
    return Part(
        "health-endpoint",
        files=(
            File("/usr/local/sbin/gpu-cluster-health-http", bootstrap.script("azure_health_http.sh"), "0755"),
            File("/etc/systemd/system/gpu-cluster-health-http.socket", HEALTH_HTTP_SOCKET.format(port=port)),
            File(
                "/etc/systemd/system/gpu-cluster-health-http@.service", HEALTH_HTTP_SERVICE.format(result=RESULT_PATH)
            ),
        ),
        commands=(
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "gpu-cluster-health-http.socket"),
        ),
        summary=f"answers the Application Health extension on 127.0.0.1:{port} from {RESULT_PATH}.",
    )


def _health(spec: ClusterSpec, group: Group) -> tuple[HealthExtension | None, AutomaticRepairs | None]:
    """Scale sets: the extension whenever the health check runs (its state shows in the instance view), automatic
    repairs only with action replace. Single VMs: report only (no Azure service replaces a lone VM)."""
    action = spec.health_action
    if action is None:
        return None, None
    if group != "scale-set":
        if action == "replace":
            raise ConfigError(
                f"{CLUSTER_KEY}.health.action",
                "replace with nodeGroup: instances: on Azure only a scale set replaces an unhealthy VM (Application "
                "Health extension + automatic instance repairs); use action: report (the check logs and writes "
                f"{RESULT_PATH}) or nodeGroup: managed",
            )
        return None, None
    data = health_data()
    ext = data["extension"]
    settings = {
        "protocol": ext["protocol"],
        "port": int(ext["port"]),
        "requestPath": ext["requestPath"],
        "gracePeriod": int(ext["gracePeriod"]),
    }
    extension = HealthExtension(ext["name"], ext["publisher"], ext["type"], str(ext["typeHandlerVersion"]), settings)
    repairs = data["repairs"]
    automatic = (
        AutomaticRepairs(str(repairs["gracePeriod"]), str(repairs["repairAction"])) if action == "replace" else None
    )
    return extension, automatic


def _custom_data(
    spec: ClusterSpec,
    scratch: Scratch,
    ib_devices: int,
    fabric: tuple[Part, ...],
    extension: HealthExtension | None,
    repairs: AutomaticRepairs | None,
    shared: Shared | None = None,
    slurm: tuple[Part, ...] = (),
) -> str:
    parts = node_parts(
        spec,
        scratch,
        fabric_devices=ib_devices,
        nvme_globs=HEALTH_NVME_GLOBS if scratch.kind == "nvme" else (),
        fabric=fabric,
        unhealthy_hook=bootstrap.script("azure_unhealthy.sh") if repairs is not None else None,
        mounts=shared.mount if shared else None,
    )
    endpoint = (
        health_endpoint_part(int(extension.settings["port"])) if extension is not None else Part("health-endpoint")
    )
    # scheduler slurm: slurmd after the node's own parts (its HealthCheckProgram runs the same check)
    return bootstrap.cloud_init([*parts, endpoint, *slurm])


def _ssh_rule(spec: ClusterSpec) -> SecurityRule:
    return SecurityRule(
        "allow-ssh", 100, "Inbound", "Allow", "Tcp", spec.network.ssh_cidrs, "*", "22", "SSH from sshCidrs"
    )


def _security_rules(spec: ClusterSpec) -> tuple[SecurityRule, ...]:
    """SSH only from sshCidrs, everything inside the VNet, nothing else from the internet.

    Azure's default rules already allow VNet traffic (65000) and deny the rest (65500); the explicit copies
    make the intent visible in the plan and keep it if someone adds broader rules later. With a login node,
    sshCidrs open port 22 on the login node only (its own NSG), never on the GPU nodes.
    """
    rules: list[SecurityRule] = []
    if spec.network.ssh_cidrs and spec.login is None:
        rules.append(_ssh_rule(spec))
    rules += _inside_rules()
    return tuple(rules)


def _inside_rules() -> list[SecurityRule]:
    return [
        SecurityRule(
            "allow-vnet-inbound",
            200,
            "Inbound",
            "Allow",
            "*",
            ("VirtualNetwork",),
            "VirtualNetwork",
            "*",
            "all traffic between nodes (NCCL bootstrap, IPoIB is separate)",
        ),
        SecurityRule(
            "deny-internet-inbound", 4096, "Inbound", "Deny", "*", ("Internet",), "*", "*", "nothing from the internet"
        ),
    ]


def _group_problems(spec: ClusterSpec, group: Group, ib: bool, node_cidr: str) -> Iterator[ConfigError]:
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


def _single_placement_group(spec: ClusterSpec, group: Group, ib: bool) -> bool | None:
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


def _identity(spec: ClusterSpec) -> NodeIdentity:
    """No role by default (least privilege): the nodes need none to boot, be reached through Bastion or
    run NCCL. `identity.policies` and `identity.readStorage` add role assignments on the resource group."""
    grants = [RoleGrant(role, f"{CLUSTER_KEY}.identity.policies[{i}]") for i, role in enumerate(spec.identity.policies)]
    if spec.identity.read_storage:
        reader = access_data()["readStorageRole"]
        grants.append(RoleGrant(reader["roleDefinitionId"], f"{CLUSTER_KEY}.identity.readStorage"))
    unique = tuple({g.role_definition_id.lower(): g for g in grants}.values())  # one assignment per role
    return NodeIdentity(spec.identity.existing, unique)


def _access_blocks(spec: ClusterSpec, node_cidr: str, needed: int) -> tuple[str, ...]:
    """The first `needed` /26 blocks of the VNet's free half (block 0: Bastion, block 1: login)."""
    halves = ipaddress.IPv4Network(spec.network.cidr).subnets(prefixlen_diff=1)
    second = next(net for net in halves if str(net) != node_cidr)
    if second.num_addresses < needed * 2 ** (32 - ACCESS_BLOCK_PREFIX):
        what = {
            ("bastion", 1): "AzureBastionSubnet (Azure needs at least a /26)",
            ("bastion", 2): "AzureBastionSubnet and the login subnet (a /26 each)",
        }.get((spec.access, needed), "the login subnet (the second /26 of that half)")
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves {second} beside the node subnet, too small for {what}; "
            f"use a /{ACCESS_BLOCK_PREFIX - needed} or larger range, or access: none without a login node",
        )
    blocks = second.subnets(new_prefix=ACCESS_BLOCK_PREFIX)
    return tuple(str(next(blocks)) for _ in range(needed))


def _bastion(spec: ClusterSpec, node_cidr: str) -> Bastion | None:
    if spec.access != "bastion":
        return None
    data = access_data()["bastion"]
    price = data.get("hourlyUsd")
    return Bastion(
        _access_blocks(spec, node_cidr, 1)[0],
        str(data["sku"]),
        None if price is None else float(price),
        one_line(data["price"]),
    )


def _login(spec: ClusterSpec, node_cidr: str) -> LoginNode | None:
    if spec.login is None:
        return None
    assert spec.login.instance_type is not None  # the spec resolves the default type
    rules = ((_ssh_rule(spec),) if spec.network.ssh_cidrs else ()) + tuple(_inside_rules())
    return LoginNode(spec.login.instance_type, _access_blocks(spec, node_cidr, 2)[1], spec.login.public_ip, rules)


def plan(spec: ClusterSpec) -> AzureLayout:
    row = spec.instance
    k = f"{CLUSTER_KEY}."
    ib = spec.fabric_wired and row.fabric == "infiniband"
    group: Group = "scale-set" if spec.node_group == "managed" else "availability-set" if ib else "vms"
    node_cidr = split_cidr(spec.network.cidr, 1, 1)[0]  # first half; the second stays free (bastion, etc.)
    refuse([*arch.problems(spec), *_group_problems(spec, group, ib, node_cidr)])
    assert spec.ssh_public_key is not None  # refused above

    scratch = scratch_for(spec, NVME_GLOBS, DATA_DISK_GLOBS)
    shared = shared_for(spec)
    scratch_disk = (
        DataDisk(SCRATCH_LUN, spec.storage.scratch_gb, DISK_TYPE, not spec.storage.retain_scratch)
        if scratch.kind == "disk"
        else None
    )
    warnings: list[str] = []
    if scratch_disk is not None and not scratch_disk.delete_with_vm and group == "scale-set":
        warnings.append(
            f"{k}storage.retainScratch: scale sets delete an instance's data disks with the instance; "
            "the scratch disk is kept only with nodeGroup: instances"
        )
    image = _image(spec)
    ib_devices = row.fabricDevices if ib else 0
    fabric_parts, usability = _fabric(spec, ib, image)
    extension, repairs = _health(spec, group)
    priority: Literal["Regular", "Spot"] = "Spot" if spec.spot else "Regular"
    eviction: Literal["Delete", "Deallocate"] | None = None
    if spec.spot:
        # Scale sets: Delete, so evicted instances free their quota and disks instead of lingering deallocated.
        # Single VMs: Deallocate keeps the VM and its disks (the Pulumi state stays true); local NVMe is lost anyway.
        eviction = "Delete" if group == "scale-set" else "Deallocate"
        lost = "the VM, its OS disk and all node data" if eviction == "Delete" else "local NVMe and temp disk contents"
        warnings.append(
            f"{k}spot: Azure Spot with evictionPolicy {eviction}: an eviction loses {lost}; "
            "keep checkpoints off the node"
        )
    if spec.azure.encryption_at_host and row.localNvmeCount:
        warnings.append(
            f"{k}azure.encryptionAtHost: local NVMe disks are not encrypted by encryption at host "
            "(MicrosoftDocs ncads-h100-v5.md); the scratch RAID is plain"
        )
    if spec.placement == "spread":
        warnings.append(
            f"{k}placement: spread has no Azure counterpart here (a proximity placement group only co-locates); "
            "no placement group is created"
        )
    if spec.login is not None and spec.network.public_ip:
        warnings.append(
            f"{k}network.publicIp: a login node exists, so the GPU nodes get no public IP; "
            "set login.publicIp to reach the login node from sshCidrs"
        )
    elastic = elastic_plan(spec, group) if spec.scheduler == "none" else None
    if ib and spec.max_nodes > spec.nodes and spec.scaling is None:
        warnings.append(
            f"{k}maxNodes: the scale set starts at {spec.nodes} VMs; scale it (capacity) up to {spec.max_nodes} "
            "yourself or with an autoscale setting, within the one placement group"
        )
    aks = _aks(spec, node_cidr, ib, warnings) if spec.scheduler == "kubernetes" else None
    slurm = azure_slurm.plan(spec, shared.mount if shared else None)
    if aks is not None:
        # AKS nodes run AKS's node image and no bootstrap: no scratch RAID, no data disk, no health extension;
        # NCCL's InfiniBand prerequisites come from the in-cluster releases instead of the HPC image
        scratch, scratch_disk, extension, repairs = Scratch("none", scratch.path, 0, None, ()), None, None, None
        usability = _aks_fabric(spec, aks)
    return AzureLayout(
        spec=spec,
        location=spec.region,
        resource_group=spec.azure.resource_group,
        vnet_cidr=spec.network.cidr,
        node_subnet_cidr=node_cidr,
        nat_gateway=spec.network.egress == "nat",
        security_rules=_security_rules(spec) + (_pod_rules(aks, node_cidr) if aks else ()),
        proximity_placement_group=spec.placement == "cluster",
        group=group,
        single_placement_group=_single_placement_group(spec, group, ib),
        # azurehpc `_add_vmss` (fault_domain_count 1) and our availability set: one fault domain for the
        # IB scale set; unset elsewhere (Azure's default, so other scale sets do not change).
        platform_fault_domain_count=1 if group == "scale-set" and ib else None,
        ib_devices=ib_devices,
        image=image,
        os_disk_gb=spec.storage.root_gb,
        os_disk_type=DISK_TYPE,
        scratch=scratch,
        scratch_disk=scratch_disk,
        priority=priority,
        eviction_policy=eviction,
        accelerated_networking=bool(row.extra.get("acceleratedNetworking", False)),
        encryption_at_host=spec.azure.encryption_at_host,
        admin_user=spec.admin_user,
        ssh_public_key=spec.ssh_public_key,
        public_ip=spec.network.public_ip and spec.login is None,
        zones=(spec.zone,) if spec.zone else (),
        capacity_reservation_group=spec.reservation or None,
        custom_data=_custom_data(
            spec,
            scratch,
            ib_devices,
            fabric_parts,
            extension,
            repairs,
            shared,
            (*(slurm.compute_parts if slurm else ()), *(elastic.parts if elastic else ())),
        ),
        fabric_usability=usability,
        placement_applied="cluster" if spec.placement == "cluster" else "none",
        health_extension=extension,
        automatic_repairs=repairs,
        metrics_endpoints=endpoints() if spec.dcgm_exporter else (),
        tags=dict(spec.base_tags),
        warnings=tuple(warnings),
        access=spec.access,
        identity=_identity(spec),
        bastion=_bastion(spec, node_cidr),
        login=_login(spec, node_cidr),
        shared=shared,
        shared_subnet_cidr=_shared_subnet(spec, node_cidr, shared),
        aks=aks,
        slurm=slurm,
        elastic=elastic,
    )


# --- scheduler kubernetes: AKS (catalog/kubernetes/azure.yaml) ---------------------------------------

API_SUBNET_BLOCK = 2  # the third /26 of the VNet's free half (0: AzureBastionSubnet, 1: login)


def aks_data() -> dict[str, Any]:
    """The Azure-only keys of catalog/kubernetes/azure.yaml."""
    offer = kubernetes_offers.offer("azure")
    assert offer is not None  # the spec refuses scheduler kubernetes without it
    return offer.extra


def _free_range(candidates: list[str], taken: list[ipaddress.IPv4Network], key: str, what: str) -> str:
    for cidr in candidates:
        net = ipaddress.IPv4Network(cidr)
        if not any(net.overlaps(other) for other in taken):
            return cidr
    raise ConfigError(
        key, f"overlaps every {what} range gpu-cluster can give AKS ({', '.join(candidates)}); use another"
    )


def _api_subnet(spec: ClusterSpec, node_cidr: str, prefix: int) -> str:
    """The API server's delegated subnet: the first /28 of the third /26 block of the VNet's free half (blocks
    0 and 1 are Bastion's and the login node's, the last /24 Managed Lustre's): no other subnet moves."""
    second = next(n for n in ipaddress.IPv4Network(spec.network.cidr).subnets(prefixlen_diff=1) if str(n) != node_cidr)
    blocks = list(second.subnets(new_prefix=ACCESS_BLOCK_PREFIX)) if second.prefixlen <= ACCESS_BLOCK_PREFIX else []
    if len(blocks) <= API_SUBNET_BLOCK + 1:  # the block after it keeps Managed Lustre's /24 clear on small networks
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves {second} beside the node subnet, too small for the AKS API server subnet "
            f"(a /{prefix} after the access subnets); use a /23 or larger network",
        )
    return str(next(blocks[API_SUBNET_BLOCK].subnets(new_prefix=prefix)))


def _aks(spec: ClusterSpec, node_cidr: str, ib: bool, warnings: list[str]) -> Aks:
    """The AKS cluster: private API server (VNet-integrated), KMS-encrypted Secrets, a CPU system pool and the GPU
    pool from the same keys as the scale set (size, counts, spot, reservation, PPG, fabric, root disk)."""
    kube = spec.kubernetes
    assert kube is not None
    data, k = aks_data(), f"{CLUSTER_KEY}."
    row = spec.instance
    if spec.network.existing is not None:
        raise ConfigError(
            f"{k}network.existing",
            "set with scheduler kubernetes: AKS needs Network Contributor on the subnets and a delegated API server "
            "subnet, which gpu-cluster gives only in a network it creates; remove network.existing",
        )
    if spec.network.egress != "nat":
        raise ConfigError(
            f"{k}network.egress",
            f"{spec.network.egress} with scheduler kubernetes: AKS nodes must reach the control plane's images and "
            f"packages, through the cluster's NAT gateway (outboundType {data['network']['outboundType']}); use nat",
        )
    ib_data = data["infiniband"]
    if ib and spec.nodes < int(ib_data["minNodes"]):
        raise ConfigError(
            f"{k}nodes",
            f"{spec.nodes} with InfiniBand on {row.instanceType} under AKS: the RDMA setup (Network Operator, "
            f"{ib_data['feature']}) is for at least {ib_data['minNodes']} nodes; use {ib_data['minNodes']} or more, "
            "or fabric: none",
        )
    net = data["network"]
    vnet = ipaddress.IPv4Network(spec.network.cidr)
    reserved = [ipaddress.IPv4Network(r) for r in net["reserved"]]
    pod = _free_range(list(net["podCidrs"]), [vnet, *reserved], f"{k}network.cidr", "pod")
    service = _free_range(
        list(net["serviceCidrs"]), [vnet, *reserved, ipaddress.IPv4Network(pod)], f"{k}network.cidr", "service"
    )
    dns_ip = str(ipaddress.IPv4Network(service).network_address + int(net["dnsServiceHost"]))
    autoscale = spec.max_nodes > spec.nodes
    zones = (spec.zone,) if spec.zone else ()
    system = AksPool(
        name="system",
        mode="System",
        vm_size=kube.system_instance_type,
        count=kube.system_nodes,
        min_count=None,
        max_count=None,
        os_sku=str(data["osSku"]),
        os_disk_gb=spec.storage.root_gb,
        taints=(str(data["systemTaint"]),),
        labels={},
        gpu_driver=None,
        spot=False,
        zones=zones,
        capacity_reservation_group=None,
        proximity_placement_group=False,
    )
    taint = f"{GPU_TAINT['key']}={GPU_TAINT['value']}:{GPU_TAINT['effect']}"
    gpu = AksPool(
        name="gpu",
        mode="User",
        vm_size=row.instanceType,
        count=spec.nodes,
        min_count=spec.nodes if autoscale else None,
        max_count=spec.max_nodes if autoscale else None,
        os_sku=str(data["osSku"]),
        os_disk_gb=spec.storage.root_gb,
        taints=(taint,),
        labels=gpu_labels(spec),
        gpu_driver=str(data["gpuDriver"][kube.gpu_software]),
        spot=spec.spot,
        zones=zones,
        capacity_reservation_group=spec.reservation or None,
        proximity_placement_group=spec.placement == "cluster",
    )
    kms = data["kms"]
    api = data["apiServerSubnet"]
    if ib:
        warnings.append(
            f"{k}fabric: InfiniBand on the AKS pool needs the subscription feature {ib_data['feature']} registered "
            f"before deploy (nothing in the SDK sets it): {ib_data['register']}; check with: {ib_data['check']}"
        )
    warnings.append(
        f"{k}scheduler: kubernetes on AKS: agent pools take no custom data, so the node bootstrap (health check, "
        "node exporter, scratch RAID, InfiniBand boot check) does not run on the GPU nodes; the GPU software comes "
        "from the in-cluster releases (docs/azure.md)"
    )
    if spec.storage.shared is not None:
        warnings.append(
            f"{k}storage.shared: built, but not mounted on AKS nodes (no node bootstrap); mount it in pods "
            "through the Azure Lustre or Azure Files CSI driver"
        )
    return Aks(
        version=kube.version,
        sku_name=str(data["controlPlaneSku"]["name"]),
        sku_tier=str(data["controlPlaneSku"]["tier"]),
        private=not kube.public_endpoint,
        authorized_ranges=kube.public_cidrs,
        api_subnet_cidr=_api_subnet(spec, node_cidr, int(api["prefix"])),
        api_subnet_delegation=str(api["delegation"]),
        network_plugin=str(net["plugin"]),
        network_plugin_mode=str(net["pluginMode"]),
        pod_cidr=pod,
        service_cidr=service,
        dns_service_ip=dns_ip,
        outbound_type=str(net["outboundType"]),
        system=system,
        gpu=gpu,
        kms=AksKms(
            str(kms["vaultSku"]),
            str(kms["keyType"]),
            int(kms["keySize"]),
            int(kms["softDeleteRetentionDays"]),
            bool(kms["purgeProtection"]),
            str(kms["networkAccess"]),
        ),
        roles={str(name): str(role) for name, role in data["roles"].items()},
        infiniband_feature=str(ib_data["feature"]) if ib else None,
        releases=releases(spec),
        manifests=manifests(spec),
    )


def _aks_fabric(spec: ClusterSpec, aks: Aks) -> FabricUsability:
    """InfiniBand on an AKS pool: usable when the GPU operator installs the driver with GPUDirect RDMA and the
    Network Operator the DOCA driver and RDMA device plugin (Azure's AKS RDMA guide, catalog `releases:`)."""
    if aks.infiniband_feature is None:
        return FabricUsability(False, ("no fabric wired",))
    charts = {r.chart for r in aks.releases}
    if "network-operator" not in charts:
        return FabricUsability(False, ("the NVIDIA Network Operator release (catalog/kubernetes/azure.yaml)",))
    if spec.kubernetes is not None and spec.kubernetes.gpu_software != "operator":
        return FabricUsability(
            False,
            (
                "GPUDirect RDMA: the GPU operator's driver with driver.rdma.enabled (gpuSoftware: operator); "
                "AKS's own driver is not set up for it here",
            ),
        )
    return FabricUsability(
        True,
        (),
        (
            "Network Operator: DOCA driver + RDMA shared device plugin (rdma/shared_ib)",
            "GPU operator: driver with GPUDirect RDMA",
            f"subscription feature {aks.infiniband_feature}",
        ),
    )


def _pod_rules(aks: Aks, node_cidr: str) -> tuple[SecurityRule, ...]:
    """Azure CNI Overlay: the node subnet's NSG applies to pod traffic, and the pod range is not in the
    VirtualNetwork tag, so node -> pod and pod -> anything in the cluster are allowed explicitly
    (concepts-network-azure-cni-overlay.md "Network security groups")."""
    return (
        SecurityRule(
            "allow-pods-inbound", 210, "Inbound", "Allow", "*", (aks.pod_cidr,), "*", "*",
            "AKS overlay: pod to pod and pod to node traffic (pod CIDR)",
        ),
        SecurityRule(
            "allow-nodes-to-pods", 220, "Inbound", "Allow", "*", (node_cidr,), aks.pod_cidr, "*",
            "AKS overlay: node to pod traffic (service routing)",
        ),
    )  # fmt: skip


def _shared_subnet(spec: ClusterSpec, node_cidr: str, shared: Shared | None) -> str | None:
    """AMLFS's own subnet: the last /24 of the VNet's second half, clear of the /26 access blocks at its start,
    so adding it moves no existing subnet (catalog/storage/azure.yaml `subnet`). The NFS share needs none: its
    private endpoint takes an address in the node subnet."""
    if shared is None or shared.kind != "lustre":
        return None
    prefix = int((shared.data or {}).get("subnet", {}).get("prefix", 24))
    second = next(n for n in ipaddress.IPv4Network(spec.network.cidr).subnets(prefixlen_diff=1) if str(n) != node_cidr)
    if second.prefixlen > prefix - 1:  # the /24 must leave the access blocks (the first /25) alone
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves {second} beside the node subnet, too small for the /{prefix} Azure Managed "
            f"Lustre needs beside the access subnets; use a /{prefix - 2} or larger network",
        )
    return str(list(second.subnets(new_prefix=prefix))[-1])


SCALE_SET_TYPE = "azure-native:compute:VirtualMachineScaleSet"
VM_TYPE = "azure-native:compute:VirtualMachine"
AGENT_POOL_TYPE = "azure-native:containerservice:AgentPool"
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
NIC_POLICY_TYPE = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"


def _ib_devices(size: Any) -> int:
    rows = catalog.find("azure", size) if isinstance(size, str) else []
    return rows[0].fabricDevices if rows and rows[0].fabric == "infiniband" else 0


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """InfiniBand Gb/s per node counted from the recorded resources (the plan's proof).

    Rule (setup-infiniband.md): a node's IB HCAs are usable by the cluster when it is in a Uniform scale set
    with `singlePlacementGroup: true`, or in an availability set shared by the cluster's VMs. The count is
    the HCAs of the recorded VM size (catalog) for such a scale set or VM, else 0; the per-device Gb/s comes
    from the catalog rating (ND H100 v5: 8 x 400).
    """
    wired = 0
    for res in resources:
        inputs = res["inputs"]
        if res["type"] == SCALE_SET_TYPE:
            uniform = inputs.get("orchestrationMode") == "Uniform"
            if uniform and inputs.get("singlePlacementGroup") is True:
                wired = max(wired, _ib_devices((inputs.get("sku") or {}).get("name")))
        elif res["type"] == VM_TYPE and (inputs.get("availabilitySet") or {}).get("id"):
            wired = max(wired, _ib_devices((inputs.get("hardwareProfile") or {}).get("vmSize")))
        elif res["type"] == AGENT_POOL_TYPE and _aks_ib_ready(inputs, resources):
            wired = max(wired, _ib_devices(inputs.get("vmSize")))
    return wired * gbps_per_device


def _aks_ib_ready(pool: Mapping[str, Any], resources: list[Mapping[str, Any]]) -> bool:
    """An AKS pool's HCAs carry RDMA when what AKS itself does not set up is there (the AKS RDMA guide,
    catalog/kubernetes/azure.yaml `infiniband`): an Ubuntu pool, the Network Operator release and a
    NicClusterPolicy with the DOCA driver. The subscription feature is not a resource (the plan warns)."""
    if pool.get("osSKU") != "Ubuntu":
        return False
    operator = any(r["type"] == HELM_RELEASE_TYPE and r["inputs"].get("chart") == "network-operator" for r in resources)
    policy = any(r["type"] == NIC_POLICY_TYPE and (r["inputs"].get("spec") or {}).get("ofedDriver") for r in resources)
    return operator and policy
