"""Elastic Slurm partitions on Azure (slurm.partitions): per partition a scale set in Flexible orchestration that the
head's resume program creates each node's VM into, the VM bodies in the head's channel, and the head's own identity
with a custom role that may create and delete the cluster's node VMs (catalog/slurm.yaml clouds.azure.powerSave).

No GPU VM is registered: the head PUTs `<cluster>-<node>` when a job waits for it (components/bootstrap/
azure_slurm_power.sh) and DELETEs it when idle.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace

import pulumi
import pulumi_azure_native as azure

from ..bootstrap import gzip_b64
from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import CONF_DIR, HEAD_PLACEHOLDER, compute_config_text, launch_placeholder
from ..catalog.slurm import cloud_data
from ..layout.azure import AzureLayout, AzurePartition, AzureSlurm, body_text
from ..layout.azure.partitions import CUSTOM_DATA, DISK_SET, IDENTITY, PPG, SCALE_SET, SUBNET
from ..resources import fill, invoke_options
from .context import Context
from .identity import Identity
from .network import Network


@dataclass(frozen=True)
class Power:
    """What the head gets: its identity (the one passed in), the channel's text (userData, base64) and what its boot
    waits for."""

    identity: Identity
    user_data: pulumi.Output[str]
    ready: list[pulumi.Resource]
    scale_sets: dict[str, azure.compute.VirtualMachineScaleSet]
    role: azure.authorization.RoleDefinition


def _scale_set(
    ctx: Context, part: AzurePartition
) -> tuple[azure.compute.VirtualMachineScaleSet, pulumi.Output[str] | None]:
    """The partition's scale set: Flexible, no VM profile (the head's VMs join it by virtualMachineScaleSet.id), one
    fault domain (azurehpc `_add_vmss` fault_domain_count 1, as the cluster's IB scale set), in the partition's
    proximity placement group."""
    sub = replace(ctx, name=f"{ctx.name}-{part.name}", layout=part.layout)
    # no intent (vmSizes), unlike the cluster's group: a partition's size changes in place on day 2, and that an
    # intent is changed in place is not sourced (the diff would say "may replace" the group and its scale set); the
    # first VM anchors the group
    ppg = (
        azure.compute.ProximityPlacementGroup(
            f"{sub.name}-ppg",
            resource_group_name=ctx.resource_group_name,
            location=ctx.location,
            proximity_placement_group_type="Standard",
            zones=ctx.zones,
            tags=sub.tagged("ppg"),
            opts=ctx.opts,
        )
        if part.layout.proximity_placement_group
        else None
    )
    vmss = azure.compute.VirtualMachineScaleSet(
        f"{sub.name}-vmss",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        orchestration_mode="Flexible",
        platform_fault_domain_count=1,
        proximity_placement_group=azure.compute.SubResourceArgs(id=ppg.id) if ppg else None,
        zones=ctx.zones,
        tags=sub.tagged("vmss"),
        opts=ctx.opts,
    )
    return vmss, ppg.id if ppg else None


def head_actions(layout: AzureLayout) -> list[str]:
    """The head's custom role: what a node VM's PUT and DELETE need, and what its body names besides (a capacity
    reservation group, a disk encryption set): catalog/slurm.yaml clouds.azure.powerSave."""
    power = cloud_data("azure")["powerSave"]
    extra = power["headActionsIf"]
    return [
        *(str(a) for a in power["headActions"]),
        *(str(a) for a in (extra["reservation"] if layout.capacity_reservation_group else ())),
        *(str(a) for a in (extra["encryption"] if layout.encryption is not None else ())),
    ]


def build_power(
    ctx: Context,
    net: Network,
    nodes: Identity,
    head: Identity,
    plan: AzureSlurm,
    head_address: pulumi.Input[str],
    mount_source: pulumi.Input[str] | None,
) -> Power:
    """`head`: the head's own identity (components/azure/slurm.py `head_identity`), which the custom role is for."""
    layout = ctx.layout
    client = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component))
    principal = head.principal_id or ""
    # Azure RBAC scopes a role to a management group, subscription, resource group or resource, never to a name
    # prefix or a tag (learn.microsoft.com/azure/role-based-access-control/scope-overview): the narrowest scope that
    # holds VMs not yet created is the cluster's resource group, which holds only this cluster
    scope = pulumi.Output.concat("/subscriptions/", client.subscription_id, "/resourceGroups/", ctx.resource_group_name)
    spec = layout.spec
    role = azure.authorization.RoleDefinition(
        f"{ctx.name}-head-power-role",
        role_name=f"gpu-cluster {spec.project}/{spec.stack}/{spec.name} slurm power",
        description=f"gpu-cluster {spec.name}: the Slurm head creates and deletes the cluster's elastic node VMs",
        role_type="CustomRole",
        scope=scope,
        assignable_scopes=[scope],
        permissions=[azure.authorization.PermissionArgs(actions=head_actions(layout))],
        opts=ctx.opts,
    )
    power_grant = azure.authorization.RoleAssignment(
        f"{ctx.name}-head-role-slurm-power",
        principal_id=principal,
        principal_type="ServicePrincipal",
        role_definition_id=role.id,
        scope=scope,
        description=f"gpu-cluster {spec.name}: the Slurm head creates and deletes the cluster's elastic node VMs",
        opts=ctx.opts,
    )
    scale_sets: dict[str, azure.compute.VirtualMachineScaleSet] = {}
    bodies: dict[str, pulumi.Input[str]] = {}
    des = ctx.key.des_id if ctx.key is not None else None
    for part in layout.partitions:
        vmss, ppg = _scale_set(ctx, part)
        scale_sets[part.name] = vmss
        custom = fill(
            part.layout.custom_data, {SOURCE_PLACEHOLDER: mount_source, HEAD_PLACEHOLDER: head_address}, gzip_b64
        )
        bodies[part.body_file] = fill(
            body_text(part.layout),
            {
                SUBNET: net.subnet.id,
                IDENTITY: nodes.resource_id,
                SCALE_SET: vmss.id,
                PPG: ppg,
                CUSTOM_DATA: custom,
                DISK_SET: des,
            },
        )
    # launch.env names each partition's VM body, a file of the channel the head writes beside it
    targets = {launch_placeholder(p.name): f"{CONF_DIR}/{p.body_file}" for p in layout.partitions}
    files = plan.layout.compute_files()
    names = list(bodies)

    def channel(values: list[str]) -> str:
        text = compute_config_text({**files, **dict(zip(names, values, strict=True))})
        for token, target in targets.items():
            text = text.replace(token, target)
        return base64.b64encode(text.encode()).decode()

    user_data: pulumi.Output[str] = pulumi.Output.all(*bodies.values()).apply(channel)
    if spec.secret_config:  # the bodies carry the SSH key of a `secure:` value
        user_data = pulumi.Output.secret(user_data)
    return Power(head, user_data, [power_grant], scale_sets, role)
