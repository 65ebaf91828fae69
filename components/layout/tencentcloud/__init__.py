"""Tencent Cloud layout: subnet, HPC cluster or placement group, image, disks, identity, access and bootstrap.

HCC types (HCCG5v, HCCPNV4h: `extra.hcc` in catalog/tencentcloud.yaml) reach each other over RDMA only
inside one `cvm.HpcCluster`: every node gets its `hpc_cluster_id` (tencentcloud-iac-pulumi 0.2.3
instance.Instance docstring). The auto scaling configuration has no such field, so managed mode is
refused for HCC types (capabilities `managedGroupLimits`). Other multi-node clusters go into a
`placement.Group` (SW for cluster, HOST for spread).

The fabric counted as wired is the HCC RDMA rating when the nodes are in the HPC cluster; whether NCCL
can use it is `fabric_usability`: Tencent says HCC RDMA needs TCCL and the RDMA agent (doc 1236/62821),
which neither the public image nor this bootstrap provides, so it is reported unusable with the reason.

One module per concern, with the resource package's names where it has one (network, nodes, identity, access), plus
`fabric`, `data` and `proof` (`count_wired_gbps`). This module holds only `TencentLayout` and `plan()`, which composes
them: a refused config raises here, before any resource is registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ... import bootstrap
from ...bootstrap.fabric import FabricUsability, nccl_env_part
from ...bootstrap.tencentcloud_driver import driver_summary, tencentcloud_driver_part
from ...catalog import releases
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch, image_for, scratch_for
from ..node import node_parts
from .access import Access, LoginNode, access_problems
from .audit import TencentAudit
from .audit import plan as audit_plan
from .data import tencent_data
from .encryption import KmsKey, TencentEncryption
from .encryption import plan as encryption_plan
from .fabric import fabric_usability
from .identity import NodeIdentity, node_identity
from .kubernetes import TkeLayout, tke_layout, tke_problems
from .logs import TencentLogs
from .logs import data as logs_data
from .logs import plan as logs_plan
from .monitoring import TencentMonitoring
from .monitoring import plan as monitoring_plan
from .network import NAT_BANDWIDTH_MBPS, subnet_cidr
from .nodes import (
    DISK_GLOBS,
    NVME_GLOBS,
    USER_DATA_MAX,
    Image,
    ManagedGroup,
    Placement,
    applied_placement,
    is_hcc,
    managed_group,
    managed_scratch,
    node_problems,
)
from .proof import count_wired_gbps
from .slurm import TencentSlurm, slurm_compute_parts, tencent_slurm

__all__ = [
    "Access",
    "Image",
    "KmsKey",
    "LoginNode",
    "ManagedGroup",
    "NodeIdentity",
    "TencentAudit",
    "TencentEncryption",
    "TencentLayout",
    "TencentSlurm",
    "TkeLayout",
    "count_wired_gbps",
    "plan",
]


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
    monitoring: TencentMonitoring | None  # the login node's Prometheus and Grafana (layout/tencentcloud/monitoring.py)
    user_data: str
    tags: Mapping[str, str]
    warnings: tuple[str, ...]
    fabric_usability: FabricUsability
    logs: TencentLogs | None = None  # monitoring.logs: the CLS topic and LogListener on every node
    encryption: TencentEncryption | None = None  # the data disks' KMS key (encryption.key); None: the CBS-managed key
    audit: TencentAudit | None = None  # compliance mlps3: the CloudAudit tracking set to a CLS topic
    slurm: TencentSlurm | None = None  # scheduler: slurm: the head node, the MUNGE key and configuration in SSM
    kubernetes: TkeLayout | None = None  # scheduler: kubernetes (TKE); None builds the nodes as instances
    gpu_driver: str | None = None  # the plan's line for the driver the node installs at boot (None: the image's own)
    group: ManagedGroup | None = None  # nodeGroup: managed (an auto scaling group); None: one instance per node

    @property
    def fabric_gbps_wired(self) -> float:
        return self.spec.instance.fabricGbps if self.hpc_cluster else 0.0

    @property
    def user_data_b64(self) -> str:
        """The cloud-config gzip-compressed (fixed mtime: reproducible plans), then Base64.

        The whole bootstrap is about 15 KB as text, 20 KB in Base64: over the 16 KB user_data limit.
        cloud-init uncompresses gzip user data (canonical/cloud-init doc/rtd/topics/format.rst).
        """
        return bootstrap.gzip_b64(self.user_data)

    @property
    def login_user_data_b64(self) -> str | None:
        """The login node's user data: LogListener's part with monitoring.logs, then Prometheus and Grafana with a
        self-hosted monitoring (layout/tencentcloud/monitoring.py); none without either."""
        text = self.login_user_data_text
        return bootstrap.gzip_b64(text) if text is not None else None

    @property
    def login_user_data_text(self) -> str | None:
        """login_user_data_b64 before gzip: TMP's placeholders are filled at deploy (tencentcloud/tmp.py)."""
        listener = (self.logs.part,) if self.logs is not None and self.logs.loglistener else ()
        parts = (*listener, *(self.monitoring.parts if self.monitoring else ()))
        return bootstrap.cloud_init(parts) if parts else None


def _slurm_size_problems(user_data: str, slurm: TencentSlurm) -> list[ConfigError]:
    """Each node kind's user data within Tencent's 16 KB of Base64 (nodes.py USER_DATA_MAX; the head's address,
    filled in at deploy, is shorter than its placeholder)."""
    texts = {"GPU nodes'": user_data, "Slurm head's": slurm.head_user_data, "login node's": slurm.login_user_data}
    return [
        ConfigError(
            f"{CLUSTER_KEY}.slurm",
            f"the {who} user data is {size} bytes (gzip, Base64), over Tencent's {USER_DATA_MAX} (instance.Instance "
            "user_data); drop slurm.containers, slurm.mps or slurm.users, or monitoring.logs",
        )
        for who, text in texts.items()
        if (size := len(bootstrap.gzip_b64(text))) > USER_DATA_MAX
    ]


def plan(spec: ClusterSpec) -> TencentLayout:
    row = spec.instance
    hcc = is_hcc(spec)
    tke = spec.scheduler == "kubernetes"
    refuse([*node_problems(spec, hcc), *access_problems(spec), *(tke_problems(spec) if tke else ())])
    warnings: list[str] = []
    key = CLUSTER_KEY
    if spec.scratch == "disk" and not tke and not managed_scratch(spec, warnings):
        spec = replace(spec, scratch="none")  # what the summary, the cost and the bootstrap see from here on
    hpc_cluster = hcc and spec.fabric_wired
    placement, group_type = applied_placement(spec, hcc, warnings)
    if spec.zone is None:
        warnings.append(
            f"{key}.zone: not set; the subnet goes into the first zone of {spec.region} that sells {row.instanceType} "
            "(tencentcloud.Instance.get_types at the first deploy; later answers are ignored); set zone to choose"
        )
    entry: dict[str, Any] = image_for("tencentcloud", row.instanceType)
    if releases.choice("tencentcloud", entry, spec.image) is not None:  # auto or latest: no release is pinned
        image = Image(None, entry["osName"], entry["description"])
        driver = None if tke else entry.get("gpuDriver")  # TKE: the GPU operator installs the driver
    else:
        driver = None
        image = Image(spec.image, None, f"image {spec.image} as configured (its GPU driver is not managed here)")
    if spec.health_action == "replace" and not tke:
        warnings.append(
            f"{key}.health.action: replace acts as report on tencentcloud: nothing here marks an instance unhealthy "
            "for its group to replace; "
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
    # the driver's unit first: the NCCL environment, MIG, the health check and the metrics all need it
    fabric = [tencentcloud_driver_part(driver)]
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
    encryption = encryption_plan(spec, warnings)
    logs = logs_plan(spec)
    if logs is not None and spec.encryption_key != "provider":
        warnings.append(f"{key}.monitoring.logs: {one_line(logs_data()['encryption']['warning'])}")
    kubernetes = tke_layout(spec, scratch, delete_with_instance, warnings) if tke else None
    loglistener = (logs.part,) if logs and not tke else ()  # TKE's pools run no boot data: TKE's agent ships
    slurm = None
    if spec.scheduler == "slurm":
        monitoring = monitoring_plan(spec)
        switch = f"{spec.name}-hpc" if hpc_cluster else (f"{spec.name}-pg" if group_type == "SW" else None)
        slurm = tencent_slurm(spec, entry["osName"], switch, loglistener, monitoring.parts if monitoring else ())
        assert slurm is not None
        # Tencent takes 16 KB of user data (gzip, then Base64): Slurm's scripts and LogListener's go without their
        # comments, as the node parts do (layout/node.py); nodes without Slurm keep their user data byte for byte
        parts = (*parts, *bootstrap.without_comments((*slurm_compute_parts(spec, slurm, switch), *loglistener)))
        loglistener = ()
        if hcc:
            warnings.append(
                f"{key}.scheduler: slurm on {row.instanceType} (HCC): a job's NCCL reaches the HCC RDMA fabric only "
                f"with {' and '.join(tencent_data()['hcc']['needs'])}, which are not installed "
                f"({tencent_data()['hcc']['source']}); multi-node jobs run over TCP"
            )
    user_data = bootstrap.cloud_init((*parts, *loglistener))  # LogListener on the GPU nodes
    if slurm is not None:
        refuse(_slurm_size_problems(user_data, slurm))
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
        identity=node_identity(spec),
        access=Access(spec.access, str(tencent_data()["loginUser"]["default"])),
        login=login,
        monitoring=monitoring_plan(spec) if login is not None else None,
        user_data=user_data,
        tags=dict(spec.base_tags),
        warnings=tuple(warnings),
        fabric_usability=fabric_usability(spec, hpc_cluster),
        logs=logs,
        encryption=encryption,
        audit=audit_plan(spec),
        slurm=slurm,
        kubernetes=kubernetes,
        gpu_driver=driver_summary(driver) if driver else None,
        group=None if tke else managed_group(spec),
    )
