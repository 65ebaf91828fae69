"""The GPU nodes: placement group, image, one launch template, and an Auto Scaling group or N instances."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pulumi
import pulumi_aws as aws

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ..layout.aws import ROOT_DEVICE
from ..resources import fill, invoke_options
from .identity import Identity
from .launch_template import build_launch_template, network_interfaces
from .naming import Context
from .network import Network


@dataclass(frozen=True)
class Nodes:
    placement_group: aws.ec2.PlacementGroup | None
    image_id: pulumi.Output[str]
    launch_template: aws.ec2.LaunchTemplate
    group: aws.autoscaling.Group | None  # managed
    instances: list[aws.ec2.Instance]  # instances mode
    drain_hook: aws.autoscaling.LifecycleHook | None = None  # managed: the termination lifecycle hook


def build_nodes(
    ctx: Context,
    net: Network,
    identity: Identity,
    key_pair: aws.ec2.KeyPair | None,
    mount_source: pulumi.Input[str] | None = None,  # the shared filesystem's, known at deploy
    head_address: pulumi.Input[str] | None = None,  # scheduler slurm: the head node's private IP
) -> Nodes:
    name, layout, child = ctx.name, ctx.layout, ctx.child
    spec = layout.spec
    placement_group = (
        aws.ec2.PlacementGroup(
            f"{name}-pg",
            strategy=layout.placement_strategy,
            tags=ctx.tagged("pg"),
            opts=child,
        )
        if layout.placement_strategy
        else None
    )
    image_id = _image_id(ctx)
    # The instance profile: on the template for a managed group (new nodes launch with it). In
    # instances mode it goes on each instance instead: EC2 attaches a profile to a running
    # instance in place, while a new template version would replace every node (the instances
    # pin the template's latest version, a replace-on-change input).
    managed = spec.node_group == "managed"
    launch_template = _launch_template(
        ctx,
        net,
        image_id,
        placement_group,
        key_pair,
        identity.profile_name if managed else None,
        mount_source,
        head_address,
    )
    lt_ref = {"id": launch_template.id, "version": launch_template.latest_version.apply(str)}
    if managed:
        group = _auto_scaling_group(ctx, net, lt_ref, placement_group)
        return Nodes(placement_group, image_id, launch_template, group, [], _drain_hook(ctx, group))
    instances = [
        aws.ec2.Instance(
            f"{name}-node-{i}",
            launch_template=lt_ref,
            iam_instance_profile=identity.profile_name,
            tags=ctx.tagged(f"node-{i}"),
            # the template's volume tags are the first deploy's: a tag change reaches the volumes here, in place
            volume_tags=ctx.tagged("volume"),
            opts=child,
        )
        for i in range(spec.nodes)
    ]
    return Nodes(placement_group, image_id, launch_template, None, instances)


def build_partitions(
    ctx: Context,
    net: Network,
    identity: Identity,
    key_pair: aws.ec2.KeyPair | None,
    mount_source: pulumi.Input[str] | None,
    head_address: pulumi.Input[str] | None,
) -> tuple[Nodes, dict[str, aws.ec2.LaunchTemplate]]:
    """Elastic Slurm partitions: per partition a placement group and the launch template the head's resume program
    launches each node from (with the instance profile, the subnet, and the node's tags in its instance metadata);
    no group and no instance. `Nodes` holds the first partition's, for the outputs."""
    templates: dict[str, aws.ec2.LaunchTemplate] = {}
    first: Nodes | None = None
    for part in ctx.layout.partitions:
        sub = replace(ctx, name=f"{ctx.name}-{part.name}", layout=part.layout)
        pg = (
            aws.ec2.PlacementGroup(
                f"{sub.name}-pg",
                strategy=part.layout.placement_strategy,
                tags=sub.tagged(f"{part.name}-pg"),
                opts=sub.child,
            )
            if part.layout.placement_strategy
            else None
        )
        image_id = _image_id(sub)
        lt = _launch_template(
            sub, net, image_id, pg, key_pair, identity.profile_name, mount_source, head_address, metadata_tags=True
        )
        templates[part.name] = lt
        first = first or Nodes(pg, image_id, lt, None, [])
    assert first is not None  # the spec has at least one partition
    return first, templates


def _image_id(ctx: Context) -> pulumi.Output[str]:
    image = ctx.layout.image
    if image.ami_id:
        return pulumi.Output.from_input(image.ami_id)
    if image.ami_name:  # a pinned release: exactly this AMI, whatever is newer behind the SSM parameter
        ami: pulumi.Output[str] = aws.ec2.get_ami_output(
            owners=[str(image.ami_owner)],
            filters=[aws.ec2.GetAmiFilterArgs(name="name", values=[image.ami_name])],
            most_recent=True,  # one name, one AMI per region: most_recent only keeps the lookup from refusing two
            # a pin must keep resolving after the owner deprecates the AMI: DescribeImages leaves deprecated AMIs
            # out by default (botocore ec2 DescribeImagesRequest IncludeDeprecated: "Default: No deprecated AMIs")
            include_deprecated=True,
            opts=invoke_options(ctx.parent),
        ).id
        return ami
    value: pulumi.Output[str] = aws.ssm.get_parameter_output(
        name=image.ssm_parameter, opts=invoke_options(ctx.parent)
    ).value
    return value


def _launch_template(
    ctx: Context,
    net: Network,
    image_id: pulumi.Output[str],
    placement_group: aws.ec2.PlacementGroup | None,
    key_pair: aws.ec2.KeyPair | None,
    profile_name: pulumi.Input[str] | None,
    mount_source: pulumi.Input[str] | None = None,
    head_address: pulumi.Input[str] | None = None,
    metadata_tags: bool = False,
) -> aws.ec2.LaunchTemplate:
    layout = ctx.layout
    user_data = fill(
        layout.user_data,
        {HEAD_PLACEHOLDER: head_address, SOURCE_PLACEHOLDER: mount_source},
        layout.user_data_b64_for,
    )
    spec = layout.spec
    # with an ASG the subnet comes from the group, with instances from the template
    subnet = net.subnet.id if spec.node_group == "instances" else None
    interfaces = network_interfaces(ctx, net.node_security_groups, subnet, spec.network.public_ip)
    market = None
    if layout.market == "capacity-block":
        market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
    elif layout.market == "spot" and spec.node_group == "instances":
        market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type="spot",
            spot_options=aws.ec2.LaunchTemplateInstanceMarketOptionsSpotOptionsArgs(
                spot_instance_type="one-time",
                instance_interruption_behavior="terminate",
            ),
        )
    return build_launch_template(
        ctx,
        f"{ctx.name}-lt",
        root_device=ROOT_DEVICE,
        root_gb=layout.root_gb,
        scratch=layout.scratch.kind == "disk",
        key_pair=key_pair,
        interfaces=interfaces,
        market=market,
        reservation_id=layout.capacity_reservation_id,
        # with an ASG the group takes the placement group
        placement_group=placement_group if spec.node_group == "instances" else None,
        user_data=user_data,
        launch_names=("node", "volume", "eni"),
        tags_name="lt",
        tags_at_creation=True,
        instance_type=spec.instance.instanceType,
        image_id=image_id,
        profile_name=profile_name,
        metadata_tags=metadata_tags,
    )


def _auto_scaling_group(
    ctx: Context,
    net: Network,
    lt_ref: Mapping[str, Any],
    placement_group: aws.ec2.PlacementGroup | None,
) -> aws.autoscaling.Group:
    layout = ctx.layout
    spec = layout.spec
    mixed = None
    launch_template: Any = lt_ref
    scaling = layout.scaling  # elastic fleet (layout.aws.scaling); None: the group as before
    spot = scaling.spot if scaling is not None else None
    if layout.market == "spot":
        # Spot through a mixed-instances policy: the template stays market-neutral and the
        # group asks for 100% spot with the capacity-optimized strategy (fewest interruptions).
        launch_template = None
        mixed = aws.autoscaling.GroupMixedInstancesPolicyArgs(
            launch_template=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
                launch_template_specification=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                    launch_template_id=lt_ref["id"],
                    version=lt_ref["version"],
                ),
            ),
            instances_distribution=aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
                on_demand_base_capacity=0,
                on_demand_percentage_above_base_capacity=0,
                spot_allocation_strategy="capacity-optimized",
            )
            if spot is None
            else aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
                # elastic fleet: the first onDemandBase nodes on demand, every node above them Spot
                on_demand_base_capacity=spot.on_demand_base,
                on_demand_percentage_above_base_capacity=0,
                spot_allocation_strategy=spot.allocation_strategy,
            ),
        )
    return aws.autoscaling.Group(
        f"{ctx.name}-asg",
        desired_capacity=spec.nodes,
        min_size=scaling.min_size if scaling else 0 if spec.max_nodes > spec.nodes else spec.nodes,
        max_size=spec.max_nodes,
        launch_template=launch_template,
        mixed_instances_policy=mixed,
        capacity_rebalance=True if spot is not None and spot.capacity_rebalance else None,
        # queueDepth divides by GroupInServiceInstances, which CloudWatch has only with group metrics on
        enabled_metrics=[scaling.queue.group_metric] if scaling and scaling.queue else None,
        metrics_granularity="1Minute" if scaling and scaling.queue else None,
        # update rolling: a launch template change (image, driver, user data) starts an instance refresh, each
        # node leaving through the drain hook
        instance_refresh=_instance_refresh(ctx),
        vpc_zone_identifiers=[net.subnet.id],
        placement_group=placement_group.name if placement_group else None,
        # GPU nodes take minutes to boot and pull images; do not let the group block the deploy.
        wait_for_capacity_timeout="0",
        tags=[
            aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=True)
            for k, v in {**ctx.layout.tags, "Name": f"{spec.name}-node"}.items()
        ],
        # once a policy (the fleet's, or serve.requestsPerNode's) or a schedule moves the group, `nodes` is the count
        # at deploy only: a later `pulumi up` must not reset what the scaling did
        opts=(
            pulumi.ResourceOptions.merge(ctx.child, pulumi.ResourceOptions(ignore_changes=["desiredCapacity"]))
            if (scaling is not None and scaling.metric is not None)
            or (ctx.layout.serve is not None and ctx.layout.serve.application is not None)
            else ctx.child
        ),
    )


def _instance_refresh(ctx: Context) -> aws.autoscaling.GroupInstanceRefreshArgs | None:
    """The refresh the provider starts on every change of the group's launch template or mixed-instances policy (the
    group pins the template's latest_version, never `$Latest`, so a new version is such a change).

    skip_matching: a refresh restarted after a failure replaces only what still runs the old version; auto_rollback:
    a failed refresh (nodes that never turn healthy) puts the previous version back (the template holds an AMI id,
    resolved at deploy, and a version number: what rollback needs, botocore RefreshPreferences.AutoRollback)."""
    refresh = ctx.layout.refresh
    if refresh is None:
        return None
    return aws.autoscaling.GroupInstanceRefreshArgs(
        strategy="Rolling",
        preferences=aws.autoscaling.GroupInstanceRefreshPreferencesArgs(
            min_healthy_percentage=refresh.min_healthy_percent,
            max_healthy_percentage=refresh.max_healthy_percent,
            skip_matching=True,
            auto_rollback=True,
        ),
    )


def _drain_hook(ctx: Context, group: aws.autoscaling.Group) -> aws.autoscaling.LifecycleHook | None:
    """The termination hook, a resource of its own rather than the group's `initial_lifecycle_hooks`: those are
    applied only when the group is created (pulumi-aws autoscaling/group.py), so a group deployed before would never
    get one, nor a changed drain budget. It still exists before the first scale-in: it is created right after the
    group, while the first nodes boot (the deploy does not wait for them); the scaling policies and schedules depend
    on it; and an instance refresh starts only with a later template change."""
    drain = ctx.layout.drain_hook
    if drain is None:
        return None
    return aws.autoscaling.LifecycleHook(
        f"{ctx.name}-drain-hook",
        name=drain.name,
        autoscaling_group_name=group.name,
        lifecycle_transition=drain.transition,
        heartbeat_timeout=drain.heartbeat_seconds,
        default_result=drain.default_result,
        opts=ctx.child,
    )
