"""The GPU nodes: an HPC cluster (HCC types) or a placement group, the image, and N CVM instances, or, with
`nodeGroup: managed`, an auto scaling group launching them from one launch configuration.

HCC types must be in a `cvm.HpcCluster`, which the launch configuration cannot name (the layout refuses managed
mode for them). Disks are encrypted CBS cloud SSDs (a managed group has no scratch disk: its data disks take no
encrypt argument); spot nodes are `SPOTPAID` (`ONE-TIME`; `one-time` in the launch configuration, the only type
either offers) for non-HCC types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..bootstrap import gzip_b64
from ..bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ..layout.tencentcloud import TencentLayout
from ..layout.tencentcloud.nodes import DISK_TYPE
from ..resources import fill, invoke_options
from .network import Network


@dataclass(frozen=True)
class Nodes:
    hpc_cluster: tencentcloud.cvm.HpcCluster | None
    placement_group: tencentcloud.placement.Group | None
    image_id: pulumi.Output[str]
    instances: list[tencentcloud.instance.Instance]
    group: tencentcloud.as_.ScalingGroup | None = None  # nodeGroup: managed


def build(
    parent: pulumi.Resource,
    name: str,
    layout: TencentLayout,
    network: Network,
    key_ids: Sequence[pulumi.Input[str]] | None,
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
    kms_key_id: pulumi.Output[str] | None = None,
    head_address: pulumi.Input[str] | None = None,  # scheduler: slurm: the head's private address
) -> Nodes:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    hpc = (
        tencentcloud.cvm.HpcCluster(
            f"{name}-hpc", zone=network.zone, name=f"{spec.name}-hpc", remark=f"gpu-cluster {spec.name}", opts=child
        )
        if layout.hpc_cluster
        else None
    )
    group = (
        tencentcloud.placement.Group(
            f"{name}-pg", type=layout.placement_group_type, name=f"{spec.name}-pg", tags=dict(tags), opts=child
        )
        if layout.placement_group_type
        else None
    )
    image_id = image(parent, layout)
    # a looked-up image is resolved once, at each node's creation: a newer public image must not reinstall running
    # nodes on an unrelated `pulumi up` (imageId changes in place by reinstalling the system disk); a new image is
    # a reviewed change, made by naming it in `image:`
    tracked = not layout.image.image_id
    node_opts = (
        pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["imageId"])) if tracked else child
    )
    if layout.group is not None:
        scaling = _group(name, layout, network, image_id, group, key_ids, role_name, tags, node_opts)
        return Nodes(hpc, group, image_id, [], scaling)
    user_data = fill(layout.user_data, {HEAD_PLACEHOLDER: head_address}, gzip_b64)
    instances = [
        _instance(
            name, i, layout, network, image_id, hpc, group, key_ids, role_name, tags, node_opts, kms_key_id, user_data
        )
        for i in range(spec.nodes)
    ]
    return Nodes(hpc, group, image_id, instances)


def _group(
    name: str,
    layout: TencentLayout,
    network: Network,
    image_id: pulumi.Output[str],
    group: tencentcloud.placement.Group | None,
    key_ids: Sequence[pulumi.Input[str]] | None,
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> tencentcloud.as_.ScalingGroup:
    """The launch configuration and the group. A changed configuration reaches new nodes only (AS
    ModifyLaunchConfigurationAttributes): the plan says how to roll the running ones (catalog/update.yaml)."""
    spec, managed = layout.spec, layout.group
    assert managed is not None
    config = tencentcloud.as_.ScalingConfig(
        f"{name}-config",
        configuration_name=f"{spec.name}-nodes",
        instance_types=[spec.instance.instanceType],
        image_id=image_id,
        security_group_ids=[network.security_group.id],
        instance_charge_type="SPOTPAID" if layout.spot else "POSTPAID_BY_HOUR",
        spot_instance_type="one-time" if layout.spot else None,  # the only value the provider validates
        spot_max_price=layout.spot_max_price,
        disaster_recover_group_ids=[group.id] if group else None,  # "Placement group ID. Only one is allowed."
        public_ip_assigned=layout.public_ip,
        internet_charge_type="TRAFFIC_POSTPAID_BY_HOUR" if layout.public_ip else None,
        internet_max_bandwidth_out=100 if layout.public_ip else None,
        system_disk_type=DISK_TYPE,
        system_disk_size=layout.root_gb,
        key_ids=key_ids,
        cam_role_name=role_name,
        user_data=layout.user_data_b64,
        # UNIQUE: AS extends the prefix so no two nodes of the group share a host name
        host_name_settings=tencentcloud.as_.ScalingConfigHostNameSettingsArgs(
            host_name=f"{spec.name}-node", host_name_style="UNIQUE"
        ),
        instance_name_settings=tencentcloud.as_.ScalingConfigInstanceNameSettingsArgs(
            instance_name=f"{spec.name}-node", instance_name_style="UNIQUE"
        ),
        # the nodes carry the cluster's tags: the login node's Prometheus and `tccli` find them by tag
        instance_tags={**tags, "Name": f"{spec.name}-node"},
        tags=dict(tags),
        opts=opts,
    )
    return tencentcloud.as_.ScalingGroup(
        f"{name}-group",
        scaling_group_name=f"{spec.name}-nodes",
        configuration_id=config.id,
        vpc_id=network.vpc.id,
        subnet_ids=[network.subnet.id],
        min_size=managed.min_size,
        max_size=managed.max_size,
        desired_capacity=managed.desired,
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=opts.parent),
    )


def image(parent: pulumi.Resource, layout: TencentLayout) -> pulumi.Output[str]:
    if layout.image.image_id:
        return pulumi.Output.from_input(layout.image.image_id)
    return public_image(parent, layout.image.os_name, layout.spec.instance.instanceType)


def public_image(parent: pulumi.Resource, os_name: str | None, instance_type: str) -> pulumi.Output[str]:
    """The newest public image of `os_name` that `instance_type` can boot (instance_type filters the answer)."""
    found = tencentcloud.images.get_instance_output(
        os_name=os_name, image_types=["PUBLIC_IMAGE"], instance_type=instance_type, opts=invoke_options(parent)
    )
    image_id: pulumi.Output[str] = found.images[0].image_id
    return image_id


def _instance(
    name: str,
    index: int,
    layout: TencentLayout,
    network: Network,
    image_id: pulumi.Output[str],
    hpc: tencentcloud.cvm.HpcCluster | None,
    group: tencentcloud.placement.Group | None,
    key_ids: Sequence[pulumi.Input[str]] | None,
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
    child: pulumi.ResourceOptions,
    kms_key_id: pulumi.Output[str] | None,
    user_data: pulumi.Input[str],
) -> tencentcloud.instance.Instance:
    spec = layout.spec
    scratch = layout.scratch
    disks = (
        [
            tencentcloud.instance.InstanceDataDiskArgs(
                data_disk_type=DISK_TYPE,
                data_disk_size=int(scratch.device_gb or 0),
                data_disk_name=f"{spec.name}-scratch",
                encrypt=True,
                kms_key_id=kms_key_id,  # None: the CBS-managed key (encryption.key provider)
                # never true on spot: the provider refuses it but for POSTPAID_BY_HOUR (layout: spotDataDisks)
                delete_with_instance=layout.scratch_delete_with_instance,
            )
        ]
        if scratch.kind == "disk"
        else None
    )
    return tencentcloud.instance.Instance(
        f"{name}-node-{index}",
        instance_name=f"{spec.name}-node-{index}",
        hostname=f"{spec.name}-node-{index}",
        availability_zone=network.zone,
        instance_type=spec.instance.instanceType,
        image_id=image_id,
        vpc_id=network.vpc.id,
        subnet_id=network.subnet.id,
        orderly_security_groups=[network.security_group.id],
        # spot: SPOTPAID needs spot_instance_type and spot_max_price together (docstring)
        instance_charge_type="SPOTPAID" if layout.spot else "POSTPAID_BY_HOUR",
        spot_instance_type="ONE-TIME" if layout.spot else None,
        spot_max_price=layout.spot_max_price,
        hpc_cluster_id=hpc.id if hpc else None,
        placement_group_id=group.id if group else None,
        allocate_public_ip=layout.public_ip,
        internet_charge_type="TRAFFIC_POSTPAID_BY_HOUR" if layout.public_ip else None,
        internet_max_bandwidth_out=100 if layout.public_ip else None,
        system_disk_type=DISK_TYPE,
        system_disk_size=layout.root_gb,
        data_disks=disks,
        key_ids=key_ids,
        cam_role_name=role_name,
        user_data=user_data,
        tags={**tags, "Name": f"{spec.name}-node-{index}"},
        opts=child,
    )
