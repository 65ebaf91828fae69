"""One CPU ECS instance of the cluster beside the GPU nodes: the login node (access.py) and the Slurm head (slurm.py).

Each gets its own security group (the callers add the rules), a system image matched to its type, an encrypted
ESSD system disk, the key pair and the nodes' RAM role (a separate `ecs.RamRoleAttachment`, as the nodes get it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from ..resources import invoke_options
from .network import Network


@dataclass(frozen=True)
class CpuNode:
    instance: alicloud.ecs.Instance
    security_group: alicloud.ecs.SecurityGroup


def build(
    parent: pulumi.Resource,
    name: str,
    role: str,  # "login" or "head": in the resource names and the host name
    layout: AlicloudLayout,
    network: Network,
    key_pair: alicloud.ecs.EcsKeyPair | None,
    role_name: pulumi.Input[str],
    tags: Mapping[str, str],
    *,
    group_name: str,
    what: str,  # what the node is, for the security group's description
    instance_type: str,
    image_regex: str,
    user_data: pulumi.Input[str] | None,
    kms_key: pulumi.Input[str] | None,  # encryption.key not provider: the system disk's KMS key
    public_bandwidth_mbps: int = 0,  # 0: no public IP
    system_disk_gb: int | None = None,  # None: the image's size
    depends_on: Sequence[pulumi.Resource] = (),
) -> CpuNode:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    sg = alicloud.ecs.SecurityGroup(
        f"{name}-{role}-sg",
        vpc_id=network.vpc.id,
        security_group_name=group_name,
        description=f"gpu-cluster {spec.name} {what}",
        tags=dict(tags),
        opts=child,
    )
    image = alicloud.ecs.get_images_output(
        name_regex=image_regex,
        owners="system",
        most_recent=True,
        instance_type=instance_type,
        opts=invoke_options(parent),
    ).ids[0]
    instance = alicloud.ecs.Instance(
        f"{name}-{role}",
        instance_name=f"{spec.name}-{role}",
        host_name=f"{spec.name}-{role}",
        instance_type=instance_type,
        image_id=image,
        vswitch_id=network.vswitch.id,
        security_groups=[sg.id],
        instance_charge_type="PostPaid",
        internet_max_bandwidth_out=public_bandwidth_mbps,
        internet_charge_type="PayByTraffic" if public_bandwidth_mbps else None,
        system_disk_category="cloud_essd",
        system_disk_size=system_disk_gb,
        system_disk_encrypted=True,
        system_disk_kms_key_id=kms_key,
        key_name=key_pair.key_pair_name if key_pair else None,
        user_data=user_data,
        tags={**tags, "Name": f"{spec.name}-{role}"},
        volume_tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on)) if depends_on else child,
    )
    alicloud.ecs.RamRoleAttachment(f"{name}-{role}-role", instance_id=instance.id, ram_role_name=role_name, opts=child)
    return CpuNode(instance, sg)
