"""AWS layout: network interfaces (EFA), placement, image, disks and bootstrap for one cluster.

This package holds every AWS decision and refusal, one module per concern with the same names as the resource package
`components/aws/` (network, nodes, identity, access, kubernetes, slurm, scaling, encryption; plus fabric: the EFA
interfaces and enablement), `data` (reads of the capability data) and `proof` (`count_wired_gbps`: the wired Gb/s per
node counted back from the recorded resources). This module holds only `AwsLayout` and `plan()`, which composes them:
a refused config raises here, before any resource is registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from ... import bootstrap
from ...bootstrap import Part, script
from ...bootstrap.fabric import FabricUsability
from ...errors import refuse
from ...spec import ClusterSpec
from ...spec.rules.budget import budget_data
from .. import Scratch, arch, scratch_for, split_cidr
from ..budget import CLUSTER_TAG, Budget, budget_plan
from ..node import grid_driver_summary, node_parts
from ..shared import Shared, efa_note, shared_for
from ..slurm import partition_spec
from . import kubernetes as eks_plan
from .access import Access, Login, access_plan
from .eks_amp import EksAmp, collector_releases
from .eks_amp import plan as eks_amp_plan
from .eks_logs import EksLogs
from .eks_logs import plan as eks_logs_plan
from .encryption import AwsEncryption, AwsKey, key_policy
from .encryption import plan as encryption_plan
from .fabric import NetworkInterface, efa_enablement, efa_interfaces, interfaces_of
from .identity import (
    DriverGrant,
    NodeIdentity,
    driver_grant,
    fleet_identity,
    health_hook,
    health_hook_action,
    node_identity,
)
from .kubernetes import EksLayout, EksPool, kubernetes_problems
from .logs import AwsLogs, NodeKind
from .logs import plan as logs_plan
from .logs import problems as logs_problems
from .monitoring import AwsManaged, AwsMonitoring
from .monitoring import plan as monitoring_plan
from .network import Metrics, check_public_ip, metrics
from .nodes import (
    EBS_GLOBS,
    INSTANCE_STORE_GLOBS,
    ROOT_DEVICE,
    SCRATCH_DEVICE,
    DrainHook,
    Image,
    Market,
    Refresh,
    check_purchase,
    image_of,
    market_of,
    rollout_of,
)
from .proof import count_wired_gbps
from .scaling import AwsScaling, QueueMetric, agent_part
from .scaling import plan as scaling_plan
from .serve import AwsServe
from .serve import plan as serve_plan
from .slurm import AwsSlurm
from .slurm import plan as slurm_plan

__all__ = [
    "EBS_GLOBS",
    "INSTANCE_STORE_GLOBS",
    "ROOT_DEVICE",
    "SCRATCH_DEVICE",
    "Access",
    "AwsEncryption",
    "AwsKey",
    "AwsLayout",
    "AwsLogs",
    "AwsPartition",
    "AwsScaling",
    "AwsServe",
    "AwsSlurm",
    "DrainHook",
    "DriverGrant",
    "EksAmp",
    "EksLayout",
    "EksLogs",
    "EksPool",
    "Image",
    "Login",
    "Metrics",
    "NetworkInterface",
    "NodeIdentity",
    "QueueMetric",
    "Refresh",
    "count_wired_gbps",
    "efa_interfaces",
    "health_hook_action",
    "key_policy",
    "plan",
]


@dataclass(frozen=True)
class AwsPartition:
    """An elastic Slurm partition's nodes: the layout of its launch template (its type, spot, user data); the head's
    resume program launches each node from it (layout/aws/slurm.py)."""

    name: str
    layout: AwsLayout


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
    market: Market
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
    encryption: AwsEncryption | None = None  # encryption.key: the KMS key (None: provider, the AWS managed keys)
    refresh: Refresh | None = None  # update rolling: the managed group's instance refresh
    drain_hook: DrainHook | None = None  # a managed group's termination lifecycle hook (the node drains first)
    partitions: tuple[AwsPartition, ...] = ()  # slurm.partitions: no group; one launch template per partition
    budget: Budget | None = None  # budget: an AWS Budgets cost budget on the cluster's tag
    monitoring: AwsMonitoring | None = None  # monitoring.prometheus selfHosted: Prometheus, Grafana on the login node
    logs: AwsLogs | None = None  # monitoring.logs.enabled: the CloudWatch Logs group every node's agent ships to
    vm_login_user_data: str | None = None  # VM mode: the login node's user data (monitoring, the logs' agent), if any
    serve: AwsServe | None = None  # serve: the Network Load Balancer in front of the group
    driver_grant: DriverGrant | None = None  # a vGPU slice: the node role reads its GRID driver from AWS's bucket
    gpu_driver: str | None = None  # the plan's line for a driver the node installs itself (None: the image's)
    eks_amp: EksAmp | None = None  # prometheus managed on EKS: the AMP workspace and its managed collector

    @property
    def amp(self) -> AwsManaged | None:
        """The AMP workspace to build: VM mode's (the login node's agent writes) or EKS's (the collector writes)."""
        if self.monitoring is not None:
            return self.monitoring.managed
        return self.eks_amp.managed if self.eks_amp is not None else None

    @property
    def notify(self) -> tuple[str, ...]:
        """monitoring.notify's addresses where something sends to them (the login node's or AMP's alert manager)."""
        if self.monitoring is not None:
            return self.monitoring.notify
        return self.eks_amp.notify if self.eks_amp is not None else ()

    @property
    def driver_grants(self) -> tuple[DriverGrant, ...]:
        """Every read of a GRID driver object the node role needs: this layout's and its elastic partitions'."""
        grants = (self.driver_grant, *(p.layout.driver_grant for p in self.partitions))
        return tuple(dict.fromkeys(g for g in grants if g is not None))

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
        return bootstrap.gzip_b64(user_data)


def _partitions(spec: ClusterSpec, slurm: AwsSlurm | None) -> tuple[AwsPartition, ...]:
    if slurm is None or not spec.partitions:
        return ()
    return tuple(
        AwsPartition(part.name, plan(partition_spec(spec, part), slurm.compute_parts)) for part in spec.partitions
    )


def _logs_group(spec: ClusterSpec, logs: AwsLogs | None) -> str | None:
    """The log group(s) the key encrypts: the VM mode's group, or EKS's Container Insights groups as a pattern whose
    `{cluster}` components/aws fills where the EKS name is generated at deploy."""
    eks = eks_logs_plan(spec)
    return logs.group_name if logs else eks.key_pattern if eks else None


def _control_plane_group(spec: ClusterSpec) -> str | None:
    """EKS's control plane group (monitoring.logs.controlPlane), encrypted with the key too."""
    eks = eks_logs_plan(spec)
    return eks.control_plane_group if eks else None


def plan(spec: ClusterSpec, extra_parts: tuple[Part, ...] = ()) -> AwsLayout:
    """The cluster's layout; `extra_parts` follow the node parts (an elastic partition's Slurm parts)."""
    refuse(
        [
            *arch.problems(spec),
            *(kubernetes_problems(spec) if spec.kubernetes is not None else ()),
            *logs_problems(spec),
        ]
    )
    interfaces = interfaces_of(spec)
    check_public_ip(spec, interfaces)
    node_cidr, public_cidr = split_cidr(spec.network.cidr, 1, 2)  # two halves: nodes, NAT
    check_purchase(spec)
    image = image_of(spec)
    scratch = scratch_for(spec, INSTANCE_STORE_GLOBS, EBS_GLOBS)
    efa_count = sum(1 for i in interfaces if i.is_efa)
    fabric, usability = efa_enablement(spec, efa_count)
    hook = health_hook(spec)
    efa_capable = efa_count > 0 and spec.instance.fabric == "efa"
    shared = shared_for(spec, efa_capable)
    parts = node_parts(
        spec,
        scratch,
        fabric_devices=efa_count,
        nvme_globs=INSTANCE_STORE_GLOBS if scratch.kind == "nvme" else (),
        fabric=fabric,
        unhealthy_hook=script("aws_unhealthy.sh") if hook else None,
        mounts=shared.mount if shared else None,
    )
    monitoring = monitoring_plan(spec)
    logs = logs_plan(spec)
    login_extra = (
        *((monitoring.part,) if monitoring else ()),
        *((logs.agent("login"),) if logs and spec.login is not None else ()),
    )
    slurm = slurm_plan(spec, shared.mount if shared else None, login_extra, (logs.agent("head"),) if logs else ())
    if slurm is not None:
        parts = (*parts, *slurm.compute_parts)
    parts = (*parts, *extra_parts)
    scaling = scaling_plan(spec)
    serve = serve_plan(spec)
    refresh, drain_hook = rollout_of(spec)
    metric = scaling.gpu if scaling is not None else None
    # one CloudWatch agent per node: the fleet's GPU metric and the node's logs in one configuration
    # (an elastic partition's nodes get the cluster's Slurm compute parts as `extra_parts`: they run slurmd too)
    kind: NodeKind = "slurm-gpu" if slurm is not None or extra_parts else "gpu"
    parts = (*parts, logs.agent(kind, metric) if logs else agent_part(metric))
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
        market=market_of(spec),
        capacity_reservation_id=spec.reservation or None,
        user_data=bootstrap.cloud_init(parts),
        tags={"Name": spec.name, **spec.base_tags},
        identity=fleet_identity(node_identity(spec), scaling, logs),
        access=access_plan(spec),
        placement_applied="none" if spec.placement == "none" else spec.placement,
        fabric_usability=usability,
        health_hook=hook,
        metrics=metrics(spec),
        shared=shared,
        shared_note=efa_note(shared, efa_capable),
        slurm=slurm,
        scaling=scaling,
        # the key is decided here, with every other refusal, before components/aws registers a resource
        encryption=encryption_plan(spec, _logs_group(spec, logs), _control_plane_group(spec)),
        refresh=refresh,
        drain_hook=drain_hook,
        partitions=_partitions(spec, slurm),
        budget=budget_plan(spec, CLUSTER_TAG, spec.name, budget_data("aws").get("note", "")),
        monitoring=monitoring,
        logs=logs,
        vm_login_user_data=bootstrap.cloud_init(login_extra) if slurm is None and login_extra else None,
        serve=serve,
        driver_grant=driver_grant(spec),
        gpu_driver=grid_driver_summary(spec),
    )
    if spec.kubernetes is None:
        return layout
    eks = eks_plan.plan(
        spec,
        scratch=layout.scratch,
        efa_count=layout.efa_count,
        market=layout.market,
        root_gb=layout.root_gb,
        identity=layout.identity,
    )
    amp = eks_amp_plan(spec)
    return replace(
        layout,
        public_subnet_cidr=eks.public_subnet_cidr,
        user_data=eks.user_data,
        identity=eks.identity,
        fabric_usability=eks.fabric_usability,
        health_hook=False,
        metrics=Metrics((), False),
        kubernetes=eks.eks if amp is None else replace(eks.eks, releases=collector_releases(eks.eks.releases)),
        eks_amp=amp,
    )
