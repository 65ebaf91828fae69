"""The GPU nodes: deployment set, image, and an ESS scaling group (managed) or N ECS instances (instances)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..layout.alicloud import AlicloudLayout
from ..resources import fill, invoke_options
from .context import Context


@dataclass(frozen=True)
class Nodes:
    deployment_set: alicloud.ecs.EcsDeploymentSet | None
    image_id: pulumi.Output[str]
    group: alicloud.ess.ScalingGroup | None
    instances: list[alicloud.ecs.Instance]
    role_attachments: list[alicloud.ecs.RamRoleAttachment]


def build(
    ctx: Context,
    mount_source: pulumi.Input[str] | None = None,  # the shared filesystem's, known at deploy
    replacements: Mapping[str, pulumi.Input[str]] | None = None,  # more values known at deploy (scheduler slurm)
) -> Nodes:
    spec = ctx.layout.spec
    deployment_set = build_deployment_set(ctx)
    image_id = image(ctx.parent, ctx.layout)
    if spec.node_group == "managed":
        group = _scaling_group(ctx, image_id, mount_source, replacements)
        return Nodes(deployment_set, image_id, group, [], [])
    instances = [_instance(ctx, i, image_id, deployment_set, mount_source, replacements) for i in range(spec.nodes)]
    # A separate attachment, not ecs.Instance role_name: that argument is deprecated (provider 1.275.0)
    # and ForceNew, so adding it would replace every node of a deployed stack.
    attachments = [
        alicloud.ecs.RamRoleAttachment(
            f"{ctx.name}-node-{i}-role", instance_id=inst.id, ram_role_name=ctx.role_name, opts=ctx.child
        )
        for i, inst in enumerate(instances)
    ]
    return Nodes(deployment_set, image_id, None, instances, attachments)


def build_deployment_set(ctx: Context, set_name: str | None = None) -> alicloud.ecs.EcsDeploymentSet | None:
    """The GPU nodes' deployment set (the ESS group's instances, the ACK GPU pool, or an elastic partition's nodes:
    `set_name`), when the layout takes one."""
    layout = ctx.layout
    if not layout.deployment_set_strategy:
        return None
    spec = layout.spec
    return alicloud.ecs.EcsDeploymentSet(
        f"{ctx.name}-ds",
        deployment_set_name=set_name or f"{spec.name}-ds",
        strategy=layout.deployment_set_strategy,
        description=f"gpu-cluster {spec.name} nodes",
        opts=ctx.child,
    )


def user_data(
    layout: AlicloudLayout,
    mount_source: pulumi.Input[str] | None,
    replacements: Mapping[str, pulumi.Input[str]] | None = None,
) -> pulumi.Input[str]:
    """The nodes' user data, gzip+base64, with the shared filesystem's mount source once it is known (deploy), and
    with `replacements` (placeholder -> value: the Slurm head's address and the MUNGE key's ciphertext)."""
    return fill(layout.user_data, {**(replacements or {}), SOURCE_PLACEHOLDER: mount_source}, layout.user_data_b64_for)


def image(parent: pulumi.Resource, layout: AlicloudLayout) -> pulumi.Output[str]:
    if layout.image.image_id:
        return pulumi.Output.from_input(layout.image.image_id)
    # instance_type filters to images the type can boot (UEFI-only bare metal gets a UEFI image).
    found = alicloud.ecs.get_images_output(
        name_regex=layout.image.name_regex,
        owners="system",
        most_recent=True,
        instance_type=layout.spec.instance.instanceType,
        opts=invoke_options(parent),
    )
    image_id: pulumi.Output[str] = found.ids[0]
    return image_id


def data_disk(layout: AlicloudLayout, kms_key: pulumi.Input[str] | None = None) -> dict[str, Any] | None:
    if layout.scratch.kind != "disk":
        return None
    # kms_key_id only with a customer key: without one the disk's inputs are as before
    return ({"kms_key_id": kms_key} if kms_key is not None else {}) | {
        "category": "cloud_essd",
        "size": int(layout.scratch.device_gb or 0),
        "performance_level": layout.scratch_performance_level,
        "encrypted": True,
        "delete_with_instance": not layout.scratch.retain,
        "name": f"{layout.spec.name}-scratch",
    }


def _instance(
    ctx: Context,
    index: int,
    image_id: pulumi.Output[str],
    deployment_set: alicloud.ecs.EcsDeploymentSet | None,
    mount_source: pulumi.Input[str] | None = None,
    replacements: Mapping[str, pulumi.Input[str]] | None = None,
) -> alicloud.ecs.Instance:
    name, layout, network, tags, kms_key = ctx.name, ctx.layout, ctx.network, ctx.tags, ctx.kms_key
    spec = layout.spec
    primary, *secondary = layout.interfaces
    eri = primary.is_eri
    multi_card = len(layout.interfaces) > 1
    disk = data_disk(layout, kms_key)
    return alicloud.ecs.Instance(
        f"{name}-node-{index}",
        instance_name=f"{spec.name}-node-{index}",
        host_name=f"{spec.name}-node-{index}",
        instance_type=spec.instance.instanceType,
        image_id=image_id,
        vswitch_id=network.vswitch.id,
        security_groups=network.node_security_groups,
        instance_charge_type="PostPaid",
        # spot: pay the current market price up to on-demand; when Alibaba reclaims the
        # capacity the instance is released (Terminate, the documented default).
        spot_strategy="SpotAsPriceGo" if layout.spot else "NoSpot",
        spot_interruption_behavior="Terminate" if layout.spot else None,
        private_pool_options_match_criteria="Target" if layout.private_pool_id else None,
        private_pool_options_id=layout.private_pool_id,
        internet_max_bandwidth_out=layout.public_bandwidth_mbps,
        internet_charge_type="PayByTraffic" if layout.public_bandwidth_mbps else None,
        system_disk_category="cloud_essd",
        system_disk_size=layout.root_gb,
        system_disk_encrypted=True,
        system_disk_kms_key_id=kms_key,
        system_disk_encrypt_algorithm=ctx.instance_disk_algorithm,
        data_disks=[alicloud.ecs.InstanceDataDiskArgs(**disk)] if disk else None,
        deployment_set_id=deployment_set.id if deployment_set else None,
        key_name=ctx.key_name,
        user_data=user_data(layout, mount_source, replacements),
        # token-only metadata; a change is ModifyInstanceMetadataOptions, in place (diff/replacement/alicloud.yaml)
        http_tokens=layout.metadata_http_tokens,
        # ERIs: traffic mode HighPerformance on the primary ENI, and on one secondary ENI on the
        # next network card when the type is rated for two (scheme in components.layout.alicloud).
        network_interface_traffic_mode="HighPerformance" if eri else None,
        network_card_index=primary.network_card_index if multi_card else None,
        network_interfaces=(
            alicloud.ecs.InstanceNetworkInterfacesArgs(
                network_card_index=secondary[0].network_card_index,
                network_interface_traffic_mode=secondary[0].traffic_mode,
                vswitch_id=network.vswitch.id,
                security_group_ids=network.node_security_groups,
            )
            if secondary
            else None
        ),
        tags={**tags, "Name": f"{spec.name}-node-{index}"},
        volume_tags=dict(tags),
        # a looked-up image (a name pattern the catalog pins no release of) is resolved at each node's creation: a
        # newer public image must not re-initialise a running node's system disk (a new imageId does, in place)
        opts=ctx.child
        if layout.image.image_id
        else pulumi.ResourceOptions.merge(ctx.child, pulumi.ResourceOptions(ignore_changes=["imageId"])),
    )


def _scaling_group(
    ctx: Context,
    image_id: pulumi.Output[str],
    mount_source: pulumi.Input[str] | None = None,
    replacements: Mapping[str, pulumi.Input[str]] | None = None,
) -> alicloud.ess.ScalingGroup:
    name, layout, network, tags, kms_key, child = ctx.name, ctx.layout, ctx.network, ctx.tags, ctx.kms_key, ctx.child
    spec = layout.spec
    fleet = layout.fleet  # elastic fleet (layout.alicloud.scaling); None: the group as before
    mix = fleet.spot if fleet is not None else None
    group = alicloud.ess.ScalingGroup(
        f"{name}-ess",
        scaling_group_name=f"{spec.name}-nodes",
        min_size=fleet.min_size if fleet else 0 if spec.max_nodes > spec.nodes else spec.nodes,
        max_size=spec.max_nodes,
        desired_capacity=spec.nodes,
        vswitch_ids=[network.vswitch.id],
        # spot: when a spot recycling message arrives, ESS launches a replacement first.
        spot_instance_remedy=True if layout.spot else None,
        # the Spot mix: onDemandBase pay-as-you-go nodes, preemptible above them, and with fallback onDemand
        # pay-as-you-go when preemptible capacity is short (all three need the cost optimization mode)
        multi_az_policy=mix.multi_az_policy if mix else None,
        on_demand_base_capacity=mix.on_demand_base if mix else None,
        on_demand_percentage_above_base_capacity=mix.on_demand_percentage_above_base if mix else None,
        compensate_with_on_demand=mix.compensate_with_on_demand if mix else None,
        tags=dict(tags),
        opts=child,
    )
    wired = any(nic.is_eri for nic in layout.interfaces)
    # With ENIs listed, ESS takes security groups per ENI and none at the top level.
    interfaces = (
        [
            alicloud.ess.ScalingConfigurationNetworkInterfaceArgs(
                instance_type="Primary" if i == 0 else "Secondary",
                network_interface_traffic_mode=nic.traffic_mode,
                security_group_ids=network.node_security_groups,
            )
            for i, nic in enumerate(layout.interfaces)
        ]
        if wired
        else None
    )
    disk = data_disk(layout, kms_key)
    config = alicloud.ess.ScalingConfiguration(
        f"{name}-config",
        scaling_group_id=group.id,
        scaling_configuration_name=f"{spec.name}-nodes",
        active=True,
        enable=True,
        force_delete=True,
        instance_type=spec.instance.instanceType,
        instance_name=f"{spec.name}-node",
        image_id=image_id,
        security_group_ids=None if interfaces else network.node_security_groups,
        network_interfaces=interfaces,
        spot_strategy="SpotAsPriceGo" if layout.spot else "NoSpot",
        resource_pool_options_strategy="PrivatePoolOnly" if layout.private_pool_id else None,
        resource_pool_options_private_pool_ids=[layout.private_pool_id] if layout.private_pool_id else None,
        internet_max_bandwidth_out=layout.public_bandwidth_mbps,
        internet_charge_type="PayByTraffic" if layout.public_bandwidth_mbps else None,
        system_disk_category="cloud_essd",
        system_disk_size=layout.root_gb,
        system_disk_encrypted=True,
        system_disk_kms_key_id=kms_key,
        system_disk_encrypt_algorithm=ctx.ess_disk_algorithm,
        data_disks=[alicloud.ess.ScalingConfigurationDataDiskArgs(**disk)] if disk else None,
        key_name=ctx.key_name,
        # new instances get the role; instances already in the group keep their configuration
        role_name=ctx.role_name,
        user_data=user_data(layout, mount_source, replacements),
        tags={**tags, "Name": f"{spec.name}-node"},
        opts=child,
    )
    drain = layout.drain_hook
    if drain is not None:
        # a scale-in waits for the node's drain; so may the manual instance refresh's removals (not sourced:
        # catalog/update.yaml alicloud); after the configuration, which is what makes the group active
        alicloud.ess.LifecycleHook(
            f"{name}-drain-hook",
            scaling_group_id=group.id,
            name=drain.name,
            lifecycle_transition=drain.transition,
            heartbeat_timeout=drain.heartbeat_seconds,
            default_result=drain.default_result,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[config])),
        )
    return group
