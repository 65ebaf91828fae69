"""`serve:` on Azure: the Standard Load Balancer (frontend in the node subnet, or a Standard public IP when
public; the backend pool the scale set's IP configuration joins, the health probe on the serving port, one TCP rule).
Decided in `layout.azure.serve` (catalog/serving/azure.yaml); the NSG's probe and client rules are part of the
cluster's NSG (layout.azure.serve probe_rule)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..layout.azure import AzureServe
from ..layout.azure.serve import FRONTEND, POOL, PROBE, RULE
from ..resources import Joined, invoke_options, serve_output
from .context import Context


@dataclass(frozen=True)
class Serving:
    load_balancer: azure.network.LoadBalancer
    pool_id: pulumi.Output[str]  # the backend pool the scale set's IP configuration names
    public_ip: azure.network.PublicIPAddress | None = None  # public: the frontend's address

    def output(self, serve: AzureServe) -> dict[str, Any]:
        endpoint = (
            self.public_ip.ip_address.apply(lambda ip: ip or "")
            if self.public_ip is not None
            else self.load_balancer.frontend_ip_configurations.apply(_private_ip)
        )
        return serve_output(
            endpoint,
            serve.port,
            serve.protocol,
            not serve.public,
            ("HTTP" if serve.protocol == "http" else "TCP", serve.port, serve.health_path),
            serve.check_command,
            serve.reach,
            loadBalancer=self.load_balancer.id,
        )


def _private_ip(frontends: Any) -> str:
    """The frontend's address (the output types' `private_ip_address`), as the NICs' addresses are read."""
    return str(frontends[0].private_ip_address) if frontends else ""


def build_serving(ctx: Context, subnet: azure.network.Subnet | Joined) -> Serving | None:
    serve = ctx.layout.serve
    if serve is None:
        return None
    # the rule names its frontend, pool and probe by their ids inside this load balancer: built from its name
    subscription = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component)).subscription_id
    lb_id = pulumi.Output.concat(
        "/subscriptions/",
        subscription,
        "/resourceGroups/",
        ctx.resource_group_name,
        "/providers/Microsoft.Network/loadBalancers/",
        serve.name,
    )

    def part(kind: str, name: str) -> pulumi.Output[str]:
        return pulumi.Output.concat(lb_id, f"/{kind}/{name}")

    http = serve.protocol == "http"
    public_ip = (
        azure.network.PublicIPAddress(
            f"{ctx.name}-serve-ip",
            resource_group_name=ctx.resource_group_name,
            location=ctx.location,
            sku=azure.network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
            public_ip_allocation_method="Static",
            public_ip_address_version="IPv4",
            tags=ctx.tagged("serve-ip"),
            opts=ctx.opts,
        )
        if serve.public
        else None
    )
    frontend = (
        azure.network.FrontendIPConfigurationArgs(
            name=FRONTEND, public_ip_address=azure.network.PublicIPAddressArgs(id=public_ip.id)
        )
        if public_ip is not None
        else azure.network.FrontendIPConfigurationArgs(
            name=FRONTEND, subnet=azure.network.SubnetArgs(id=subnet.id), private_ip_allocation_method="Dynamic"
        )
    )
    lb = azure.network.LoadBalancer(
        f"{ctx.name}-lb",
        load_balancer_name=serve.name,
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        sku=azure.network.LoadBalancerSkuArgs(name="Standard", tier="Regional"),
        frontend_ip_configurations=[frontend],
        backend_address_pools=[azure.network.BackendAddressPoolArgs(name=POOL)],
        probes=[
            azure.network.ProbeArgs(
                name=PROBE,
                protocol="Http" if http else "Tcp",
                port=serve.port,
                request_path=serve.health_path if http else None,
                interval_in_seconds=serve.interval_seconds,
                probe_threshold=serve.probe_threshold,
            )
        ],
        load_balancing_rules=[
            azure.network.LoadBalancingRuleArgs(
                name=RULE,
                protocol="Tcp",
                frontend_port=serve.port,
                backend_port=serve.port,
                frontend_ip_configuration=azure.network.SubResourceArgs(id=part("frontendIPConfigurations", FRONTEND)),
                backend_address_pool=azure.network.SubResourceArgs(id=part("backendAddressPools", POOL)),
                probe=azure.network.SubResourceArgs(id=part("probes", PROBE)),
                enable_floating_ip=False,
                # public: the nodes keep going out through the cluster's own way (NAT gateway, or none), not this
                # address (catalog/serving/azure.yaml publicSource)
                disable_outbound_snat=True if public_ip is not None else None,
            )
        ],
        tags=ctx.tagged("lb"),
        opts=ctx.opts,
    )
    return Serving(lb, part("backendAddressPools", POOL), public_ip)
