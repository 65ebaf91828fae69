"""`scheduler: slurm` on AWS: the MUNGE key's secret, the head node and the firewall between head, nodes and login.

- MUNGE key: `random.RandomBytes` (a secret output) stored as a Secrets Manager secret (base64); the node role may
  call `secretsmanager:GetSecretValue` on exactly that secret's ARN (an inline policy). The head and the login node
  carry the node instance profile, so one grant covers all three; no key is in any user data, input or output.
- The GPU nodes' Slurm configuration (nodes.conf: MaxNodeCount, the partition): an SSM parameter the head reads
  every minute (ssm:GetParameter on exactly its ARN), updated in place: growing or changing the GPU nodes changes it
  and never the head's user data (which would stop and start the head).
- Head node: a private instance in the node subnet running slurmctld (layout.aws.slurm), its own security group.
- Rules, inside the cluster only: slurmctld 6817 and NFS 2049 to the head from the nodes and the login node,
  slurmd 6818 to the nodes from the head and the login node, SrunPortRange to the login node from both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_random as random

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import DB_HOST_PLACEHOLDER, HEAD_PLACEHOLDER, launch_placeholder
from ..catalog.slurm import cloud_data
from ..layout.aws import AwsSlurm
from ..layout.aws.monitoring import TOPIC_PLACEHOLDER, WORKSPACE_PLACEHOLDER
from ..resources import fill, invoke_options
from .access import SSH_PORT, LoginNode
from .accounting import Database, build_database
from .identity import Identity, build_identity
from .naming import Context
from .network import Network


@dataclass(frozen=True)
class SlurmHead:
    plan: AwsSlurm
    instance: aws.ec2.Instance
    security_group: aws.ec2.SecurityGroup
    secret: aws.secretsmanager.Secret
    policy: aws.iam.RolePolicy | None
    conf: aws.ssm.Parameter | None  # elastic partitions: made by `build_power` once the templates exist
    identity: Identity  # the node identity, or the head's own (elastic partitions, accounting: `head_role_of_its_own`)
    database: Database | None = None  # slurm.accounting: RDS for MySQL

    @property
    def address(self) -> pulumi.Output[str]:
        address: pulumi.Output[str] = self.instance.private_ip
        return address


def _munge_secret(ctx: Context, plan: AwsSlurm) -> tuple[aws.secretsmanager.Secret, aws.secretsmanager.SecretVersion]:
    key = random.RandomBytes(f"{ctx.name}-munge-key-bytes", length=plan.key_bytes, opts=ctx.child)
    secret = aws.secretsmanager.Secret(
        f"{ctx.name}-munge-key",
        name=plan.secret_name,
        description=f"gpu-cluster {ctx.layout.spec.name}: the Slurm MUNGE key (base64)",
        recovery_window_in_days=plan.recovery_window_days,
        kms_key_id=ctx.kms_key,  # None: the account's aws/secretsmanager key, as before
        tags=ctx.tagged("munge-key"),
        opts=ctx.child,
    )
    version = aws.secretsmanager.SecretVersion(
        f"{ctx.name}-munge-key-version",
        secret_id=secret.id,
        secret_string=key.base64,  # a secret output of RandomBytes (additional_secret_outputs)
        opts=ctx.child,
    )
    return secret, version


def _key_policy(
    ctx: Context, plan: AwsSlurm, identity: Identity, secret: aws.secretsmanager.Secret
) -> aws.iam.RolePolicy | None:
    if identity.role is None:  # identity.existing: refused by the layout
        return None
    return _grant(ctx, identity.role, "munge-key", "ReadOwnMungeKey", plan.secret_action, secret.arn)


def _grant(
    ctx: Context,
    role: aws.iam.Role,
    suffix: str,
    sid: str,
    action: str,
    arn: pulumi.Output[str],
    label: str = "node-role",
) -> aws.iam.RolePolicy:
    """The role (the nodes', or the head's: `label`) may do `action` on exactly `arn` (an inline policy on it)."""
    statement = {"Sid": sid, "Effect": "Allow", "Action": action}
    return aws.iam.RolePolicy(
        f"{ctx.name}-{label}-{suffix}",
        role=role.name,
        policy=arn.apply(
            lambda resource: json.dumps({"Version": "2012-10-17", "Statement": [{**statement, "Resource": resource}]})
        ),
        opts=ctx.child,
    )


def _compute_conf(
    ctx: Context, plan: AwsSlurm, identity: Identity, value: pulumi.Input[str] | None = None, label: str = "node-role"
) -> tuple[aws.ssm.Parameter, aws.iam.RolePolicy | None]:
    """The compute-side configuration's parameter, readable by the head's role (`value`: the text with the elastic
    partitions' launch templates filled in)."""
    parameter = aws.ssm.Parameter(
        f"{ctx.name}-slurm-compute-conf",
        name=plan.conf_parameter,
        type="String",
        tier="Standard",
        insecure_value=value if value is not None else plan.layout.compute_config,
        description=f"gpu-cluster {ctx.layout.spec.name}: the GPU nodes' Slurm configuration (read by the head)",
        tags=ctx.tagged("slurm-compute-conf"),
        opts=ctx.child,
    )
    if identity.role is None:  # identity.existing: refused by the layout
        return parameter, None
    return parameter, _grant(
        ctx, identity.role, "slurm-compute-conf", "ReadOwnSlurmConf", plan.conf_action, parameter.arn, label
    )


def build_head(
    ctx: Context,
    net: Network,
    identity: Identity,
    key_pair: aws.ec2.KeyPair | None,
    mount_source: pulumi.Input[str] | None = None,
) -> SlurmHead | None:
    plan = ctx.layout.slurm
    if plan is None:
        return None
    name, child = ctx.name, ctx.child
    elastic = bool(plan.layout.elastic)
    secret, version = _munge_secret(ctx, plan)
    policy = _key_policy(ctx, plan, identity, secret)
    if plan.head_role_of_its_own:
        # the head launches and deletes nodes, or reads the database's password: a role of its own, which the GPU
        # nodes and the login node do not carry
        identity = build_identity(replace(ctx, name=f"{ctx.name}-head"))
        if identity.role is not None:
            _grant(ctx, identity.role, "munge-key", "ReadOwnMungeKey", plan.secret_action, secret.arn, "head-role")
    if elastic:
        # nodes.conf names the partitions' templates, made after the head (their user data holds its address): the
        # head's boot waits for the parameter (slurm_head.sh retries the fetch), not the deploy
        conf, conf_policy = None, None
    elif plan.head_role_of_its_own:
        conf, conf_policy = _compute_conf(ctx, plan, identity, label="head-role")
    else:
        conf, conf_policy = _compute_conf(ctx, plan, identity)
    sg = aws.ec2.SecurityGroup(
        f"{name}-head-sg",
        vpc_id=net.vpc.id,
        description=f"gpu-cluster {ctx.layout.spec.name} Slurm head node",
        tags=ctx.tagged("head-sg"),
        opts=child,
    )
    # out: packages (Slurm, MUNGE, NFS) through the NAT; the layout refuses egress none with slurm
    aws.vpc.SecurityGroupEgressRule(
        f"{name}-head-sg-out",
        security_group_id=sg.id,
        cidr_ipv4="0.0.0.0/0",
        ip_protocol="-1",
        description="outbound from the head node",
        opts=child,
    )
    database = build_database(ctx, net, sg)
    db_policy = None
    if database is not None and identity.role is not None:
        db_policy = _grant(
            ctx, identity.role, "db-password", "ReadOwnDbPassword", database.plan.secret_action, database.secret.arn,
            "head-role",
        )  # fmt: skip
    image = aws.ssm.get_parameter_output(name=plan.head_image_parameter, opts=invoke_options(ctx.parent)).value
    depends: list[pulumi.Resource] = [version, *(r for r in (conf, policy, conf_policy, db_policy) if r)]
    instance = aws.ec2.Instance(
        f"{name}-head",
        ami=image,
        instance_type=plan.head_instance_type,
        subnet_id=net.subnet.id,
        vpc_security_group_ids=[sg.id],
        associate_public_ip_address=False,
        iam_instance_profile=identity.profile_name,
        key_name=key_pair.key_name if key_pair else None,
        metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_endpoint="enabled", http_tokens="required"),
        # /home (the NFS export without storage.shared) and the Slurm state live on this disk
        root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
            volume_type="gp3", volume_size=ctx.layout.root_gb, encrypted=True, kms_key_id=ctx.kms_key
        ),
        user_data_base64=fill(
            plan.head_user_data,
            {SOURCE_PLACEHOLDER: mount_source, DB_HOST_PLACEHOLDER: database.address if database else None},
            ctx.layout.user_data_b64_for,
        ),
        tags=ctx.tagged("head"),
        # the SSM parameter follows Canonical's newest image: a new AMI id must not replace the head (a new
        # address for every node, and without storage.shared the queue and /home); patch it in place instead
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=depends, ignore_changes=["ami"])),
    )
    return SlurmHead(plan, instance, sg, secret, policy, conf, identity, database)


def build_power(
    ctx: Context, head: SlurmHead | None, templates: Mapping[str, aws.ec2.LaunchTemplate], nodes: Identity
) -> SlurmHead | None:
    """Elastic partitions: the channel's text with each partition's launch template, and the head role's right to
    launch from exactly those templates and to terminate exactly this cluster's instances (catalog/slurm.yaml
    clouds.aws.powerSave)."""
    if head is None or not templates:
        return head
    plan = head.plan
    tokens = {launch_placeholder(name): lt.id for name, lt in templates.items()}
    conf, _ = _compute_conf(ctx, plan, head.identity, fill(plan.layout.compute_config, tokens), "head-role")
    role = head.identity.role
    if role is not None:
        power = cloud_data("aws")["powerSave"]
        arns = pulumi.Output.all(*(lt.arn for lt in templates.values()))
        node_role = nodes.role.arn if nodes.role is not None else "*"
        policy = pulumi.Output.all(arns, node_role).apply(
            lambda args: json.dumps(power_policy(list(args[0]), ctx.layout.spec.name, power["clusterTag"], args[1]))
        )
        aws.iam.RolePolicy(f"{ctx.name}-head-role-slurm-power", role=role.name, policy=policy, opts=ctx.child)
    return replace(head, conf=conf)


def power_policy(template_arns: list[str], cluster: str, cluster_tag: str, node_role: str) -> dict[str, Any]:
    """What the head's resume and suspend programs may do (Service Authorization Reference, Amazon EC2)."""
    launch = {"ArnLike": {"ec2:LaunchTemplate": template_arns}}
    return {
        "Version": "2012-10-17",
        "Statement": [
            # RunInstances touches many resource types; every one is allowed only with the cluster's templates
            {
                "Sid": "LaunchFromOwnTemplates",
                "Effect": "Allow",
                "Action": "ec2:RunInstances",
                "Resource": "*",
                "Condition": launch,
            },
            {
                "Sid": "TagOnLaunch",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": "*",
                "Condition": {"StringEquals": {"ec2:CreateAction": "RunInstances"}},
            },
            {
                "Sid": "TerminateOwnNodes",
                "Effect": "Allow",
                "Action": "ec2:TerminateInstances",
                "Resource": "arn:aws:ec2:*:*:instance/*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/{cluster_tag}": cluster}},
            },
            # no resource-level permissions: Describe* takes only "*"
            {"Sid": "FindOwnNodes", "Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"},
            {
                "Sid": "PassNodeRole",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": node_role,
                "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
            },
        ],
    }


def login_user_data(
    ctx: Context,
    head: SlurmHead | None,
    mount_source: pulumi.Input[str] | None = None,
    topic_arn: pulumi.Input[str] | None = None,
    workspace: pulumi.Input[str] | None = None,
) -> pulumi.Input[str] | None:
    """`topic_arn`: monitoring.notify's SNS topic, the login node's Alertmanager receiver; `workspace`: managed, the
    AMP workspace's endpoint the login node's Prometheus agent writes to and its Grafana reads."""
    if head is None:
        return None
    return fill(
        head.plan.login_user_data,
        {
            HEAD_PLACEHOLDER: head.address,
            SOURCE_PLACEHOLDER: mount_source,
            TOPIC_PLACEHOLDER: topic_arn,
            WORKSPACE_PLACEHOLDER: workspace,
        },
        ctx.layout.user_data_b64_for,
    )


def _rule(
    ctx: Context,
    suffix: str,
    to: aws.ec2.SecurityGroup,
    source: aws.ec2.SecurityGroup,
    ports: tuple[int, int],
    description: str,
) -> aws.vpc.SecurityGroupIngressRule:
    return aws.vpc.SecurityGroupIngressRule(
        f"{ctx.name}-{suffix}",
        security_group_id=to.id,
        referenced_security_group_id=source.id,
        ip_protocol="tcp",
        from_port=ports[0],
        to_port=ports[1],
        description=description,
        opts=ctx.child,
    )


def connect(ctx: Context, net: Network, head: SlurmHead | None, login: LoginNode | None) -> None:
    """The Slurm ports between the head, the GPU nodes and the login node, and nothing from outside."""
    if head is None:
        return
    ports = head.plan.layout.ports
    ctld, slurmd = (ports.slurmctld, ports.slurmctld), (ports.slurmd, ports.slurmd)
    nodes, hsg = net.security_group, head.security_group
    sources = [("nodes", nodes), *([("login", login.security_group)] if login else [])]
    for who, group in sources:
        _rule(ctx, f"head-sg-slurmctld-from-{who}", hsg, group, ctld, f"slurmctld from the {who}")
        if head.plan.layout.home_export:
            _rule(ctx, f"head-sg-nfs-from-{who}", hsg, group, (ports.nfs, ports.nfs), f"NFS /home for the {who}")
    _rule(ctx, "sg-slurmd-from-head", nodes, hsg, slurmd, "slurmd from the Slurm head node")
    if login is not None:
        lsg = login.security_group
        _rule(ctx, "sg-slurmd-from-login", nodes, lsg, slurmd, "slurmd from srun on the login node")
        _rule(ctx, "login-sg-srun-from-head", lsg, hsg, ports.srun_range, "srun (SrunPortRange) from slurmctld")
        _rule(ctx, "login-sg-srun-from-nodes", lsg, nodes, ports.srun_range, "srun (SrunPortRange) from slurmd")
        _rule(ctx, "head-sg-ssh-from-login", hsg, lsg, (SSH_PORT, SSH_PORT), "SSH from the login node")
        if head.database is not None:  # sacct and sacctmgr on the login node ask slurmdbd on the head
            dbd = (head.database.plan.dbd_port, head.database.plan.dbd_port)
            _rule(ctx, "head-sg-slurmdbd-from-login", hsg, lsg, dbd, "slurmdbd (sacct) from the login node")


def slurm_output(head: SlurmHead | None, access: dict[str, Any]) -> dict[str, Any] | None:
    """`slurm`: where the controller runs, how to submit and check, and which secret holds the key (not the key)."""
    if head is None:
        return None
    layout = head.plan.layout
    return {
        "headNode": {"instanceId": head.instance.id, "privateIp": head.instance.private_ip},
        "partition": layout.partition,
        "slurmVersion": layout.packages.version,
        "login": access["command"],
        "check": "sinfo -N -l",
        "mungeKeySecret": head.secret.arn,
        "computeConfig": head.conf.name if head.conf is not None else None,
        "powerSaving": layout.power_saving,
        **({"accounting": head.database.output()} if head.database is not None else {}),
    }
