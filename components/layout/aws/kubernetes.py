"""scheduler: kubernetes on AWS (EKS), pure.

The GPU pool is an EKS managed node group on a launch template that carries the same interfaces, placement group,
disks and IMDS settings as the VM mode's; EKS picks the AMI (`amiType`) and merges its own bootstrap into our MIME
user data. Data: catalog/kubernetes/aws.yaml. `plan()` returns what the VM layout becomes with EKS (the package's
`plan()` applies it).
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from ... import bootstrap, catalog
from ...bootstrap.fabric import FabricUsability
from ...catalog import kubernetes as kubernetes_offers
from ...catalog.update import cloud_update
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .. import Scratch, split_cidr
from ..kubernetes import GPU_TAINT, LABEL_PREFIX, Release, gpu_labels, releases
from ..node import node_parts
from .identity import NodeIdentity
from .nodes import INSTANCE_STORE_GLOBS, Market

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
    max_unavailable: int | None = None  # update_config: nodes an update takes down at once (None: EKS's default)


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


def kubernetes_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
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


@dataclass(frozen=True)
class EksPlan:
    """What the VM layout becomes with EKS: same interfaces, placement, disks; EKS pools, releases and user data."""

    eks: EksLayout
    public_subnet_cidr: str
    user_data: str
    identity: NodeIdentity
    fabric_usability: FabricUsability


def plan(
    spec: ClusterSpec, *, scratch: Scratch, efa_count: int, market: Market, root_gb: int, identity: NodeIdentity
) -> EksPlan:
    """EKS's pools, releases and user data for the VM layout's scratch, EFA count, market, root disk and identity."""
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
        scratch,
        fabric_devices=efa_count,
        nvme_globs=INSTANCE_STORE_GLOBS if scratch.kind == "nvme" else (),
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
        capacity_type=capacity[market],
        desired=spec.nodes,
        min_size=0 if spec.max_nodes > spec.nodes else spec.nodes,
        max_size=spec.max_nodes,
        root_gb=root_gb,
        labels=gpu_labels(spec),
        taints=({**GPU_TAINT, "effect": effects[GPU_TAINT["effect"]]},),
        # the node group drains each node itself; the spec's update block sizes its batches
        max_unavailable=_max_unavailable(spec),
    )
    role = data["clusterRole"]
    access = data["access"]
    node_policies = tuple(p["arn"] for p in data["nodeRolePolicies"])
    identity = replace(identity, policies=tuple(dict.fromkeys((*identity.policies, *node_policies))))
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
    return EksPlan(
        eks=eks,
        public_subnet_cidr=public_cidr,
        user_data=bootstrap.cloud_init(parts),
        identity=identity,
        fabric_usability=eks_usability(efa_count),
    )


def _max_unavailable(spec: ClusterSpec) -> int:
    """update_config.max_unavailable of the GPU node group: the spec's batch, within the API's cap."""
    batch, cap = spec.update.max_unavailable(spec.nodes), cloud_update("aws").kubernetes_max_unavailable
    return batch if cap is None else min(batch, cap)
