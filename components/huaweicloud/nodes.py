"""The GPU nodes: an anti-affinity server group (spread), the image, and N ECS instances, or, with
`nodeGroup: managed` and no scheduler, an AS group launching them from one AS configuration.

Every EVS disk of an instance (system and scratch) is encrypted with the cluster's DEW key; an AS configuration
encrypts its scratch data disk only (capabilities `asGroup.systemDiskEncrypted`: the layout warns). The nodes get no
EIP unless `network.publicIp` asks for one without a login node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..bootstrap import gzip_b64
from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ..layout.huaweicloud import HuaweiLayout
from ..resources import fill
from .network import Network


@dataclass(frozen=True)
class Nodes:
    server_group: huaweicloud.ecs.Servergroup | None
    image_id: pulumi.Output[str]
    instances: list[huaweicloud.ecs.Instance]
    group: huaweicloud.as_.Group | None = None  # nodeGroup: managed


@dataclass(frozen=True)
class _Launch:
    """What every GPU node is launched with, an ECS instance or an AS group's."""

    layout: HuaweiLayout
    network: Network
    image_id: pulumi.Output[str]
    server_group: huaweicloud.ecs.Servergroup | None
    key_pair: pulumi.Input[str] | None
    agency: pulumi.Output[str]
    kms_key_id: pulumi.Output[str]
    tags: Mapping[str, str]
    user_data: pulumi.Input[str]


def build(
    parent: pulumi.Resource,
    name: str,
    layout: HuaweiLayout,
    network: Network,
    key_pair: pulumi.Input[str] | None,
    agency: pulumi.Output[str],
    kms_key_id: pulumi.Output[str],
    tags: Mapping[str, str],
    mount_source: pulumi.Input[str] | None = None,  # the shared filesystem's, known at deploy
    head_address: pulumi.Input[str] | None = None,  # scheduler: slurm: the head's private address
) -> Nodes:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    group = (
        huaweicloud.ecs.Servergroup(
            f"{name}-servergroup", name=f"{spec.name}-nodes", policies=[layout.server_group_policy], opts=child
        )
        if layout.server_group_policy
        else None
    )
    image_id = (
        pulumi.Output.from_input(layout.image.image_id)
        if layout.image.image_id
        else image(parent, str(layout.image.name_regex), spec.instance.instanceType)
    )
    # a looked-up image is resolved once, at each node's creation: a newer public image must not rebuild running
    # nodes on an unrelated `pulumi up` (image_id "Changing this creates a new instance"); a new image is a reviewed
    # change, made by naming it in `image:`
    tracked = not layout.image.image_id
    node_opts = (
        pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["imageId"])) if tracked else child
    )
    # plain text (ecs.Instance user_data), with the shared filesystem's mount source and the Slurm head's address
    # once they are known
    # (gzip, Base64 with Slurm and in an AS configuration: layout `packed`)
    encode = gzip_b64 if layout.packed else str
    user_data = fill(layout.user_data, {SOURCE_PLACEHOLDER: mount_source, HEAD_PLACEHOLDER: head_address}, encode)
    launch = _Launch(layout, network, image_id, group, key_pair, agency, kms_key_id, tags, user_data)
    if layout.group is not None:
        config_opts = (
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["instanceConfig.image"]))
            if tracked
            else child
        )
        return Nodes(group, image_id, [], _group(name, launch, config_opts))
    instances = [_instance(name, i, launch, node_opts) for i in range(spec.nodes)]
    return Nodes(group, image_id, instances)


def _group(name: str, launch: _Launch, opts: pulumi.ResourceOptions) -> huaweicloud.as_.Group:
    """The AS configuration and the group. Every input of the configuration replaces it ("Changing this will create a
    new resource"), and the group then points at the new one: running nodes keep the old configuration until they
    are replaced (catalog/update.yaml huaweicloud says how to roll them)."""
    layout, network = launch.layout, launch.network
    spec, managed, scratch = layout.spec, layout.group, layout.scratch
    assert managed is not None
    disks = [
        huaweicloud.as_.ConfigurationInstanceConfigDiskArgs(
            disk_type="SYS", size=layout.root_gb, volume_type=layout.disk_type
        )
    ]
    if scratch.kind == "disk":
        disks.append(
            huaweicloud.as_.ConfigurationInstanceConfigDiskArgs(
                disk_type="DATA",
                size=int(scratch.device_gb or 0),
                volume_type=layout.disk_type,
                kms_id=launch.kms_key_id,
            )
        )
    public_ip = (
        huaweicloud.as_.ConfigurationInstanceConfigPublicIpArgs(
            eip=huaweicloud.as_.ConfigurationInstanceConfigPublicIpEipArgs(
                ip_type="5_bgp",
                bandwidth=huaweicloud.as_.ConfigurationInstanceConfigPublicIpEipBandwidthArgs(
                    share_type="PER", size=100, charging_mode="traffic"
                ),
            )
        )
        if layout.public_ip
        else None
    )
    config = huaweicloud.as_.Configuration(
        f"{name}-config",
        scaling_configuration_name=f"{spec.name}-nodes",
        instance_config=huaweicloud.as_.ConfigurationInstanceConfigArgs(
            flavor=spec.instance.instanceType,
            image=launch.image_id,
            disks=disks,
            security_group_ids=[network.security_group.id],
            key_name=launch.key_pair,
            user_data=launch.user_data,
            ecs_group_id=launch.server_group.id if launch.server_group else None,  # InstanceConfig server_group_id
            public_ip=public_ip,
        ),
        opts=opts,
    )
    return huaweicloud.as_.Group(
        f"{name}-group",
        scaling_group_name=f"{spec.name}-nodes",
        scaling_configuration_id=config.id,
        vpc_id=network.vpc.id,
        networks=[huaweicloud.as_.GroupNetworkArgs(id=network.subnet.id)],
        availability_zones=[network.zone],
        min_instance_number=managed.min_size,
        max_instance_number=managed.max_size,
        desire_instance_number=managed.desired,
        # the nodes' identity: AS passes the agency to every ECS it launches (capabilities `asGroup.agency`)
        agency_name=launch.agency,
        # a scale-in removes nodes of an older configuration first, the oldest of them first (the AS default, named)
        instance_terminate_policy="OLD_CONFIG_OLD_INSTANCE",
        # the scratch disk and an EIP go with their node unless storage.retainScratch keeps the disk
        delete_volume=not scratch.retain,
        delete_publicip=layout.public_ip or None,
        # a destroyed stack takes its nodes with it
        delete_instances="yes",
        force_delete=True,
        # the nodes get the group's tags (InstanceConfig tag_transmission_policy default SUPPRESS): the login node's
        # Prometheus finds them by the cluster tag
        tags=dict(launch.tags),
        opts=pulumi.ResourceOptions(parent=opts.parent),
    )


def image(parent: pulumi.Resource, name_regex: str, flavor: str) -> pulumi.Output[str]:
    """The newest public image whose name matches, among those the flavor can boot (flavor_id).

    ims.get_image (one image, most_recent), not ims.get_images: pulumi-huaweicloud 0.0.12's GetImagesResult takes a
    parameter named `__support_agent_list`, which Python mangles inside the class, so every get_images answer fails
    to load (TypeError: unexpected keyword argument '__support_agent_list').
    """
    found = huaweicloud.ims.get_image_output(
        name_regex=name_regex,
        visibility="public",
        flavor_id=flavor,
        most_recent=True,
        opts=pulumi.InvokeOptions(parent=parent),
    )
    image_id: pulumi.Output[str] = found.id
    return image_id


def _instance(name: str, index: int, launch: _Launch, child: pulumi.ResourceOptions) -> huaweicloud.ecs.Instance:
    layout, network, group, kms_key_id = launch.layout, launch.network, launch.server_group, launch.kms_key_id
    spec = layout.spec
    scratch = layout.scratch
    disks = (
        [
            huaweicloud.ecs.InstanceDataDiskArgs(
                type=layout.disk_type, size=int(scratch.device_gb or 0), kms_key_id=kms_key_id
            )
        ]
        if scratch.kind == "disk"
        else None
    )
    return huaweicloud.ecs.Instance(
        f"{name}-node-{index}",
        name=f"{spec.name}-node-{index}",
        hostname=f"{spec.name}-node-{index}",
        availability_zone=network.zone,
        flavor_id=spec.instance.instanceType,
        image_id=launch.image_id,
        networks=[huaweicloud.ecs.InstanceNetworkArgs(uuid=network.subnet.id)],
        security_group_ids=[network.security_group.id],
        charging_mode="postPaid",
        scheduler_hints=[huaweicloud.ecs.InstanceSchedulerHintArgs(group=group.id)] if group else None,
        eip_type="5_bgp" if layout.public_ip else None,
        bandwidth=huaweicloud.ecs.InstanceBandwidthArgs(share_type="PER", size=100, charge_mode="traffic")
        if layout.public_ip
        else None,
        system_disk_type=layout.disk_type,
        system_disk_size=layout.root_gb,
        system_disk_kms_key_id=kms_key_id,
        data_disks=disks,
        # the scratch disk goes with its node unless storage.retainScratch keeps it
        delete_disks_on_termination=not scratch.retain,
        key_pair=launch.key_pair,
        agency_name=launch.agency,
        user_data=launch.user_data,
        tags={**launch.tags, "Name": f"{spec.name}-node-{index}"},
        opts=child,
    )
