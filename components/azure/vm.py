"""One VM of the cluster beside the GPU nodes (the login node, the Slurm head): its NIC and the VM, both built the
same way whatever the VM is for; `role` names them (f"{name}-{role}", f"{name}-{role}-nic")."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_azure_native as azure

from .context import Context
from .encryption import disk_set
from .identity import Identity
from .nodes import image_reference, linux


def nic(
    ctx: Context,
    role: str,
    subnet_id: pulumi.Input[str],
    public_ip: azure.network.PublicIPAddress | None = None,
) -> azure.network.NetworkInterface:
    """The VM's one NIC: a dynamic private address in `subnet_id`, and `public_ip` when given."""
    return azure.network.NetworkInterface(
        f"{ctx.name}-{role}-nic",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        ip_configurations=[
            azure.network.NetworkInterfaceIPConfigurationArgs(
                name="ipv4",
                primary=True,
                private_ip_allocation_method="Dynamic",
                subnet=azure.network.SubnetArgs(id=subnet_id),
                public_ip_address=azure.network.PublicIPAddressArgs(id=public_ip.id) if public_ip else None,
            )
        ],
        tags=ctx.tagged(f"{role}-nic"),
        opts=ctx.opts,
    )


def virtual_machine(
    ctx: Context,
    role: str,
    *,
    size: str,
    nic: azure.network.NetworkInterface,
    identity: Identity,
    custom_data: pulumi.Input[str] | None,
    disk_size_gb: int | None = None,  # None: the image's size
    host_encryption: bool = False,
    depends_on: Sequence[pulumi.Resource] = (),
) -> azure.compute.VirtualMachine:
    """The VM on the cluster's image (the same MPI / NCCL tools and Ubuntu as the nodes), the nodes' identity and
    SSH key, its OS disk on the cluster's disk type and key."""
    layout = ctx.layout
    opts = (
        pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=list(depends_on)))
        if depends_on
        else ctx.opts
    )
    return azure.compute.VirtualMachine(
        f"{ctx.name}-{role}",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        hardware_profile=azure.compute.HardwareProfileArgs(vm_size=size),
        zones=ctx.zones,
        identity=identity.for_vm(),
        os_profile=azure.compute.OSProfileArgs(
            computer_name=f"{layout.spec.name}-{role}",
            admin_username=layout.admin_user,
            linux_configuration=linux(layout),
            custom_data=custom_data,
        ),
        storage_profile=azure.compute.StorageProfileArgs(
            image_reference=image_reference(layout),
            os_disk=azure.compute.OSDiskArgs(
                create_option="FromImage",
                caching="ReadWrite",
                delete_option="Delete",
                disk_size_gb=disk_size_gb,
                managed_disk=azure.compute.ManagedDiskParametersArgs(
                    storage_account_type=layout.os_disk_type, disk_encryption_set=disk_set(ctx)
                ),
            ),
        ),
        network_profile=azure.compute.NetworkProfileArgs(
            network_interfaces=[azure.compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]
        ),
        security_profile=azure.compute.SecurityProfileArgs(encryption_at_host=True) if host_encryption else None,
        tags=ctx.tagged(role),
        opts=opts,
    )
