"""Azure resources for one GPU cluster: maps an `AzureLayout` onto pulumi-azure-native, nothing more.

Decisions (InfiniBand scope, NSG rules, image, spot eviction, scratch) are made in
`components.layout.azure`; this module turns them into a resource group, a VNet with a private node
subnet, an NSG, a NAT gateway, an optional proximity placement group, and either one Uniform VM scale
set (managed) or N VMs with their NICs, in one availability set when InfiniBand is wired (instances).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..layout.azure import AzureLayout

TYPE = "gpu-cluster:azure:Cluster"


def _is_api_version_alias(alias: Any, type_: str) -> bool:
    """True for the SDK's own alias of `type_` to one of its API-version tokens, and nothing else.

    Each azure-native class adds one `Alias(type_="azure-native:<module>/v<date>:<Kind>")` per API
    version the resource ever had (29 for a VM, 61 for a NIC), so that a stack created with a versioned
    token moves to the default token without a replacement.
    """
    package, _, rest = type_.partition(":")
    module, _, kind = rest.partition(":")
    return (
        isinstance(alias, pulumi.Alias)
        and isinstance(alias.type_, str)
        and alias.type_.startswith(f"{package}:{module}/v")
        and alias.type_.endswith(f":{kind}")
        and all(getattr(alias, field) is ... for field in ("name", "parent", "stack", "project"))
    )


def drop_api_version_aliases(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    """Resource transformation: drop the SDK's API-version aliases from our children, keep any other alias.

    Why: the Python SDK turns every alias into a URN `Output` chain in `Resource.__init__`, even when the
    engine takes alias specs, so these aliases were ~70 % of the CPU and ~95 % of the memory of a plan in
    `nodeGroup: instances` (docs/azure.md, "Plan cost"; pulumi/pulumi-azure-native#1493). This program
    only ever registers the default (unversioned) tokens, so no state of it can match a versioned alias:
    `pulumi up` does the same with or without them. A legacy `transformations` entry (not `transforms`)
    because it runs in-process before the SDK builds the alias URNs; `transforms` run in the engine after.
    """
    aliases = args.opts.aliases
    if not aliases:
        return None
    kept = [alias for alias in aliases if not _is_api_version_alias(alias, args.type_)]
    if len(kept) == len(aliases):
        return None
    opts = pulumi.ResourceOptions.merge(args.opts, None)  # a copy: the caller's options stay unchanged
    opts.aliases = kept or None
    return pulumi.ResourceTransformationResult(args.props, opts)


class CloudCluster(pulumi.ComponentResource):
    """The Azure half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: AzureLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        spec = layout.spec
        # Children only (not this component): drop the provider's API-version aliases (see the function).
        child = pulumi.ResourceOptions(parent=self, transformations=[drop_api_version_aliases])
        self._child = child
        self._name = name
        for warning in layout.warnings:
            pulumi.log.warn(warning, resource=self)

        def tagged(suffix: str) -> dict[str, str]:
            return {**layout.tags, "Name": f"{spec.name}-{suffix}"}

        self._tagged = tagged
        location = layout.location
        zones = list(layout.zones) or None

        self.resource_group_name: pulumi.Input[str]
        if layout.resource_group is not None:
            # An existing group, by name: nothing is created or deleted there except our own resources.
            self.resource_group_name = layout.resource_group
        else:
            group = azure.resources.ResourceGroup(f"{name}-rg", location=location, tags=tagged("rg"), opts=child)
            self.resource_group_name = group.name
        rg = self.resource_group_name

        self.vnet = azure.network.VirtualNetwork(
            f"{name}-vnet",
            resource_group_name=rg,
            location=location,
            address_space=azure.network.AddressSpaceArgs(address_prefixes=[layout.vnet_cidr]),
            # No inline `subnets`: the provider then leaves the separate Subnet below alone on VNet updates
            # (pulumi/pulumi-azure-native#611).
            tags=tagged("vnet"),
            opts=child,
        )
        self.nsg = azure.network.NetworkSecurityGroup(
            f"{name}-nsg",
            resource_group_name=rg,
            location=location,
            security_rules=[
                azure.network.SecurityRuleArgs(
                    name=rule.name,
                    priority=rule.priority,
                    direction=rule.direction,
                    access=rule.access,
                    protocol=rule.protocol,
                    source_address_prefixes=list(rule.sources) if len(rule.sources) > 1 else None,
                    source_address_prefix=rule.sources[0] if len(rule.sources) == 1 else None,
                    source_port_range="*",
                    destination_address_prefix=rule.destination,
                    destination_port_range=rule.port,
                    description=rule.description,
                )
                for rule in layout.security_rules
            ],
            tags=tagged("nsg"),
            opts=child,
        )
        self.nat = None
        if layout.nat_gateway:
            nat_ip = azure.network.PublicIPAddress(
                f"{name}-nat-ip",
                resource_group_name=rg,
                location=location,
                sku=azure.network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
                public_ip_allocation_method="Static",
                public_ip_address_version="IPv4",
                zones=zones,
                tags=tagged("nat-ip"),
                opts=child,
            )
            self.nat = azure.network.NatGateway(
                f"{name}-nat",
                resource_group_name=rg,
                location=location,
                sku=azure.network.NatGatewaySkuArgs(name="Standard"),
                public_ip_addresses=[azure.network.SubResourceArgs(id=nat_ip.id)],
                zones=zones,
                tags=tagged("nat"),
                opts=child,
            )
        self.subnet = azure.network.Subnet(
            f"{name}-nodes",
            resource_group_name=rg,
            virtual_network_name=self.vnet.name,
            address_prefix=layout.node_subnet_cidr,
            network_security_group=azure.network.NetworkSecurityGroupArgs(id=self.nsg.id),
            nat_gateway=azure.network.SubResourceArgs(id=self.nat.id) if self.nat else None,
            # Private subnet: outbound only through the NAT gateway (or a node's own public IP).
            default_outbound_access=False,
            opts=child,
        )

        self.ppg = (
            azure.compute.ProximityPlacementGroup(
                f"{name}-ppg",
                resource_group_name=rg,
                location=location,
                proximity_placement_group_type="Standard",
                # The intent lets Azure pick a datacenter that has this size before the first VM lands.
                intent=azure.compute.ProximityPlacementGroupPropertiesIntentArgs(vm_sizes=[spec.instance.instanceType]),
                zones=zones,
                tags=tagged("ppg"),
                opts=child,
            )
            if layout.proximity_placement_group
            else None
        )

        node_ids: pulumi.Output[Any]
        self.scale_set: azure.compute.VirtualMachineScaleSet | None = None
        self.availability_set: azure.compute.AvailabilitySet | None = None
        self.vms: list[azure.compute.VirtualMachine] = []
        if layout.group == "scale-set":
            self.scale_set = self._scale_set(layout, rg, zones)
            node_ids = self.scale_set.name
        else:
            self.vms = self._vms(layout, rg, zones)
            node_ids = pulumi.Output.all(*[vm.id for vm in self.vms])

        self.outputs = {
            "resourceGroup": rg,
            "vpcId": self.vnet.id,
            "subnetIds": pulumi.Output.all(self.subnet.id),
            "securityGroupId": self.nsg.id,
            "imageId": layout.image.ref,
            "nodeGroup" if layout.group == "scale-set" else "instanceIds": node_ids,
            "placementGroup": self.ppg.id if self.ppg else None,
        }
        if self.availability_set is not None:
            self.outputs["availabilitySet"] = self.availability_set.id
        self.register_outputs(self.outputs)

    # --- shared pieces of the VM model -------------------------------------------------------------

    def _image_reference(self) -> azure.compute.ImageReferenceArgs:
        image = self.layout.image
        if image.id is not None:
            return azure.compute.ImageReferenceArgs(id=image.id)
        return azure.compute.ImageReferenceArgs(
            publisher=image.publisher, offer=image.offer, sku=image.sku, version=image.version
        )

    def _linux(self) -> azure.compute.LinuxConfigurationArgs:
        layout = self.layout
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

    def _security_profile(self) -> azure.compute.SecurityProfileArgs | None:
        return azure.compute.SecurityProfileArgs(encryption_at_host=True) if self.layout.encryption_at_host else None

    def _capacity_reservation(self) -> azure.compute.CapacityReservationProfileArgs | None:
        group = self.layout.capacity_reservation_group
        if group is None:
            return None
        return azure.compute.CapacityReservationProfileArgs(
            capacity_reservation_group=azure.compute.SubResourceArgs(id=group)
        )

    def _spot(self) -> dict[str, Any]:
        layout = self.layout
        if layout.priority != "Spot":
            return {}
        # max_price -1: pay up to the on-demand price, so capacity (not price) is the only eviction reason.
        return {
            "priority": "Spot",
            "eviction_policy": layout.eviction_policy,
            "billing_profile": azure.compute.BillingProfileArgs(max_price=-1),
        }

    # --- managed: one Uniform scale set ------------------------------------------------------------

    def _scale_set(
        self, layout: AzureLayout, rg: pulumi.Input[str], zones: list[str] | None
    ) -> azure.compute.VirtualMachineScaleSet:
        spec, name = layout.spec, self._name
        disk = layout.scratch_disk
        data_disks = (
            [
                azure.compute.VirtualMachineScaleSetDataDiskArgs(
                    lun=disk.lun,
                    create_option="Empty",
                    disk_size_gb=disk.size_gb,
                    caching="None",
                    managed_disk=azure.compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                        storage_account_type=disk.storage_account_type
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
            f"{name}-vmss",
            resource_group_name=rg,
            location=layout.location,
            # Uniform: singlePlacementGroup (the InfiniBand scope) is a Uniform scale-set property.
            orchestration_mode="Uniform",
            single_placement_group=layout.single_placement_group,
            sku=azure.compute.SkuArgs(name=spec.instance.instanceType, tier="Standard", capacity=spec.nodes),
            # Overprovisioning would start extra GPU VMs (quota, cost) and churn the IB placement group.
            overprovision=False,
            upgrade_policy=azure.compute.UpgradePolicyArgs(mode="Manual"),
            proximity_placement_group=azure.compute.SubResourceArgs(id=self.ppg.id) if self.ppg else None,
            zones=zones,
            virtual_machine_profile=azure.compute.VirtualMachineScaleSetVMProfileArgs(
                os_profile=azure.compute.VirtualMachineScaleSetOSProfileArgs(
                    computer_name_prefix=f"{spec.name}-",
                    admin_username=layout.admin_user,
                    linux_configuration=self._linux(),
                    custom_data=layout.custom_data_b64,
                ),
                storage_profile=azure.compute.VirtualMachineScaleSetStorageProfileArgs(
                    image_reference=self._image_reference(),
                    os_disk=azure.compute.VirtualMachineScaleSetOSDiskArgs(
                        create_option="FromImage",
                        caching="ReadWrite",
                        disk_size_gb=layout.os_disk_gb,
                        managed_disk=azure.compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                            storage_account_type=layout.os_disk_type
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
                                    subnet=azure.compute.ApiEntityReferenceArgs(id=self.subnet.id),
                                    public_ip_address_configuration=public_ip,
                                )
                            ],
                        )
                    ]
                ),
                security_profile=self._security_profile(),
                capacity_reservation=self._capacity_reservation(),
                **self._spot(),
            ),
            tags=self._tagged("vmss"),
            opts=self._child,
        )

    # --- instances: N VMs (one availability set when InfiniBand is wired) --------------------------

    def _vms(
        self, layout: AzureLayout, rg: pulumi.Input[str], zones: list[str] | None
    ) -> list[azure.compute.VirtualMachine]:
        spec, name, child, tagged = layout.spec, self._name, self._child, self._tagged
        ppg_ref = azure.compute.SubResourceArgs(id=self.ppg.id) if self.ppg else None
        if layout.group == "availability-set":
            # InfiniBand spans the VMs of one availability set (setup-infiniband.md). "Aligned" is the SKU
            # for VMs with managed disks; one fault domain keeps the set on the fewest racks.
            self.availability_set = azure.compute.AvailabilitySet(
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
        subnet_ref = azure.network.SubnetArgs(id=self.subnet.id)
        availability_set_ref = (
            azure.compute.SubResourceArgs(id=self.availability_set.id) if self.availability_set else None
        )
        hardware = azure.compute.HardwareProfileArgs(vm_size=spec.instance.instanceType)
        linux, custom_data = self._linux(), layout.custom_data_b64
        disk = layout.scratch_disk
        storage = azure.compute.StorageProfileArgs(
            image_reference=self._image_reference(),
            os_disk=azure.compute.OSDiskArgs(
                create_option="FromImage",
                caching="ReadWrite",
                disk_size_gb=layout.os_disk_gb,
                delete_option="Delete",
                managed_disk=azure.compute.ManagedDiskParametersArgs(storage_account_type=layout.os_disk_type),
            ),
            data_disks=(
                [
                    azure.compute.DataDiskArgs(
                        lun=disk.lun,
                        create_option="Empty",
                        disk_size_gb=disk.size_gb,
                        caching="None",
                        delete_option="Delete" if disk.delete_with_vm else "Detach",
                        managed_disk=azure.compute.ManagedDiskParametersArgs(
                            storage_account_type=disk.storage_account_type
                        ),
                    )
                ]
                if disk is not None
                else None
            ),
        )
        security, capacity, spot = self._security_profile(), self._capacity_reservation(), self._spot()
        vms = []
        for i in range(spec.nodes):
            public_ip = (
                azure.network.PublicIPAddress(
                    f"{name}-node-{i}-ip",
                    resource_group_name=rg,
                    location=layout.location,
                    sku=azure.network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
                    public_ip_allocation_method="Static",
                    zones=zones,
                    tags=tagged(f"node-{i}-ip"),
                    opts=child,
                )
                if layout.public_ip
                else None
            )
            nic = azure.network.NetworkInterface(
                f"{name}-node-{i}-nic",
                resource_group_name=rg,
                location=layout.location,
                enable_accelerated_networking=layout.accelerated_networking,
                ip_configurations=[
                    azure.network.NetworkInterfaceIPConfigurationArgs(
                        name="ipv4",
                        primary=True,
                        private_ip_allocation_method="Dynamic",
                        subnet=subnet_ref,
                        public_ip_address=azure.network.PublicIPAddressArgs(id=public_ip.id) if public_ip else None,
                    )
                ],
                tags=tagged(f"node-{i}-nic"),
                opts=child,
            )
            vms.append(
                azure.compute.VirtualMachine(
                    f"{name}-node-{i}",
                    resource_group_name=rg,
                    location=layout.location,
                    hardware_profile=hardware,
                    availability_set=availability_set_ref,
                    proximity_placement_group=ppg_ref,
                    zones=zones,
                    os_profile=azure.compute.OSProfileArgs(
                        computer_name=f"{spec.name}-{i}",
                        admin_username=layout.admin_user,
                        linux_configuration=linux,
                        custom_data=custom_data,
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
        return vms
