"""One CPU ECS instance of the cluster beside the GPU nodes: the login node (access.py) and the Slurm head (slurm.py).

Each gets its own security group (the callers add the rules), a system image matched to its type, an encrypted
ESSD system disk (with the cluster's KMS key when it has one), the key pair and the nodes' RAM role (a separate
`ecs.RamRoleAttachment`, as the nodes get it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from ..resources import invoke_options
from .context import Context


@dataclass(frozen=True)
class CpuNode:
    instance: alicloud.ecs.Instance
    security_group: alicloud.ecs.SecurityGroup


def build(
    ctx: Context,
    role: str,  # "login" or "head": in the resource names and the host name
    *,
    group_name: str,
    what: str,  # what the node is, for the security group's description
    instance_type: str,
    image_regex: str,
    user_data: pulumi.Input[str] | None,
    public_bandwidth_mbps: int = 0,  # 0: no public IP
    system_disk_gb: int | None = None,  # None: the image's size
    depends_on: Sequence[pulumi.Resource] = (),
) -> CpuNode:
    name, network, tags, child = ctx.name, ctx.network, ctx.tags, ctx.child
    spec = ctx.layout.spec
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
        opts=invoke_options(ctx.parent),
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
        system_disk_kms_key_id=ctx.kms_key,
        system_disk_encrypt_algorithm=ctx.instance_disk_algorithm,
        key_name=ctx.key_name,
        user_data=user_data,
        http_tokens=ctx.layout.metadata_http_tokens,  # token-only metadata, as the GPU nodes
        tags={**tags, "Name": f"{spec.name}-{role}"},
        volume_tags=dict(tags),
        # the newest system image, resolved at creation: a newer one must not re-initialise the system disk (a new
        # imageId does, in place) of the head, where /home and the Slurm state live, on an unrelated `pulumi up`
        opts=pulumi.ResourceOptions(parent=ctx.parent, depends_on=list(depends_on), ignore_changes=["imageId"]),
    )
    alicloud.ecs.RamRoleAttachment(
        f"{name}-{role}-role", instance_id=instance.id, ram_role_name=ctx.role_name, opts=child
    )
    return CpuNode(instance, sg)
