"""`serve:` on Azure (pure): an internal Standard Load Balancer in the node subnet, the scale set's NICs in its
backend pool, a health probe on the serving port, one TCP rule, and the NSG rule that admits Azure's probe to that
port (`catalog/serving/azure.yaml`); public: a Standard public IP as the frontend and the NSG rule for allowedCidrs
(TCP, TLS on the nodes). `components/azure/serve.py` maps this onto pulumi-azure-native. The spec refuses what is not
built here (public http, a certificate, an idle timeout, request rate)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...catalog import serving
from ...spec import ClusterSpec
from .network import SecurityRule

FRONTEND, POOL, PROBE, RULE = "frontend", "nodes", "serve", "serve"
PROBE_RULE_PRIORITY = 300  # after SSH (100) and the VNet rule (200), before the Internet deny (4096)
CLIENT_RULE_PRIORITY = 310  # public: allowedCidrs to the serving port, before the Internet deny too


@dataclass(frozen=True)
class AzureServe:
    name: str  # the load balancer's name in the resource group
    port: int
    protocol: Literal["http", "tcp"]
    health_path: str | None
    interval_seconds: int
    probe_threshold: int
    clients: str  # the VNet's range: the clients of a private endpoint (the NSG's VirtualNetwork rule admits them)
    public_clients: tuple[str, ...] = ()  # public: allowedCidrs, admitted by the NSG (empty: private)

    @property
    def public(self) -> bool:
        return bool(self.public_clients)

    def check_command(self, address: str) -> str:
        if self.protocol == "tcp":
            return f"nc -zv {address} {self.port}"
        return f"curl -fsS http://{address}:{self.port}{self.health_path or '/'}"

    @property
    def reach(self) -> str:
        if self.public:
            return f"a client in {', '.join(self.public_clients)}"
        return f"inside the VNet ({self.clients}): a node or the login node"


def probe_rule(spec: ClusterSpec) -> tuple[SecurityRule, ...]:
    """The NSG rules that admit the load balancer's probe to the serving port and, public, the clients in
    allowedCidrs (the load balancer keeps their addresses: the NSG is their filter); none without serve."""
    offer = serving.offer("azure")
    serve = spec.serve
    if serve is None or offer is None:
        return ()
    probe = SecurityRule(
        "allow-serve-probe",
        PROBE_RULE_PRIORITY,
        "Inbound",
        "Allow",
        "Tcp",
        offer.probeRanges,
        "*",
        str(serve.port),
        "the serving load balancer's health probe to the serving port only",
    )
    if not serve.public:
        return (probe,)
    clients = SecurityRule(
        "allow-serve-clients",
        CLIENT_RULE_PRIORITY,
        "Inbound",
        "Allow",
        "Tcp",
        serve.allowed_cidrs,
        "*",
        str(serve.port),
        "serve.allowedCidrs to the serving port only (the public load balancer keeps the clients' addresses)",
    )
    return (probe, clients)


def plan(spec: ClusterSpec) -> AzureServe | None:
    serve = spec.serve
    offer = serving.offer("azure")
    if serve is None or offer is None:
        return None
    hc = offer.healthCheck
    return AzureServe(
        name=f"{spec.name}-lb",
        port=serve.port,
        protocol=serve.protocol,
        health_path=serve.health_path,
        interval_seconds=hc.intervalSeconds,
        probe_threshold=hc.unhealthyThreshold,  # one threshold both ways (catalog/serving/azure.yaml)
        clients=spec.network.cidr,
        public_clients=serve.allowed_cidrs if serve.public else (),
    )
