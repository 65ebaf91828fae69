"""The VM model every Azure VM of the cluster shares (image, Linux and SSH, OS disk, public IP), and the VMs beside
the GPU nodes (the login node, the Slurm head): their NIC and the VM, built the same way whatever the VM is for;
`role` names them (f"{name}-{role}", f"{name}-{role}-nic", f"{name}-{role}-ip")."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_azure_native as azure

from ..layout.azure import AzureLayout
from .context import Context
from .encryption import disk_set
from .identity import Identity


def image_reference(layout: AzureLayout) -> azure.compute.ImageReferenceArgs:
    image = layout.image
    if image.id is not None:
        return azure.compute.ImageReferenceArgs(id=image.id)
    return azure.compute.ImageReferenceArgs(
        publisher=image.publisher, offer=image.offer, sku=image.sku, version=image.version
    )


def linux(layout: AzureLayout) -> azure.compute.LinuxConfigurationArgs:
    # A key from a `secure:` config value stays secret in state and in the plan.
    key: pulumi.Input[str] = (
        pulumi.Output.secret(layout.ssh_public_key) if layout.spec.secret_config else layout.ssh_public_key
    )
    return azure.compute.LinuxConfigurationArgs(
        disable_password_authentication=True,
        ssh=azure.compute.SshConfigurationArgs(
            public_keys=[azure.compute.SshPublicKeyArgs(key_data=key, path=layout.ssh_key_path)]
        ),
    )


def os_disk(ctx: Context, disk_size_gb: int | None) -> azure.compute.OSDiskArgs:
    """A VM's OS disk from the image, deleted with the VM, on the cluster's disk type and key (None: the image's
    size)."""
    return azure.compute.OSDiskArgs(
        create_option="FromImage",
        caching="ReadWrite",
        delete_option="Delete",
        disk_size_gb=disk_size_gb,
        managed_disk=azure.compute.ManagedDiskParametersArgs(
            storage_account_type=ctx.layout.os_disk_type, disk_encryption_set=disk_set(ctx)
        ),
    )


def public_ip(ctx: Context, role: str) -> azure.network.PublicIPAddress:
    """A VM's static public address, in the cluster's zones."""
    return azure.network.PublicIPAddress(
        f"{ctx.name}-{role}-ip",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        sku=azure.network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
        public_ip_allocation_method="Static",
        zones=ctx.zones,
        tags=ctx.tagged(f"{role}-ip"),
        opts=ctx.opts,
    )


def nic(
    ctx: Context,
    role: str,
    subnet_id: pulumi.Input[str],
    public_ip: azure.network.PublicIPAddress | None = None,
    accelerated_networking: bool | None = None,  # None: Azure's default (the GPU nodes set the layout's)
) -> azure.network.NetworkInterface:
    """The VM's one NIC: a dynamic private address in `subnet_id`, and `public_ip` when given."""
    return azure.network.NetworkInterface(
        f"{ctx.name}-{role}-nic",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        enable_accelerated_networking=accelerated_networking,
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
    user_data: pulumi.Input[str] | None = None,
    ignore_changes: Sequence[str] = (),
) -> azure.compute.VirtualMachine:
    """The VM on the cluster's image (the same MPI / NCCL tools and Ubuntu as the nodes), the nodes' identity and
    SSH key, its OS disk on the cluster's disk type and key. `user_data` (base64): what the VM reads at run time from
    IMDS, updated in place (the Slurm head's GPU-node configuration); None leaves the input out."""
    layout = ctx.layout
    extra = pulumi.ResourceOptions(depends_on=list(depends_on) or None, ignore_changes=list(ignore_changes) or None)
    opts = pulumi.ResourceOptions.merge(ctx.opts, extra) if depends_on or ignore_changes else ctx.opts
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
            os_disk=os_disk(ctx, disk_size_gb),
        ),
        network_profile=azure.compute.NetworkProfileArgs(
            network_interfaces=[azure.compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]
        ),
        security_profile=azure.compute.SecurityProfileArgs(encryption_at_host=True) if host_encryption else None,
        tags=ctx.tagged(role),
        user_data=user_data,
        opts=opts,
    )
