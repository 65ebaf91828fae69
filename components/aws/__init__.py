"""AWS resources for one GPU cluster: maps an `AwsLayout` onto pulumi-aws, nothing more.

Decisions (EFA scheme, subnets, image, market) are made in `components.layout.aws`; this module
turns them into a VPC, a security group, an optional placement group, one launch template and an
Auto Scaling group (managed) or N instances (instances).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_aws as aws

from ..layout.aws import ROOT_DEVICE, SCRATCH_DEVICE, AwsLayout

TYPE = "gpu-cluster:aws:Cluster"


class CloudCluster(pulumi.ComponentResource):
    """The AWS half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: AwsLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        spec = layout.spec
        tags = dict(layout.tags)
        child = pulumi.ResourceOptions(parent=self)

        def tagged(suffix: str) -> dict[str, str]:
            return {**tags, "Name": f"{spec.name}-{suffix}"}

        zone: pulumi.Input[str] = spec.zone or aws.get_availability_zones_output(state="available").names[0]

        self.vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=layout.vpc_cidr,
            enable_dns_support=True,
            enable_dns_hostnames=True,
            tags=tagged("vpc"),
            opts=child,
        )
        self.subnet = aws.ec2.Subnet(
            f"{name}-nodes",
            vpc_id=self.vpc.id,
            cidr_block=layout.node_subnet_cidr,
            availability_zone=zone,
            map_public_ip_on_launch=spec.network.public_ip,
            tags=tagged("nodes"),
            opts=child,
        )
        self.route_table = aws.ec2.RouteTable(
            f"{name}-nodes-rt",
            vpc_id=self.vpc.id,
            routes=self._egress_routes(name, layout, zone, tagged, child),
            tags=tagged("nodes-rt"),
            opts=child,
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-nodes-rta",
            subnet_id=self.subnet.id,
            route_table_id=self.route_table.id,
            opts=child,
        )
        self.security_group = self._security_group(name, layout, tagged, child)

        self.placement_group = (
            aws.ec2.PlacementGroup(
                f"{name}-pg",
                strategy=layout.placement_strategy,
                tags=tagged("pg"),
                opts=child,
            )
            if layout.placement_strategy
            else None
        )
        key_pair = (
            aws.ec2.KeyPair(
                f"{name}-key",
                public_key=pulumi.Output.secret(spec.ssh_public_key) if spec.secret_config else spec.ssh_public_key,
                tags=tagged("key"),
                opts=child,
            )
            if spec.ssh_public_key
            else None
        )
        self.image_id = self._image_id(name, layout, child)
        self.launch_template = self._launch_template(name, layout, tagged, key_pair, child)

        lt_ref = {"id": self.launch_template.id, "version": self.launch_template.latest_version.apply(str)}
        node_ids: pulumi.Output[Any]
        if spec.node_group == "managed":
            self.group = self._auto_scaling_group(name, layout, lt_ref, tags, child)
            self.instances: list[aws.ec2.Instance] = []
            node_ids = self.group.name
        else:
            self.group = None
            self.instances = [
                aws.ec2.Instance(
                    f"{name}-node-{i}",
                    launch_template=lt_ref,
                    tags=tagged(f"node-{i}"),
                    opts=child,
                )
                for i in range(spec.nodes)
            ]
            node_ids = pulumi.Output.all(*[inst.id for inst in self.instances])

        self.outputs = {
            "vpcId": self.vpc.id,
            "subnetIds": pulumi.Output.all(self.subnet.id),
            "securityGroupId": self.security_group.id,
            "imageId": self.image_id,
            "nodeGroup" if spec.node_group == "managed" else "instanceIds": node_ids,
            "placementGroup": self.placement_group.name if self.placement_group else None,
        }
        self.register_outputs(self.outputs)

    def _egress_routes(
        self, name: str, layout: AwsLayout, zone: pulumi.Input[str], tagged: Any, child: pulumi.ResourceOptions
    ) -> list[aws.ec2.RouteTableRouteArgs]:
        """Internet access for nodes: NAT in a public subnet (egress: nat), IGW directly (publicIp)."""
        if layout.public_subnet_cidr is None and not layout.spec.network.public_ip:
            return []
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=self.vpc.id, tags=tagged("igw"), opts=child)
        if layout.spec.network.public_ip or layout.public_subnet_cidr is None:
            return [aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)]
        public = aws.ec2.Subnet(
            f"{name}-public",
            vpc_id=self.vpc.id,
            cidr_block=layout.public_subnet_cidr,
            availability_zone=zone,
            map_public_ip_on_launch=False,
            tags=tagged("public"),
            opts=child,
        )
        public_rt = aws.ec2.RouteTable(
            f"{name}-public-rt",
            vpc_id=self.vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags=tagged("public-rt"),
            opts=child,
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-public-rta", subnet_id=public.id, route_table_id=public_rt.id, opts=child
        )
        eip = aws.ec2.Eip(f"{name}-nat-eip", domain="vpc", tags=tagged("nat-eip"), opts=child)
        nat = aws.ec2.NatGateway(
            f"{name}-nat",
            allocation_id=eip.id,
            subnet_id=public.id,
            tags=tagged("nat"),
            opts=child,
        )
        return [aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)]

    def _security_group(
        self, name: str, layout: AwsLayout, tagged: Any, child: pulumi.ResourceOptions
    ) -> aws.ec2.SecurityGroup:
        # EFA needs all traffic in and out to the group itself (EC2 User Guide, efa-start).
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=self.vpc.id,
            description=f"gpu-cluster {layout.spec.name} nodes",
            tags=tagged("sg"),
            opts=child,
        )
        for rule, direction in ((aws.vpc.SecurityGroupIngressRule, "in"), (aws.vpc.SecurityGroupEgressRule, "out")):
            rule(
                f"{name}-sg-self-{direction}",
                security_group_id=sg.id,
                referenced_security_group_id=sg.id,
                ip_protocol="-1",
                description="all traffic between nodes (EFA, NCCL)",
                opts=child,
            )
        for cidr in layout.spec.network.ssh_cidrs:
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-sg-ssh-{cidr.replace('/', '_')}",
                security_group_id=sg.id,
                cidr_ipv4=cidr,
                ip_protocol="tcp",
                from_port=22,
                to_port=22,
                description="SSH",
                opts=child,
            )
        if layout.spec.network.egress == "nat" or layout.spec.network.public_ip:
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-sg-egress",
                security_group_id=sg.id,
                cidr_ipv4="0.0.0.0/0",
                ip_protocol="-1",
                description="outbound to the internet",
                opts=child,
            )
        return sg

    def _image_id(self, name: str, layout: AwsLayout, child: pulumi.ResourceOptions) -> pulumi.Output[str]:
        if layout.image.ami_id:
            return pulumi.Output.from_input(layout.image.ami_id)
        param = layout.image.ssm_parameter
        value: pulumi.Output[str] = aws.ssm.get_parameter_output(
            name=param, opts=pulumi.InvokeOutputOptions(parent=self)
        ).value
        return value

    def _launch_template(
        self,
        name: str,
        layout: AwsLayout,
        tagged: Any,
        key_pair: aws.ec2.KeyPair | None,
        child: pulumi.ResourceOptions,
    ) -> aws.ec2.LaunchTemplate:
        spec = layout.spec
        # Launch templates with interfaces take security groups per interface, not at the top
        # level; with an ASG the subnet comes from the group, with instances from the template.
        subnet = self.subnet.id if spec.node_group == "instances" else None
        # EC2 refuses associatePublicIPAddress, even "false", on a launch with more than one
        # interface (InvalidParameterCombination; terraform-provider-aws#6777): set it only on
        # single-interface nodes. Multi-interface nodes get no public IP (the spec refuses
        # publicIp there and the subnet does not map one).
        public_ip = ("true" if spec.network.public_ip else "false") if len(layout.interfaces) == 1 else None
        interfaces = [
            aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                network_card_index=nic.network_card_index,
                device_index=nic.device_index,
                interface_type=nic.interface_type,
                security_groups=[self.security_group.id],
                subnet_id=subnet,
                associate_public_ip_address=public_ip,
                delete_on_termination="true",
            )
            for nic in layout.interfaces
        ]
        disks = [
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=ROOT_DEVICE,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=layout.root_gb,
                    volume_type="gp3",
                    encrypted="true",
                    delete_on_termination="true",
                ),
            )
        ]
        if layout.scratch.kind == "disk":
            disks.append(
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=SCRATCH_DEVICE,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=int(layout.scratch.device_gb or 0),
                        volume_type="gp3",
                        encrypted="true",
                        delete_on_termination="false" if layout.scratch.retain else "true",
                    ),
                )
            )
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
        reservation = (
            aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=layout.capacity_reservation_id,
                ),
            )
            if layout.capacity_reservation_id
            else None
        )
        placement = (
            aws.ec2.LaunchTemplatePlacementArgs(group_name=self.placement_group.name)
            if self.placement_group is not None and spec.node_group == "instances"
            else None
        )
        tag_specs = [
            aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tagged(kind_name))
            for kind, kind_name in (("instance", "node"), ("volume", "volume"), ("network-interface", "eni"))
        ]
        return aws.ec2.LaunchTemplate(
            f"{name}-lt",
            instance_type=spec.instance.instanceType,
            image_id=self.image_id,
            key_name=key_pair.key_name if key_pair else None,
            network_interfaces=interfaces,
            block_device_mappings=disks,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=2,
            ),
            instance_market_options=market,
            capacity_reservation_specification=reservation,
            placement=placement,
            user_data=layout.user_data_b64,
            ebs_optimized="true",
            tag_specifications=tag_specs,
            update_default_version=True,
            tags=tagged("lt"),
            opts=child,
        )

    def _auto_scaling_group(
        self,
        name: str,
        layout: AwsLayout,
        lt_ref: Mapping[str, Any],
        tags: Mapping[str, str],
        child: pulumi.ResourceOptions,
    ) -> aws.autoscaling.Group:
        spec = layout.spec
        mixed = None
        launch_template: Any = lt_ref
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
                ),
            )
        return aws.autoscaling.Group(
            f"{name}-asg",
            desired_capacity=spec.nodes,
            min_size=0 if spec.max_nodes > spec.nodes else spec.nodes,
            max_size=spec.max_nodes,
            launch_template=launch_template,
            mixed_instances_policy=mixed,
            vpc_zone_identifiers=[self.subnet.id],
            placement_group=self.placement_group.name if self.placement_group else None,
            # GPU nodes take minutes to boot and pull images; do not let the group block the deploy.
            wait_for_capacity_timeout="0",
            tags=[
                aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=True)
                for k, v in {**tags, "Name": f"{spec.name}-node"}.items()
            ],
            opts=child,
        )
