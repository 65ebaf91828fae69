"""`slurm.accounting` on Alibaba Cloud: the ApsaraDB RDS for MySQL instance slurmdbd writes to (decided in
layout/alicloud/accounting.py).

- The instance: MySQL 8.0 Basic Edition, pay-as-you-go, in the cluster's vSwitch and zone, its whitelist the vSwitch
  range only (no public connection string is allocated: that is a resource of its own, `rds.Connection`, not built),
  SchedMD's settings as its parameters, daily backups kept a week (`rds.BackupPolicy`); its database and a standard
  account with read and write on it.
- The password: `random.RandomPassword` (a secret output) encrypted by KMS (`kms.Ciphertext`, bound to an encryption
  context) with the cluster's key or a KMS default key of the password's own; only the ciphertext reaches the head's
  user data, and only the head's own RAM role may call kms:Decrypt on that key (a custom policy on its ARN).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud
import pulumi_random as random

from ..layout.alicloud.accounting import AliAccounting
from ..resources import invoke_options
from .context import Context
from .identity import CustomGrant, allow_document, custom_grant, ram_policy_name


@dataclass(frozen=True)
class Database:
    plan: AliAccounting
    instance: alicloud.rds.Instance
    ciphertext: pulumi.Output[str]  # the password's, for the head's user data
    key_id: pulumi.Input[str]  # the KMS key the password is encrypted with
    own_key: alicloud.kms.Key | None  # no encryption.key: the password's own

    @property
    def address(self) -> pulumi.Output[str]:
        """The instance's intranet connection string (a host name that resolves in the VPC)."""
        address: pulumi.Output[str] = self.instance.connection_string
        return address

    def output(self) -> dict[str, object]:
        return {
            "service": "ApsaraDB RDS for MySQL",
            "instance": self.instance.id,
            "address": self.instance.connection_string,
            "password": {
                "store": "kms-ciphertext",
                "kmsKey": self.key_id,
                "grant": "kms:Decrypt, the head's role only",
            },
            "check": "sacct -a  # jobs of every user, from slurmdbd",
        }


def _base64(text: str) -> str:
    # kms/ciphertext.py plaintext: "The plaintext to be encrypted which must be encoded in Base64"
    return base64.b64encode(text.encode()).decode()


def build_database(ctx: Context) -> Database | None:
    """The database and the password's ciphertext; None unless slurm.accounting. The head's role is granted the
    key's decrypt by `grant_password`, once the role exists."""
    slurm = ctx.layout.slurm
    plan = slurm.accounting if slurm is not None else None
    if plan is None:
        return None
    name, layout, child, network = ctx.name, ctx.layout, ctx.child, ctx.network
    spec = layout.spec
    tags = dict(layout.tags)
    password = random.RandomPassword(
        f"{name}-db-password-value",
        length=plan.password_length,
        special=False,
        min_upper=plan.password_min_each,
        min_lower=plan.password_min_each,
        min_numeric=plan.password_min_each,
        opts=child,
    )
    own_key: alicloud.kms.Key | None = None
    key_id: pulumi.Input[str]
    if ctx.kms_key is not None:
        key_id = ctx.kms_key
    else:
        own_key = alicloud.kms.Key(
            f"{name}-db-password-kms",
            description=f"gpu-cluster {spec.name}: encrypts the Slurm accounting database's password",
            key_spec=plan.key_spec,
            key_usage="ENCRYPT/DECRYPT",
            protection_level="SOFTWARE",
            pending_window_in_days=7,
            tags=dict(layout.tags),
            opts=child,
        )
        key_id = own_key.id
    secret: pulumi.Output[str] = pulumi.Output.secret(password.result)
    plaintext = secret.apply(_base64)
    ciphertext = alicloud.kms.Ciphertext(
        f"{name}-db-password",
        key_id=key_id,
        plaintext=plaintext,
        encryption_context=dict(plan.encryption_context),
        opts=child,
    )
    instance = alicloud.rds.Instance(
        f"{name}-db",
        engine=plan.engine,
        engine_version=plan.engine_version,
        category=plan.category,
        instance_type=plan.instance_class,
        instance_storage=plan.storage_gb,
        db_instance_storage_type=plan.storage_type,
        instance_charge_type=plan.charge_type,
        instance_name=f"{spec.name}-{spec.stack}-slurmdbd",
        vswitch_id=network.vswitch.id,
        zone_id=network.zone,
        security_ips=list(plan.security_ips),
        parameters=[alicloud.rds.InstanceParameterArgs(name=k, value=v) for k, v in plan.parameters.items()],
        deletion_protection=plan.deletion_protection,
        tags=tags,
        opts=child,
    )
    alicloud.rds.BackupPolicy(
        f"{name}-db-backup",
        instance_id=instance.id,
        backup_retention_period=plan.backup_retention_days,
        preferred_backup_periods=list(plan.backup_periods),
        opts=child,
    )
    database = alicloud.rds.Database(
        f"{name}-db-database",
        instance_id=instance.id,
        data_base_name=plan.database,
        description=f"gpu-cluster {spec.name}: slurmdbd",
        opts=child,
    )
    account = alicloud.rds.Account(
        f"{name}-db-user",
        db_instance_id=instance.id,
        account_name=plan.user,
        account_password=password.result,
        account_type=plan.account_type,
        account_description=f"gpu-cluster {spec.name}: slurmdbd",
        opts=child,
    )
    alicloud.rds.AccountPrivilege(
        f"{name}-db-privilege",
        instance_id=instance.id,
        account_name=account.account_name,
        db_names=[database.data_base_name],
        privilege=plan.privilege,
        opts=child,
    )
    return Database(plan, instance, ciphertext.ciphertext_blob, key_id, own_key)


def grant_password(ctx: Context, database: Database, role_name: pulumi.Input[str]) -> CustomGrant:
    """kms:Decrypt on exactly the password's key, for the head's own role (`role_name`)."""
    spec = ctx.layout.spec
    account = alicloud.get_caller_identity_output(opts=invoke_options(ctx.parent)).account_id
    arn = pulumi.Output.all(account, database.key_id).apply(lambda a: f"acs:kms:{spec.region}:{a[0]}:key/{a[1]}")
    return custom_grant(
        ctx.parent,
        (f"{ctx.name}-db-password-policy", f"{ctx.name}-head-role-db-password"),
        ram_policy_name(spec, "slurmdbd-password-decrypt"),
        f"gpu-cluster {spec.name}: the Slurm head decrypts the accounting database's password",
        arn.apply(lambda key_arn: allow_document([database.plan.secret_action], [key_arn])),
        role_name,
        ctx.layout.tags,
    )
