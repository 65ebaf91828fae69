"""How people reach the nodes on AWS: SSM (and the VPC interface endpoints it needs without a way out), SSH CIDRs,
and the login node, the only place a public IP or SSH CIDR lands when there is one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import catalog
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from . import data
from .nodes import Image


@dataclass(frozen=True)
class Login:
    """One small CPU VM in the cluster network: the only place a public IP or SSH CIDR lands."""

    instance_type: str
    public_ip: bool  # in the public (NAT) subnet with a public IP, else in the node subnet
    image: Image


@dataclass(frozen=True)
class Access:
    method: str  # ssm | ssh | none (access: auto resolved by the spec from the capabilities file)
    endpoint_services: tuple[str, ...]  # VPC interface endpoints (com.amazonaws.<region>.<svc>)
    endpoint_port: int
    node_ssh_cidrs: tuple[str, ...]  # on the nodes' security group: only without a login node
    login: Login | None
    login_ssh_cidrs: tuple[str, ...]  # on the login node's security group


def access_plan(spec: ClusterSpec) -> Access:
    k = f"{CLUSTER_KEY}."
    net = spec.network
    login = None
    if spec.login is not None:
        if net.public_ip:
            raise ConfigError(
                f"{k}network.publicIp",
                "true, but a login node is the only place a public IP may land; set login.publicIp instead",
            )
        if spec.login.public_ip and net.egress != "nat":
            raise ConfigError(
                f"{k}login.publicIp",
                "true needs network.egress: nat (the login node sits in the NAT gateway's public subnet)",
            )
        # the login image of the login type's architecture (catalog images.login, rules.cpuArch)
        entry: dict[str, Any] = catalog.cpu_image("aws", str(spec.login.instance_type))
        login = Login(
            instance_type=str(spec.login.instance_type),
            public_ip=spec.login.public_ip,
            image=Image(entry["ssmParameter"], None, entry["description"]),
        )
    endpoints = data.ssm_endpoints()
    # SSM needs a way out to its service: the NAT, the nodes' own public IPs, or interface endpoints.
    needs_endpoints = spec.access == "ssm" and net.egress == "none" and not net.public_ip
    return Access(
        method=spec.access,
        endpoint_services=endpoints.services if needs_endpoints else (),
        endpoint_port=endpoints.port,
        # Without a login node, sshCidrs keep their meaning on the nodes (stacks deployed today keep their rules).
        node_ssh_cidrs=net.ssh_cidrs if login is None else (),
        login=login,
        login_ssh_cidrs=net.ssh_cidrs if login is not None else (),
    )
