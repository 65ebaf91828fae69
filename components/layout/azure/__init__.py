"""Azure layout: network, NSG rules, placement, InfiniBand scope, image, disks and bootstrap for one cluster.

How InfiniBand is obtained on Azure (MicrosoftDocs azure-compute-docs `virtual-machines/setup-infiniband.md`,
research notes aws-azure-gpu.md 2.2): the IB HCAs of an `...r` size (ND96isr_H100_v5: 8 x 400 Gb/s NDR) come
with the VM; nothing is attached per NIC. What decides whether two VMs can talk over IB is where they are
placed: "VMs must be in the same scale set or the same availability set", and a scale set must be limited to
a single placement group (`singlePlacementGroup: true`), which caps it at 100 VMs (availability sets: 200).
So the layout "wires" the fabric by choosing that scope:

- `nodeGroup: managed` -> one Uniform VM scale set with `singlePlacementGroup: true`. Uniform is explicit
  because single placement groups are a Uniform feature (docs.azure.cn virtual-machine-scale-sets-placement-groups:
  "This document covers ... Uniform Orchestration mode"). No source says IB spans a Flexible scale set, so
  Flexible is not used.
- `nodeGroup: instances` -> N VMs in one availability set (Microsoft's documented alternative). Spot VMs
  cannot join an availability set (learn.microsoft.com/azure/virtual-machines/error-codes-spot,
  AzureSpotVMNotSupportedInAvailabilitySet), and availability sets exclude zones, so both are refused there.

This package holds every Azure decision and refusal, one module per concern with the same names as the resource
package `components/azure/` (network, nodes, identity, access, fabric, kubernetes, slurm, scaling, encryption,
storage; plus health and names), `data` (reads of the capability data) and `proof` (`count_wired_gbps`: the wired Gb/s
per node counted back from the recorded resources). This module holds only `AzureLayout` and `plan()`, which
composes them: a refused config raises here, before any resource is registered.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...bootstrap import Part
from ...bootstrap.fabric import FabricUsability
from ...bootstrap.metrics import Endpoint, endpoints
from ...catalog.slurm import cloud_data
from ...errors import CLUSTER_KEY, refuse
from ...spec import ClusterSpec
from ...spec.rules.budget import budget_data
from .. import Scratch, arch, scratch_for, split_cidr
from ..budget import CLUSTER_TAG, Budget, budget_plan
from ..shared import Shared, shared_for
from ..slurm import partition_spec
from . import slurm as azure_slurm
from .access import BASTION_SUBNET_NAME, Bastion, LoginNode, bastion, login
from .alerts import AzureAlerts
from .alerts import plan as alerts_plan
from .encryption import AzureEncryption, key_plan
from .fabric import fabric_parts
from .health import AutomaticRepairs, HealthExtension, endpoint_part, plan_health
from .identity import NodeIdentity, RoleGrant, node_identity
from .kubernetes import Aks, AksKms, AksPool, aks_fabric, pod_rules
from .kubernetes import aks as plan_aks
from .logs import AzureLogs, logs_problems
from .logs import plan as logs_plan
from .monitoring import AzureMonitoring
from .monitoring import plan as monitoring_plan
from .network import SecurityRule, security_rules
from .nodes import (
    DATA_DISK_GLOBS,
    DISK_TYPE,
    NVME_GLOBS,
    SCRATCH_LUN,
    DataDisk,
    Group,
    Image,
    ScaleSetRollout,
    custom_data,
    group_problems,
    image_of,
    scale_set_rollout,
    single_placement_group,
)
from .partitions import (
    BODY_PREFIX,
    CUSTOM_DATA,
    DISK_SET,
    IDENTITY,
    NODE_TOKEN,
    PPG,
    SCALE_SET,
    SUBNET,
    vm_name,
)
from .proof import count_wired_gbps
from .scaling import AzureElastic
from .scaling import plan as elastic_plan
from .serve import AzureServe, probe_rule
from .serve import plan as serve_plan
from .slurm import AzureSlurm
from .storage import shared_subnet

__all__ = [
    "BASTION_SUBNET_NAME",
    "Aks",
    "AksKms",
    "AksPool",
    "AutomaticRepairs",
    "AzureAlerts",
    "AzureElastic",
    "AzureEncryption",
    "AzureLayout",
    "AzureLogs",
    "AzurePartition",
    "AzureServe",
    "AzureSlurm",
    "Bastion",
    "DataDisk",
    "HealthExtension",
    "Image",
    "LoginNode",
    "NodeIdentity",
    "RoleGrant",
    "SecurityRule",
    "count_wired_gbps",
    "plan",
]


@dataclass(frozen=True)
class AzureLayout:
    spec: ClusterSpec
    location: str
    resource_group: str | None  # an existing group by name; None = create one
    vnet_cidr: str
    node_subnet_cidr: str
    nat_gateway: bool
    security_rules: tuple[SecurityRule, ...]
    proximity_placement_group: bool
    group: Group
    single_placement_group: bool | None  # scale sets only: True when InfiniBand is wired
    platform_fault_domain_count: int | None  # scale sets only: 1 for the InfiniBand (HPC) scale set
    ib_devices: int  # IB HCAs that the placement scope lets nodes use (0 = fabric not wired)
    image: Image
    os_disk_gb: int
    os_disk_type: str
    scratch: Scratch
    scratch_disk: DataDisk | None
    priority: Literal["Regular", "Spot"]
    eviction_policy: Literal["Delete", "Deallocate"] | None
    accelerated_networking: bool
    encryption_at_host: bool
    admin_user: str
    ssh_public_key: str
    public_ip: bool
    zones: tuple[str, ...]
    capacity_reservation_group: str | None  # a capacity reservation group id (`reservation`)
    custom_data: str
    fabric_usability: FabricUsability  # whether NCCL can use the wired IB on this image, and what is missing
    placement_applied: Literal["cluster", "spread", "none"]  # what the resources apply (a PPG or nothing)
    health_extension: HealthExtension | None  # scale sets with the health check on
    automatic_repairs: AutomaticRepairs | None  # scale sets with health.action: replace
    metrics_endpoints: tuple[Endpoint, ...]  # DCGM and node exporter; reachable only inside the VNet (NSG)
    tags: Mapping[str, str]
    warnings: tuple[str, ...]
    access: str  # bastion | ssh | none (spec.access, resolved)
    identity: NodeIdentity
    bastion: Bastion | None
    login: LoginNode | None
    shared: Shared | None = None  # storage.shared: Azure Managed Lustre, an Azure Files NFS share or an existing one
    shared_subnet_cidr: str | None = None  # AMLFS's own subnet: the last /24 of the VNet's second half
    aks: Aks | None = None  # scheduler kubernetes: the AKS cluster replaces the scale set / VMs
    slurm: AzureSlurm | None = None  # scheduler slurm: the head node, the MUNGE key's vault, the Slurm parts
    elastic: AzureElastic | None = None  # scaling: the scale set's autoscale setting, its queue and metric
    serve: AzureServe | None = None  # serve: the internal Standard Load Balancer in front of the scale set
    encryption: AzureEncryption | None = None  # encryption.key not provider: the vault, key and disk encryption set
    rollout: ScaleSetRollout | None = None  # scale sets: upgrade policy and Terminate notification (update:)
    budget: Budget | None = None  # budget: a Consumption budget on the cluster's resource group
    monitoring: AzureMonitoring | None = None  # monitoring.prometheus selfHosted: Prometheus, Grafana on the login node
    logs: AzureLogs | None = None  # monitoring.logs.enabled: the workspace, its collection rule, the agent on every VM
    alerts: AzureAlerts | None = None  # monitoring.notify: the action group, the Azure Monitor workspace, its rules
    partitions: tuple[AzurePartition, ...] = ()  # slurm.partitions: no group; per partition a VM body the head PUTs

    @property
    def fabric_gbps_wired(self) -> float:
        return self.ib_devices * self.spec.instance.gbps_per_fabric_device

    @property
    def custom_data_b64(self) -> str:
        return self.custom_data_b64_for(self.custom_data)

    def custom_data_b64_for(self, custom_data: str) -> str:
        return base64.b64encode(custom_data.encode()).decode()

    @property
    def ssh_key_path(self) -> str:
        return f"/home/{self.admin_user}/.ssh/authorized_keys"


@dataclass(frozen=True)
class AzurePartition:
    """An elastic partition's nodes: their layout (size, Spot, image, custom data) and the VM body the head PUTs."""

    name: str
    layout: AzureLayout

    @property
    def body_file(self) -> str:
        """The body's file name in the channel (the head writes it into /etc/slurm): launch.env's target."""
        return f"{BODY_PREFIX}{self.name}.json"


def vm_body(layout: AzureLayout) -> dict[str, Any]:
    """The body of `PUT .../virtualMachines/<cluster>-<node>` (azure-mgmt-compute VirtualMachine, its wire names),
    with the deploy-time placeholders and NODE_TOKEN."""
    spec = layout.spec
    name = vm_name(spec.name, NODE_TOKEN)
    power = cloud_data("azure")["powerSave"]
    managed: dict[str, Any] = {"storageAccountType": layout.os_disk_type}
    if layout.encryption is not None:
        managed["diskEncryptionSet"] = {"id": DISK_SET}
    image = layout.image
    image_ref = (
        {"id": image.id}
        if image.id is not None
        else {"publisher": image.publisher, "offer": image.offer, "sku": image.sku, "version": image.version}
    )
    storage: dict[str, Any] = {
        "imageReference": image_ref,
        "osDisk": {
            "createOption": "FromImage",
            "caching": "ReadWrite",
            "deleteOption": "Delete",
            "diskSizeGB": layout.os_disk_gb,
            "managedDisk": managed,
        },
    }
    disk = layout.scratch_disk
    if disk is not None:
        storage["dataDisks"] = [
            {
                "lun": disk.lun,
                "createOption": "Empty",
                "diskSizeGB": disk.size_gb,
                "caching": "None",
                "deleteOption": "Delete",  # a node's scratch goes with it (the VM is deleted when idle)
                "managedDisk": {**managed, "storageAccountType": disk.storage_account_type},
            }
        ]
    props: dict[str, Any] = {
        "hardwareProfile": {"vmSize": spec.instance.instanceType},
        "virtualMachineScaleSet": {"id": SCALE_SET},
        "storageProfile": storage,
        "osProfile": {
            "computerName": name,
            "adminUsername": layout.admin_user,
            "customData": CUSTOM_DATA,
            "linuxConfiguration": {
                "disablePasswordAuthentication": True,
                "ssh": {"publicKeys": [{"path": layout.ssh_key_path, "keyData": layout.ssh_public_key}]},
            },
        },
        "networkProfile": {
            "networkApiVersion": str(power["networkApiVersion"]),
            "networkInterfaceConfigurations": [
                {
                    "name": f"{name}-nic",
                    "properties": {
                        "primary": True,
                        "deleteOption": "Delete",
                        "enableAcceleratedNetworking": layout.accelerated_networking,
                        "ipConfigurations": [
                            {"name": "ipv4", "properties": {"primary": True, "subnet": {"id": SUBNET}}}
                        ],
                    },
                }
            ],
        },
    }
    if layout.proximity_placement_group:
        props["proximityPlacementGroup"] = {"id": PPG}
    if layout.encryption_at_host:
        props["securityProfile"] = {"encryptionAtHost": True}
    if layout.capacity_reservation_group:
        props["capacityReservation"] = {"capacityReservationGroup": {"id": layout.capacity_reservation_group}}
    if layout.priority == "Spot":
        # max_price -1: pay up to the on-demand price (as the cluster's Spot VMs); Delete: an evicted node goes
        props.update(priority="Spot", evictionPolicy="Delete", billingProfile={"maxPrice": -1})
    body: dict[str, Any] = {
        "location": layout.location,
        "tags": {**layout.tags, "Name": name},
        "identity": {"type": "UserAssigned", "userAssignedIdentities": {IDENTITY: {}}},
        "properties": props,
    }
    if layout.zones:
        body["zones"] = list(layout.zones)
    return body


def body_text(layout: AzureLayout) -> str:
    """The body as the head sends it: one line of JSON."""
    return json.dumps(vm_body(layout), separators=(",", ":"), sort_keys=True) + "\n"


def _partitions(spec: ClusterSpec, slurm: AzureSlurm | None) -> tuple[AzurePartition, ...]:
    if slurm is None or not spec.partitions:
        return ()
    return tuple(
        AzurePartition(
            # a scale set's placement decisions: one fault domain and the InfiniBand scope, evictionPolicy Delete
            part.name,
            plan(partition_spec(spec, part, node_group="managed"), slurm.compute_parts),
        )
        for part in spec.partitions
    )


def plan(spec: ClusterSpec, extra_parts: tuple[Part, ...] = ()) -> AzureLayout:
    """The cluster's layout; `extra_parts` follow the node parts (an elastic partition's Slurm parts)."""
    row = spec.instance
    k = f"{CLUSTER_KEY}."
    ib = spec.fabric_wired and row.fabric == "infiniband"
    group: Group = "scale-set" if spec.node_group == "managed" else "availability-set" if ib else "vms"
    node_cidr = split_cidr(spec.network.cidr, 1, 1)[0]  # first half; the second stays free (bastion, etc.)
    refuse([*arch.problems(spec), *group_problems(spec, group, ib, node_cidr), *logs_problems(spec)])
    assert spec.ssh_public_key is not None  # refused above

    scratch = scratch_for(spec, NVME_GLOBS, DATA_DISK_GLOBS)
    shared = shared_for(spec)
    scratch_disk = (
        DataDisk(SCRATCH_LUN, spec.storage.scratch_gb, DISK_TYPE, not spec.storage.retain_scratch)
        if scratch.kind == "disk"
        else None
    )
    warnings: list[str] = []
    if scratch_disk is not None and not scratch_disk.delete_with_vm and group == "scale-set":
        warnings.append(
            f"{k}storage.retainScratch: scale sets delete an instance's data disks with the instance; "
            "the scratch disk is kept only with nodeGroup: instances"
        )
    image = image_of(spec)
    ib_devices = row.fabricDevices if ib else 0
    fabric, usability = fabric_parts(spec, ib, image)
    extension, repairs = plan_health(spec, group)
    priority: Literal["Regular", "Spot"] = "Spot" if spec.spot else "Regular"
    eviction: Literal["Delete", "Deallocate"] | None = None
    if spec.spot:
        # Scale sets: Delete, so evicted instances free their quota and disks instead of lingering deallocated.
        # Single VMs: Deallocate keeps the VM and its disks (the Pulumi state stays true); local NVMe is lost anyway.
        eviction = "Delete" if group == "scale-set" else "Deallocate"
        lost = "the VM, its OS disk and all node data" if eviction == "Delete" else "local NVMe and temp disk contents"
        warnings.append(
            f"{k}spot: Azure Spot with evictionPolicy {eviction}: an eviction loses {lost}; "
            "keep checkpoints off the node"
        )
    if spec.azure.encryption_at_host and row.localNvmeCount:
        warnings.append(
            f"{k}azure.encryptionAtHost: local NVMe disks are not encrypted by encryption at host "
            "(MicrosoftDocs ncads-h100-v5.md); the scratch RAID is plain"
        )
    if spec.placement == "spread":
        warnings.append(
            f"{k}placement: spread has no Azure counterpart here (a proximity placement group only co-locates); "
            "no placement group is created"
        )
    if spec.login is not None and spec.network.public_ip:
        warnings.append(
            f"{k}network.publicIp: a login node exists, so the GPU nodes get no public IP; "
            "set login.publicIp to reach the login node from sshCidrs"
        )
    elastic = elastic_plan(spec, group) if spec.scheduler == "none" else None
    if ib and spec.max_nodes > spec.nodes and spec.scaling is None:
        warnings.append(
            f"{k}maxNodes: the scale set starts at {spec.nodes} VMs; scale it (capacity) up to {spec.max_nodes} "
            "yourself or with an autoscale setting, within the one placement group"
        )
    aks = plan_aks(spec, node_cidr, ib, warnings) if spec.scheduler == "kubernetes" else None
    monitoring = monitoring_plan(spec)
    logs = logs_plan(spec)
    if logs is not None and spec.partitions:
        warnings.append(
            f"{k}monitoring.logs.enabled: the elastic partitions' VMs (created by the head's resume program) get no "
            "Azure Monitor Agent yet; the head's and the login node's logs are shipped"
        )
    slurm = azure_slurm.plan(spec, shared.mount if shared else None, node_cidr, monitoring.part if monitoring else None)
    if aks is not None:
        # AKS nodes run AKS's node image and no bootstrap: no scratch RAID, no data disk, no health extension;
        # NCCL's InfiniBand prerequisites come from the in-cluster releases instead of the HPC image
        scratch, scratch_disk, extension, repairs = Scratch("none", scratch.path, 0, None, ()), None, None, None
        usability = aks_fabric(spec, aks)
    # the key last, on the scratch as built: its refusal (a key id with Managed Lustre) comes before any resource
    encryption = key_plan(spec, shared, scratch)
    rollout = scale_set_rollout(spec, group, extension is not None, warnings)
    return AzureLayout(
        spec=spec,
        location=spec.region,
        resource_group=spec.azure.resource_group,
        vnet_cidr=spec.network.cidr,
        node_subnet_cidr=node_cidr,
        nat_gateway=spec.network.egress == "nat",
        security_rules=security_rules(spec) + probe_rule(spec) + (pod_rules(aks, node_cidr) if aks else ()),
        proximity_placement_group=spec.placement == "cluster",
        group=group,
        single_placement_group=single_placement_group(spec, group, ib),
        # azurehpc `_add_vmss` (fault_domain_count 1) and our availability set: one fault domain for the
        # IB scale set; unset elsewhere (Azure's default, so other scale sets do not change).
        platform_fault_domain_count=1 if group == "scale-set" and ib else None,
        ib_devices=ib_devices,
        image=image,
        os_disk_gb=spec.storage.root_gb,
        os_disk_type=DISK_TYPE,
        scratch=scratch,
        scratch_disk=scratch_disk,
        priority=priority,
        eviction_policy=eviction,
        accelerated_networking=bool(row.extra.get("acceleratedNetworking", False)),
        encryption_at_host=spec.azure.encryption_at_host,
        admin_user=spec.admin_user,
        ssh_public_key=spec.ssh_public_key,
        public_ip=spec.network.public_ip and spec.login is None,
        zones=(spec.zone,) if spec.zone else (),
        capacity_reservation_group=spec.reservation or None,
        custom_data=custom_data(
            spec,
            scratch,
            ib_devices,
            fabric,
            endpoint_part(extension),
            repairs is not None,
            shared,
            (*(slurm.compute_parts if slurm else ()), *(elastic.parts if elastic else ()), *extra_parts),
        ),
        fabric_usability=usability,
        placement_applied="cluster" if spec.placement == "cluster" else "none",
        health_extension=extension,
        automatic_repairs=repairs,
        metrics_endpoints=endpoints() if spec.dcgm_exporter else (),
        tags=dict(spec.base_tags),
        warnings=tuple(warnings),
        access=spec.access,
        identity=node_identity(spec),
        bastion=bastion(spec, node_cidr),
        login=login(spec, node_cidr),
        shared=shared,
        shared_subnet_cidr=shared_subnet(spec, node_cidr, shared),
        aks=aks,
        slurm=slurm,
        elastic=elastic,
        serve=serve_plan(spec) if group == "scale-set" else None,
        encryption=encryption,
        rollout=rollout,
        budget=budget_plan(spec, CLUSTER_TAG, spec.name, budget_data("azure").get("note", "")),
        monitoring=monitoring,
        logs=logs,
        alerts=alerts_plan(spec),
        partitions=_partitions(spec, slurm),
    )
