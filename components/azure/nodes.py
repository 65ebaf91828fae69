"""The GPU nodes: a proximity placement group, then one Uniform scale set (managed) or N VMs with their
NICs, in one availability set when InfiniBand is wired (instances)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ..layout.azure import AzureLayout
from ..layout.azure import names as azure_names
from ..resources import Joined, fill
from . import logs, vm
from .context import Context
from .encryption import disk_set
from .identity import Identity
from .vm import image_reference, linux, os_disk


@dataclass(frozen=True)
class Nodes:
    ppg: azure.compute.ProximityPlacementGroup | None
    scale_set: azure.compute.VirtualMachineScaleSet | None = None
    availability_set: azure.compute.AvailabilitySet | None = None
    vms: list[azure.compute.VirtualMachine] = field(default_factory=list)
    nics: list[azure.network.NetworkInterface] = field(default_factory=list)


# --- pieces of the GPU nodes' VM model (the shared ones are in vm.py) ----------------------------------


def _security_profile(layout: AzureLayout) -> azure.compute.SecurityProfileArgs | None:
    return azure.compute.SecurityProfileArgs(encryption_at_host=True) if layout.encryption_at_host else None


def _capacity_reservation(layout: AzureLayout) -> azure.compute.CapacityReservationProfileArgs | None:
    group = layout.capacity_reservation_group
    if group is None:
        return None
    return azure.compute.CapacityReservationProfileArgs(
        capacity_reservation_group=azure.compute.SubResourceArgs(id=group)
    )


def _spot(layout: AzureLayout) -> dict[str, Any]:
    if layout.priority != "Spot":
        return {}
    # max_price -1: pay up to the on-demand price, so capacity (not price) is the only eviction reason.
    return {
        "priority": "Spot",
        "eviction_policy": layout.eviction_policy,
        "billing_profile": azure.compute.BillingProfileArgs(max_price=-1),
    }


def _extension_profile(
    layout: AzureLayout, identity_id: pulumi.Input[str]
) -> azure.compute.VirtualMachineScaleSetExtensionProfileArgs | None:
    """The Application Health extension probing the node's loopback health endpoint (layout.health_extension) and
    the Azure Monitor Agent (layout.logs), in that order: adding the agent leaves the health extension as it was."""
    extensions = []
    ext = layout.health_extension
    if ext is not None:
        extensions.append(
            azure.compute.VirtualMachineScaleSetExtensionArgs(
                name=ext.name,
                publisher=ext.publisher,
                type=ext.type,
                type_handler_version=ext.type_handler_version,
                auto_upgrade_minor_version=True,
                settings=dict(ext.settings),
            )
        )
    agent = logs.scale_set_extension(layout.logs, identity_id)
    if agent is not None:
        extensions.append(agent)
    return azure.compute.VirtualMachineScaleSetExtensionProfileArgs(extensions=extensions) if extensions else None


def _upgrade_policy(layout: AzureLayout) -> azure.compute.UpgradePolicyArgs:
    rollout = layout.rollout
    if rollout is None or rollout.mode == "Manual":
        return azure.compute.UpgradePolicyArgs(mode="Manual")
    return azure.compute.UpgradePolicyArgs(
        mode="Rolling",
        rolling_upgrade_policy=azure.compute.RollingUpgradePolicyArgs(
            max_batch_instance_percent=rollout.max_batch_percent,
            max_unhealthy_instance_percent=rollout.max_unhealthy_percent,
            max_surge=rollout.max_surge,
            # a batch whose VMs do not turn healthy (the Application Health extension) stops the upgrade and
            # puts the failed VMs back on the previous model
            rollback_failed_instances_on_policy_breach=True,
            prioritize_unhealthy_instances=True,
        ),
    )


def _scheduled_events(layout: AzureLayout) -> azure.compute.ScheduledEventsProfileArgs | None:
    rollout = layout.rollout
    if rollout is None:
        return None
    return azure.compute.ScheduledEventsProfileArgs(
        terminate_notification_profile=azure.compute.TerminateNotificationProfileArgs(
            enable=True, not_before_timeout=rollout.terminate_not_before
        )
    )


def _automatic_repairs(layout: AzureLayout) -> azure.compute.AutomaticRepairsPolicyArgs | None:
    repairs = layout.automatic_repairs
    if repairs is None:
        return None
    return azure.compute.AutomaticRepairsPolicyArgs(
        enabled=True, grace_period=repairs.grace_period, repair_action=repairs.repair_action
    )


def custom_data(
    layout: AzureLayout, mount_source: pulumi.Input[str] | None, head_address: pulumi.Input[str] | None = None
) -> pulumi.Input[str]:
    """The nodes' custom data, with the shared filesystem's mount source and the Slurm head's address once they are
    known (deploy)."""
    return fill(
        layout.custom_data,
        {SOURCE_PLACEHOLDER: mount_source, HEAD_PLACEHOLDER: head_address},
        layout.custom_data_b64_for,
    )


def placement_group(ctx: Context) -> azure.compute.ProximityPlacementGroup | None:
    """The GPU nodes' proximity placement group (placement cluster): the scale set's, the VMs' or the AKS GPU pool's."""
    if not ctx.layout.proximity_placement_group:
        return None
    return azure.compute.ProximityPlacementGroup(
        f"{ctx.name}-ppg",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        proximity_placement_group_type="Standard",
        # The intent lets Azure pick a datacenter that has this size before the first VM lands.
        intent=azure.compute.ProximityPlacementGroupPropertiesIntentArgs(
            vm_sizes=[ctx.layout.spec.instance.instanceType]
        ),
        zones=ctx.zones,
        tags=ctx.tagged("ppg"),
        opts=ctx.opts,
    )


def build(
    ctx: Context,
    subnet: azure.network.Subnet | Joined,
    identity: Identity,
    mount_source: pulumi.Input[str] | None = None,  # the shared filesystem's, known at deploy
    head_address: pulumi.Input[str] | None = None,  # scheduler slurm: the head's private IP, known at deploy
    serve_pool: pulumi.Input[str] | None = None,  # serve: the load balancer's backend pool the NICs join
) -> Nodes:
    layout = ctx.layout
    ppg = placement_group(ctx)
    data = custom_data(layout, mount_source, head_address)
    if layout.group == "scale-set":
        return Nodes(ppg, scale_set=_scale_set(ctx, subnet, ppg, identity, data, serve_pool))
    return _vms(ctx, subnet, ppg, identity, data)


# --- managed: one Uniform scale set ----------------------------------------------------------------


def _scale_set(
    ctx: Context,
    subnet: azure.network.Subnet | Joined,
    ppg: azure.compute.ProximityPlacementGroup | None,
    identity: Identity,
    node_custom_data: pulumi.Input[str],
    serve_pool: pulumi.Input[str] | None = None,
) -> azure.compute.VirtualMachineScaleSet:
    layout = ctx.layout
    spec = layout.spec
    disk = layout.scratch_disk
    data_disks = (
        [
            azure.compute.VirtualMachineScaleSetDataDiskArgs(
                lun=disk.lun,
                create_option="Empty",
                disk_size_gb=disk.size_gb,
                caching="None",
                managed_disk=azure.compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                    storage_account_type=disk.storage_account_type, disk_encryption_set=disk_set(ctx)
                ),
            )
        ]
        if disk is not None
        else None
    )
    public_ip = (
        azure.compute.VirtualMachineScaleSetPublicIPAddressConfigurationArgs(
            name="public", sku=azure.compute.PublicIPAddressSkuArgs(name="Standard", tier="Regional")
        )
        if layout.public_ip
        else None
    )
    return azure.compute.VirtualMachineScaleSet(
        f"{ctx.name}-vmss",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        # Uniform: singlePlacementGroup (the InfiniBand scope) is a Uniform scale-set property.
        orchestration_mode="Uniform",
        single_placement_group=layout.single_placement_group,
        platform_fault_domain_count=layout.platform_fault_domain_count,
        sku=azure.compute.SkuArgs(name=spec.instance.instanceType, tier="Standard", capacity=spec.nodes),
        # Overprovisioning would start extra GPU VMs (quota, cost) and churn the IB placement group.
        overprovision=False,
        # update: Rolling (health-gated batches, rolled back on a breach) or Manual (layout.azure.nodes)
        upgrade_policy=_upgrade_policy(layout),
        # health.action replace: an instance the health extension reports Unhealthy (or Unknown) is replaced
        # by this scale set itself; nothing is granted to the nodes for it.
        automatic_repairs_policy=_automatic_repairs(layout),
        proximity_placement_group=azure.compute.SubResourceArgs(id=ppg.id) if ppg else None,
        zones=ctx.zones,
        identity=identity.for_scale_set(),
        virtual_machine_profile=azure.compute.VirtualMachineScaleSetVMProfileArgs(
            os_profile=azure.compute.VirtualMachineScaleSetOSProfileArgs(
                computer_name_prefix=azure_names.computer_name_prefix(spec.name),
                admin_username=layout.admin_user,
                linux_configuration=linux(layout),
                custom_data=node_custom_data,
            ),
            storage_profile=azure.compute.VirtualMachineScaleSetStorageProfileArgs(
                image_reference=image_reference(layout),
                os_disk=azure.compute.VirtualMachineScaleSetOSDiskArgs(
                    create_option="FromImage",
                    caching="ReadWrite",
                    disk_size_gb=layout.os_disk_gb,
                    managed_disk=azure.compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                        storage_account_type=layout.os_disk_type, disk_encryption_set=disk_set(ctx)
                    ),
                ),
                data_disks=data_disks,
            ),
            network_profile=azure.compute.VirtualMachineScaleSetNetworkProfileArgs(
                network_interface_configurations=[
                    azure.compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                        name="primary",
                        primary=True,
                        enable_accelerated_networking=layout.accelerated_networking,
                        ip_configurations=[
                            azure.compute.VirtualMachineScaleSetIPConfigurationArgs(
                                name="ipv4",
                                primary=True,
                                subnet=azure.compute.ApiEntityReferenceArgs(id=subnet.id),
                                public_ip_address_configuration=public_ip,
                                # serve: every instance's NIC joins the load balancer's pool (absent otherwise)
                                load_balancer_backend_address_pools=[azure.compute.SubResourceArgs(id=serve_pool)]
                                if serve_pool is not None
                                else None,
                            )
                        ],
                    )
                ]
            ),
            security_profile=_security_profile(layout),
            # a VM being deleted (scale-in, a surge batch, an eviction) gets a Terminate event and drains first
            scheduled_events_profile=_scheduled_events(layout),
            capacity_reservation=_capacity_reservation(layout),
            extension_profile=_extension_profile(layout, identity.resource_id),
            **_spot(layout),
        ),
        tags=ctx.tagged("vmss"),
        # scaling: the autoscale setting owns the capacity after the deploy (azure/scaling.py)
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(ignore_changes=["sku.capacity"]))
        if layout.elastic is not None
        else ctx.opts,
    )


# --- instances: N VMs (one availability set when InfiniBand is wired) -------------------------------


def _vms(
    ctx: Context,
    subnet: azure.network.Subnet | Joined,
    ppg: azure.compute.ProximityPlacementGroup | None,
    identity: Identity,
    node_custom_data: pulumi.Input[str],
) -> Nodes:
    layout = ctx.layout
    spec, name, child, tagged, rg, zones = (
        layout.spec,
        ctx.name,
        ctx.opts,
        ctx.tagged,
        ctx.resource_group_name,
        ctx.zones,
    )
    ppg_ref = azure.compute.SubResourceArgs(id=ppg.id) if ppg else None
    availability_set = None
    if layout.group == "availability-set":
        # InfiniBand spans the VMs of one availability set (setup-infiniband.md). "Aligned" is the SKU
        # for VMs with managed disks; one fault domain keeps the set on the fewest racks.
        availability_set = azure.compute.AvailabilitySet(
            f"{name}-avset",
            resource_group_name=rg,
            location=layout.location,
            sku=azure.compute.SkuArgs(name="Aligned"),
            platform_fault_domain_count=1,
            proximity_placement_group=ppg_ref,
            tags=tagged("avset"),
            opts=child,
        )
    # Inputs that are the same on every node are built once and shared: the SDK only reads them (each
    # registration serializes its own copy), and one secret `Output` for the key instead of N.
    availability_set_ref = azure.compute.SubResourceArgs(id=availability_set.id) if availability_set else None
    hardware = azure.compute.HardwareProfileArgs(vm_size=spec.instance.instanceType)
    linux_config = linux(layout)
    disk = layout.scratch_disk
    storage = azure.compute.StorageProfileArgs(
        image_reference=image_reference(layout),
        os_disk=os_disk(ctx, layout.os_disk_gb),
        data_disks=(
            [
                azure.compute.DataDiskArgs(
                    lun=disk.lun,
                    create_option="Empty",
                    disk_size_gb=disk.size_gb,
                    caching="None",
                    delete_option="Delete" if disk.delete_with_vm else "Detach",
                    managed_disk=azure.compute.ManagedDiskParametersArgs(
                        storage_account_type=disk.storage_account_type, disk_encryption_set=disk_set(ctx)
                    ),
                )
            ]
            if disk is not None
            else None
        ),
    )
    security, capacity, spot = _security_profile(layout), _capacity_reservation(layout), _spot(layout)
    vm_identity = identity.for_vm()
    vms, nics = [], []
    for i in range(spec.nodes):
        public_ip = vm.public_ip(ctx, f"node-{i}") if layout.public_ip else None
        nic = vm.nic(ctx, f"node-{i}", subnet.id, public_ip, accelerated_networking=layout.accelerated_networking)
        nics.append(nic)
        vms.append(
            azure.compute.VirtualMachine(
                f"{name}-node-{i}",
                resource_group_name=rg,
                location=layout.location,
                hardware_profile=hardware,
                availability_set=availability_set_ref,
                proximity_placement_group=ppg_ref,
                zones=zones,
                identity=vm_identity,
                os_profile=azure.compute.OSProfileArgs(
                    computer_name=f"{spec.name}-{i}",
                    admin_username=layout.admin_user,
                    linux_configuration=linux_config,
                    custom_data=node_custom_data,
                ),
                storage_profile=storage,
                network_profile=azure.compute.NetworkProfileArgs(
                    network_interfaces=[azure.compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]
                ),
                security_profile=security,
                capacity_reservation=capacity,
                tags=tagged(f"node-{i}"),
                opts=child,
                **spot,
            )
        )
    return Nodes(ppg, availability_set=availability_set, vms=vms, nics=nics)
