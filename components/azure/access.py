"""The way in: Azure Bastion (Standard, native-client tunnelling) in AzureBastionSubnet, and an optional
login node in its own subnet and NSG, the only place sshCidrs and a public IP land when it exists."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

from ..layout.azure.access import BASTION_SUBNET_NAME
from . import vm
from .context import Context
from .identity import Identity
from .network import Network, security_rule_args


@dataclass(frozen=True)
class Access:
    bastion: azure.network.BastionHost | None
    login_vm: azure.compute.VirtualMachine | None
    login_nic: azure.network.NetworkInterface | None
    login_ip: azure.network.PublicIPAddress | None


def _after(previous: pulumi.Resource | None) -> list[pulumi.Resource]:
    return [previous] if previous is not None else []


def build(
    ctx: Context,
    net: Network,
    identity: Identity,
    login_custom_data: pulumi.Input[str] | None = None,
    defer_login_vm: bool = False,
) -> Access:
    """`login_custom_data`: the login node's bootstrap (scheduler slurm: the Slurm client); None: none.
    `defer_login_vm`: stop at the login NIC; `login_vm` builds the VM once its custom data can be made (it needs
    the shared filesystem's address, and the filesystem's subnet comes after the login subnet)."""
    layout, name, rg = ctx.layout, ctx.name, ctx.resource_group_name
    # Subnets of one VNet one at a time: Azure refuses concurrent subnet writes on a VNet
    # (AnotherOperationInProgress), so each new subnet waits for the one before it.
    # (an existing network's subnet is not ours: then neither Bastion nor a login subnet is built, spec-refused)
    previous: pulumi.Resource | None = net.subnet if isinstance(net.subnet, pulumi.Resource) else None
    bastion = None
    if layout.bastion is not None:
        subnet = azure.network.Subnet(
            f"{name}-bastion-subnet",
            subnet_name=BASTION_SUBNET_NAME,  # Azure requires this exact name
            resource_group_name=rg,
            virtual_network_name=net.vnet.name,
            address_prefix=layout.bastion.subnet_cidr,
            opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=_after(previous))),
        )
        previous = subnet
        ip = azure.network.PublicIPAddress(
            f"{name}-bastion-ip",
            resource_group_name=rg,
            location=ctx.location,
            sku=azure.network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
            public_ip_allocation_method="Static",
            public_ip_address_version="IPv4",
            tags=ctx.tagged("bastion-ip"),
            opts=ctx.opts,
        )
        bastion = azure.network.BastionHost(
            f"{name}-bastion",
            resource_group_name=rg,
            location=ctx.location,
            sku=azure.network.SkuArgs(name=layout.bastion.sku),
            # Native client support (`az network bastion ssh` / `tunnel`): Standard SKU and this flag.
            enable_tunneling=True,
            ip_configurations=[
                azure.network.BastionHostIPConfigurationArgs(
                    name="bastion",
                    subnet=azure.network.SubResourceArgs(id=subnet.id),
                    public_ip_address=azure.network.SubResourceArgs(id=ip.id),
                )
            ],
            tags=ctx.tagged("bastion"),
            opts=ctx.opts,
        )
    login = layout.login
    if login is None:
        return Access(bastion, None, None, None)
    nsg = azure.network.NetworkSecurityGroup(
        f"{name}-login-nsg",
        resource_group_name=rg,
        location=ctx.location,
        security_rules=security_rule_args(login.security_rules),
        tags=ctx.tagged("login-nsg"),
        opts=ctx.opts,
    )
    subnet = azure.network.Subnet(
        f"{name}-login-subnet",
        resource_group_name=rg,
        virtual_network_name=net.vnet.name,
        address_prefix=login.subnet_cidr,
        network_security_group=azure.network.NetworkSecurityGroupArgs(id=nsg.id),
        nat_gateway=azure.network.SubResourceArgs(id=net.nat.id) if net.nat else None,
        default_outbound_access=False,
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=_after(previous))),
    )
    ip = vm.public_ip(ctx, "login") if login.public_ip else None
    nic = vm.nic(ctx, "login", subnet.id, ip)
    if defer_login_vm:
        return Access(bastion, None, nic, ip)
    return Access(bastion, _login_vm(ctx, identity, nic, login_custom_data), nic, ip)


def login_vm(ctx: Context, way: Access, identity: Identity, custom_data: pulumi.Input[str] | None) -> Access:
    """The login VM of a `build(..., defer_login_vm=True)`."""
    assert way.login_nic is not None and way.login_vm is None
    return Access(way.bastion, _login_vm(ctx, identity, way.login_nic, custom_data), way.login_nic, way.login_ip)


def _login_vm(
    ctx: Context, identity: Identity, nic: azure.network.NetworkInterface, login_custom_data: pulumi.Input[str] | None
) -> azure.compute.VirtualMachine:
    login = ctx.layout.login
    assert login is not None
    # The cluster's image: the same MPI / NCCL tools as the nodes, for launching jobs from here.
    return vm.virtual_machine(
        ctx, "login", size=login.instance_type, nic=nic, identity=identity, custom_data=login_custom_data
    )
