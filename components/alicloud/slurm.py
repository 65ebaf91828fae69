"""`scheduler: slurm` on Alibaba Cloud: the MUNGE key's delivery, the head node and the Slurm ports.

- MUNGE key: `random.RandomBytes` (a secret) encrypted with the cluster's own KMS key (`kms.Key`, a default key:
  no KMS instance) by `kms.Ciphertext`, bound to an encryption context. Only the ciphertext goes into the nodes'
  user data; the node RAM role may call `kms:Decrypt` on exactly that key (a custom policy on its ARN), and the
  hook (bootstrap/alicloud_munge_key.sh) decrypts it at boot. The head and the login node carry the same role.
- The GPU nodes' Slurm configuration (nodes.conf): an OOS parameter the head reads every minute (oos:GetParameter on
  exactly it, a custom policy), updated in place: growing or changing the GPU nodes never changes the head's user data.
- Head node: a private `ecs.Instance` in the nodes' vSwitch with its own security group, running slurmctld.
- Rules, inside the cluster only: slurmctld and NFS to the head from the nodes and the login node, slurmd to the
  nodes from the head and the login node, SrunPortRange to the login node from both, SSH to the head from the login.
- Elastic partitions (`slurm.partitions`): the head has a RAM role of its own (the GPU and login nodes keep the
  nodes' role), with the key's decrypt and the configuration's read, and `build_power` gives it a custom policy of
  exactly what RunInstances from the partitions' launch templates and DeleteInstances of this cluster's nodes need
  (layout/alicloud/partitions.py power_document); the OOS parameter, which names the templates, is made then.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pulumi
import pulumi_alicloud as alicloud
import pulumi_random as random

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import DB_HOST_PLACEHOLDER, HEAD_PLACEHOLDER, launch_placeholder
from ..catalog.slurm import cloud_data as slurm_cloud
from ..layout.alicloud import CIPHERTEXT_PLACEHOLDER, AliSlurm
from ..layout.alicloud.accounting import DB_CIPHERTEXT_PLACEHOLDER
from ..layout.alicloud.partitions import launch_target, power_document
from ..resources import fill, invoke_options
from . import cpu_node
from .accounting import Database, build_database, grant_password
from .context import Context
from .identity import CustomGrant, allow_document, custom_grant, ram_policy_name
from .network import ingress_rule

SSH = 22


@dataclass(frozen=True)
class SlurmHead:
    plan: AliSlurm
    instance: alicloud.ecs.Instance
    security_group: alicloud.ecs.SecurityGroup
    key: alicloud.kms.Key
    ciphertext: pulumi.Output[str]
    grant: CustomGrant  # kms:Decrypt on `key` only, for the nodes' role
    conf: alicloud.oos.Parameter | None  # elastic partitions: made by `build_power` once the templates exist
    role: alicloud.ram.Role | None = None  # elastic partitions or accounting: the head's own RAM role
    database: Database | None = None  # slurm.accounting: ApsaraDB RDS for MySQL

    @property
    def address(self) -> pulumi.Output[str]:
        ip: pulumi.Output[str] = self.instance.private_ip
        return ip

    def replacements(self) -> dict[str, pulumi.Input[str]]:
        """What the nodes' and the login node's user data learn at deploy: the head's address, the key's ciphertext."""
        return {HEAD_PLACEHOLDER: self.address, CIPHERTEXT_PLACEHOLDER: self.ciphertext}


def _munge(ctx: Context, plan: AliSlurm) -> tuple[alicloud.kms.Key, pulumi.Output[str], CustomGrant]:
    parent, name, layout, child = ctx.parent, ctx.name, ctx.layout, ctx.child
    spec = layout.spec
    key_bytes = random.RandomBytes(f"{name}-munge-key-bytes", length=plan.key_bytes, opts=child)
    key = alicloud.kms.Key(
        f"{name}-munge-kms",
        description=f"gpu-cluster {spec.name}: encrypts the Slurm MUNGE key",
        key_spec="Aliyun_AES_256",
        key_usage="ENCRYPT/DECRYPT",
        protection_level="SOFTWARE",
        pending_window_in_days=7,
        tags=dict(layout.tags),
        opts=child,
    )
    plaintext: pulumi.Output[str] = pulumi.Output.secret(key_bytes.base64)
    ciphertext = alicloud.kms.Ciphertext(
        f"{name}-munge-key",
        key_id=key.id,
        # kms/ciphertext.py: "The plaintext to be encrypted which must be encoded in Base64"
        plaintext=plaintext,
        encryption_context=dict(plan.encryption_context),
        opts=child,
    )
    account = alicloud.get_caller_identity_output(opts=invoke_options(parent)).account_id
    arn = pulumi.Output.all(account, key.id).apply(lambda a: f"acs:kms:{spec.region}:{a[0]}:key/{a[1]}")
    grant = custom_grant(
        parent,
        (f"{name}-munge-policy", f"{name}-role-munge-key"),
        ram_policy_name(spec, "munge-key-decrypt"),
        f"gpu-cluster {spec.name}: decrypt the Slurm MUNGE key with the cluster's own KMS key only",
        arn.apply(lambda key_arn: allow_document(["kms:Decrypt"], [key_arn])),
        ctx.role_name,
        layout.tags,
    )
    return key, ciphertext.ciphertext_blob, grant


def _compute_conf(
    ctx: Context, plan: AliSlurm, value: pulumi.Input[str] | None = None
) -> tuple[alicloud.oos.Parameter, CustomGrant]:
    """The compute-side configuration's parameter, readable by the role the head carries (`ctx.role_name`);
    `value`: the text with the elastic partitions' launch templates filled in."""
    parent, name, layout = ctx.parent, ctx.name, ctx.layout
    spec = layout.spec
    rule = slurm_cloud("alicloud")["computeConfig"]
    parameter = alicloud.oos.Parameter(
        f"{name}-slurm-compute-conf",
        parameter_name=plan.conf_parameter,
        type="String",
        value=value if value is not None else plan.layout.compute_config,
        description=f"gpu-cluster {spec.name}: the GPU nodes' Slurm configuration (read by the head)",
        tags=dict(layout.tags),
        opts=ctx.child,
    )
    account = alicloud.get_caller_identity_output(opts=invoke_options(parent)).account_id
    arn = account.apply(lambda a: str(rule["arn"]).format(region=spec.region, account=a, name=plan.conf_parameter))
    grant = custom_grant(
        parent,
        (f"{name}-slurm-conf-policy", f"{name}-{'head-' if plan.head_role_name else ''}role-slurm-conf"),
        ram_policy_name(spec, "slurm-conf-read"),
        f"gpu-cluster {spec.name}: read the GPU nodes' Slurm configuration (one OOS parameter)",
        arn.apply(lambda conf_arn: allow_document([str(rule["action"])], [conf_arn])),
        ctx.role_name,
        layout.tags,
    )
    return parameter, grant


def build_head(ctx: Context, mount_source: pulumi.Input[str] | None = None) -> SlurmHead | None:
    layout = ctx.layout
    plan = layout.slurm
    if plan is None:
        return None
    spec = layout.spec
    key, ciphertext, grant = _munge(ctx, plan)
    role: alicloud.ram.Role | None = None
    depends: list[pulumi.Resource] = [grant.attachment]
    if plan.head_role_name is not None:
        # the head launches and deletes nodes, or decrypts the database's password: a role of its own, which the GPU
        # and login nodes do not carry
        role, depends = _head_role(ctx, plan, grant)
        ctx = replace(ctx, role_name=role.role_name)
    conf: alicloud.oos.Parameter | None = None
    if plan.power is None:
        conf, conf_grant = _compute_conf(ctx, plan)
        depends += [conf, conf_grant.attachment]
    # else the configuration names the partitions' templates, made after the head (their user data holds its
    # address): the head's boot waits for the parameter (slurm_head.sh retries the fetch), not the deploy
    database = build_database(ctx)
    if database is not None:
        assert role is not None  # head_role_name is set with accounting
        depends.append(grant_password(ctx, database, role.role_name).attachment)
    node = cpu_node.build(
        ctx,
        "head",
        group_name=f"{spec.name}-slurm-head",
        what="Slurm head node",
        instance_type=plan.head_instance_type,
        image_regex=plan.head_image_regex,
        user_data=fill(
            plan.head_user_data,
            {
                CIPHERTEXT_PLACEHOLDER: ciphertext,
                SOURCE_PLACEHOLDER: mount_source,
                DB_HOST_PLACEHOLDER: database.address if database else None,
                DB_CIPHERTEXT_PLACEHOLDER: database.ciphertext if database else None,
            },
            layout.user_data_b64_for,
        ),
        # private: egress through the NAT (slurm needs egress nat)
        public_bandwidth_mbps=0,
        # /home (the NFS export without storage.shared) and the Slurm state live on this disk
        system_disk_gb=layout.root_gb,
        # the head decrypts the key (and the database's password) at first boot: its role must be allowed first
        # and to read its configuration, which must be there
        depends_on=depends,
    )
    return SlurmHead(plan, node.instance, node.security_group, key, ciphertext, grant, conf, role, database)


_HEAD_ROLE_DOES = {"power": "launches and deletes the GPU nodes", "dbd": "decrypts the accounting database's password"}


def _head_role(ctx: Context, plan: AliSlurm, grant: CustomGrant) -> tuple[alicloud.ram.Role, list[pulumi.Resource]]:
    """The head's own RAM role (elastic partitions or accounting), trusted by ECS as the nodes' is, with the MUNGE key's
    decrypt policy attached too."""
    assert plan.head_role_name is not None
    layout = ctx.layout
    role = alicloud.ram.Role(
        f"{ctx.name}-head-ram-role",
        role_name=plan.head_role_name,
        assume_role_policy_document=layout.identity.assume_role_policy,
        description=f"gpu-cluster {layout.spec.name} Slurm head ({_HEAD_ROLE_DOES['power' if plan.power else 'dbd']})",
        tags=dict(layout.tags),
        opts=ctx.child,
    )
    decrypt = alicloud.ram.RolePolicyAttachment(
        f"{ctx.name}-head-role-munge-key",
        policy_name=grant.policy.policy_name,
        policy_type="Custom",
        role_name=role.role_name,
        opts=ctx.child,
    )
    return role, [grant.attachment, decrypt]


def build_power(
    ctx: Context, head: SlurmHead | None, templates: Mapping[str, alicloud.ecs.EcsLaunchTemplate]
) -> SlurmHead | None:
    """Elastic partitions: the channel's text with each partition's launch template (read by the head's role), and
    the head role's policy: launch only instances tagged as this cluster's, delete only those, find them, and pass
    the nodes' role (catalog/slurm.yaml clouds.alicloud.powerSave)."""
    if head is None or head.role is None or not templates:
        return head
    plan, spec = head.plan, ctx.layout.spec
    cards = {part.name: part.eri_cards for part in ctx.layout.partitions}
    network = ctx.network

    def target(part: str, template: alicloud.ecs.EcsLaunchTemplate) -> pulumi.Output[str]:
        ids = pulumi.Output.all(template.id, network.vswitch.id, *network.node_security_groups)
        return ids.apply(lambda got: launch_target(str(got[0]), str(got[1]), [str(g) for g in got[2:]], cards[part]))

    tokens = {launch_placeholder(part): target(part, template) for part, template in templates.items()}
    head_ctx = replace(ctx, role_name=head.role.role_name)
    conf, _ = _compute_conf(head_ctx, plan, fill(plan.layout.compute_config, tokens))
    account = alicloud.get_caller_identity_output(opts=invoke_options(ctx.parent)).account_id
    document = pulumi.Output.all(account, ctx.role_name).apply(lambda a: power_document(spec, a[0], a[1]))
    custom_grant(
        ctx.parent,
        (f"{ctx.name}-head-slurm-power-policy", f"{ctx.name}-head-role-slurm-power"),
        ram_policy_name(spec, "slurm-power"),
        f"gpu-cluster {spec.name}: the Slurm head launches and deletes this cluster's GPU nodes",
        document,
        head.role.role_name,
        ctx.layout.tags,
    )
    return replace(head, conf=conf)


def connect(ctx: Context, head: SlurmHead | None, login_group: alicloud.ecs.SecurityGroup | None) -> None:
    """The Slurm ports between the head, the GPU nodes and the login node, and nothing from outside."""
    if head is None:
        return
    name, network, child = ctx.name, ctx.network, ctx.child
    ports = head.plan.layout.ports
    ctld, slurmd, srun = (
        f"{ports.slurmctld}/{ports.slurmctld}",
        f"{ports.slurmd}/{ports.slurmd}",
        "{}/{}".format(*ports.srun_range),
    )
    nodes, hsg = network.security_group, head.security_group
    sources = [("nodes", nodes), *([("login", login_group)] if login_group is not None else [])]
    for who, group in sources:
        ingress_rule(
            f"{name}-head-sg-slurmctld-from-{who}",
            hsg.id,
            ctld,
            f"slurmctld from the {who}",
            child,
            source_group_id=group.id,
        )
        if head.plan.layout.home_export:
            nfs = f"{ports.nfs}/{ports.nfs}"
            ingress_rule(
                f"{name}-head-sg-nfs-from-{who}",
                hsg.id,
                nfs,
                f"NFS /home for the {who}",
                child,
                source_group_id=group.id,
            )
    ingress_rule(
        f"{name}-sg-slurmd-from-head",
        nodes.id,
        slurmd,
        "slurmd from the Slurm head node",
        child,
        source_group_id=hsg.id,
    )
    if login_group is not None:
        lsg = login_group
        ingress_rule(
            f"{name}-sg-slurmd-from-login",
            nodes.id,
            slurmd,
            "slurmd from srun on the login node",
            child,
            source_group_id=lsg.id,
        )
        ingress_rule(
            f"{name}-login-sg-srun-from-head",
            lsg.id,
            srun,
            "srun (SrunPortRange) from slurmctld",
            child,
            source_group_id=hsg.id,
        )
        ingress_rule(
            f"{name}-login-sg-srun-from-nodes",
            lsg.id,
            srun,
            "srun (SrunPortRange) from slurmd",
            child,
            source_group_id=nodes.id,
        )
        if head.database is not None:  # sacct and sacctmgr on the login node ask slurmdbd on the head
            dbd = head.database.plan.dbd_port
            ingress_rule(
                f"{name}-head-sg-slurmdbd-from-login",
                hsg.id,
                f"{dbd}/{dbd}",
                "slurmdbd (sacct, sacctmgr) from the login node",
                child,
                source_group_id=lsg.id,
            )
        ingress_rule(
            f"{name}-head-sg-ssh-from-login",
            hsg.id,
            f"{SSH}/{SSH}",
            "SSH from the login node",
            child,
            source_group_id=lsg.id,
        )


def output(head: SlurmHead | None) -> dict[str, Any] | None:
    """The `slurm` stack output: the head and how the key is delivered (never the key)."""
    if head is None:
        return None
    layout = head.plan.layout
    return {
        "head": head.instance.id,
        "headAddress": head.address,
        "partition": layout.partition,
        "gres": layout.node.gres,
        "mungeKey": {"store": "kms-ciphertext", "kmsKey": head.key.id, "grant": "kms:Decrypt on that key only"},
        "sinfo": "sinfo -N -l  # on the login node",
        **({"powerSaving": layout.power_saving} if layout.elastic else {}),
        **({"accounting": head.database.output()} if head.database is not None else {}),
    }
