"""Alibaba Cloud resources for one GPU cluster: maps an `AlicloudLayout` onto pulumi-alicloud, nothing more.

Decisions (ERI wiring, vSwitch ranges, deployment set strategy, image, user data) are made in
`components.layout.alicloud`; this module turns them into a VPC with vSwitches, an optional NAT
gateway with an EIP and an SNAT entry, a security group, an optional deployment set, and an ESS
scaling group with a scaling configuration (managed) or N ECS instances (instances).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout

TYPE = "gpu-cluster:alicloud:Cluster"


class CloudCluster(pulumi.ComponentResource):
    """The Alibaba Cloud half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: AlicloudLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        spec = layout.spec
        tags = dict(layout.tags)
        child = pulumi.ResourceOptions(parent=self)
        for message in layout.warnings:
            pulumi.log.warn(message, resource=self)

        self.vpc = alicloud.vpc.Network(
            f"{name}-vpc", vpc_name=f"{spec.name}-vpc", cidr_block=layout.vpc_cidr, tags=tags, opts=child
        )
        zone: pulumi.Input[str]
        vswitch_opts = child
        if layout.zone is not None:
            zone = layout.zone
        else:
            zone = alicloud.get_zones_output(
                available_instance_type=spec.instance.instanceType,
                available_resource_creation="VSwitch",
                available_disk_category="cloud_essd",
                opts=pulumi.InvokeOutputOptions(parent=self),
            ).ids[0]
            # get_zones drops sold-out zones; keep the first deploy's answer so the cluster never moves.
            vswitch_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["zoneId"]))
        self.vswitch = alicloud.vpc.Switch(
            f"{name}-nodes",
            vpc_id=self.vpc.id,
            cidr_block=layout.node_vswitch_cidr,
            zone_id=zone,
            vswitch_name=f"{spec.name}-nodes",
            tags=tags,
            opts=vswitch_opts,
        )
        self.nat_gateway = self._nat(name, layout, zone, tags, vswitch_opts) if layout.nat_vswitch_cidr else None
        self.security_group = self._security_group(name, layout, tags, child)
        self.deployment_set = (
            alicloud.ecs.EcsDeploymentSet(
                f"{name}-ds",
                deployment_set_name=f"{spec.name}-ds",
                strategy=layout.deployment_set_strategy,
                description=f"gpu-cluster {spec.name} nodes",
                opts=child,
            )
            if layout.deployment_set_strategy
            else None
        )
        key_pair = (
            alicloud.ecs.EcsKeyPair(
                f"{name}-key",
                key_pair_name=f"{spec.name}-{spec.stack}",
                public_key=spec.ssh_public_key,
                tags=tags,
                opts=child,
            )
            if spec.ssh_public_key
            else None
        )
        self.image_id = self._image_id(layout)

        node_ids: pulumi.Output[Any]
        if spec.node_group == "managed":
            self.group: alicloud.ess.ScalingGroup | None = self._scaling_group(name, layout, key_pair, tags, child)
            self.instances: list[alicloud.ecs.Instance] = []
            node_ids = self.group.id
        else:
            self.group = None
            self.instances = [self._instance(name, i, layout, key_pair, tags, child) for i in range(spec.nodes)]
            node_ids = pulumi.Output.all(*[inst.id for inst in self.instances])

        self.outputs = {
            "vpcId": self.vpc.id,
            "subnetIds": pulumi.Output.all(self.vswitch.id),
            "securityGroupId": self.security_group.id,
            "imageId": self.image_id,
            "nodeGroup" if spec.node_group == "managed" else "instanceIds": node_ids,
            "placementGroup": self.deployment_set.id if self.deployment_set else None,
            "gpuDriver": layout.gpu_driver.describe() if layout.gpu_driver else None,
        }
        self.register_outputs(self.outputs)

    def _nat(
        self,
        name: str,
        layout: AlicloudLayout,
        zone: pulumi.Input[str],
        tags: Mapping[str, str],
        vswitch_opts: pulumi.ResourceOptions,
    ) -> alicloud.vpc.NatGateway:
        """Egress without public IPs on nodes: an enhanced Internet NAT gateway in its own vSwitch,
        an EIP bound to it, and an SNAT entry for the nodes' vSwitch. The provider documents that an
        enhanced Internet NAT gateway adds the VPC's 0.0.0.0/0 route to itself, so no route entry."""
        spec = layout.spec
        child = pulumi.ResourceOptions(parent=self)
        nat_vswitch = alicloud.vpc.Switch(
            f"{name}-nat",
            vpc_id=self.vpc.id,
            cidr_block=layout.nat_vswitch_cidr,
            zone_id=zone,
            vswitch_name=f"{spec.name}-nat",
            tags=tags,
            opts=vswitch_opts,
        )
        nat = alicloud.vpc.NatGateway(
            f"{name}-natgw",
            vpc_id=self.vpc.id,
            vswitch_id=nat_vswitch.id,
            nat_type="Enhanced",
            network_type="internet",
            payment_type="PayAsYouGo",
            internet_charge_type="PayByLcu",
            nat_gateway_name=f"{spec.name}-nat",
            tags=tags,
            opts=child,
        )
        self.nat_eip = alicloud.ecs.EipAddress(
            f"{name}-nat-eip",
            address_name=f"{spec.name}-nat",
            payment_type="PayAsYouGo",
            internet_charge_type="PayByTraffic",
            bandwidth=str(layout.nat_eip_bandwidth_mbps),
            tags=tags,
            opts=child,
        )
        association = alicloud.ecs.EipAssociation(
            f"{name}-nat-eip-assoc",
            allocation_id=self.nat_eip.id,
            instance_id=nat.id,
            instance_type="Nat",
            opts=child,
        )
        alicloud.vpc.SnatEntry(
            f"{name}-snat",
            snat_table_id=nat.snat_table_ids,
            source_vswitch_id=self.vswitch.id,
            snat_ip=self.nat_eip.ip_address,
            snat_entry_name=f"{spec.name}-nodes",
            # the EIP must be bound to the gateway before it can translate for the vSwitch
            opts=pulumi.ResourceOptions(parent=self, depends_on=[association]),
        )
        return nat

    def _security_group(
        self, name: str, layout: AlicloudLayout, tags: Mapping[str, str], child: pulumi.ResourceOptions
    ) -> alicloud.ecs.SecurityGroup:
        sg = alicloud.ecs.SecurityGroup(
            f"{name}-sg",
            vpc_id=self.vpc.id,
            security_group_name=f"{layout.spec.name}-nodes",
            description=f"gpu-cluster {layout.spec.name} nodes",
            inner_access_policy="Accept",
            tags=tags,
            opts=child,
        )
        # All traffic between nodes (NCCL over TCP and eRDMA); explicit so it survives a policy change.
        alicloud.ecs.SecurityGroupRule(
            f"{name}-sg-self-in",
            type="ingress",
            security_group_id=sg.id,
            source_security_group_id=sg.id,
            ip_protocol="all",
            port_range="-1/-1",
            nic_type="intranet",
            policy="accept",
            priority=1,
            description="all traffic between nodes (NCCL, eRDMA)",
            opts=child,
        )
        for cidr in layout.spec.network.ssh_cidrs:
            alicloud.ecs.SecurityGroupRule(
                f"{name}-sg-ssh-{cidr.replace('/', '_')}",
                type="ingress",
                security_group_id=sg.id,
                cidr_ip=cidr,
                ip_protocol="tcp",
                port_range="22/22",
                nic_type="intranet",
                policy="accept",
                priority=1,
                description="SSH",
                opts=child,
            )
        return sg

    def _image_id(self, layout: AlicloudLayout) -> pulumi.Output[str]:
        if layout.image.image_id:
            return pulumi.Output.from_input(layout.image.image_id)
        # instance_type filters to images the type can boot (UEFI-only bare metal gets a UEFI image).
        found = alicloud.ecs.get_images_output(
            name_regex=layout.image.name_regex,
            owners="system",
            most_recent=True,
            instance_type=layout.spec.instance.instanceType,
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        image: pulumi.Output[str] = found.ids[0]
        return image

    def _data_disk(self, layout: AlicloudLayout) -> dict[str, Any] | None:
        if layout.scratch.kind != "disk":
            return None
        return {
            "category": "cloud_essd",
            "size": int(layout.scratch.device_gb or 0),
            "performance_level": layout.scratch_performance_level,
            "encrypted": True,
            "delete_with_instance": not layout.scratch.retain,
            "name": f"{layout.spec.name}-scratch",
        }

    def _instance(
        self,
        name: str,
        index: int,
        layout: AlicloudLayout,
        key_pair: alicloud.ecs.EcsKeyPair | None,
        tags: Mapping[str, str],
        child: pulumi.ResourceOptions,
    ) -> alicloud.ecs.Instance:
        spec = layout.spec
        primary, *secondary = layout.interfaces
        eri = primary.is_eri
        multi_card = len(layout.interfaces) > 1
        disk = self._data_disk(layout)
        return alicloud.ecs.Instance(
            f"{name}-node-{index}",
            instance_name=f"{spec.name}-node-{index}",
            host_name=f"{spec.name}-node-{index}",
            instance_type=spec.instance.instanceType,
            image_id=self.image_id,
            vswitch_id=self.vswitch.id,
            security_groups=[self.security_group.id],
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
            data_disks=[alicloud.ecs.InstanceDataDiskArgs(**disk)] if disk else None,
            deployment_set_id=self.deployment_set.id if self.deployment_set else None,
            key_name=key_pair.key_pair_name if key_pair else None,
            user_data=layout.user_data_b64,
            # ERIs: traffic mode HighPerformance on the primary ENI, and on one secondary ENI on the
            # next network card when the type is rated for two (scheme in components.layout.alicloud).
            network_interface_traffic_mode="HighPerformance" if eri else None,
            network_card_index=primary.network_card_index if multi_card else None,
            network_interfaces=(
                alicloud.ecs.InstanceNetworkInterfacesArgs(
                    network_card_index=secondary[0].network_card_index,
                    network_interface_traffic_mode=secondary[0].traffic_mode,
                    vswitch_id=self.vswitch.id,
                    security_group_ids=[self.security_group.id],
                )
                if secondary
                else None
            ),
            tags={**tags, "Name": f"{spec.name}-node-{index}"},
            volume_tags=dict(tags),
            opts=child,
        )

    def _scaling_group(
        self,
        name: str,
        layout: AlicloudLayout,
        key_pair: alicloud.ecs.EcsKeyPair | None,
        tags: Mapping[str, str],
        child: pulumi.ResourceOptions,
    ) -> alicloud.ess.ScalingGroup:
        spec = layout.spec
        group = alicloud.ess.ScalingGroup(
            f"{name}-ess",
            scaling_group_name=f"{spec.name}-nodes",
            min_size=0 if spec.max_nodes > spec.nodes else spec.nodes,
            max_size=spec.max_nodes,
            desired_capacity=spec.nodes,
            vswitch_ids=[self.vswitch.id],
            # spot: when a spot recycling message arrives, ESS launches a replacement first.
            spot_instance_remedy=True if layout.spot else None,
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
                    security_group_ids=[self.security_group.id],
                )
                for i, nic in enumerate(layout.interfaces)
            ]
            if wired
            else None
        )
        disk = self._data_disk(layout)
        alicloud.ess.ScalingConfiguration(
            f"{name}-config",
            scaling_group_id=group.id,
            scaling_configuration_name=f"{spec.name}-nodes",
            active=True,
            enable=True,
            force_delete=True,
            instance_type=spec.instance.instanceType,
            instance_name=f"{spec.name}-node",
            image_id=self.image_id,
            security_group_ids=None if interfaces else [self.security_group.id],
            network_interfaces=interfaces,
            spot_strategy="SpotAsPriceGo" if layout.spot else "NoSpot",
            resource_pool_options_strategy="PrivatePoolOnly" if layout.private_pool_id else None,
            resource_pool_options_private_pool_ids=[layout.private_pool_id] if layout.private_pool_id else None,
            internet_max_bandwidth_out=layout.public_bandwidth_mbps,
            internet_charge_type="PayByTraffic" if layout.public_bandwidth_mbps else None,
            system_disk_category="cloud_essd",
            system_disk_size=layout.root_gb,
            system_disk_encrypted=True,
            data_disks=[alicloud.ess.ScalingConfigurationDataDiskArgs(**disk)] if disk else None,
            key_name=key_pair.key_pair_name if key_pair else None,
            user_data=layout.user_data_b64,
            tags={**tags, "Name": f"{spec.name}-node"},
            opts=child,
        )
        return group
