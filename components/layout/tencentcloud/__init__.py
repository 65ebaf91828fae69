"""Tencent Cloud layout: subnet, HPC cluster or placement group, image, disks, identity, access and bootstrap.

HCC types (HCCG5v, HCCPNV4h: `extra.hcc` in catalog/tencentcloud.yaml) reach each other over RDMA only
inside one `cvm.HpcCluster`: every node gets its `hpc_cluster_id` (tencentcloud-iac-pulumi 0.2.3
instance.Instance docstring). The auto scaling configuration has no such field, so managed mode is
refused for HCC types (capabilities `managedGroupLimits`). Other multi-node clusters go into a
`placement.Group` (SW for cluster, HOST for spread).

The fabric counted as wired is the HCC RDMA rating when the nodes are in the HPC cluster; whether NCCL
can use it is `fabric_usability`: Tencent says HCC RDMA needs TCCL and the RDMA agent (doc 1236/62821),
which neither the public image nor this bootstrap provides, so it is reported unusable with the reason.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ... import bootstrap, catalog
from ...bootstrap.fabric import FabricUsability, nccl_env_part
from ...catalog.capabilities import capabilities, capability_data
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch, image_for, scratch_for
from ..node import node_parts

# Local NVMe of the HCC types; cloud disks (CBS) are virtio /dev/vd[b-z] (system disk vda).
NVME_GLOBS = ("/dev/nvme[0-9]*n1",)
DISK_GLOBS = ("/dev/vd[b-z]",)
DISK_TYPE = "CLOUD_SSD"  # instance.Instance system_disk_type / data_disk_type valid value
USER_DATA_MAX = 16 * 1024  # user_data "Must be base64 encoded and up to 16 KB" (instance.Instance docstring)
NAT_BANDWIDTH_MBPS = 100  # nat.Gateway bandwidth default (valid 20 ... 5000)
Placement = Literal["cluster", "spread", "none"]
CAM_ROLE_NAME = re.compile(r"[^A-Za-z0-9+=,.@_-]")


def tencent_data() -> dict[str, Any]:
    """The Tencent keys of the capabilities file beyond the contract's schema (nodeIdentity, hcc, ...)."""
    return capability_data("tencentcloud")


@dataclass(frozen=True)
class Image:
    image_id: str | None  # explicit id; None = newest public image with os_name at deploy
    os_name: str | None
    description: str


@dataclass(frozen=True)
class NodeIdentity:
    create: bool
    role_name: str
    policies: tuple[str, ...]
    trusted_service: str

    @property
    def document(self) -> str:
        statement = {
            "action": ["name/sts:AssumeRole"],
            "effect": "allow",
            "principal": {"service": [self.trusted_service]},
        }
        return json.dumps({"statement": [statement], "version": "2.0"}, sort_keys=True)


@dataclass(frozen=True)
class LoginNode:
    instance_type: str
    os_name: str
    public_ip: bool
    ssh_cidrs: tuple[str, ...]


@dataclass(frozen=True)
class Access:
    method: str  # ssh | none
    login_user: str


@dataclass(frozen=True)
class TencentLayout:
    spec: ClusterSpec
    zone: str | None  # None: first zone that sells the type, looked up at deploy
    vpc_cidr: str
    subnet_cidr: str
    nat: bool
    nat_bandwidth_mbps: int
    hcc: bool  # the type is an HCC type
    hpc_cluster: bool  # the nodes go into one cvm.HpcCluster
    placement_group_type: str | None  # placement.Group type (SW / HOST), None without one
    placement_applied: Placement
    image: Image
    root_gb: int
    scratch: Scratch
    scratch_delete_with_instance: bool  # the scratch data disk goes with its node (never on spot: spotDataDisks)
    spot: bool
    spot_max_price: str | None  # SPOTPAID needs a cap (instance.Instance docstring): maxHourlyUsd per node
    public_ip: bool
    node_ssh_cidrs: tuple[str, ...]
    identity: NodeIdentity
    access: Access
    login: LoginNode | None
    user_data: str
    tags: Mapping[str, str]
    warnings: tuple[str, ...]
    fabric_usability: FabricUsability

    @property
    def fabric_gbps_wired(self) -> float:
        return self.spec.instance.fabricGbps if self.hpc_cluster else 0.0

    @property
    def user_data_b64(self) -> str:
        """The cloud-config gzip-compressed (fixed mtime: reproducible plans), then Base64.

        The whole bootstrap is about 15 KB as text, 20 KB in Base64: over the 16 KB user_data limit.
        cloud-init uncompresses gzip user data (canonical/cloud-init doc/rtd/topics/format.rst).
        """
        return base64.b64encode(gzip.compress(self.user_data.encode(), compresslevel=9, mtime=0)).decode()


def is_hcc(spec: ClusterSpec) -> bool:
    return bool(spec.instance.extra.get("hcc"))


def subnet_cidr(cidr: str) -> str:
    """The nodes' subnet: the VPC range itself (one subnet in one zone)."""
    return cidr


def _placement(spec: ClusterSpec, hcc: bool, warnings: list[str]) -> tuple[Placement, str | None]:
    key = f"{CLUSTER_KEY}.placement"
    asked: Placement = spec.placement
    if hcc and spec.fabric_wired:
        # the HPC cluster is the placement HCC nodes need; a placement group beside it is not documented
        return "cluster", None
    if asked == "none" or spec.max_nodes <= 1:
        return "none", None
    if spec.spot and not capabilities("tencentcloud").spot_with_placement:
        warnings.append(
            f"{key}: {asked} is not applied to spot nodes (no source that SPOTPAID nodes may join a placement group)"
        )
        return "none", None
    groups = tencent_data()["placementGroups"]
    return asked, str(groups[asked])


def _identity(spec: ClusterSpec) -> NodeIdentity:
    data = tencent_data()["nodeIdentity"]
    wanted = [*data["defaultPolicies"], *spec.identity.policies]
    if spec.identity.read_storage:
        wanted.append(data["readStoragePolicy"])
    policies = tuple(dict.fromkeys(wanted))
    if spec.identity.existing:
        return NodeIdentity(False, spec.identity.existing, policies, data["trustedService"])
    name = CAM_ROLE_NAME.sub("-", f"{spec.name}-{spec.stack}-nodes")[:128]
    return NodeIdentity(True, name, policies, data["trustedService"])


def fabric_usability(spec: ClusterSpec, hpc_cluster: bool) -> FabricUsability:
    """HCC RDMA is usable by NCCL only with TCCL and the RDMA agent (Tencent doc 1236/62821): none is provided."""
    if not hpc_cluster:
        return FabricUsability(False, ("no fabric wired",))
    hcc = tencent_data()["hcc"]
    where = f"image {spec.image}" if spec.image != "auto" else "the public Ubuntu image"
    return FabricUsability(
        False,
        tuple(f"{need}: not provided by {where} or the bootstrap ({hcc['source']})" for need in hcc["needs"]),
    )


def _problems(spec: ClusterSpec, hcc: bool) -> Iterator[ConfigError]:
    if hcc and spec.node_group == "managed":
        limit = capabilities("tencentcloud").managed_limit("hccCluster")
        assert limit is not None
        yield ConfigError(f"{CLUSTER_KEY}.nodeGroup", f"managed {limit.message} ({spec.instance.instanceType})")
    if spec.spot and spec.max_hourly_usd is None:
        yield ConfigError(
            "gpu-cluster:maxHourlyUsd",
            "not set, but spot is true: Tencent's SPOTPAID nodes need a maximum price (spot_max_price); "
            "set maxHourlyUsd (the cap per node is maxHourlyUsd / nodes, in the account's billing currency)",
        )
    if hcc and spec.spot:
        yield ConfigError(
            f"{CLUSTER_KEY}.spot",
            f"true, but {spec.instance.instanceType} is an HCC type; spot (SPOTPAID) is offered for non-HCC types only",
        )


def plan(spec: ClusterSpec) -> TencentLayout:
    row = spec.instance
    hcc = is_hcc(spec)
    refuse(_problems(spec, hcc))
    warnings: list[str] = []
    key = CLUSTER_KEY
    hpc_cluster = hcc and spec.fabric_wired
    placement, group_type = _placement(spec, hcc, warnings)
    if spec.zone is None:
        warnings.append(
            f"{key}.zone: not set; the subnet goes into the first zone of {spec.region} that sells {row.instanceType} "
            "(tencentcloud.Instance.get_types at the first deploy; later answers are ignored); set zone to choose"
        )
    entry: dict[str, Any] = image_for("tencentcloud", row.instanceType)
    if spec.image == "auto":
        image = Image(None, entry["osName"], entry["description"])
        warnings.append(
            f"{key}.image: auto is {entry['osName']} without an NVIDIA driver: tencentcloud-iac-pulumi 0.2.3 has no "
            "argument for Tencent's automatic GPU driver installation; set image to a GPU image id "
            "(docs/tencentcloud.md)"
        )
    else:
        image = Image(spec.image, None, f"image {spec.image} as configured (its GPU driver is not managed here)")
    if spec.health_action == "replace":
        warnings.append(
            f"{key}.health.action: replace acts as report on tencentcloud: no node group here replaces an instance; "
            "the health check writes /var/lib/gpu-cluster/health.json and the journal"
        )
    nvme = spec.scratch == "nvme"
    scratch = scratch_for(spec, NVME_GLOBS, DISK_GLOBS)
    delete_with_instance = not scratch.retain
    if spec.spot and scratch.kind == "disk" and delete_with_instance:
        spot_disks = tencent_data()["spotDataDisks"]
        delete_with_instance = bool(spot_disks["deleteWithInstance"])
        warnings.append(
            f"{key}.spot: {one_line(spot_disks['message']).format(disk=f'{spec.name}-scratch')}; set "
            f"{key}.storage.retainScratch: true to say so, or use scratch: none"
        )
    fabric = []
    if hpc_cluster:
        hcc_data = tencent_data()["hcc"]
        env = {str(k): str(v) for k, v in hcc_data["ncclEnv"].items()}
        fabric.append(nccl_env_part(env, one_line(hcc_data["ncclEnvSource"])))
    parts = node_parts(
        spec,
        scratch,
        fabric_devices=row.fabricDevices if hpc_cluster else 0,
        nvme_globs=NVME_GLOBS if nvme else (),
        fabric=fabric,
    )
    user_data = bootstrap.cloud_init(parts)
    login = None
    if spec.login is not None:
        assert spec.login.instance_type is not None
        login = LoginNode(
            spec.login.instance_type, entry["osName"], spec.login.public_ip, tuple(spec.network.ssh_cidrs)
        )
    return TencentLayout(
        spec=spec,
        zone=spec.zone,
        vpc_cidr=spec.network.cidr,
        subnet_cidr=subnet_cidr(spec.network.cidr),
        nat=spec.network.egress == "nat",
        nat_bandwidth_mbps=NAT_BANDWIDTH_MBPS,
        hcc=hcc,
        hpc_cluster=hpc_cluster,
        placement_group_type=group_type,
        placement_applied=placement,
        image=image,
        root_gb=spec.storage.root_gb,
        scratch=scratch,
        scratch_delete_with_instance=delete_with_instance,
        spot=spec.spot,
        spot_max_price=f"{spec.max_hourly_usd / max(spec.max_nodes, 1):.2f}"
        if spec.spot and spec.max_hourly_usd
        else None,
        public_ip=spec.network.public_ip and login is None,
        node_ssh_cidrs=tuple(spec.network.ssh_cidrs) if login is None else (),
        identity=_identity(spec),
        access=Access(spec.access, str(tencent_data()["loginUser"]["default"])),
        login=login,
        user_data=user_data,
        tags=dict(spec.base_tags),
        warnings=tuple(warnings),
        fabric_usability=fabric_usability(spec, hpc_cluster),
    )


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from the recorded resources: HCC nodes that name an HPC cluster that exists.

    An HCC node's RDMA ports (intrinsic to its type: no NIC resource is registered) join the cluster's RDMA
    network only through `hpcClusterId`; ports x per-device rating is what such a node gets, else 0.
    """
    clusters = {r["name"] for r in resources if r["type"] == "tencentcloud:Cvm/hpcCluster:HpcCluster"}
    if not clusters:
        return 0.0
    wired = 0.0
    for res in resources:
        if res["type"] != "tencentcloud:Instance/instance:Instance":
            continue
        ref = str(res["inputs"].get("hpcClusterId") or "")
        if any(f" of {name}>" in ref for name in clusters):
            rows = catalog.find("tencentcloud", str(res["inputs"].get("instanceType")))
            devices = rows[0].fabricDevices if rows else 0
            wired = max(wired, devices * gbps_per_device)
    return wired
