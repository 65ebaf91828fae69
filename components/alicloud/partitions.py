"""Elastic Slurm partitions on Alibaba Cloud: per partition an ECS launch template (and a deployment set when its
nodes get one) that the head's resume program launches each node from (layout: `AlicloudLayout.partitions`); no
scaling group and no GPU instance.

The template holds what the cluster's own instances get (nodes.py `_instance`): the image, the type, the nodes'
vSwitch and security groups (a partition with ERIs: in the channel instead, sent with its interfaces by the resume
program), the nodes' RAM role, the market (SpotAsPriceGo for a spot partition), encrypted ESSDs
(with the cluster's KMS key when it has one), the key pair, the tags, and the user data with the head's address
and the MUNGE key's ciphertext filled in. Each change makes a new version, which becomes the default
(`update_default_version_number`): RunInstances without a version launches the default one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pulumi
import pulumi_alicloud as alicloud

from .context import Context
from .nodes import build_deployment_set, data_disk, image, user_data


def build(
    ctx: Context,
    mount_source: pulumi.Input[str] | None,
    replacements: Mapping[str, pulumi.Input[str]],
) -> dict[str, alicloud.ecs.EcsLaunchTemplate]:
    """One launch template per partition, by partition name."""
    templates: dict[str, alicloud.ecs.EcsLaunchTemplate] = {}
    for part in ctx.layout.partitions:
        sub = replace(ctx, name=f"{ctx.name}-{part.name}", layout=part.layout)
        layout, spec = part.layout, part.layout.spec
        deployment_set = build_deployment_set(sub, f"{spec.name}-{part.name}-ds")
        disk = data_disk(layout, ctx.kms_key)
        # a partition with ERIs: its vSwitch and groups go with its interfaces in RunInstances (layout/alicloud/
        # partitions.py launch_target), as NetworkInterface.1 (Primary), which may not be given beside VSwitchId
        explicit_nics = bool(part.eri_cards)
        templates[part.name] = alicloud.ecs.EcsLaunchTemplate(
            f"{sub.name}-template",
            launch_template_name=f"{spec.name}-{part.name}",
            description=f"gpu-cluster {spec.name} Slurm partition {part.name} (launched by the head)",
            image_id=image(ctx.parent, layout),
            instance_type=spec.instance.instanceType,
            instance_charge_type="PostPaid",
            # spot: the market price up to on-demand; a reclaimed node is released and Slurm launches it again
            spot_strategy="SpotAsPriceGo" if layout.spot else "NoSpot",
            vswitch_id=None if explicit_nics else ctx.network.vswitch.id,
            security_group_ids=None if explicit_nics else ctx.network.node_security_groups,
            ram_role_name=ctx.role_name,
            internet_max_bandwidth_out=layout.public_bandwidth_mbps,
            internet_charge_type="PayByTraffic" if layout.public_bandwidth_mbps else None,
            system_disk=alicloud.ecs.EcsLaunchTemplateSystemDiskArgs(
                category="cloud_essd",
                size=layout.root_gb,
                encrypted=True,
                kms_key_id=ctx.kms_key,
                delete_with_instance=True,
            ),
            data_disks=[alicloud.ecs.EcsLaunchTemplateDataDiskArgs(**disk)] if disk else None,
            deployment_set_id=deployment_set.id if deployment_set else None,
            key_pair_name=ctx.key_name,
            user_data=user_data(layout, mount_source, replacements),
            # token-only metadata; a change is a new template version, not a new template (diff/replacement)
            http_tokens=layout.metadata_http_tokens,
            tags={**ctx.tags, "Name": f"{spec.name}-{part.name}"},
            template_tags=dict(ctx.tags),
            update_default_version_number=True,
            opts=ctx.child,
        )
    return templates
