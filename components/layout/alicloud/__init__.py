"""Alibaba Cloud layout: vSwitches, eRDMA interfaces, deployment set, image, disks and bootstrap.

eRDMA: an ERI is an ENI with `NetworkInterfaceTrafficMode=HighPerformance` (Alibaba, "Elastic RDMA
interface (ERI)"). Types with one ERI get it on the primary ENI; types rated for two (ebmgn7ex,
ebmgn8v, ebmgn8is: PAI "eRDMA: use high-performance networks", ALI-EBM-ZH) get one ERI on network
card index 0 (primary) and one on index 1 (secondary): ALI-EBM-ZH documents 160 Gbit/s only with
the two ERIs on different card indices (all on one index: up to 100). `ecs.Instance` takes one
secondary ENI block, so two ERIs is also what the SDK can wire per instance.

Known limits of pulumi-alicloud 4.0.0 that shape managed node groups (ESS): the scaling
configuration has no `deploymentSetId`, and it cannot carry ERIs at all (the provider wants top-level
security groups, which ESS refuses beside a primary ENI). A managed group therefore gets no
deployment set and no ERI. Those limits are data (`managedGroupLimits` in
catalog/capabilities/alicloud.yaml): the warnings, the placement the layout applies
(`placement_applied`) and the interfaces it wires come from there, and
`nodeGroup: instances` is the mode for placed, fully wired training nodes.

An ERI beyond the primary one is down in the OS until something runs DHCP on it, and NCCL needs
the MTU set (8500 with jumbo frames, else 1400): the `erdma` bootstrap part does both at every
boot (components/bootstrap/alicloud_erdma.sh), and only then does an ERI count as wired. The same
unit installs Alibaba's eRDMA stack for GPU instances when the image lacks it, after the GPU
driver (Alibaba's eRDMA-only install is for a host whose driver and CUDA are installed), and the
`fabric` part writes the NCCL environment Alibaba presets for eRDMA (PAI) to /etc/gpu-cluster/nccl.env.

The whole node bootstrap is `layout.node.node_parts` (scratch, fabric, MIG, health check,
metrics), then the GPU driver installer, which reboots the node and therefore goes last (a vGPU slice instead runs
the GRID driver's Cloud Assistant plugin first, before the health check, and has no Tesla installer). In a
managed (ESS) group the health check's hook marks the instance Unhealthy (ess:SetInstanceHealth,
components/bootstrap/alicloud_unhealthy.sh) so ESS replaces it; instances mode only reports.

This package holds every Alibaba decision and refusal, one module per concern with the same names as the resource
package `components/alicloud/` (network, nodes, identity, access, fabric, health, kubernetes, slurm, scaling,
encryption), plus `data` (reads of the data files) and `proof` (`count_wired_gbps`: the wired Gb/s per node counted
back from the recorded resources). This module holds only `AlicloudLayout` and `plan()`, which composes them: a
refused config raises here, before any resource is registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.alicloud_grid import alicloud_grid_driver_part
from ...bootstrap.fabric import FabricUsability, nccl_env_part
from ...catalog import releases
from ...catalog.capabilities import capabilities
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from ...text import one_line
from .. import Scratch, arch, image_for, scratch_for
from ..node import node_parts
from ..shared import Shared, shared_for
from ..slurm import partition_spec
from .access import PUBLIC_BANDWIDTH_MBPS, Access, LoginNode, access_plan, login_node
from .audit import AliAudit
from .audit import plan as audit_plan
from .data import catalog_erdma_installer, metadata_http_tokens
from .encryption import AliEncryption
from .encryption import plan as encryption_plan
from .fabric import (
    NetworkInterface,
    erdma_mtu,
    erdma_part,
    eri_interfaces,
    fabric_usability,
    nccl_env,
    wired_gbps,
)
from .health import health_hook, unhealthy_hook
from .identity import NodeIdentity, node_identity
from .kubernetes import (
    AckGpuShare,
    AckLayout,
    ErdmaController,
    ack_erdma_mtu,
    ack_eri_count,
    ack_fabric_usability,
    ack_layout,
    ack_tags,
)
from .logs import AliLogs
from .logs import plan as logs_plan
from .monitoring import AlicloudMonitoring
from .monitoring import plan as monitoring_plan
from .network import NAT_EIP_BANDWIDTH_MBPS, vswitch_cidrs
from .nodes import (
    DISK_GLOBS,
    STRATEGIES,
    EssDrainHook,
    GpuDriver,
    GridPlugin,
    Image,
    Placement,
    applied_placement,
    driver_mark_part,
    driver_script,
    ess_drain_hook,
    image_drivers,
    size_problems,
    tag_problems,
)
from .partitions import eri_warning, partition_problems
from .proof import count_wired_gbps
from .scaling import AlicloudFleet
from .scaling import plan as fleet_plan
from .serve import AliServe
from .serve import plan as serve_plan
from .slurm import CIPHERTEXT_PLACEHOLDER, AliSlurm, ali_slurm, slurm_compute_parts

__all__ = [
    "CIPHERTEXT_PLACEHOLDER",
    "Access",
    "AckGpuShare",
    "AckLayout",
    "AliEncryption",
    "AliLogs",
    "AliPartition",
    "AliServe",
    "AliSlurm",
    "AlicloudFleet",
    "AlicloudLayout",
    "ErdmaController",
    "GpuDriver",
    "Image",
    "LoginNode",
    "NetworkInterface",
    "NodeIdentity",
    "count_wired_gbps",
    "plan",
]


@dataclass(frozen=True)
class AliPartition:
    """An elastic Slurm partition: its name and its GPU node as `plan` lays it out (the launch template's)."""

    name: str
    layout: AlicloudLayout

    @property
    def eri_cards(self) -> tuple[int, ...]:
        """The network card index of each ERI its nodes get, primary ENI first; empty when none. The launch template
        cannot carry them (layout/alicloud/partitions.py): the resume program adds them to RunInstances."""
        return tuple(nic.network_card_index for nic in self.layout.interfaces if nic.is_eri)


@dataclass(frozen=True)
class AlicloudLayout:
    spec: ClusterSpec
    zone: str | None  # None: first zone that sells the type, looked up at deploy
    vpc_cidr: str
    node_vswitch_cidr: str
    nat_vswitch_cidr: str | None  # only for the NAT gateway (egress: nat)
    nat_eip_bandwidth_mbps: int
    interfaces: tuple[NetworkInterface, ...]
    deployment_set_strategy: Literal["LowLatency", "Availability"] | None
    placement_applied: Placement  # what the nodes get (spec.placement is what was asked)
    image: Image
    gpu_driver: GpuDriver | None  # installed by user data when image is auto
    erdma_installer: str | None  # installed by user data when the fabric is wired and missing
    root_gb: int
    scratch: Scratch
    scratch_performance_level: str
    spot: bool
    private_pool_id: str | None
    public_bandwidth_mbps: int  # of each GPU node (0 when a login node exists)
    node_ssh_cidrs: tuple[str, ...]  # SSH rules on the nodes' group (none when a login node exists)
    erdma_mtu: int | None  # MTU the erdma part sets on every ERI
    identity: NodeIdentity
    access: Access
    login: LoginNode | None
    user_data: str
    tags: Mapping[str, str]
    warnings: tuple[str, ...]
    fabric_usability: FabricUsability  # does NCCL get everything eRDMA needs on this image
    health_hook: bool  # the ESS unhealthy hook is on the nodes (the role needs ess:SetInstanceHealth)
    shared: Shared | None = None  # storage.shared: General-purpose NAS or an existing filesystem
    kubernetes: AckLayout | None = None  # scheduler: kubernetes (ACK); None builds the nodes as today
    slurm: AliSlurm | None = None  # scheduler: slurm: the head node, the MUNGE key's delivery, the login client
    fleet: AlicloudFleet | None = None  # elastic fleet: minNodes and the Spot mix of the ESS group
    drain_hook: EssDrainHook | None = None  # a managed ESS group: the scale-in lifecycle hook (drain first)
    encryption: AliEncryption | None = None  # encryption.key: the KMS key of every ESSD (None: the ECS service key)
    partitions: tuple[AliPartition, ...] = ()  # slurm.partitions: no GPU node runs; one launch template each
    serve: AliServe | None = None  # serve: the intranet CLB in front of the ESS group
    audit: AliAudit | None = None  # compliance mlps3: the ActionTrail trail to an SLS project
    grid: GridPlugin | None = None  # a vGPU slice on image auto: the GRID driver's Cloud Assistant plugin
    monitoring: AlicloudMonitoring | None = None  # monitoring.prometheus selfHosted: on the login node
    logs: AliLogs | None = None  # monitoring.logs: the SLS project, its logstore and Logtail on every node
    # every ECS instance, launch template and ACK pool: token-only metadata (capabilities file `metadata`)
    metadata_http_tokens: str = field(default_factory=metadata_http_tokens)

    @property
    def eri_count(self) -> int:
        return sum(1 for nic in self.interfaces if nic.is_eri)

    @property
    def fabric_gbps_wired(self) -> float:
        """What the nodes get: ERIs the bootstrap brings up, capped on one network card (same rule as the counter)."""
        cards = {nic.network_card_index for nic in self.interfaces if nic.is_eri}
        up = self.eri_count if self.erdma_mtu is not None else min(self.eri_count, 1)
        return wired_gbps(up, len(cards), self.spec.instance.gbps_per_fabric_device)

    @property
    def user_data_b64(self) -> str:
        """The cloud-config gzip-compressed, then Base64 (cloud-init uncompresses gzip user data)."""
        return self.user_data_b64_for(self.user_data)

    def user_data_b64_for(self, user_data: str) -> str:
        return bootstrap.gzip_b64(user_data)


def _partitions(spec: ClusterSpec, slurm: AliSlurm | None, warnings: list[str]) -> tuple[AliPartition, ...]:
    """Each elastic partition's node, with the Slurm compute parts (slurmd as its CLOUD node); their warnings join the
    cluster's, once."""
    if slurm is None or not spec.partitions:
        return ()
    parts: list[AliPartition] = []
    for i, part in enumerate(spec.partitions):
        # ERIs as the cluster's own nodes get them, added by the resume program to RunInstances: the launch template
        # cannot carry one (layout/alicloud/partitions.py)
        wired = spec.fabric_wired and part.instance.fabricDevices > 0
        sub = partition_spec(spec, part, fabric_wired=wired)
        layout = plan(sub, slurm_compute_parts(sub, slurm, "none"))
        parts.append(AliPartition(part.name, layout))
        if part.instance.fabricDevices and not wired:
            warnings.append(eri_warning(i, part.instance))
        cluster_wide = layout.logs.notes if layout.logs else ()  # said once, by the cluster's own plan
        warnings.extend(f"{w} (slurm.partitions[{i}] {part.name})" for w in layout.warnings if w not in cluster_wide)
    return tuple(parts)


def plan(spec: ClusterSpec, extra_parts: tuple[Part, ...] = ()) -> AlicloudLayout:
    """The cluster's layout; `extra_parts` follow the node parts, before the GPU driver (an elastic partition's Slurm
    parts)."""
    if spec.partitions:  # no group: the partitions' nodes are launched one by one (as `instances`), zero here
        spec = replace(spec, node_group="instances", health_action=None if spec.health_action is None else "report")
    row = spec.instance
    ack = spec.scheduler == "kubernetes"
    refuse(
        [
            *tag_problems(spec.base_tags),
            *size_problems(spec),
            *arch.problems(spec),
            *(ack_tags(spec)[1] if ack else ()),
            *partition_problems(spec),
        ]
    )
    warnings: list[str] = []
    key = CLUSTER_KEY
    caps = capabilities("alicloud")

    if ack and spec.fabric_wired:  # the eRDMA controller: one ERI per network card (module docstring of ack_layout)
        interfaces = tuple(NetworkInterface(card, "HighPerformance") for card in range(ack_eri_count(row)))
    elif spec.fabric_wired:
        interfaces = eri_interfaces(row.fabricDevices)
    else:
        interfaces = (NetworkInterface(0, "Standard"),)
    eris = sum(1 for n in interfaces if n.is_eri)
    fabric_limit = caps.managed_limit("fabric")
    if spec.node_group == "managed" and eris and fabric_limit is not None and not ack:
        # what ESS can be given: the primary ENI as it comes (the provider's request and ESS's API agree on no ERI)
        interfaces = (NetworkInterface(0, "Standard"),)
        warnings.append(
            f"{key}.nodeGroup: managed {one_line(fabric_limit.message)}; the {eris} ERI(s) of {row.instanceType} "
            f"are {fabric_limit.applied}: 0 of {row.fabricGbps:g} Gb/s wired"
        )
        eris = 0

    placement = applied_placement(spec, warnings, ack)
    strategy = STRATEGIES[placement]
    if spec.zone is None:
        warnings.append(
            f"{key}.zone: not set; the vSwitch goes into the first zone of {spec.region} that sells "
            f"{row.instanceType} (alicloud.get_zones at the first deploy; later answers are ignored so a sold-out "
            "zone never moves the cluster); set zone to choose"
        )

    node_cidr, nat_cidr = vswitch_cidrs(spec.network.cidr)

    entry: dict[str, Any] = image_for("alicloud", row.instanceType)
    gpu_driver: GpuDriver | None = None
    grid: GridPlugin | None = None
    chosen = releases.choice("alicloud", entry, spec.image)
    if chosen is not None and not entry.get("nameRegex"):  # a family with no image: its reason
        raise ConfigError(
            f"{key}.image", f"{spec.image} has no image for {row.instanceType}: {one_line(entry['reason'])}"
        )
    if chosen is not None:
        # pinned: this public image id; tracking: the newest image matching nameRegex at deploy
        image = Image(chosen.release, None if chosen.release else entry["nameRegex"], entry["description"])
        gpu_driver, grid = image_drivers(entry, spec)
    else:
        image = Image(spec.image, None, f"image {spec.image} as configured (its GPU driver is not managed here)")

    erdma_url: str | None = catalog_erdma_installer() if eris and not ack else None
    mtu = (ack_erdma_mtu() if ack else erdma_mtu()) if eris else None
    scratch = scratch_for(spec, (), DISK_GLOBS)
    shared = shared_for(spec)
    # first: the GRID driver of a vGPU slice, which the health check and the metrics need
    fabric: list[Part] = [
        alicloud_grid_driver_part(grid.as_part_data() if grid else None),
        driver_mark_part(gpu_driver),
    ]
    if eris:
        env, source = nccl_env()
        fabric += [erdma_part(eris, mtu or 0, erdma_url), nccl_env_part(env, source)]
    hook = health_hook(spec, warnings)
    monitoring = monitoring_plan(spec)
    logs = logs_plan(spec)
    logtail = (logs.part,) if logs else ()  # on every node kind: GPU nodes, partitions, Slurm head, login node
    login_extra = monitoring.parts if monitoring else ()
    slurm = ali_slurm(spec, placement, shared, logtail, login_extra) if spec.scheduler == "slurm" else None
    if slurm is not None and slurm.accounting is not None:
        warnings.extend(slurm.accounting.notes)  # its disk is not on encryption.key
    parts = [
        *node_parts(
            spec,
            scratch,
            fabric_devices=eris,
            nvme_globs=(),  # no gn/ebmgn family has local NVMe (scratch is a cloud disk)
            fabric=fabric,
            unhealthy_hook=unhealthy_hook() if hook else None,
            mounts=shared.mount if shared else None,
        ),
        *(slurm_compute_parts(spec, slurm, placement) if slurm else ()),
        *extra_parts,
        *logtail,
        # last: the driver installer reboots the node (every unit above runs again after it)
        bootstrap.commands_part("gpu-driver", [("bash", "-c", driver_script(gpu_driver))] if gpu_driver else []),
    ]
    login = login_node(spec)
    kubernetes = ack_layout(spec, scratch, eris, shared, warnings) if ack else None
    usability = ack_fabric_usability(eris) if ack and eris else fabric_usability(spec, eris, entry)
    fleet = fleet_plan(spec)  # before any resource: refusals are keyed; its warnings join the plan's
    partitions = _partitions(spec, slurm, warnings)
    return AlicloudLayout(
        spec=spec,
        zone=spec.zone,
        vpc_cidr=spec.network.cidr,
        node_vswitch_cidr=node_cidr,
        nat_vswitch_cidr=nat_cidr if spec.network.egress == "nat" else None,
        nat_eip_bandwidth_mbps=NAT_EIP_BANDWIDTH_MBPS,
        interfaces=interfaces,
        deployment_set_strategy=strategy,
        placement_applied=placement,
        image=image,
        gpu_driver=gpu_driver,
        erdma_installer=erdma_url,
        root_gb=spec.storage.root_gb,
        scratch=scratch,
        scratch_performance_level=spec.alicloud.scratch_performance_level,
        spot=spec.spot,
        private_pool_id=spec.reservation or None,
        # with a login node, the nodes stay private and SSH lands on the login node only
        public_bandwidth_mbps=PUBLIC_BANDWIDTH_MBPS if spec.network.public_ip and login is None else 0,
        node_ssh_cidrs=tuple(spec.network.ssh_cidrs) if login is None else (),
        erdma_mtu=mtu,
        identity=node_identity(spec),
        access=access_plan(spec),
        login=login,
        user_data=bootstrap.cloud_init(parts),
        tags=dict(spec.base_tags),
        warnings=tuple(warnings) + (fleet.warnings if fleet else ()) + (logs.notes if logs else ()),
        fabric_usability=usability,
        health_hook=hook,
        shared=shared,
        kubernetes=kubernetes,
        slurm=slurm,
        fleet=fleet,
        drain_hook=ess_drain_hook(spec),
        encryption=encryption_plan(spec),  # decided here, read by components/alicloud/encryption.py
        partitions=partitions,
        serve=serve_plan(spec),
        audit=audit_plan(spec),
        grid=grid,
        monitoring=monitoring,
        logs=logs,
    )
