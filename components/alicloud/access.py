"""How people reach the nodes: Cloud Assistant session manager, a key pair, and an optional login node.

- `session-manager` (the default): `ecs.EcsSessionManagerStatus` turns the feature on. It is one
  switch for the whole Alibaba Cloud account, not a per-cluster resource, so it is kept on delete
  (`retain_on_delete`): destroying one cluster never turns session manager off for the others.
  No inbound port and no public IP are needed.
- a key pair (`ecs.EcsKeyPair`) whenever `sshPublicKey` is set, on every node and the login node;
  the key goes through `from_config`, so a `secure:` key stays secret in state and plans.
- a login node (`login:`): one CPU instance in the nodes' vSwitch with its own security group. The
  SSH CIDRs and the public IP land there, and the nodes accept SSH from that group only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from ..resources import NO_LOGIN, from_config, ssh_command
from . import cpu_node
from .context import Context
from .cpu_node import CpuNode
from .network import ingress_rule


@dataclass(frozen=True)
class Access:
    session_manager: alicloud.ecs.EcsSessionManagerStatus | None
    key_pair: alicloud.ecs.EcsKeyPair | None
    login: CpuNode | None = None


def build(parent: pulumi.Resource, name: str, layout: AlicloudLayout, tags: Mapping[str, str]) -> Access:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    session_manager = (
        alicloud.ecs.EcsSessionManagerStatus(
            f"{name}-session-manager",
            session_manager_status_name="sessionManagerStatus",
            status="Enabled",
            opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=True),
        )
        if layout.access.session_manager
        else None
    )
    key_pair = (
        alicloud.ecs.EcsKeyPair(
            f"{name}-key",
            key_pair_name=f"{spec.name}-{spec.stack}",
            public_key=from_config(spec, spec.ssh_public_key),
            tags=tags,
            opts=child,
        )
        if spec.ssh_public_key
        else None
    )
    return Access(session_manager, key_pair)


def build_login(
    ctx: Context,
    user_data: pulumi.Input[str] | None = None,  # scheduler slurm: the login node's Slurm client bootstrap
) -> CpuNode | None:
    login = ctx.layout.login
    if login is None:
        return None
    name, network, child = ctx.name, ctx.network, ctx.child
    node = cpu_node.build(
        ctx,
        "login",
        group_name=f"{ctx.layout.spec.name}-login",
        what="login node",
        instance_type=login.instance_type,
        image_regex=login.image_name_regex,
        user_data=user_data,
        public_bandwidth_mbps=login.public_bandwidth_mbps,
    )
    sg = node.security_group
    for cidr in login.ssh_cidrs:
        ingress_rule(
            f"{name}-login-sg-ssh-{cidr.replace('/', '_')}", sg.id, "22/22", "SSH to the login node", child, cidr=cidr
        )
    # the nodes take SSH from the login node's group, nothing else from outside their own group
    ingress_rule(
        f"{name}-sg-ssh-from-login",
        network.security_group.id,
        "22/22",
        "SSH from the login node",
        child,
        source_group_id=sg.id,
    )
    return node


def output(layout: AlicloudLayout, login: CpuNode | None, first_node: alicloud.ecs.Instance | None) -> dict[str, Any]:
    """The `access` stack output: the method, the command a user types, and how to list the nodes."""
    spec, access = layout.spec, layout.access
    region = spec.region
    nodes = (
        f"aliyun ecs DescribeInstances --RegionId {region} --Tag.1.Key gpu-cluster:cluster --Tag.1.Value {spec.name}"
    )
    # the instance to log in to: the login node, else the first node (instances), else any node of the group
    target: pulumi.Input[str] = login.instance.id if login else first_node.id if first_node else "<instance id>"
    command: pulumi.Input[str]
    if access.method == "session-manager":
        head, _, tail = access.client.partition("{instance}")
        command = pulumi.Output.concat(head, target, tail)
    elif access.method == "ssh":
        public = login and layout.login and layout.login.public_bandwidth_mbps
        command = ssh_command(access.login_user, login.instance.public_ip if login and public else None)
    else:
        command = NO_LOGIN
    return {"method": access.method, "command": command, "nodes": nodes}
