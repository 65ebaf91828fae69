"""How people reach the nodes: an SSH key pair and an optional login node.

tencentcloud-iac-pulumi 0.2.3 has no session manager (its `ssm` module is the Secrets Manager), so
access is SSH: a `key.Pair` whenever `sshPublicKey` is set (through `from_config`, so a `secure:` key
stays secret), on the nodes and the login node. A login node (`login:`) is one CPU instance in the
nodes' subnet with its own security group: the SSH CIDRs and the public IP land there, and the nodes
accept SSH from that group only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..layout.tencentcloud import TencentLayout
from ..layout.tencentcloud.nodes import DISK_TYPE
from ..resources import NO_LOGIN, from_config, ssh_command
from .network import Network
from .nodes import public_image


@dataclass(frozen=True)
class Access:
    key_pair: tencentcloud.key.Pair | None


@dataclass(frozen=True)
class Login:
    instance: tencentcloud.instance.Instance
    security_group: tencentcloud.security.Group


def build(parent: pulumi.Resource, name: str, layout: TencentLayout, tags: Mapping[str, str]) -> Access:
    spec = layout.spec
    if not spec.ssh_public_key:
        return Access(None)
    key = tencentcloud.key.Pair(
        f"{name}-key",
        # key names: letters, digits and '_', at most 25 (cvm ImportKeyPair KeyName); one per account, so the stack
        # is in it, its '-' and '.' as '_'
        key_name=re.sub(r"[^A-Za-z0-9_]", "_", f"{spec.name}_{spec.stack}")[:25],
        public_key=from_config(spec, spec.ssh_public_key),
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return Access(key)


def build_login(
    parent: pulumi.Resource,
    name: str,
    layout: TencentLayout,
    network: Network,
    key_ids: Sequence[pulumi.Input[str]] | None,
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
    slurm_user_data: pulumi.Input[str] | None = None,  # scheduler: slurm: the client parts, LogListener, monitoring
    slurm_ingress: Sequence[tencentcloud.security.GroupRuleSetIngressArgs] = (),  # srun's ports from the cluster
) -> Login | None:
    login = layout.login
    if login is None:
        return None
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    sg = tencentcloud.security.Group(
        f"{name}-login-sg", name=f"{spec.name}-login", description=f"gpu-cluster {spec.name} login node", opts=child
    )
    tencentcloud.security.GroupRuleSet(
        f"{name}-login-sg-rules",
        security_group_id=sg.id,
        ingresses=[
            tencentcloud.security.GroupRuleSetIngressArgs(
                action="ACCEPT", cidr_block=cidr, protocol="TCP", port="22", description="SSH to the login node"
            )
            for cidr in login.ssh_cidrs
        ]
        + list(slurm_ingress),
        # a rule set without egress rules rejects all outbound traffic (Tencent's security group overview,
        # 213/18197): the login node's Prometheus installs from the internet, calls the CVM API and scrapes the nodes,
        # LogListener reaches the mirror, CLS and SSM, Slurm's client installs its packages and reads the MUNGE key;
        # with any of them the login node gets the nodes' egress (network.py)
        egresses=[
            tencentcloud.security.GroupRuleSetEgressArgs(
                action="ACCEPT", cidr_block="0.0.0.0/0", protocol="ALL", port="all", description="egress"
            )
        ]
        if layout.monitoring is not None or layout.logs is not None or layout.slurm is not None
        else None,
        opts=child,
    )
    image = public_image(parent, login.os_name, login.instance_type)
    instance = tencentcloud.instance.Instance(
        f"{name}-login",
        instance_name=f"{spec.name}-login",
        hostname=f"{spec.name}-login",
        availability_zone=network.zone,
        instance_type=login.instance_type,
        image_id=image,
        vpc_id=network.vpc.id,
        subnet_id=network.subnet.id,
        orderly_security_groups=[sg.id],
        instance_charge_type="POSTPAID_BY_HOUR",
        allocate_public_ip=login.public_ip,
        internet_charge_type="TRAFFIC_POSTPAID_BY_HOUR" if login.public_ip else None,
        internet_max_bandwidth_out=100 if login.public_ip else None,
        system_disk_type=DISK_TYPE,
        key_ids=key_ids,
        cam_role_name=role_name,
        # LogListener, then Prometheus and Grafana; none without either (with Slurm's client parts first)
        user_data=slurm_user_data if slurm_user_data is not None else layout.login_user_data_b64,
        tags={**tags, "Name": f"{spec.name}-login"},
        # the newest public image, resolved at creation: a newer one must not reinstall the login node later
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["imageId"])),
    )
    return Login(instance, sg)


def output(layout: TencentLayout, login: Login | None) -> dict[str, Any]:
    """The `access` stack output: the method, the command a user types, and how to list the nodes."""
    spec, access = layout.spec, layout.access
    nodes = (
        f"tccli cvm DescribeInstances --region {spec.region} "
        f'--Filters \'[{{"Name":"tag:gpu-cluster:cluster","Values":["{spec.name}"]}}]\''
    )
    command: pulumi.Input[str]
    if access.method == "ssh":
        public = login and layout.login and layout.login.public_ip
        command = ssh_command(access.login_user, login.instance.public_ip if login and public else None)
    else:
        command = NO_LOGIN
    return {"method": access.method, "command": command, "nodes": nodes}
