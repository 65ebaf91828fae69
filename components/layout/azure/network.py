"""Azure network decisions: the node subnet's NSG rules (SSH only from sshCidrs, the VNet inside, nothing else from
the internet)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...spec import ClusterSpec

AZURE_RESERVED_IPS_PER_SUBNET = 5  # VNet FAQ: Azure reserves 5 addresses in every subnet


@dataclass(frozen=True)
class SecurityRule:
    """One NSG rule, in the order Azure evaluates them (lower priority number first)."""

    name: str
    priority: int
    direction: Literal["Inbound", "Outbound"]
    access: Literal["Allow", "Deny"]
    protocol: Literal["*", "Tcp", "Udp"]
    sources: tuple[str, ...]  # CIDRs or service tags (VirtualNetwork, Internet)
    destination: str
    port: str  # "*" or a port
    description: str


def ssh_rule(spec: ClusterSpec) -> SecurityRule:
    return SecurityRule(
        "allow-ssh", 100, "Inbound", "Allow", "Tcp", spec.network.ssh_cidrs, "*", "22", "SSH from sshCidrs"
    )


def security_rules(spec: ClusterSpec) -> tuple[SecurityRule, ...]:
    """SSH only from sshCidrs, everything inside the VNet, nothing else from the internet.

    Azure's default rules already allow VNet traffic (65000) and deny the rest (65500); the explicit copies
    make the intent visible in the plan and keep it if someone adds broader rules later. With a login node,
    sshCidrs open port 22 on the login node only (its own NSG), never on the GPU nodes.
    """
    rules: list[SecurityRule] = []
    if spec.network.ssh_cidrs and spec.login is None:
        rules.append(ssh_rule(spec))
    rules += inside_rules()
    return tuple(rules)


def inside_rules() -> list[SecurityRule]:
    return [
        SecurityRule(
            "allow-vnet-inbound",
            200,
            "Inbound",
            "Allow",
            "*",
            ("VirtualNetwork",),
            "VirtualNetwork",
            "*",
            "all traffic between nodes (NCCL bootstrap, IPoIB is separate)",
        ),
        SecurityRule(
            "deny-internet-inbound", 4096, "Inbound", "Deny", "*", ("Internet",), "*", "*", "nothing from the internet"
        ),
    ]
