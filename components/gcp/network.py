"""The cluster's VPCs, subnets, intra-cluster firewall rules and Cloud NAT (layout: `GcpLayout.vpcs`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout, Vpc
from ..resources import Joined


@dataclass
class Network:
    networks: dict[str, gcp.compute.Network | Joined] = field(default_factory=dict)
    subnets: dict[str, gcp.compute.Subnetwork | Joined] = field(default_factory=dict)
    firewalls: list[gcp.compute.Firewall] = field(default_factory=list)

    @property
    def host(self) -> gcp.compute.Network | Joined:
        return self.networks["host"]

    @property
    def internal_firewall(self) -> gcp.compute.Firewall:
        """The host VPC's intra-cluster rule: the first one made (the host VPC comes first)."""
        return self.firewalls[0]


def build_vpcs(name: str, layout: GcpLayout, child: pulumi.ResourceOptions) -> Network:
    net = Network()
    existing = layout.spec.network.existing
    if existing is not None:
        return _join(name, layout, existing.vpc_id, existing.subnet_ids, child)
    for vpc in layout.vpcs:
        _vpc(net, name, layout, vpc, child)
    return net


def _vpc(net: Network, name: str, layout: GcpLayout, vpc: Vpc, child: pulumi.ResourceOptions) -> None:
    spec = layout.spec
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
    net.networks[vpc.role] = network
    for subnet in vpc.subnets:
        net.subnets[subnet.role] = gcp.compute.Subnetwork(
            f"{name}-{subnet.role}",
            network=network.id,
            region=spec.region,
            ip_cidr_range=subnet.cidr,
            private_ip_google_access=vpc.role == "host",
            # GKE's pods and services ranges (scheduler kubernetes); none otherwise, so the input stays unset
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=rng, ip_cidr_range=cidr)
                for rng, cidr in subnet.secondary
            ]
            or None,
            opts=child,
        )
    if vpc.internal_firewall:
        # All traffic between the nodes on this network (NCCL, GPUDirect-TCPX/O); none on RoCE VPCs.
        net.firewalls.append(
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


def _join(
    name: str, layout: GcpLayout, host: str, subnetworks: tuple[str, ...], child: pulumi.ResourceOptions
) -> Network:
    """An existing Shared VPC: the NICs use the given subnetworks (NIC order; the layout checked the count);
    only the host network's internal rule is created (the GPU VPCs' own rules are the network's: plan warning)."""
    net = Network()
    net.networks["host"] = Joined.of(host)
    for nic, link in zip(layout.nics, subnetworks, strict=True):
        net.subnets[nic.subnet] = Joined.of(link)
    net.firewalls.append(
        gcp.compute.Firewall(
            f"{name}-host-internal",
            network=net.host.id,
            direction="INGRESS",
            allows=[gcp.compute.FirewallAllowArgs(protocol="all")],
            source_ranges=[layout.spec.network.cidr],
            description="all traffic between cluster nodes",
            opts=child,
        )
    )
    return net


def build_nat(name: str, layout: GcpLayout, net: Network, child: pulumi.ResourceOptions) -> None:
    """Nodes have no external IP: Cloud NAT gives the host subnet outbound access."""
    if not layout.nat:
        return
    region = layout.spec.region
    router = gcp.compute.Router(f"{name}-router", network=net.host.id, region=region, opts=child)
    gcp.compute.RouterNat(
        f"{name}-nat",
        router=router.name,
        region=region,
        nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
        subnetworks=[
            gcp.compute.RouterNatSubnetworkArgs(
                name=net.subnets["nodes"].self_link, source_ip_ranges_to_nats=["ALL_IP_RANGES"]
            )
        ],
        opts=child,
    )
