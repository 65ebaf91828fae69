"""GCP layout: VPCs and NICs (GPUDirect), placement, image, disks, labels, keys and bootstrap for one cluster.

This package holds every GCP decision and refusal, one module per concern with the same names as the resource
package `components/gcp/` (network, nodes, identity, access, placement, health, kubernetes, slurm, scaling,
encryption; plus fabric and labels), `data` (reads of the capability data) and `proof` (`count_wired_gbps`: the wired
Gb/s per node counted back from the recorded resources). The GPU networks' layout is described in `network`. This
module holds only `GcpLayout` and `plan()`, which composes them: a refused config raises here, before any resource is
registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from ... import catalog
from ...bootstrap import Part
from ...bootstrap.fabric import FabricUsability
from ...bootstrap.interruption import NAME as DRAIN_PART
from ...bootstrap.interruption import shutdown_script
from ...catalog.interruption import cloud_data as interruption_data
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec, PartitionSpec
from ...spec.rules.budget import budget_data
from .. import Scratch, arch, scratch_for
from ..budget import CLUSTER_TAG, Budget, budget_plan
from ..shared import Shared, shared_for
from ..slurm import partition_spec
from .access import Access, Login, access_of
from .data import gke_data
from .encryption import GcpEncryption, key_plan
from .fabric import NO_FABRIC, fabric_enablement
from .health import HealthProbe, health_probe
from .identity import NodeIdentity, node_identity
from .kubernetes import Gke, GkePool, NodeNetwork, gke_fabric_usability, gke_layout
from .labels import label_key, label_value, labels_for
from .monitoring import GcpMonitoring
from .monitoring import plan as monitoring_plan
from .network import Nic, Subnet, Vpc, check_existing_subnetworks, gpu_networks
from .nodes import (
    LOCAL_SSD_GLOBS,
    SCRATCH_DISK_GLOBS,
    Image,
    MigRollout,
    Scheduling,
    check_n1,
    consumption,
    disk_type,
    image_of,
    mig_rollout,
    node_bootstrap,
    startup_script,
    zone_of,
)
from .observe import GcpObserve, agent_part
from .observe import plan as observe_plan
from .placement import Placement, compact_cap, placement_of
from .proof import count_wired_gbps
from .scaling import Elastic
from .scaling import plan as elastic_plan
from .serve import GcpServe
from .serve import plan as serve_plan
from .slurm import GcpSlurm, slurm_plan

__all__ = [
    "Access",
    "Elastic",
    "GcpEncryption",
    "GcpLayout",
    "GcpPartition",
    "GcpServe",
    "GcpSlurm",
    "Gke",
    "GkePool",
    "HealthProbe",
    "Image",
    "Login",
    "Nic",
    "NodeIdentity",
    "NodeNetwork",
    "Placement",
    "Scheduling",
    "Subnet",
    "Vpc",
    "count_wired_gbps",
    "plan",
]


@dataclass(frozen=True)
class GcpLayout:
    spec: ClusterSpec
    project: str
    zone: str
    vpcs: tuple[Vpc, ...]
    nics: tuple[Nic, ...]
    ssh_source_ranges: tuple[str, ...]
    nat: bool
    placement: Placement | None
    image: Image
    boot_disk_type: str
    root_gb: int
    scratch: Scratch
    scratch_disk_type: str | None
    scheduling: Scheduling
    guest_accelerator: tuple[str, int] | None  # n1 only: (accelerator type, count)
    reservation: str | None
    labels: Mapping[str, str]
    metadata: Mapping[str, str]
    startup_script: str | None
    identity: NodeIdentity
    access: Access
    fabric_usability: FabricUsability = NO_FABRIC
    placement_applied: Literal["cluster", "spread", "none"] = "none"
    health_probe: HealthProbe | None = None  # managed groups with health.action replace
    warnings: tuple[str, ...] = field(default=())
    shared: Shared | None = None  # storage.shared: Managed Lustre on the host VPC, or an existing filesystem
    kubernetes: Gke | None = None  # scheduler kubernetes: the GKE cluster, its pools and in-cluster objects
    slurm: GcpSlurm | None = None  # scheduler slurm: the head node, the MUNGE secret, the Slurm bootstraps
    elastic: Elastic | None = None  # scaling / spot.onDemandBase: the autoscaler and the standard floor group
    rollout: MigRollout | None = None  # update rolling: the managed instance groups' update policy
    encryption: GcpEncryption | None = None  # encryption.key not provider: the key ring and key, or the key named
    budget: Budget | None = None  # budget: a Cloud Billing budget on the project and the cluster's label
    monitoring: GcpMonitoring | None = None  # monitoring.prometheus selfHosted: Prometheus, Grafana on the login node
    observe: GcpObserve | None = None  # monitoring.logs / notify: the log bucket, the alert policies
    vm_login_script: str | None = None  # VM mode: the login node's startup-script (monitoring, the Ops Agent)
    serve: GcpServe | None = None  # serve: the internal passthrough Network Load Balancer in front of the MIG
    partitions: tuple[GcpPartition, ...] = ()  # slurm.partitions: no group; one instance template per partition

    @property
    def placement_vm_count(self) -> int | None:
        """vmCount of the compact placement policy, when there is one."""
        return self.placement.vm_count if self.placement and self.placement.kind == "compact" else None

    @property
    def host(self) -> Vpc:
        return self.vpcs[0]

    @property
    def gpu_nic_count(self) -> int:
        return sum(1 for n in self.nics if n.gpu)

    @property
    def fabric_gbps_wired(self) -> float:
        return self.gpu_nic_count * self.spec.instance.gbps_per_fabric_device


@dataclass(frozen=True)
class GcpPartition:
    """An elastic Slurm partition's nodes: the layout of its instance template (its type, NICs, spot, placement,
    startup script); the head's resume program creates each node from it (instances.insert, layout/gcp/slurm.py)."""

    name: str
    layout: GcpLayout


def partition_placement(spec: ClusterSpec, index: int, part: PartitionSpec) -> Placement | None:
    """A compact (COLLOCATED) placement policy per partition of two nodes or more, without vmCount: its nodes are
    created one by one as jobs need them, which a vmCount ("exactly this number of VMs") would refuse; slurm-gcp
    creates its policies the same way (resume.py create_placement_request: collocation COLLOCATED and maxDistance, no
    vmCount), within the cap of catalog/gcp.yaml compactPlacementMaxVms."""
    if spec.placement != "cluster" or part.max_nodes < 2:
        return None
    rules = catalog.load("gcp").rules
    distance = spec.gcp.placement_max_distance
    cap = compact_cap(rules, part.instance.instanceType, distance)
    if part.max_nodes > cap:
        raise ConfigError(
            f"{CLUSTER_KEY}.slurm.partitions[{index}].maxNodes",
            f"{part.max_nodes} nodes in one compact placement policy; {part.instance.instanceType} with "
            f"{'no maxDistance' if distance is None else f'maxDistance {distance}'} allows at most {cap} "
            "(catalog/gcp.yaml compactPlacementMaxVms); lower it or set placement: none",
        )
    return Placement("compact", None, cap, distance)


def _partition(
    spec: ClusterSpec, cluster_vpcs: tuple[Vpc, ...], index: int, part: PartitionSpec, slurm: GcpSlurm
) -> GcpPartition:
    key = f"{CLUSTER_KEY}.slurm.partitions[{index}].instanceType"
    if part.instance.has_fabric and not spec.instance.has_fabric:
        raise ConfigError(
            key,
            f"{part.instance.instanceType} has {part.instance.fabric}, whose GPU VPCs the cluster builds for its "
            f"instanceType only ({spec.instance.instanceType} has none); make {part.instance.instanceType} the "
            "cluster's instanceType (the default partition's)",
        )
    layout = plan(
        partition_spec(
            spec,
            part,
            fabric_wired=spec.fabric_wired and part.instance.has_fabric,
            # the partition's compact policy is decided here (`partition_placement`), not by a group's count rules
            placement="none",
        ),
        slurm.compute_parts,
    )
    # the partition's NICs go on the cluster's networks (the host VPC's MTU is the cluster type's)
    wired = {(v.role, tuple(n.cidr for n in v.subnets)) for v in cluster_vpcs}
    missing = [v.role for v in layout.vpcs if (v.role, tuple(n.cidr for n in v.subnets)) not in wired]
    if missing:
        raise ConfigError(
            key,
            f"{part.instance.instanceType} needs the VPCs {', '.join(missing)}, which the cluster's instanceType "
            f"{spec.instance.instanceType} does not wire; partitions share the cluster's networks: give them types of "
            "one fabric, and that type as the cluster's instanceType",
        )
    placement = partition_placement(spec, index, part)
    scheduling = layout.scheduling
    if placement is not None:  # Cluster Toolkit vm-instance: automatic_restart false with a COLLOCATED policy
        scheduling = replace(scheduling, automatic_restart=False)
    if part.spot:  # a reclaimed node is deleted, not stopped: Slurm relaunches it under its name (DELETE)
        scheduling = replace(scheduling, instance_termination_action="DELETE")
    return GcpPartition(
        part.name,
        replace(
            layout,
            placement=placement,
            placement_applied="cluster" if placement is not None else "none",
            scheduling=scheduling,
            warnings=(),
        ),
    )


def _vm_login_script(monitoring: GcpMonitoring | None, agent: Part | None) -> str | None:
    """VM mode: the login node's parts (the self-hosted monitoring, the Ops Agent); None: no startup-script."""
    if agent is None:
        return monitoring.vm_script if monitoring is not None else None
    return startup_script((*((monitoring.part,) if monitoring is not None else ()), agent))


def plan(spec: ClusterSpec, extra_parts: tuple[Part, ...] = ()) -> GcpLayout:
    """The cluster's layout; `extra_parts` follow the node parts (an elastic partition's Slurm parts)."""
    arch.check(spec)
    row = spec.instance
    rules = catalog.load("gcp").rules
    zone = zone_of(spec)
    project = spec.gcp_project or ""
    warnings: list[str] = []

    mtu = int(row.extra["mtu"]) if "mtu" in row.extra else None
    host = Vpc("host", mtu, (Subnet("nodes", spec.network.cidr),))
    vpcs: tuple[Vpc, ...] = (host,)
    nics: tuple[Nic, ...] = (Nic("host", "nodes", "GVNIC", gpu=False, external_ip=spec.network.public_ip),)
    if spec.fabric_wired:
        extra_vpcs, extra_nics = gpu_networks(spec, zone, project)
        vpcs, nics = (*vpcs, *extra_vpcs), (*nics, *extra_nics)
    check_existing_subnetworks(spec, nics)

    guest = check_n1(spec)
    k8s = spec.scheduler == "kubernetes"
    if k8s and spec.gcp.flex_start:  # before _consumption, whose advice (nodeGroup: instances) is VM mode's
        raise ConfigError(
            f"{CLUSTER_KEY}.gcp.flexStart",
            "true with scheduler kubernetes: GKE's flex-start node pools are not built; drop gcp.flexStart",
        )
    if k8s and spec.gcp.placement_max_distance is not None:
        warnings.append(
            f"{CLUSTER_KEY}.gcp.placementMaxDistance: GKE's COMPACT placement policy takes no maxDistance "
            "(pulumi-gcp NodePoolPlacementPolicyArgs: type, policy_name, tpu_topology); ignored"
        )
    scheduling = consumption(spec, rules)
    # GKE places the GPU pool itself (placementPolicy COMPACT): no resource policy of ours; elastic partitions have
    # theirs (partition_placement)
    placement = None if k8s or spec.partitions else placement_of(spec, rules)
    if not k8s and not spec.partitions and placement is None and spec.placement == "cluster":
        warnings.append(
            f"{CLUSTER_KEY}.placement: cluster is not applied to one VM: a compact placement policy fixes its VM count "
            "(vmCount), so a count change recreates it and the nodes anyway, and one VM has no neighbour"
        )
    if placement is not None and placement.kind == "compact":
        # Cluster Toolkit vm-instance main.tf: automatic_restart false whenever a COLLOCATED policy is set.
        scheduling = replace(scheduling, automatic_restart=False)
    access = access_of(spec, rules, warnings)
    if access.login is not None:
        nics = tuple(replace(n, external_ip=False) for n in nics)
    no_on_demand = any(row.instanceType.startswith(p) for p in rules["consumption"]["noOnDemand"])
    elastic = None if k8s else elastic_plan(spec, no_on_demand)
    if elastic is not None:
        warnings.extend(elastic.warnings)
    if (
        spec.node_group == "managed"
        and spec.max_nodes > spec.nodes
        and not k8s
        and spec.scaling is None
        and not spec.partitions
        and (elastic is None or elastic.autoscaler is None)  # serve.requestsPerNode: the request rate moves it
    ):
        warnings.append(
            f"{CLUSTER_KEY}.maxNodes: the managed instance group starts at {spec.nodes} nodes and has no "
            f"autoscaler (GPU training has no useful CPU signal); resize it up to {spec.max_nodes} yourself"
        )
    if spec.ssh_public_key:
        warnings.append(
            f"{CLUSTER_KEY}.sshPublicKey: OS Login is enabled, so instance-metadata SSH keys are ignored; add the "
            "key to your OS Login profile (gcloud compute os-login ssh-keys add) instead"
        )
    image = image_of(spec)
    gpu_nics = sum(1 for n in nics if n.gpu)
    fabric, usability = fabric_enablement(spec, image, gpu_nics, rules) if not k8s else ((), NO_FABRIC)
    if spec.fabric_wired and gpu_nics and not usability.usable and not k8s:
        warnings.append(
            f"{row.instanceType}: the GPU NICs are wired, but {row.fabric} is {usability.describe()}; see docs/gcp.md"
        )
    if spec.node_group == "instances" and spec.health_action == "replace":
        warnings.append(
            f"{CLUSTER_KEY}.health.action: replace with nodeGroup: instances: GCP replaces only members of a managed "
            "instance group (autohealing); an unhealthy standalone node is reported (health.json, journal), "
            "not replaced"
        )

    scratch = scratch_for(spec, LOCAL_SSD_GLOBS, SCRATCH_DISK_GLOBS)
    boot_type = disk_type(row.instanceType, rules)
    # GKE repairs its nodes (management.autoRepair); elastic partitions have no group to repair (Slurm's health
    # program drains a node)
    probe = health_probe(spec, rules) if not k8s and not spec.partitions else None
    shared = shared_for(spec)
    gke: Gke | None = None
    if k8s:
        # COMPACT at any count: a GKE PlacementPolicy has no node count (container discovery doc PlacementPolicy:
        # type, policyName, tpuTopology), so a pool shrunk to one node keeps it and grows back in place
        gke = gke_layout(spec, nics, spec.placement == "cluster", warnings)
        usability = gke_fabric_usability(spec, gke.daemonsets, gke_data())
        host = replace(
            host,
            subnets=(
                replace(
                    host.subnets[0],
                    secondary=((gke.pods_range, gke.pods_cidr), (gke.services_range, gke.services_cidr)),
                ),
            ),
        )
        vpcs = (host, *vpcs[1:])
        # GKE builds the local SSDs' RAID-0 for the pods' ephemeral storage; no extra data disk on GKE nodes
        scratch = (
            replace(scratch, path="the pods' ephemeral storage (GKE)", device_globs=())
            if scratch.kind == "nvme"
            else Scratch("none", spec.storage.scratch_path, 0, None, ())
        )
    monitoring = monitoring_plan(spec, project, zone)
    observe = observe_plan(spec, gke.name if gke is not None else None)
    head_agent, login_agent = agent_part(spec, "head"), agent_part(spec, "login")
    compact = any(partition_placement(spec, i, p) for i, p in enumerate(spec.partitions))
    slurm = slurm_plan(
        spec,
        project,
        shared.mount if shared else None,
        zone,
        compact,
        monitoring.part if monitoring else None,
        taken=tuple(s.cidr for v in vpcs for s in v.subnets),
        lustre=shared is not None and shared.kind == "lustre",
        head_parts=(head_agent,) if head_agent else (),
        login_parts=(login_agent,) if login_agent else (),
    )
    parts = () if k8s else node_bootstrap(spec, scratch, fabric, gpu_nics, probe, shared.mount if shared else None)
    if slurm is not None:  # after the health part: the HealthCheckProgram runs the same check
        parts = (*parts, *slurm.compute_parts)
    parts = (*parts, *extra_parts)
    # one Ops Agent per node: the autoscaler's receiver and the logs' and alerts' parts in one config
    gpu_agent = agent_part(spec, "gpu", elastic.job if elastic is not None and elastic.parts else None)
    if gpu_agent is not None:
        parts = (*parts, gpu_agent)
    elif elastic is not None:
        parts = (*parts, *elastic.parts)
    if observe is not None and spec.identity.existing:
        warnings.append(
            f"{CLUSTER_KEY}.identity.existing: the Ops Agent writes the logs and metrics as {spec.identity.existing};"
            f" that account needs {', '.join(observe.roles)} (gpu-cluster grants nothing to an existing account)"
        )
    # GKE reserves the startup-script and user-data metadata keys of its nodes: no node bootstrap there
    script = None if k8s else startup_script(parts)
    # the key last, on the scratch as built (none on GKE): the disks and filesystems above take it
    encryption = key_plan(spec, shared, scratch, gke is not None)
    metadata = {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"}
    if script:
        metadata["startup-script"] = script
    if any(p.name == DRAIN_PART and not p.empty for p in parts):
        # Compute Engine runs it when the VM stops or is deleted (a MIG's deletion or recreation too): drain first
        metadata[str(interruption_data("gcp")["shutdownScriptKey"])] = shutdown_script()
    partitions = (
        tuple(_partition(spec, vpcs, i, p, slurm) for i, p in enumerate(spec.partitions)) if slurm is not None else ()
    )
    return GcpLayout(
        spec=spec,
        project=project,
        zone=zone,
        vpcs=vpcs,
        nics=nics,
        ssh_source_ranges=access.node_ssh_ranges,
        nat=spec.network.egress == "nat" and spec.network.existing is None,
        placement=placement,
        image=image,
        boot_disk_type=boot_type,
        root_gb=spec.storage.root_gb,
        scratch=scratch,
        scratch_disk_type=boot_type if scratch.kind == "disk" else None,
        scheduling=scheduling,
        guest_accelerator=guest,
        reservation=spec.reservation or None,
        labels=labels_for(spec),
        metadata=metadata,
        startup_script=script,
        identity=node_identity(spec),
        access=access,
        fabric_usability=usability,
        placement_applied="cluster"
        if placement is not None or (gke is not None and gke.gpu.compact) or any(p.layout.placement for p in partitions)
        else "none",
        health_probe=probe,
        warnings=tuple(warnings),
        shared=shared,
        kubernetes=gke,
        slurm=slurm,
        elastic=elastic,
        encryption=encryption,
        budget=budget_plan(spec, label_key(CLUSTER_TAG), label_value(spec.name), budget_data("gcp").get("note", "")),
        monitoring=monitoring,
        observe=observe,
        vm_login_script=_vm_login_script(monitoring, login_agent) if slurm is None else None,
        rollout=None
        if spec.partitions
        else mig_rollout(spec, placement.vm_count if placement is not None and placement.kind == "compact" else None),
        partitions=partitions,
        serve=serve_plan(spec),
    )
