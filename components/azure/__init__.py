"""Azure resources for one GPU cluster: maps an `AzureLayout` onto pulumi-azure-native, nothing more.

Decisions (InfiniBand scope, NSG rules, image, spot eviction, scratch) are made in
`components.layout.azure`; the modules here turn them into resources, one concern each:
`network` (resource group, VNet, NSG, NAT gateway, the private node subnet) and `nodes` (an optional
proximity placement group, then one Uniform VM scale set (managed) or N VMs with their NICs, in one
availability set when InfiniBand is wired (instances)). Every resource is parented to `CloudCluster`,
so the split changes no URN.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..layout.azure import AzureLayout
from . import network, nodes
from .aliases import _is_api_version_alias, drop_api_version_aliases
from .context import Context

__all__ = ["TYPE", "CloudCluster", "_is_api_version_alias", "drop_api_version_aliases"]

TYPE = "gpu-cluster:azure:Cluster"


class CloudCluster(pulumi.ComponentResource):
    """The Azure half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: AzureLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        for warning in layout.warnings:
            pulumi.log.warn(warning, resource=self)
        # Children only (not this component): drop the provider's API-version aliases (see the function).
        child = pulumi.ResourceOptions(parent=self, transformations=[drop_api_version_aliases])
        self.resource_group_name = network.resource_group(name, layout, child)
        ctx = Context(name, layout, child, self.resource_group_name, list(layout.zones) or None)

        net = network.build(ctx)
        self.vnet, self.nsg, self.nat, self.subnet = net.vnet, net.nsg, net.nat, net.subnet
        built = nodes.build(ctx, net.subnet)
        self.ppg = built.ppg
        self.scale_set: azure.compute.VirtualMachineScaleSet | None = built.scale_set
        self.availability_set: azure.compute.AvailabilitySet | None = built.availability_set
        self.vms: list[azure.compute.VirtualMachine] = built.vms

        node_ids: pulumi.Output[Any]
        if built.scale_set is not None:
            node_ids = built.scale_set.name
        else:
            node_ids = pulumi.Output.all(*[vm.id for vm in built.vms])
        self.outputs = {
            "resourceGroup": self.resource_group_name,
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
