"""GCP resources for one GPU cluster: maps a `GcpLayout` onto pulumi-gcp, nothing more.

Decisions (GPU VPCs and NICs, ranges, image, scheduling, labels) are made in
`components.layout.gcp`; this module turns them into VPCs, subnets, firewall rules, Cloud NAT,
an optional compact placement policy, one instance template and a managed instance group
(managed) or N instances from the template (instances).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import SCRATCH_DEVICE_NAME, GcpLayout, Vpc

TYPE = "gpu-cluster:gcp:Cluster"


class CloudCluster(pulumi.ComponentResource):
    """The GCP half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: GcpLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        spec = layout.spec
        child = pulumi.ResourceOptions(parent=self)
        for message in layout.warnings:
            pulumi.log.warn(message, resource=self)

        self.networks: dict[str, gcp.compute.Network] = {}
        self.subnets: dict[str, gcp.compute.Subnetwork] = {}
        self.firewalls: list[gcp.compute.Firewall] = []
        for vpc in layout.vpcs:
            self._vpc(name, vpc, child)
        host = self.networks["host"]
        self.internal_firewall = self.firewalls[0]
        if layout.ssh_source_ranges:
            self.firewalls.append(
                gcp.compute.Firewall(
                    f"{name}-ssh",
                    network=host.id,
                    direction="INGRESS",
                    allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
                    source_ranges=list(layout.ssh_source_ranges),
                    description="SSH to the nodes (sshCidrs, and IAP's range when gcp.iap is set)",
                    opts=child,
                )
            )
        if layout.nat:
            # Nodes have no external IP: Cloud NAT gives the host subnet outbound access.
            router = gcp.compute.Router(f"{name}-router", network=host.id, region=spec.region, opts=child)
            gcp.compute.RouterNat(
                f"{name}-nat",
                router=router.name,
                region=spec.region,
                nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
                subnetworks=[
                    gcp.compute.RouterNatSubnetworkArgs(
                        name=self.subnets["nodes"].self_link, source_ip_ranges_to_nats=["ALL_IP_RANGES"]
                    )
                ],
                opts=child,
            )

        self.placement_policy = (
            gcp.compute.ResourcePolicy(
                f"{name}-placement",
                region=spec.region,
                group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
                    vm_count=layout.placement_vm_count, collocation="COLLOCATED"
                ),
                description=f"compact placement for gpu-cluster {spec.name}",
                opts=child,
            )
            if layout.placement_vm_count
            else None
        )
        self.image_id = self._image_id(layout)
        self.template = self._template(name, layout, child)

        node_ids: pulumi.Output[Any]
        self.instances: list[gcp.compute.InstanceFromTemplate] = []
        self.group: gcp.compute.InstanceGroupManager | None = None
        if spec.node_group == "managed":
            self.group = gcp.compute.InstanceGroupManager(
                f"{name}-mig",
                base_instance_name=f"{spec.name}-node",
                zone=layout.zone,
                target_size=spec.nodes,
                versions=[
                    gcp.compute.InstanceGroupManagerVersionArgs(
                        name="primary", instance_template=self.template.self_link_unique
                    )
                ],
                # GPU nodes take minutes to boot; do not block the deploy on them.
                wait_for_instances=False,
                opts=child,
            )
            node_ids = self.group.instance_group
        else:
            self.instances = [
                gcp.compute.InstanceFromTemplate(
                    f"{name}-node-{i}",
                    source_instance_template=self.template.self_link_unique,
                    zone=layout.zone,
                    labels=dict(layout.labels),
                    opts=child,
                )
                for i in range(spec.nodes)
            ]
            node_ids = pulumi.Output.all(*[inst.id for inst in self.instances])

        self.outputs = {
            "vpcId": host.id,
            "subnetIds": pulumi.Output.all(self.subnets["nodes"].id),
            "gpuNetworkIds": pulumi.Output.all(*[n.id for role, n in self.networks.items() if role != "host"]),
            "securityGroupId": self.internal_firewall.id,
            "zone": layout.zone,
            "imageId": self.image_id,
            "instanceTemplate": self.template.self_link_unique,
            "nodeGroup" if spec.node_group == "managed" else "instanceIds": node_ids,
            "placementGroup": self.placement_policy.self_link if self.placement_policy else None,
        }
        self.register_outputs(self.outputs)

    def _vpc(self, name: str, vpc: Vpc, child: pulumi.ResourceOptions) -> None:
        spec = self.layout.spec
        network = gcp.compute.Network(
            f"{name}-{vpc.role}",
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            mtu=vpc.mtu,
            # RDMA VPCs are created with the zone's RoCE profile (vpc/docs/rdma-network-profiles).
            network_profile=vpc.network_profile,
            description=f"gpu-cluster {spec.name} {vpc.role} network",
            opts=child,
        )
        self.networks[vpc.role] = network
        for subnet in vpc.subnets:
            self.subnets[subnet.role] = gcp.compute.Subnetwork(
                f"{name}-{subnet.role}",
                network=network.id,
                region=spec.region,
                ip_cidr_range=subnet.cidr,
                private_ip_google_access=vpc.role == "host",
                opts=child,
            )
        if vpc.internal_firewall:
            # All traffic between the nodes on this network (NCCL, GPUDirect-TCPX/O); none on RoCE VPCs.
            self.firewalls.append(
                gcp.compute.Firewall(
                    f"{name}-{vpc.role}-internal",
                    network=network.id,
                    direction="INGRESS",
                    allows=[gcp.compute.FirewallAllowArgs(protocol="all")],
                    source_ranges=[s.cidr for s in vpc.subnets],
                    description="all traffic between cluster nodes",
                    opts=child,
                )
            )

    def _image_id(self, layout: GcpLayout) -> pulumi.Output[str]:
        if layout.image.family is None:
            return pulumi.Output.from_input(layout.image.ref)
        # Resolve the family once per deploy so every node of the group boots the same image.
        image: pulumi.Output[str] = gcp.compute.get_image_output(
            family=layout.image.family, project=layout.image.project, opts=pulumi.InvokeOutputOptions(parent=self)
        ).self_link
        return image

    def _template(self, name: str, layout: GcpLayout, child: pulumi.ResourceOptions) -> gcp.compute.InstanceTemplate:
        spec = layout.spec
        labels = dict(layout.labels)
        disks = [
            gcp.compute.InstanceTemplateDiskArgs(
                boot=True,
                source_image=self.image_id,
                disk_size_gb=layout.root_gb,
                disk_type=layout.boot_disk_type,
                auto_delete=True,
                labels=labels,
            )
        ]
        if layout.scratch.kind == "disk":
            disks.append(
                gcp.compute.InstanceTemplateDiskArgs(
                    boot=False,
                    device_name=SCRATCH_DEVICE_NAME,
                    disk_size_gb=int(layout.scratch.device_gb or 0),
                    disk_type=layout.scratch_disk_type,
                    auto_delete=not layout.scratch.retain,
                    labels=labels,
                )
            )
        # No network tags: every VPC here is the cluster's own, so its firewall rules apply to all of
        # its instances. Local SSDs of A2 Ultra / A3 / A4 come with the machine type and need no disk entry.
        nics = [
            gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                subnetwork=self.subnets[nic.subnet].id,
                nic_type=nic.nic_type,
                access_configs=[gcp.compute.InstanceTemplateNetworkInterfaceAccessConfigArgs()]
                if nic.external_ip
                else None,
            )
            for nic in layout.nics
        ]
        sched = layout.scheduling
        reservation = (
            gcp.compute.InstanceTemplateReservationAffinityArgs(
                type="SPECIFIC_RESERVATION",
                specific_reservation=gcp.compute.InstanceTemplateReservationAffinitySpecificReservationArgs(
                    key="compute.googleapis.com/reservation-name", values=[layout.reservation]
                ),
            )
            if layout.reservation
            else None
        )
        return gcp.compute.InstanceTemplate(
            f"{name}-template",
            machine_type=spec.instance.instanceType,
            disks=disks,
            network_interfaces=nics,
            guest_accelerators=[
                gcp.compute.InstanceTemplateGuestAcceleratorArgs(
                    type=layout.guest_accelerator[0], count=layout.guest_accelerator[1]
                )
            ]
            if layout.guest_accelerator
            else None,
            scheduling=gcp.compute.InstanceTemplateSchedulingArgs(
                provisioning_model=sched.provisioning_model,
                preemptible=sched.preemptible,
                automatic_restart=sched.automatic_restart,
                on_host_maintenance=sched.on_host_maintenance,
                instance_termination_action=sched.instance_termination_action,
            ),
            # Secure Boot stays off: DKMS-built NVIDIA modules are not signed for the UEFI db.
            shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
                enable_secure_boot=False, enable_vtpm=True, enable_integrity_monitoring=True
            ),
            resource_policies=self.placement_policy.self_link if self.placement_policy else None,
            reservation_affinity=reservation,
            metadata=dict(layout.metadata),
            labels=labels,
            description=f"gpu-cluster {spec.name} nodes ({spec.instance.label})",
            opts=child,
        )
