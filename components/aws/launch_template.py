"""The GPU nodes' launch templates: the VM mode's one (nodes.py) and the EKS pools' (kubernetes.py).

What every template of the cluster holds, whoever launches from it: IMDSv2 only, encrypted gp3 volumes (the root
and, for GPU nodes with `storage.scratch: disk`, the scratch volume) with the cluster's KMS key when it has one,
EBS optimization, Name tags on what launches (instance, volumes, interfaces), and a new default version on
every change. The callers decide what differs: interfaces, market, reservation, placement, user data.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from ..layout.aws import SCRATCH_DEVICE
from .naming import Context


def build_launch_template(
    ctx: Context,
    resource_name: str,
    *,
    root_device: str,
    root_gb: int,
    scratch: bool,  # with the scratch volume (storage.scratch: disk)
    key_pair: aws.ec2.KeyPair | None,
    interfaces: Sequence[aws.ec2.LaunchTemplateNetworkInterfaceArgs] | None,
    market: aws.ec2.LaunchTemplateInstanceMarketOptionsArgs | None,
    reservation_id: str | None,  # an ODCR or a Capacity Block the nodes launch into
    placement_group: aws.ec2.PlacementGroup | None,
    user_data: pulumi.Input[str] | None,
    launch_names: tuple[str, str, str],  # the Name suffixes of the instance, its volumes and its interfaces
    tags_name: str,
    instance_type: str | None = None,
    image_id: pulumi.Input[str] | None = None,
    profile_name: pulumi.Input[str] | None = None,  # the IAM instance profile; None: none on the template
    tags_at_creation: bool = False,  # the launch tags are the first deploy's: nodes get later tags elsewhere
    metadata_tags: bool = False,  # the instance's tags in its metadata (an elastic Slurm node reads its name there)
) -> aws.ec2.LaunchTemplate:
    layout = ctx.layout
    disks = [_volume(ctx, root_device, root_gb, delete=True)]
    if scratch:
        disks.append(_volume(ctx, SCRATCH_DEVICE, int(layout.scratch.device_gb or 0), delete=not layout.scratch.retain))
    reservation = (
        aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=reservation_id,
            ),
        )
        if reservation_id
        else None
    )
    return aws.ec2.LaunchTemplate(
        resource_name,
        instance_type=instance_type,
        image_id=image_id,
        key_name=key_pair.key_name if key_pair else None,
        iam_instance_profile=(
            aws.ec2.LaunchTemplateIamInstanceProfileArgs(name=profile_name) if profile_name is not None else None
        ),
        network_interfaces=list(interfaces) if interfaces is not None else None,
        block_device_mappings=disks,
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled",
            http_tokens="required",
            # containers reach IMDSv2 through one more hop (EKS User Guide, launch-templates note)
            http_put_response_hop_limit=2,
            instance_metadata_tags="enabled" if metadata_tags else None,
        ),
        instance_market_options=market,
        capacity_reservation_specification=reservation,
        placement=(
            aws.ec2.LaunchTemplatePlacementArgs(group_name=placement_group.name)
            if placement_group is not None
            else None
        ),
        user_data=user_data,
        ebs_optimized="true",
        tag_specifications=[
            aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=ctx.tagged(suffix))
            for kind, suffix in zip(("instance", "volume", "network-interface"), launch_names, strict=True)
        ],
        update_default_version=True,
        tags=ctx.tagged(tags_name),
        # a tag change in tag_specifications writes a new template version, which rolls or replaces every node;
        # where nodes get the user's tags in place (the group's propagated tags, an instance's own tags and volume
        # tags), the template keeps the tags it was created with
        opts=(
            pulumi.ResourceOptions.merge(ctx.child, pulumi.ResourceOptions(ignore_changes=["tagSpecifications"]))
            if tags_at_creation
            else ctx.child
        ),
    )


def network_interfaces(
    ctx: Context,
    security_groups: Sequence[pulumi.Input[str]],
    subnet_id: pulumi.Input[str] | None,  # None: the subnet comes from the group (ASG, EKS node group)
    public_ip: bool,
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """One interface per `layout.interfaces` entry (the EFA scheme, one per network card), each with the
    security groups: a template with interfaces takes them per interface, not at the top level."""
    # EC2 refuses associatePublicIPAddress, even "false", on a launch with more than one
    # interface (InvalidParameterCombination; terraform-provider-aws#6777): set it only on
    # single-interface nodes. Multi-interface nodes get no public IP (the spec refuses
    # publicIp there and the subnet does not map one).
    nics = ctx.layout.interfaces
    associate = ("true" if public_ip else "false") if len(nics) == 1 else None
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=nic.network_card_index,
            device_index=nic.device_index,
            interface_type=nic.interface_type,
            security_groups=list(security_groups),
            subnet_id=subnet_id,
            associate_public_ip_address=associate,
            delete_on_termination="true",
        )
        for nic in nics
    ]


def _volume(ctx: Context, device: str, size_gb: int, delete: bool) -> aws.ec2.LaunchTemplateBlockDeviceMappingArgs:
    return aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
        device_name=device,
        ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
            volume_size=size_gb,
            volume_type="gp3",
            encrypted="true",
            kms_key_id=ctx.kms_key,
            delete_on_termination="true" if delete else "false",
        ),
    )
