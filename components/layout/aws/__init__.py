"""AWS layout: network interfaces (EFA), placement, image, disks and bootstrap for one cluster.

EFA wiring follows AWS's current recommendation (EC2 User Guide, "Maximize network bandwidth on
accelerated instance types", docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html):
the primary interface is a plain ENA `interface` on card 0 / device 0, card 0 carries an
`efa-only` device at index 1, and every further card carries an `efa-only` device at index 0.
`efa-only` interfaces take no IP address, so a p5.48xlarge gets all 32 EFA devices without
exhausting the subnet (pulumi-eks makes the same argument). Older tools (terraform-aws-eks,
ParallelCluster) use an `efa` primary and device index 1 on other cards; AWS moved away from it.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from .. import bootstrap, catalog, placeholders
from ..bootstrap import Part, oneshot_unit, script, service_part
from ..bootstrap.fabric import FabricUsability, nccl_env_part
from ..bootstrap.metrics import endpoints as metric_endpoints
from ..catalog import kubernetes as kubernetes_offers
from ..catalog.capabilities import capability_data
from ..errors import CLUSTER_KEY, ConfigError, refuse
from ..spec import ClusterSpec
from . import Scratch, arch, image_for, scratch_for, split_cidr
from .aws_scaling import AwsScaling
from .aws_scaling import data as scaling_data
from .aws_scaling import plan as scaling_plan
from .aws_slurm import AwsSlurm
from .aws_slurm import plan as slurm_plan
from .kubernetes import GPU_TAINT, LABEL_PREFIX, Release, gpu_labels, releases
from .node import node_parts
from .shared import Shared, efa_note, shared_for

InterfaceType = Literal["interface", "efa", "efa-only"]
# by-id names the NVMe driver gives instance-store and EBS volumes on Nitro instances
INSTANCE_STORE_GLOBS = ("/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_*",)
EBS_GLOBS = ("/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_*",)
ROOT_DEVICE = "/dev/sda1"  # Ubuntu DLAMIs register their root volume here
SCRATCH_DEVICE = "/dev/sdf"


@dataclass(frozen=True)
class NetworkInterface:
    network_card_index: int
    device_index: int
    interface_type: InterfaceType

    @property
    def is_efa(self) -> bool:
        return self.interface_type in ("efa", "efa-only")


@dataclass(frozen=True)
class Image:
    ssm_parameter: str | None  # resolved at deploy
    ami_id: str | None
    description: str


@dataclass(frozen=True)
class NodeIdentity:
    """The nodes' IAM identity: a role with an instance profile, or an existing instance profile."""

    existing_profile: str | None  # identity.existing: use it, create nothing
    trust_service: str  # who may assume the created role
    policies: tuple[str, ...]  # managed policy ARNs attached to the created role (empty with existing)


@dataclass(frozen=True)
class Login:
    """One small CPU VM in the cluster network: the only place a public IP or SSH CIDR lands."""

    instance_type: str
    public_ip: bool  # in the public (NAT) subnet with a public IP, else in the node subnet
    image: Image


@dataclass(frozen=True)
class Access:
    method: str  # ssm | ssh | none (access: auto resolved by the spec from the capabilities file)
    endpoint_services: tuple[str, ...]  # VPC interface endpoints (com.amazonaws.<region>.<svc>)
    endpoint_port: int
    node_ssh_cidrs: tuple[str, ...]  # on the nodes' security group: only without a login node
    login: Login | None
    login_ssh_cidrs: tuple[str, ...]  # on the login node's security group


@dataclass(frozen=True)
class Metrics:
    """The exporters every node runs (bootstrap.metrics) and who may scrape them (network rules)."""

    endpoints: tuple[tuple[str, int, str], ...]  # (name, port, path)
    from_login: bool  # the login node's group may scrape too (a Prometheus on the login node)


@dataclass(frozen=True)
class AwsLayout:
    spec: ClusterSpec
    vpc_cidr: str
    node_subnet_cidr: str
    public_subnet_cidr: str | None  # only for the NAT gateway (egress: nat)
    interfaces: tuple[NetworkInterface, ...]
    placement_strategy: Literal["cluster", "spread"] | None
    image: Image
    root_gb: int
    scratch: Scratch
    market: Literal["on-demand", "spot", "capacity-block"]
    capacity_reservation_id: str | None
    user_data: str
    tags: Mapping[str, str]
    identity: NodeIdentity
    access: Access
    placement_applied: Literal["cluster", "spread", "none"]  # what the resources apply (spec.placement is asked)
    fabric_usability: FabricUsability
    health_hook: bool  # the node role may mark the node Unhealthy in its own Auto Scaling group
    metrics: Metrics
    shared: Shared | None = None  # storage.shared: FSx for Lustre / EFS / an existing filesystem
    shared_note: str | None = None  # why an EFA node type gets a TCP-only FSx
    kubernetes: EksLayout | None = None  # scheduler kubernetes: the EKS control plane, its pools and releases
    slurm: AwsSlurm | None = None  # scheduler slurm: the head node, the MUNGE secret, the Slurm bootstraps
    scaling: AwsScaling | None = None  # elastic fleet: minNodes, scaling policies and schedules, the Spot mix

    @property
    def efa_count(self) -> int:
        return sum(1 for i in self.interfaces if i.is_efa)

    @property
    def fabric_gbps_wired(self) -> float:
        return self.efa_count * self.spec.instance.gbps_per_fabric_device

    @property
    def user_data_b64(self) -> str:
        """The cloud-config gzip-compressed, then Base64: EC2 takes at most 16 KB of user data "in raw form, before
        it is base64-encoded" (EC2 User Guide, instancedata-add-user-data), the whole bootstrap (scratch, EFA check,
        health check, MIG, metrics) is about 25 KB as text, and cloud-init uncompresses gzip user data
        (canonical/cloud-init doc/rtd/topics/format.rst)."""
        return self.user_data_b64_for(self.user_data)

    def user_data_b64_for(self, user_data: str) -> str:
        return base64.b64encode(gzip.compress(user_data.encode(), compresslevel=9, mtime=0)).decode()


def efa_interfaces(cards: int, efa_devices: int) -> tuple[NetworkInterface, ...]:
    """One EFA per network card, primary ENA first (scheme in the module docstring)."""
    efas = min(cards, efa_devices)
    if efas == 0:
        return (NetworkInterface(0, 0, "interface"),)
    return (
        NetworkInterface(0, 0, "interface"),
        NetworkInterface(0, 1, "efa-only"),
        *(NetworkInterface(card, 0, "efa-only") for card in range(1, efas)),
    )


def plan(spec: ClusterSpec) -> AwsLayout:
    refuse([*arch.problems(spec), *(_kubernetes_problems(spec) if spec.kubernetes is not None else ())])
    row = spec.instance
    if spec.fabric_wired:
        interfaces = efa_interfaces(row.networkCards or 1, row.fabricDevices)
    else:
        interfaces = (NetworkInterface(0, 0, "interface"),)
    if spec.network.public_ip and len(interfaces) > 1:
        raise ConfigError(
            f"{CLUSTER_KEY}.network.publicIp",
            f"true, but {row.instanceType} with EFA has {len(interfaces)} network interfaces and AWS assigns "
            "public IPs only to single-interface instances; reach the nodes through SSM (access: auto, the "
            "default) or a login node with a public IP (login: {publicIp: true}), or set fabric: none",
        )
    node_cidr, public_cidr = split_cidr(spec.network.cidr, 1, 2)  # two halves: nodes, NAT
    _check_purchase(spec)
    # a Grace (arm64) type takes its architecture's DLAMI (catalog/aws.yaml images.arch), never the x86_64 one
    entry: dict[str, Any] = catalog.arch_image("aws", row) or image_for("aws", row.instanceType)
    if spec.image == "auto":
        if not entry.get("ssmParameter"):
            raise ConfigError(
                f"{CLUSTER_KEY}.image", f"auto has no image for {row.instanceType} ({row.arch}): {entry['reason']}"
            )
        image = Image(entry["ssmParameter"], None, entry["description"])
    elif spec.image.startswith("ssm:"):
        image = Image(spec.image.removeprefix("ssm:"), None, f"AMI from SSM parameter {spec.image[4:]}")
    else:
        image = Image(None, spec.image, f"AMI {spec.image} as configured")
    scratch = scratch_for(spec, INSTANCE_STORE_GLOBS, EBS_GLOBS)
    efa_count = sum(1 for i in interfaces if i.is_efa)
    fabric, usability = efa_enablement(spec, efa_count)
    health_hook = _health_hook(spec)
    efa_capable = efa_count > 0 and spec.instance.fabric == "efa"
    shared = shared_for(spec, efa_capable)
    parts = node_parts(
        spec,
        scratch,
        fabric_devices=efa_count,
        nvme_globs=INSTANCE_STORE_GLOBS if scratch.kind == "nvme" else (),
        fabric=fabric,
        unhealthy_hook=script("aws_unhealthy.sh") if health_hook else None,
        mounts=shared.mount if shared else None,
    )
    slurm = slurm_plan(spec, shared.mount if shared else None)
    if slurm is not None:
        parts = (*parts, *slurm.compute_parts)
    scaling = scaling_plan(spec)
    if scaling is not None:
        parts = (*parts, scaling.agent)
    market: Literal["on-demand", "spot", "capacity-block"] = (
        "spot" if spec.spot else "capacity-block" if spec.reservation_type == "capacity-block" else "on-demand"
    )
    layout = AwsLayout(
        spec=spec,
        vpc_cidr=spec.network.cidr,
        node_subnet_cidr=node_cidr,
        public_subnet_cidr=public_cidr if spec.network.egress == "nat" else None,
        interfaces=interfaces,
        placement_strategy=None if spec.placement == "none" else spec.placement,
        image=image,
        root_gb=spec.storage.root_gb,
        scratch=scratch,
        market=market,
        capacity_reservation_id=spec.reservation or None,
        user_data=bootstrap.cloud_init(parts),
        tags={"Name": spec.name, **spec.base_tags},
        identity=_fleet_identity(node_identity(spec), scaling),
        access=access_plan(spec),
        placement_applied="none" if spec.placement == "none" else spec.placement,
        fabric_usability=usability,
        health_hook=health_hook,
        metrics=Metrics(
            endpoints=tuple((e.name, e.port, e.path) for e in metric_endpoints()) if spec.dcgm_exporter else (),
            from_login=spec.dcgm_exporter and spec.login is not None,
        ),
        shared=shared,
        shared_note=efa_note(shared, efa_capable),
        slurm=slurm,
        scaling=scaling,
    )
    return layout if spec.kubernetes is None else _with_kubernetes(layout)


def _check_purchase(spec: ClusterSpec) -> None:
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


def _capability_data() -> dict[str, Any]:
    """The AWS-only keys of the capabilities file (nodeRole, ssmEndpoints); contract.py reads the rest."""
    return capability_data("aws")


EFA_RESULT = "/var/lib/gpu-cluster/efa.json"


def instance_family(instance_type: str) -> str:
    """`p5en.48xlarge` -> `p5en`, `p6-b200.48xlarge` -> `p6-b200`."""
    return instance_type.split(".", 1)[0]


def nccl_env(instance_type: str) -> tuple[dict[str, str], str]:
    """The NCCL/libfabric environment for an EFA type, and its sources (capabilities `efa:`)."""
    efa = _capability_data()["efa"]
    env = {str(k): str(v) for k, v in efa["env"].items()}
    sources = [str(efa["envSource"])]
    family = efa["families"].get(instance_family(instance_type))
    if family:
        env.update({str(k): str(v) for k, v in family["env"].items()})
        sources.append(str(family["source"]))
    return env, "; ".join(sources)


def _default_image_vouches(spec: ClusterSpec) -> tuple[bool, str]:
    """Whether the image is the catalog's default (whose contents the catalog documents), and its name."""
    default: dict[str, Any] = catalog.load("aws").images["default"]
    entry = catalog.arch_image("aws", spec.instance) or image_for("aws", spec.instance.instanceType)
    if spec.image == "auto":
        return entry is default, entry.get("description", spec.instance.instanceType)
    if spec.image.removeprefix("ssm:") == default["ssmParameter"]:
        return True, default["description"]
    return False, spec.image


def efa_usability(spec: ClusterSpec, efa_count: int) -> FabricUsability:
    if not efa_count:
        return FabricUsability(False, ("no fabric wired",))
    vouched, image = _default_image_vouches(spec)
    if not vouched:
        return FabricUsability(
            False,
            (
                f"EFA software on {image}: the catalog cannot vouch for a custom image (libfabric with the efa "
                "provider and aws-ofi-nccl are needed; the boot check gpu-cluster-efa reports what it finds)",
            ),
        )
    efa: dict[str, Any] = catalog.load("aws").images["default"]["efa"]
    family = instance_family(spec.instance.instanceType)
    if family not in efa["supportedFamilies"]:
        return FabricUsability(
            False, (f"{family} is not among the instance types {image} supports (its release notes)",)
        )
    return FabricUsability(
        True,
        provides=(
            *(f"{p} from the image, verified at boot" for p in efa["provides"]),
            "NCCL environment in /etc/gpu-cluster/nccl.env",
        ),
    )


def efa_enablement(spec: ClusterSpec, efa_count: int) -> tuple[tuple[Part, ...], FabricUsability]:
    """The fabric parts (NCCL environment, the EFA boot check) and whether NCCL can use the fabric."""
    usability = efa_usability(spec, efa_count)
    if not efa_count:
        return (), usability
    efa = _capability_data()["efa"]
    env, source = nccl_env(spec.instance.instanceType)
    check_env = {
        "EFA_DIR": efa["efaDir"],
        "INSTALLED_PACKAGES": efa["installedPackages"],
        "PLUGIN_DIRS": " ".join(efa["pluginDirs"]),
        "PLUGIN_LIBRARIES": " ".join(efa["pluginLibraries"]),
        "MIN_LIBFABRIC": efa["minimum"]["libfabric"],
        "MIN_OFI_NCCL": efa["minimum"]["awsOfiNccl"],
        "RESULT": EFA_RESULT,
    }
    check_env = {k: str(v) for k, v in check_env.items()}
    check = service_part(
        "efa",
        script_text=script("aws_efa.sh"),
        env=check_env,
        unit=oneshot_unit(
            "gpu-cluster EFA check (libfabric efa provider, aws-ofi-nccl, loader path)",
            name="efa",
            wants=("network-online.target",),
            after=("network-online.target",),
            before=("gpu-cluster-health.service",),
        ),
        summary=f"checks the EFA provider and aws-ofi-nccl at boot ({EFA_RESULT}).",
    )
    return (nccl_env_part(env, source), check), usability


def health_hook_action() -> str:
    """The one IAM action the self-removal hook needs (capabilities `healthHook`)."""
    return str(_capability_data()["healthHook"]["action"])


def _health_hook(spec: ClusterSpec) -> bool:
    """Self-removal on AWS: SetInstanceHealth in the node's own Auto Scaling group (managed groups only)."""
    if spec.health_action != "replace":
        return False
    if spec.node_group != "managed":
        raise ConfigError(
            f"{CLUSTER_KEY}.health.action",
            "replace needs nodeGroup: managed on AWS (an Auto Scaling group replaces an unhealthy node; an "
            "instance is not replaced); use report (the default for instances) or nodeGroup: managed",
        )
    return True


def _fleet_identity(identity: NodeIdentity, scaling: AwsScaling | None) -> NodeIdentity:
    """With gpuUtilization the CloudWatch agent's one write is the inline PutMetricData grant scoped to its namespace
    (aws_scaling.permission): the broader CloudWatchAgentServerPolicy (every namespace, logs) is then left off."""
    if scaling is None or scaling.gpu is None:
        return identity
    broad = scaling_data()["gpuUtilization"]["replacesPolicy"]
    return replace(identity, policies=tuple(p for p in identity.policies if p != broad))


def node_identity(spec: ClusterSpec) -> NodeIdentity:
    k = f"{CLUSTER_KEY}.identity"
    ident = spec.identity
    role = _capability_data()["nodeRole"]
    if ident.existing is not None:
        # An instance profile carries a role we do not manage: we cannot attach policies to it.
        if ident.policies or ident.read_storage:
            key = f"{k}.policies" if ident.policies else f"{k}.readStorage"
            raise ConfigError(
                key,
                f"set together with identity.existing ({ident.existing}); attach policies to that profile's "
                "role yourself, or drop identity.existing to let the cluster create its role",
            )
        return NodeIdentity(ident.existing, role["trustService"], ())
    arns = [p["arn"] for p in role["policies"]]
    if ident.read_storage:
        arns.append(role["readStorage"]["arn"])
    arns.extend(ident.policies)
    return NodeIdentity(None, role["trustService"], tuple(dict.fromkeys(arns)))


def access_plan(spec: ClusterSpec) -> Access:
    k = f"{CLUSTER_KEY}."
    net = spec.network
    login = None
    if spec.login is not None:
        if net.public_ip:
            raise ConfigError(
                f"{k}network.publicIp",
                "true, but a login node is the only place a public IP may land; set login.publicIp instead",
            )
        if spec.login.public_ip and net.egress != "nat":
            raise ConfigError(
                f"{k}login.publicIp",
                "true needs network.egress: nat (the login node sits in the NAT gateway's public subnet)",
            )
        # the login image of the login type's architecture (catalog images.login, rules.cpuArch)
        entry: dict[str, Any] = catalog.cpu_image("aws", str(spec.login.instance_type))
        login = Login(
            instance_type=str(spec.login.instance_type),
            public_ip=spec.login.public_ip,
            image=Image(entry["ssmParameter"], None, entry["description"]),
        )
    endpoints = _capability_data()["ssmEndpoints"]
    # SSM needs a way out to its service: the NAT, the nodes' own public IPs, or interface endpoints.
    needs_endpoints = spec.access == "ssm" and net.egress == "none" and not net.public_ip
    return Access(
        method=spec.access,
        endpoint_services=tuple(endpoints["services"]) if needs_endpoints else (),
        endpoint_port=int(endpoints["port"]),
        # Without a login node, sshCidrs keep their meaning on the nodes (stacks deployed today keep their rules).
        node_ssh_cidrs=net.ssh_cidrs if login is None else (),
        login=login,
        login_ssh_cidrs=net.ssh_cidrs if login is not None else (),
    )


NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE_TYPE = "aws:ec2/launchTemplate:LaunchTemplate"


def _efa_count(template: Mapping[str, Any]) -> int:
    nics = template["inputs"].get("networkInterfaces") or []
    return sum(1 for n in nics if n.get("interfaceType") in ("efa", "efa-only"))


def _gpu_templates(resources: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The launch templates the GPU nodes launch from: with EKS, those the GPU-tainted node groups reference
    (the system pool's template carries no fabric and must not count); otherwise every template."""
    templates = [r for r in resources if r["type"] == LAUNCH_TEMPLATE_TYPE]
    gpu_groups = [
        r
        for r in resources
        if r["type"] == NODE_GROUP_TYPE
        and any(t.get("key") == GPU_TAINT["key"] for t in r["inputs"].get("taints") or [])
    ]
    if not gpu_groups:
        return templates
    names = {
        name
        for group in gpu_groups
        for name in placeholders.referenced(str((group["inputs"].get("launchTemplate") or {}).get("id", "")))
    }
    return [t for t in templates if t["name"] in names]


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from recorded launch-template inputs (the plan's proof)."""
    wired = max((_efa_count(t) for t in _gpu_templates(resources)), default=0)
    return wired * gbps_per_device


# --- scheduler: kubernetes (EKS) ------------------------------------------------------------------------------
# The GPU pool is an EKS managed node group on a launch template that carries the same interfaces (`interfaces`),
# placement group, disks and IMDS settings as the VM mode's; EKS picks the AMI (`amiType`) and merges its own
# bootstrap into our MIME user data. Data: catalog/kubernetes/aws.yaml.
MIME_BOUNDARY = "==GPU-CLUSTER-BOUNDARY=="


@dataclass(frozen=True)
class EksPool:
    """One managed node group: the CPU system pool or the GPU pool."""

    key: Literal["system", "gpu"]  # the logical-name suffix
    instance_type: str
    ami_type: str
    capacity_type: str  # ON_DEMAND | SPOT | CAPACITY_BLOCK (the EKS API's names)
    desired: int
    min_size: int
    max_size: int
    root_gb: int
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]  # {key, value, effect} with the EKS API's effect names


@dataclass(frozen=True)
class EksLayout:
    service: str
    version: str
    public_endpoint: bool
    public_cidrs: tuple[str, ...]  # only with public_endpoint
    control_plane_subnet_cidr: str  # a subnet in a second zone, for the control plane's interfaces only
    cluster_trust_service: str
    cluster_policies: tuple[str, ...]
    authentication_mode: str
    admin_policy_arn: str
    root_device: str
    system: EksPool
    gpu: EksPool
    releases: tuple[Release, ...]
    gpu_user_data: str  # MIME multi-part: EKS adds its nodeadm part to it

    @property
    def gpu_user_data_b64(self) -> str:
        # The document itself stays plain MIME: EKS parses it to add its own part (ours inside is gzip).
        return base64.b64encode(self.gpu_user_data.encode()).decode()

    @property
    def pools(self) -> tuple[EksPool, EksPool]:
        return (self.system, self.gpu)


def kubernetes_offer() -> kubernetes_offers.KubernetesOffer:
    offer = kubernetes_offers.offer("aws")
    assert offer is not None  # shipped with the package
    return offer


def _kubernetes_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """What scheduler kubernetes on EKS cannot build from the spec: one line per key, before any resource."""
    k = f"{CLUSTER_KEY}."
    net = spec.network
    if net.existing is not None:
        yield ConfigError(
            f"{k}network.existing",
            "set with scheduler kubernetes: the EKS control plane needs subnets in two zones and the cluster builds "
            "its own (one for the nodes, one more for the control plane); drop network.existing",
        )
    if net.public_ip:
        yield ConfigError(f"{k}network.publicIp", "true with scheduler kubernetes: EKS nodes stay private; use false")
    if net.egress != "nat":
        yield ConfigError(
            f"{k}network.egress",
            f"{net.egress} with scheduler kubernetes: the nodes pull the GPU operator's and the EFA plugin's images "
            "(nvcr.io, ECR) and reach the EKS and STS APIs; use nat",
        )
    if spec.identity.existing is not None:
        yield ConfigError(
            f"{k}identity.existing",
            "set with scheduler kubernetes: an EKS node group takes an IAM role, not an instance profile; drop it "
            "to let the cluster create the node role",
        )
    if spec.storage.shared is not None:
        yield ConfigError(
            f"{k}storage.shared",
            "set with scheduler kubernetes: the node bootstrap mounts it with apt packages and EKS nodes run "
            "Amazon Linux 2023; mount FSx in pods with the FSx for Lustre CSI driver, or drop storage.shared",
        )
    if spec.image != "auto":
        yield ConfigError(
            f"{k}image",
            f"{spec.image} with scheduler kubernetes: the GPU pool runs the EKS-optimized AL2023 NVIDIA AMI that EKS "
            "picks (amiType); use auto",
        )
    if spec.max_nodes < 1:
        yield ConfigError(f"{k}maxNodes", "0 with scheduler kubernetes: an EKS node group's maxSize is at least 1")


def mime_user_data(cloud_config: str) -> str:
    """The cloud-config as the one part of a MIME multi-part document (what EKS merges its bootstrap into).

    The part is gzip (base64 in the MIME): EC2 takes at most 16 KB of user data and EKS adds its own part (the
    cluster's endpoint and CA) to ours. cloud-init decompresses a part of a gzip content type and then reads it as
    what it starts with, `#cloud-config` (canonical/cloud-init cloudinit/user_data.py: DECOMP_TYPES, _process_msg).
    """
    packed = base64.encodebytes(gzip.compress(cloud_config.encode(), compresslevel=9, mtime=0)).decode()
    if MIME_BOUNDARY in packed:  # pragma: no cover - base64 has no "="-runs of this shape; guard a broken document
        raise ValueError(f"the user data contains the MIME boundary {MIME_BOUNDARY}")
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\n\n'
        f"--{MIME_BOUNDARY}\n"
        "Content-Type: application/gzip\n"
        "Content-Transfer-Encoding: base64\n\n"
        f"{packed}"
        f"--{MIME_BOUNDARY}--\n"
    )


def eks_usability(efa_count: int) -> FabricUsability:
    """EFA on an EKS GPU node: the AMI brings the kernel side, the plugin advertises it, the image brings NCCL's."""
    if not efa_count:
        return FabricUsability(False, ("no fabric wired",))
    return FabricUsability(
        False,
        (
            "libfabric with the efa provider and aws-ofi-nccl: the EKS AL2023 NVIDIA AMI has only the EFA kernel "
            "module and rdma-core, so they must be in the workload's container image",
        ),
        provides=(
            "EFA kernel module and rdma-core from the EKS AL2023 NVIDIA AMI",
            "vpc.amazonaws.com/efa advertised by aws-efa-k8s-device-plugin",
        ),
    )


def _with_kubernetes(layout: AwsLayout) -> AwsLayout:
    """The VM layout turned into EKS's: same interfaces, placement, disks; EKS pools, releases and user data."""
    spec = layout.spec
    kube = spec.kubernetes
    assert kube is not None
    offer = kubernetes_offer()
    data = offer.extra
    groups = data["nodeGroups"]
    # The second half of the VPC holds the NAT's subnet (egress nat is required) and the control plane's.
    public_cidr, control_plane_cidr = split_cidr(split_cidr(spec.network.cidr, 1, 2)[1], 1, 2)
    # EKS nodes: no host exporters (the operator's or the chart's DCGM exporter), no self-removal hook (EKS owns
    # the Auto Scaling group): the health check reports. No host EFA check: libfabric is the container's.
    node_spec = replace(spec, dcgm_exporter=False, health_action="report" if spec.health_action else None)
    parts = node_parts(
        node_spec,
        layout.scratch,
        fabric_devices=layout.efa_count,
        nvme_globs=INSTANCE_STORE_GLOBS if layout.scratch.kind == "nvme" else (),
    )
    effects: dict[str, str] = groups["taintEffects"]
    capacity: dict[str, str] = groups["capacityTypes"]
    # the system pool's AMI on its type's architecture (catalog/aws.yaml rules.cpuArch)
    arm = catalog.cpu_arch("aws", kube.system_instance_type) == "arm64"
    system = EksPool(
        key="system",
        instance_type=kube.system_instance_type,
        ami_type=str(groups["systemAmiTypeArm64" if arm else "systemAmiType"]),
        capacity_type=capacity["on-demand"],
        desired=kube.system_nodes,
        min_size=kube.system_nodes,
        max_size=kube.system_nodes,
        root_gb=int(groups["systemRootGb"]),
        labels={f"{LABEL_PREFIX}/pool": "system"},
        taints=(),
    )
    gpu = EksPool(
        key="gpu",
        instance_type=spec.instance.instanceType,
        ami_type=str(groups["gpuAmiType"]),
        capacity_type=capacity[layout.market],
        desired=spec.nodes,
        min_size=0 if spec.max_nodes > spec.nodes else spec.nodes,
        max_size=spec.max_nodes,
        root_gb=layout.root_gb,
        labels=gpu_labels(spec),
        taints=({**GPU_TAINT, "effect": effects[GPU_TAINT["effect"]]},),
    )
    role = data["clusterRole"]
    access = data["access"]
    node_policies = tuple(p["arn"] for p in data["nodeRolePolicies"])
    identity = replace(layout.identity, policies=tuple(dict.fromkeys((*layout.identity.policies, *node_policies))))
    eks = EksLayout(
        service=offer.service,
        version=kube.version,
        public_endpoint=kube.public_endpoint,
        public_cidrs=kube.public_cidrs if kube.public_endpoint else (),
        control_plane_subnet_cidr=control_plane_cidr,
        cluster_trust_service=str(role["trustService"]),
        cluster_policies=tuple(p["arn"] for p in role["policies"]),
        authentication_mode=str(access["authenticationMode"]),
        admin_policy_arn=str(access["adminPolicyArn"]),
        root_device=str(groups["rootDevice"]),
        system=system,
        gpu=gpu,
        releases=releases(spec),
        gpu_user_data=mime_user_data(bootstrap.cloud_init(parts)),
    )
    return replace(
        layout,
        public_subnet_cidr=public_cidr,
        user_data=bootstrap.cloud_init(parts),
        identity=identity,
        fabric_usability=eks_usability(layout.efa_count),
        health_hook=False,
        metrics=Metrics((), False),
        kubernetes=eks,
    )
