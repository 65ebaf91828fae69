"""AWS's half of `slurm.accounting`, pure: the RDS for MySQL instance slurmdbd writes to, where it lives and how the
head reads its password (catalog/accounting.yaml clouds.aws).

- The database: RDS for MySQL (a major version, a small burstable class, gp3), private, encrypted (with the
  cluster's KMS key when encryption.key is set), automated backups kept for a week, a parameter group with SchedMD's
  settings; admitted only from the head's security group, on MySQL's port.
- Its subnets: an RDS DB subnet group needs two Availability Zones and the cluster's VPC range is all taken by the node
  and NAT subnets, so two small subnets come from a secondary block the VPC is given (databaseCidr); no existing
  subnet changes.
- The password: random, in a Secrets Manager secret of the cluster's (not RDS's managed master secret, which RDS
  rotates: slurmdbd reads StoragePass only at start, so a rotation would cut accounting off until it restarted); the
  head's own role may read exactly that secret (aws_db_password.sh).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...bootstrap import script
from ...bootstrap.slurm import DbdHook
from ...catalog import accounting as accounting_catalog
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .. import split_cidr

PASSWORD_HOOK = "aws_db_password.sh"


@dataclass(frozen=True)
class AwsAccounting:
    engine: str
    engine_version: str
    parameter_group_family: str
    parameters: Mapping[str, str]  # SchedMD's MySQL settings RDS lets set
    instance_class: str
    storage_type: str
    storage_gb: int
    backup_retention_days: int
    skip_final_snapshot: bool
    deletion_protection: bool
    database: str  # db_name: slurmdbd's StorageLoc
    user: str  # the master user slurmdbd logs in as
    port: int  # MySQL's
    dbd_port: int  # slurmdbd's, for sacct on the login node
    secret_name: str  # the password's Secrets Manager secret (the hook reads it by name)
    secret_action: str
    password_length: int
    database_cidr: str  # the VPC's secondary block
    subnet_cidrs: tuple[str, str]  # one subnet in each of two zones

    @property
    def hook(self) -> DbdHook:
        return DbdHook(script(PASSWORD_HOOK), {"DB_PASSWORD_SECRET_ID": self.secret_name})


def secret_name(spec: ClusterSpec) -> str:
    """One name per stack and cluster, beside the MUNGE key's."""
    return f"gpu-cluster/{spec.stack}/{spec.name}/slurmdbd-password"


def plan(spec: ClusterSpec) -> AwsAccounting | None:
    """None unless slurm.accounting (the spec refused it on a cloud that does not build it)."""
    if spec.slurm is None or not spec.slurm.accounting:
        return None
    if spec.network.existing is not None:
        raise ConfigError(
            f"{CLUSTER_KEY}.slurm.accounting",
            "true with network.existing: the database's two subnets come from a secondary block the cluster adds to "
            "its own VPC (an RDS subnet group needs two Availability Zones), which it does not do to a VPC it joins; "
            "use accounting false or a network the cluster creates",
        )
    offer = accounting_catalog.cloud_offer("aws")
    dbd = accounting_catalog.data()["slurmdbd"]
    first, second = split_cidr(str(offer["databaseCidr"]), int(offer["databaseSubnetBits"]), 2)
    return AwsAccounting(
        engine=str(offer["engine"]),
        engine_version=str(offer["engineVersion"]),
        parameter_group_family=str(offer["parameterGroupFamily"]),
        parameters={str(k): str(v) for k, v in accounting_catalog.data()["mysqlSettings"].items()},
        instance_class=str(offer["instanceClass"]),
        storage_type=str(offer["storageType"]),
        storage_gb=int(offer["storageGb"]),
        backup_retention_days=int(offer["backupRetentionDays"]),
        skip_final_snapshot=bool(offer["skipFinalSnapshot"]),
        deletion_protection=bool(offer["deletionProtection"]),
        database=str(dbd["database"]),
        user=str(dbd["user"]),
        port=int(dbd["storagePort"]),
        dbd_port=int(dbd["port"]),
        secret_name=secret_name(spec),
        secret_action=str(offer["secretAction"]),
        password_length=int(dbd["passwordLength"]),
        database_cidr=str(offer["databaseCidr"]),
        subnet_cidrs=(first, second),
    )
