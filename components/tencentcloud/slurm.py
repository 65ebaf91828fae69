"""`scheduler: slurm` on Tencent Cloud (layout: `components.layout.tencentcloud.slurm`): the MUNGE key and the GPU
nodes' configuration in SSM, the nodes' grant on them, the head node and the Slurm ports.

- MUNGE key: `random.RandomBytes` (a secret) as the SecretString of the cluster's own SSM secret; the compute-side
  configuration is another secret's version, updated in place. The nodes' CAM role (which the head, the GPU nodes and
  the login node carry) gets one custom policy: ssm:GetSecretValue on exactly these two secrets.
- Head node: a private CVM instance in the nodes' subnet with its own security group, running slurmctld.
- Rules, inside the cluster only (each group's rules are one GroupRuleSet): slurmctld and NFS to the head from the
  nodes and the login node, SSH to the head from the login node; slurmd to the nodes from the head and the login node;
  SrunPortRange to the login node from both (`node_ingress`, `login_ingress`, added to their groups' sets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_random as random
import tencentcloud_iac_pulumi as tencentcloud

from ..bootstrap import gzip_b64
from ..bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ..catalog.slurm import cloud_data as slurm_cloud
from ..layout.tencentcloud import TencentLayout, TencentSlurm
from ..layout.tencentcloud.nodes import DISK_TYPE
from ..resources import fill, invoke_options, secret_slurm_output
from .network import Network
from .nodes import public_image

SSH = 22
NFS_WHO = ("nodes", "login")


@dataclass(frozen=True)
class SlurmHead:
    plan: TencentSlurm
    instance: tencentcloud.instance.Instance
    security_group: tencentcloud.security.Group
    munge_secret: tencentcloud.ssm.Secret
    conf_version: tencentcloud.ssm.SecretVersion

    @property
    def address(self) -> pulumi.Output[str]:
        ip: pulumi.Output[str] = self.instance.private_ip
        return ip

    def login_user_data(self, fills: Mapping[str, pulumi.Input[str] | None] | None = None) -> pulumi.Input[str]:
        """The login node's: the Slurm client parts (then LogListener and the monitoring) with the head's address
        (and `fills`: TMP's, tencentcloud/tmp.py)."""
        return fill(self.plan.login_user_data, {HEAD_PLACEHOLDER: self.address, **(fills or {})}, gzip_b64)


def _secret(
    name: str, plan: TencentSlurm, secret: str, what: str, value: pulumi.Input[str], tags: Mapping[str, str],
    child: pulumi.ResourceOptions,
) -> tuple[tencentcloud.ssm.Secret, tencentcloud.ssm.SecretVersion]:  # fmt: skip
    made = tencentcloud.ssm.Secret(
        f"{name}-slurm-{what}",
        secret_name=secret,
        description=f"gpu-cluster {plan.layout.cluster_name}: the Slurm {what}",
        recovery_window_in_days=int(slurm_cloud("tencentcloud")["recoveryWindowInDays"]),
        tags=dict(tags),
        opts=child,
    )
    version = tencentcloud.ssm.SecretVersion(
        f"{name}-slurm-{what}-{plan.secret_version}",
        secret_name=made.secret_name,
        version_id=plan.secret_version,
        secret_string=value,
        opts=child,
    )
    return made, version


def build(
    parent: pulumi.Resource,
    name: str,
    layout: TencentLayout,
    network: Network,
    key_ids: list[pulumi.Input[str]] | None,
    role_name: pulumi.Output[str],
    tags: Mapping[str, str],
) -> SlurmHead | None:
    plan = layout.slurm
    if plan is None:
        return None
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    key_bytes = random.RandomBytes(f"{name}-munge-key-bytes", length=plan.key_bytes, opts=child)
    key: pulumi.Output[str] = pulumi.Output.secret(key_bytes.base64)
    secret, key_version = _secret(name, plan, plan.munge_secret, "munge-key", key, tags, child)
    conf, conf_version = _secret(name, plan, plan.conf_secret, "compute-conf", plan.layout.compute_config, tags, child)
    account = tencentcloud.user.get_info_output(opts=invoke_options(parent))
    policy = tencentcloud.cam.Policy(
        f"{name}-slurm-secrets-policy",
        name=plan.policy_name,
        document=pulumi.Output.all(account.owner_uin, account.uin).apply(
            lambda a: plan.node_policy(spec.region, str(a[0]), str(a[1]))
        ),
        description=f"gpu-cluster {spec.name}: the nodes read the Slurm MUNGE key and configuration (two SSM secrets)",
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[secret, conf]),
    )
    grant = tencentcloud.cam.RolePolicyAttachmentByName(
        f"{name}-role-slurm-secrets", policy_name=policy.name, role_name=role_name, opts=child
    )
    sg = tencentcloud.security.Group(
        f"{name}-head-sg", name=f"{spec.name}-slurm-head", description=f"gpu-cluster {spec.name} Slurm head", opts=child
    )
    image = public_image(parent, plan.head_os_name, plan.head_instance_type)
    instance = tencentcloud.instance.Instance(
        f"{name}-head",
        instance_name=f"{spec.name}-head",
        hostname=f"{spec.name}-head",
        availability_zone=network.zone,
        instance_type=plan.head_instance_type,
        image_id=image,
        vpc_id=network.vpc.id,
        subnet_id=network.subnet.id,
        orderly_security_groups=[sg.id],
        instance_charge_type="POSTPAID_BY_HOUR",
        allocate_public_ip=False,  # private: egress through the NAT (slurm needs egress nat)
        system_disk_type=DISK_TYPE,
        # /home (the NFS export) and the Slurm state live on this disk
        system_disk_size=layout.root_gb,
        key_ids=key_ids,
        cam_role_name=role_name,
        user_data=gzip_b64(plan.head_user_data),
        tags={**tags, "Name": f"{spec.name}-head"},
        # the newest public image, resolved at creation: a newer one must not reinstall the head later; the head
        # reads the key and its configuration at first boot: the grant and both versions first
        opts=pulumi.ResourceOptions.merge(
            child,
            pulumi.ResourceOptions(ignore_changes=["imageId"], depends_on=[grant, key_version, conf_version]),
        ),
    )
    return SlurmHead(plan, instance, sg, secret, conf_version)


def _rule(port: str, source: tencentcloud.security.Group, what: str) -> tencentcloud.security.GroupRuleSetIngressArgs:
    return tencentcloud.security.GroupRuleSetIngressArgs(
        action="ACCEPT", source_security_id=source.id, protocol="TCP", port=port, description=what
    )


def head_rules(
    parent: pulumi.Resource, name: str, head: SlurmHead | None, nodes: tencentcloud.security.Group,
    login: tencentcloud.security.Group | None,
) -> tencentcloud.security.GroupRuleSet | None:  # fmt: skip
    """The head's group: slurmctld (and NFS /home) from the nodes and the login node, SSH from the login node."""
    if head is None:
        return None
    layout, ports = head.plan.layout, head.plan.layout.ports
    sources = [("nodes", nodes), *([("login node", login)] if login is not None else [])]
    ingress = [_rule(str(ports.slurmctld), group, f"slurmctld from the {who}") for who, group in sources]
    if layout.home_export:
        ingress += [_rule(str(ports.nfs), group, f"NFS /home for the {who}") for who, group in sources]
    if login is not None:
        ingress.append(_rule(str(SSH), login, "SSH from the login node"))
    egress = [
        tencentcloud.security.GroupRuleSetEgressArgs(
            action="ACCEPT", cidr_block="0.0.0.0/0", protocol="ALL", port="all", description="egress"
        )
    ]
    return tencentcloud.security.GroupRuleSet(
        f"{name}-head-sg-rules",
        security_group_id=head.security_group.id,
        ingresses=ingress,
        egresses=egress,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def node_ingress(
    head: SlurmHead | None, login: tencentcloud.security.Group | None
) -> list[tencentcloud.security.GroupRuleSetIngressArgs]:
    """The nodes' group: slurmd from the head and from srun on the login node."""
    if head is None:
        return []
    slurmd = str(head.plan.layout.ports.slurmd)
    rules = [_rule(slurmd, head.security_group, "slurmd from the Slurm head node")]
    return rules + ([_rule(slurmd, login, "slurmd from srun on the login node")] if login is not None else [])


def login_ingress(
    head: SlurmHead | None, nodes: tencentcloud.security.Group
) -> list[tencentcloud.security.GroupRuleSetIngressArgs]:
    """The login node's group: srun's SrunPortRange from slurmctld and from slurmd."""
    if head is None:
        return []
    srun = "{}-{}".format(*head.plan.layout.ports.srun_range)
    return [
        _rule(srun, head.security_group, "srun (SrunPortRange) from slurmctld"),
        _rule(srun, nodes, "srun (SrunPortRange) from slurmd"),
    ]


def output(head: SlurmHead | None, access: Mapping[str, Any]) -> dict[str, Any] | None:
    """`slurm`: where the controller runs, how to submit and check, and where the key is kept (never the key)."""
    if head is None:
        return None
    key = {
        "store": "ssm-secret",
        "secret": head.plan.munge_secret,
        "grant": "ssm:GetSecretValue on that secret (and the configuration's) for the nodes' CAM role only",
    }
    layout, login = head.plan.layout, access["command"]
    return secret_slurm_output((head.instance.id, head.address), layout, login, key, head.plan.conf_secret)
