"""`slurm.accounting` on AWS: the RDS for MySQL instance slurmdbd writes to (decided in layout/aws/accounting.py).

- Network: a secondary IPv4 block on the cluster's VPC and two small subnets in it, in the head's zone and another one
  (an RDS DB subnet group needs two zones); the existing subnets are untouched. The database is not publicly
  accessible, and its security group admits MySQL's port from the head's security group only.
- The password: `random.RandomPassword` (a secret output) in a Secrets Manager secret of the cluster's, encrypted with
  the cluster's key when encryption.key is set; the head's own role may read exactly that secret.
- The instance: storage encrypted (the cluster's key, or RDS's default key), automated backups, a parameter group
  with SchedMD's settings. `pulumi destroy` deletes it without a final snapshot (catalog/accounting.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_random as random

from ..layout.aws.accounting import AwsAccounting
from .naming import Context
from .network import Network, other_zone


@dataclass(frozen=True)
class Database:
    plan: AwsAccounting
    instance: aws.rds.Instance
    security_group: aws.ec2.SecurityGroup
    secret: aws.secretsmanager.Secret
    secret_version: aws.secretsmanager.SecretVersion
    subnets: tuple[aws.ec2.Subnet, aws.ec2.Subnet]

    @property
    def address(self) -> pulumi.Output[str]:
        address: pulumi.Output[str] = self.instance.address
        return address

    def output(self) -> dict[str, object]:
        return {
            "service": "Amazon RDS for MySQL",
            "instance": self.instance.identifier,
            "address": self.instance.address,
            "passwordSecret": self.secret.arn,
            "check": "sacct -a  # jobs of every user, from slurmdbd",
        }


def _subnets(ctx: Context, net: Network, plan: AwsAccounting) -> tuple[aws.ec2.Subnet, aws.ec2.Subnet]:
    assert net.zone is not None  # network.existing: refused by the layout
    block = aws.ec2.VpcIpv4CidrBlockAssociation(
        f"{ctx.name}-db-cidr", vpc_id=net.vpc.id, cidr_block=plan.database_cidr, opts=ctx.child
    )
    other = other_zone(ctx, net, "an RDS DB subnet group")
    # "another available zone" and a defaulted first zone may answer differently later: the first deploy's stay
    pinned = pulumi.ResourceOptions.merge(
        ctx.child, pulumi.ResourceOptions(depends_on=[block], ignore_changes=["availabilityZone"])
    )
    subnets = tuple(
        aws.ec2.Subnet(
            f"{ctx.name}-db-{i}",
            vpc_id=net.vpc.id,
            cidr_block=cidr,
            availability_zone=zone,
            map_public_ip_on_launch=False,
            tags=ctx.tagged(f"db-{i}"),
            opts=pinned,
        )
        for i, (cidr, zone) in enumerate(zip(plan.subnet_cidrs, (net.zone, other), strict=True))
    )
    return subnets[0], subnets[1]


def build_database(ctx: Context, net: Network, head_group: aws.ec2.SecurityGroup) -> Database | None:
    """The database, its network and its password (the head's role is granted it by components/aws/slurm.py); None
    unless slurm.accounting."""
    slurm = ctx.layout.slurm
    plan = slurm.accounting if slurm is not None else None
    if plan is None:
        return None
    name, child = ctx.name, ctx.child
    spec = ctx.layout.spec
    subnets = _subnets(ctx, net, plan)
    group = aws.rds.SubnetGroup(
        f"{name}-db-subnets",
        subnet_ids=[s.id for s in subnets],
        description=f"gpu-cluster {spec.name}: the Slurm accounting database (two zones)",
        tags=ctx.tagged("db-subnets"),
        opts=child,
    )
    sg = aws.ec2.SecurityGroup(
        f"{name}-db-sg",
        vpc_id=net.vpc.id,
        description=f"gpu-cluster {spec.name} Slurm accounting database",
        tags=ctx.tagged("db-sg"),
        opts=child,
    )
    aws.vpc.SecurityGroupIngressRule(
        f"{name}-db-sg-mysql-from-head",
        security_group_id=sg.id,
        referenced_security_group_id=head_group.id,
        ip_protocol="tcp",
        from_port=plan.port,
        to_port=plan.port,
        description="MySQL from slurmdbd on the Slurm head node",
        opts=child,
    )
    parameters = aws.rds.ParameterGroup(
        f"{name}-db-params",
        family=plan.parameter_group_family,
        description=f"gpu-cluster {spec.name}: SchedMD's MySQL settings for slurmdbd",
        parameters=[aws.rds.ParameterGroupParameterArgs(name=k, value=v) for k, v in plan.parameters.items()],
        tags=ctx.tagged("db-params"),
        opts=child,
    )
    password = random.RandomPassword(
        f"{name}-db-password-value", length=plan.password_length, special=False, opts=child
    )
    secret = aws.secretsmanager.Secret(
        f"{name}-db-password",
        name=plan.secret_name,
        description=f"gpu-cluster {spec.name}: the Slurm accounting database's password (slurmdbd)",
        recovery_window_in_days=0,  # as the MUNGE key's: the name can be created again with the cluster
        kms_key_id=ctx.kms_key,
        tags=ctx.tagged("db-password"),
        opts=child,
    )
    version = aws.secretsmanager.SecretVersion(
        f"{name}-db-password-version", secret_id=secret.id, secret_string=password.result, opts=child
    )
    instance = aws.rds.Instance(
        f"{name}-db",
        engine=plan.engine,
        engine_version=plan.engine_version,
        auto_minor_version_upgrade=True,  # engine_version is a major version
        instance_class=plan.instance_class,
        allocated_storage=plan.storage_gb,
        storage_type=plan.storage_type,
        storage_encrypted=True,
        kms_key_id=ctx.kms_key,  # None: RDS's default key
        db_name=plan.database,
        username=plan.user,
        password=password.result,
        port=plan.port,
        db_subnet_group_name=group.name,
        vpc_security_group_ids=[sg.id],
        parameter_group_name=parameters.name,
        publicly_accessible=False,
        multi_az=False,
        backup_retention_period=plan.backup_retention_days,
        copy_tags_to_snapshot=True,
        skip_final_snapshot=plan.skip_final_snapshot,
        deletion_protection=plan.deletion_protection,
        tags=ctx.tagged("db"),
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[version])),
    )
    return Database(plan, instance, sg, secret, version, subnets)
