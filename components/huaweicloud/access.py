"""How people reach the nodes: an SSH key pair and an optional login node.

pulumi-huaweicloud 0.0.12 has no shell session service (capabilities `access.why`), so access is SSH: an
`ecs.Keypair` whenever `sshPublicKey` is set (through `from_config`, so a `secure:` key stays secret), on the nodes and
the login node. A login node (`login:`) is one CPU ECS in the nodes' subnet with its own security group: the SSH CIDRs
and its EIP land there, and the nodes accept SSH from that group only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..layout.huaweicloud import HuaweiLayout
from ..resources import NO_LOGIN, from_config, ssh_command
from .network import Network, secgroup_rule, security_group


@dataclass(frozen=True)
class Access:
    key_pair: huaweicloud.ecs.Keypair | None


@dataclass(frozen=True)
class Login:
    instance: huaweicloud.ecs.Instance
    security_group: huaweicloud.vpc.Secgroup


def build(parent: pulumi.Resource, name: str, layout: HuaweiLayout) -> Access:
    spec = layout.spec
    if not spec.ssh_public_key:
        return Access(None)
    key = huaweicloud.ecs.Keypair(
        f"{name}-keypair",
        # one key pair name per account and region: the stack is in it (letters, digits, '-' and '_')
        name=re.sub(r"[^A-Za-z0-9_-]", "-", f"{spec.name}-{spec.stack}")[:64],
        public_key=from_config(spec, spec.ssh_public_key),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return Access(key)


def build_login(
    parent: pulumi.Resource,
    name: str,
    layout: HuaweiLayout,
    network: Network,
    key_pair: pulumi.Input[str] | None,
    agency: pulumi.Output[str],
    kms_key_id: pulumi.Output[str],
    image_id: pulumi.Input[str],
    slurm_user_data: pulumi.Input[str] | None = None,  # scheduler: slurm: the client parts, then the monitoring
) -> Login | None:
    login = layout.login
    if login is None:
        return None
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    sg = security_group(
        parent, f"{name}-login-sg", f"{name}-login-egress", f"{spec.name}-login", f"gpu-cluster {spec.name} login node"
    )
    for i, cidr in enumerate(login.ssh_cidrs):
        secgroup_rule(parent, f"{name}-login-ssh-{i}", sg, "SSH to the login node", ports="22", remote_ip=cidr)
    # the nodes accept SSH from the login node's group
    secgroup_rule(
        parent,
        f"{name}-sg-from-login",
        network.security_group,
        "SSH from the login node",
        ports="22",
        remote_group=sg.id,
    )
    instance = huaweicloud.ecs.Instance(
        f"{name}-login",
        name=f"{spec.name}-login",
        hostname=f"{spec.name}-login",
        availability_zone=network.zone,
        flavor_id=login.flavor,
        image_id=image_id,
        networks=[huaweicloud.ecs.InstanceNetworkArgs(uuid=network.subnet.id)],
        security_group_ids=[sg.id],
        system_disk_type=layout.disk_type,
        system_disk_kms_key_id=kms_key_id,
        key_pair=key_pair,
        agency_name=agency,
        # Slurm's parts, else Prometheus and Grafana, ICAgent with monitoring.logs, or none
        user_data=slurm_user_data if slurm_user_data is not None else layout.login_user_data,
        eip_type="5_bgp" if login.public_ip else None,
        bandwidth=huaweicloud.ecs.InstanceBandwidthArgs(share_type="PER", size=100, charge_mode="traffic")
        if login.public_ip
        else None,
        tags={**layout.tags, "Name": f"{spec.name}-login"},
        # the newest public image, resolved at creation: a newer one must not rebuild the login node later
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["imageId"])),
    )
    return Login(instance, sg)


def output(layout: HuaweiLayout, login: Login | None) -> dict[str, Any]:
    """The `access` stack output: the method, the command a user types, and how to list the nodes."""
    spec, access = layout.spec, layout.access
    nodes = (
        f"the stack output instanceIds; in the console: Elastic Cloud Server, region {spec.region}, "
        f"tag gpu-cluster:cluster={spec.name}"
    )
    command: pulumi.Input[str]
    if access.method == "ssh":
        public = login and layout.login and layout.login.public_ip
        command = ssh_command(access.login_user, login.instance.public_ip if login and public else None)
    else:
        command = NO_LOGIN
    return {"method": access.method, "command": command, "nodes": nodes}
