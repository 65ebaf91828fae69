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
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from .. import catalog
from ..errors import CLUSTER_KEY, ConfigError
from ..spec import ClusterSpec
from . import Scratch, cloud_init, image_for, scratch_for, split_cidr

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

    @property
    def efa_count(self) -> int:
        return sum(1 for i in self.interfaces if i.is_efa)

    @property
    def fabric_gbps_wired(self) -> float:
        return self.efa_count * self.spec.instance.gbps_per_fabric_device

    @property
    def user_data_b64(self) -> str:
        return base64.b64encode(self.user_data.encode()).decode()


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
    entry: dict[str, Any] = image_for("aws", row.instanceType)
    if spec.image == "auto":
        image = Image(entry["ssmParameter"], None, entry["description"])
    elif spec.image.startswith("ssm:"):
        image = Image(spec.image.removeprefix("ssm:"), None, f"AMI from SSM parameter {spec.image[4:]}")
    else:
        image = Image(None, spec.image, f"AMI {spec.image} as configured")
    scratch = scratch_for(spec, INSTANCE_STORE_GLOBS, EBS_GLOBS)
    market: Literal["on-demand", "spot", "capacity-block"] = (
        "spot" if spec.spot else "capacity-block" if spec.reservation_type == "capacity-block" else "on-demand"
    )
    return AwsLayout(
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
        user_data=cloud_init(scratch),
        tags={"Name": spec.name, **spec.base_tags},
        identity=node_identity(spec),
        access=access_plan(spec),
    )


_CAPABILITIES = Path(__file__).resolve().parent.parent / "catalog" / "capabilities" / "aws.yaml"


@cache
def _capability_data() -> dict[str, Any]:
    """The AWS-only keys of the capabilities file (nodeRole, ssmEndpoints); contract.py reads the rest."""
    data: dict[str, Any] = yaml.safe_load(_CAPABILITIES.read_text())
    return data


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
        entry: dict[str, Any] = catalog.load("aws").images["login"]
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


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from recorded launch-template inputs (the plan's proof)."""
    wired = 0
    for res in resources:
        if res["type"] == "aws:ec2/launchTemplate:LaunchTemplate":
            nics = res["inputs"].get("networkInterfaces") or []
            wired = max(wired, sum(1 for n in nics if n.get("interfaceType") in ("efa", "efa-only")))
    return wired * gbps_per_device
