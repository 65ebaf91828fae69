"""GCP networks: the host VPC and the GPU VPCs, their subnets and the NICs a fabric type needs.

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

import ipaddress
from dataclasses import dataclass
from typing import Literal

from ...cidr import PRIVATE_RANGES
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec

NicType = Literal["GVNIC", "MRDMA"]
GPU_SUBNET_BITS = 4  # the buddy block is split into 16 subnets; the largest layout needs 9


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


def check_existing_subnetworks(spec: ClusterSpec, nics: tuple[Nic, ...]) -> None:
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
