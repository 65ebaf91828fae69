"""Huawei Cloud layout: VPC and subnet, NAT, server group, image, DEW key, IAM agency, access and bootstrap.

No catalog flavor has a fabric between ECSs, and pulumi-huaweicloud 0.0.12 has no cluster-placement or HPC-cluster
resource: `placement: spread` becomes an anti-affinity `ecs.Servergroup` (the only policy it takes), `cluster` is
warned and not applied. Nodes are `ecs.Instance`s, their EVS disks encrypted with one DEW key (encryption.py), their
identity an IAM agency delegated to ECS. `nodeGroup: managed` without a scheduler is an AS group (nodes.py
`ManagedGroup`): the same nodes from one AS configuration, the agency on the group, the system disks unencrypted (an
AS configuration cannot encrypt one: warned).

`storage.shared` is an SFS Turbo filesystem in the nodes' subnet on the same DEW key, mounted by every node over NFSv3.

One module per concern (network, nodes, identity, access, encryption), plus `data` and `proof` (`count_wired_gbps`).
This module holds only `HuaweiLayout` and `plan()`, which composes them: a refused config raises here, before any
resource is registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ... import bootstrap
from ...bootstrap.fabric import FabricUsability
from ...catalog import cpu_image, releases
from ...errors import CLUSTER_KEY, refuse
from ...spec import ClusterSpec
from .. import Scratch, image_for, scratch_for
from ..node import node_parts
from ..shared import Shared, shared_for
from .access import Access, LoginNode
from .data import huawei_data
from .encryption import DewKey, HuaweiEncryption
from .encryption import plan as encryption_plan
from .identity import NodeIdentity, node_identity
from .kubernetes import AutoscalerAddon, CceLayout, GpuAddon, cce_layout, cce_problems
from .logs import HuaweiLogs, logs_problems
from .logs import plan as logs_plan
from .monitoring import HuaweiMonitoring
from .monitoring import plan as monitoring_plan
from .network import Nat, gateway_ip, nat, subnet_cidr
from .nodes import (
    DISK_GLOBS,
    NVME_GLOBS,
    Image,
    ManagedGroup,
    Placement,
    applied_placement,
    disk_type,
    managed_group,
    managed_problems,
    managed_warnings,
    node_problems,
    user_data_max,
)
from .proof import count_wired_gbps
from .slurm import HuaweiSlurm, huawei_slurm, size_problems, slurm_compute_parts

__all__ = [
    "Access",
    "AutoscalerAddon",
    "CceLayout",
    "DewKey",
    "GpuAddon",
    "HuaweiEncryption",
    "HuaweiLayout",
    "HuaweiMonitoring",
    "HuaweiSlurm",
    "Image",
    "LoginNode",
    "ManagedGroup",
    "Nat",
    "NodeIdentity",
    "count_wired_gbps",
    "plan",
]


@dataclass(frozen=True)
class HuaweiLayout:
    spec: ClusterSpec
    zone: str | None  # None: the region's first availability zone, looked up at deploy
    vpc_cidr: str
    subnet_cidr: str
    gateway_ip: str
    nat: Nat | None
    server_group_policy: str | None  # ecs.Servergroup policy (anti-affinity), None without one
    placement_applied: Placement
    image: Image
    disk_type: str
    root_gb: int
    scratch: Scratch
    public_ip: bool
    node_ssh_cidrs: tuple[str, ...]
    identity: NodeIdentity
    encryption: HuaweiEncryption
    access: Access
    login: LoginNode | None
    user_data: str
    tags: Mapping[str, str]
    warnings: tuple[str, ...]
    fabric_usability: FabricUsability
    monitoring: HuaweiMonitoring | None = None  # the login node's Prometheus and Grafana (monitoring.py)
    kubernetes: CceLayout | None = None  # scheduler kubernetes (CCE); None builds the nodes as ECS instances
    shared: Shared | None = None  # storage.shared: SFS Turbo (catalog/storage/huaweicloud.yaml) or an existing one
    logs: HuaweiLogs | None = None  # monitoring.logs: the LTS group and ICAgent on every node
    slurm: HuaweiSlurm | None = None  # scheduler: slurm: the head node, the MUNGE key and configuration in DEW CSMS
    group: ManagedGroup | None = None  # nodeGroup: managed without kubernetes: an AS group; None: ECS instances

    @property
    def packed(self) -> bool:
        """Whether the GPU nodes' user data is gzip-compressed, in Base64: with Slurm (slurm.py), and always in an AS
        configuration (capabilities `asGroup.userData`)."""
        return self.slurm is not None or self.group is not None

    @property
    def fabric_gbps_wired(self) -> float:
        return 0.0

    @property
    def login_user_data(self) -> str | None:
        """The login node's user data: Prometheus and Grafana with a self-hosted monitoring, ICAgent with
        monitoring.logs; none without either, as before."""
        logs = self.logs.node_parts if self.logs else ()  # with an AS group, the identifier before ICAgent
        parts = (*(self.monitoring.parts if self.monitoring else ()), *logs)
        if not parts:
            return None
        text = bootstrap.cloud_init(parts)
        # Prometheus, Grafana and ICAgent pass Huawei's 32 KB plain: gzip as Slurm clusters do (slurm.py packed);
        # without logs the login node keeps its plain user data, as deployed
        return bootstrap.gzip_b64(text) if self.logs and len(text.encode()) > user_data_max() else text


def plan(spec: ClusterSpec) -> HuaweiLayout:
    row = spec.instance
    warnings: list[str] = []
    key = CLUSTER_KEY
    scratch = scratch_for(spec, NVME_GLOBS, DISK_GLOBS)
    shared = shared_for(spec)
    parts = node_parts(spec, scratch, fabric_devices=0, nvme_globs=(), mounts=shared.mount if shared else None)
    log_problems = list(logs_problems(spec))
    logs = None if log_problems else logs_plan(spec)
    log_parts = logs.node_parts if logs is not None else ()
    parts = (*parts, *log_parts)  # ICAgent on the GPU nodes (with an AS group, after the LTS identifier)
    slurm = None
    if (
        spec.scheduler == "slurm"
    ):  # the login node's monitoring and ICAgent follow its Slurm parts, the head's ICAgent too
        hosted = monitoring_plan(spec) if spec.login is not None else None
        slurm = huawei_slurm(spec, shared, (*(hosted.parts if hosted else ()), *log_parts), head_extra=log_parts)
        assert slurm is not None
        parts = (*parts, *slurm_compute_parts(spec, slurm))
    user_data = bootstrap.cloud_init(parts)
    group = managed_group(spec)
    packed = slurm is not None or group is not None
    refuse(
        [
            *log_problems,
            *managed_problems(spec),
            *node_problems(spec, bootstrap.gzipped(user_data) if packed else user_data),
        ]
    )
    if slurm is not None:
        refuse(size_problems(slurm))
    cce = spec.scheduler == "kubernetes"
    if cce:
        refuse(cce_problems(spec, scratch))
    warnings.extend(managed_warnings(spec))
    placement, policy = applied_placement(spec, warnings)
    if spec.zone is None:
        warnings.append(
            f"{key}.zone: not set; the subnet and nodes go into the first availability zone of {spec.region} "
            "(huaweicloud.get_availability_zones at the first deploy; later answers are ignored); set zone to choose "
            f"one that sells {row.instanceType}"
        )
    entry: dict[str, Any] = image_for("huaweicloud", row.instanceType)
    if cce:
        image = Image(None, None, "the CCE pools' own OS (catalog/kubernetes/huaweicloud.yaml nodeOs)")
    elif releases.choice("huaweicloud", entry, spec.image) is not None:  # auto or latest: no release is pinned
        image = Image(None, str(entry["nameRegex"]), str(entry["description"]))
        warnings.append(
            f"{key}.image: {spec.image} is the newest public 'Ubuntu 22.04 server 64bit' image, without an NVIDIA "
            "driver (Huawei's Linux public images carry none for Pi2 and P2v, catalog/huaweicloud.yaml HW-ECS-GPU); "
            "set image to the id of a Huawei GPU image with the Tesla driver or your own (docs/huaweicloud.md)"
        )
    else:
        image = Image(spec.image, None, f"image {spec.image} as configured (its GPU driver is not managed here)")
    if spec.health_action == "replace":
        replaces = (
            "the AS group's own health check (NOVA_AUDIT) does not read the GPU health check"
            if group is not None
            else "no node group here replaces an instance"
        )
        warnings.append(
            f"{key}.health.action: replace acts as report on huaweicloud: {replaces}; "
            "the health check writes /var/lib/gpu-cluster/health.json and the journal"
        )
    login = None
    if spec.login is not None:
        assert spec.login.instance_type is not None
        login = LoginNode(
            spec.login.instance_type,
            str(cpu_image("huaweicloud", spec.login.instance_type)["nameRegex"]),
            spec.login.public_ip,
            tuple(spec.network.ssh_cidrs),
        )
    identity = node_identity(spec)
    # with CCE, Prometheus runs in the cluster (catalog/kubernetes/huaweicloud.yaml releases), not on the login node
    monitoring = monitoring_plan(spec) if login is not None and not cce else None
    if monitoring is not None and identity.create:
        identity = replace(identity, roles=tuple(dict.fromkeys((*identity.roles, *monitoring.roles))))
    elif monitoring is not None:
        warnings.append(
            f"{key}.identity.existing: the login node's Prometheus lists the nodes with ECS ListServersDetails; grant "
            f"the agency {identity.agency_name} {', '.join(monitoring.roles)} (this stack grants an existing agency "
            "nothing)"
        )
    alerts = monitoring.alerts if monitoring is not None else None
    if alerts is not None and identity.create:
        identity = replace(identity, roles=(*identity.roles, alerts.role_name))
    elif alerts is not None:
        warnings.append(
            f"{key}.identity.existing: the login node publishes the alerts to SMN; grant the agency "
            f"{identity.agency_name} {alerts.action} on the topic {alerts.topic_name} (this stack grants an "
            "existing agency nothing)"
        )
    if slurm is not None and identity.create:
        identity = replace(identity, roles=(*identity.roles, slurm.role_name))
    elif slurm is not None:
        warnings.append(
            f"{key}.identity.existing: the nodes read the Slurm MUNGE key and configuration from DEW CSMS; grant the "
            f"agency {identity.agency_name} csms:secretVersion:get on {slurm.munge_secret} and {slurm.conf_secret} "
            "and decrypt with the cluster's key (this stack grants an existing agency nothing)"
        )
    kubernetes = cce_layout(spec, scratch, warnings) if cce else None
    return HuaweiLayout(
        spec=spec,
        zone=spec.zone,
        vpc_cidr=spec.network.cidr,
        subnet_cidr=subnet_cidr(spec.network.cidr),
        gateway_ip=gateway_ip(spec.network.cidr),
        nat=nat(spec),
        server_group_policy=policy,
        placement_applied=placement,
        image=image,
        disk_type=disk_type(),
        root_gb=spec.storage.root_gb,
        scratch=scratch,
        public_ip=spec.network.public_ip and login is None,
        node_ssh_cidrs=tuple(spec.network.ssh_cidrs) if login is None else (),
        identity=identity,
        encryption=encryption_plan(spec, warnings),
        access=Access(spec.access, str(huawei_data()["loginUser"]["default"])),
        login=login,
        user_data=user_data,
        tags=dict(spec.base_tags),
        warnings=(*warnings, *(logs.warnings if logs else ())),
        fabric_usability=FabricUsability(False, ("no fabric wired",)),
        monitoring=monitoring,
        kubernetes=kubernetes,
        shared=shared,
        logs=logs,
        slurm=slurm,
        group=group,
    )
