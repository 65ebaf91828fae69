"""Alibaba Cloud's half of `slurm.accounting`, pure: the ApsaraDB RDS for MySQL instance slurmdbd writes to, where it
lives and how the head reads its password (catalog/accounting.yaml clouds.alicloud).

- The database: RDS for MySQL 8.0, Basic Edition (one node, in the cluster's zone and vSwitch), the smallest 2 GB
  general-purpose class, ESSD, daily backups kept a week, SchedMD's settings as instance parameters; no public
  connection is made, and its whitelist (security_ips) is the cluster's vSwitch range only.
- The password: random, encrypted by KMS (a `kms.Ciphertext` bound to an encryption context, as the MUNGE key) with
  the cluster's key (encryption.key) or a KMS default key of its own, and only the head's own RAM role may decrypt
  with that key (alicloud_db_password.sh). Not a KMS secret: those need a KMS instance (catalog/accounting.yaml).
- Its disk: RDS encrypts a cloud disk with a customer key only through the account's RDS encryption service role and a
  key tagged for it, which is not built: with encryption.key the plan warns that the database's disk is not on the
  cluster's key (its password is).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ...bootstrap import script
from ...bootstrap.slurm import DbdHook
from ...catalog import accounting as accounting_catalog
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from .network import vswitch_cidrs

PASSWORD_HOOK = "alicloud_db_password.sh"
DB_CIPHERTEXT_PLACEHOLDER = "@@GPU_CLUSTER_DB_PASSWORD_CIPHERTEXT@@"  # the password's KMS ciphertext, known at deploy


@dataclass(frozen=True)
class AliAccounting:
    engine: str
    engine_version: str
    category: str
    instance_class: str
    storage_type: str
    storage_gb: int
    backup_retention_days: int
    backup_periods: tuple[str, ...]
    charge_type: str
    deletion_protection: bool
    parameters: Mapping[str, str]  # SchedMD's MySQL settings, as the instance's parameters
    database: str  # slurmdbd's StorageLoc
    user: str  # the account slurmdbd logs in as
    account_type: str
    privilege: str
    port: int  # MySQL's
    dbd_port: int  # slurmdbd's, for sacct on the login node
    password_length: int
    password_min_each: int  # upper, lower and digits each (RDS wants three kinds)
    security_ips: tuple[str, ...]  # the whitelist: the cluster's vSwitch range
    secret_action: str
    key_spec: str  # the password's own KMS key, without encryption.key
    own_key: bool  # no cluster key: the password gets a KMS default key of its own
    encryption_context: Mapping[str, str]
    hook_env: Mapping[str, str]
    notes: tuple[str, ...]  # warned in the plan

    @property
    def hook(self) -> DbdHook:
        return DbdHook(script(PASSWORD_HOOK), self.hook_env)


def password_context(spec: ClusterSpec) -> dict[str, str]:
    """Bound to the ciphertext (KMS Encrypt EncryptionContext): Decrypt succeeds only with the same context."""
    return {"gpu-cluster": spec.name, "stack": spec.stack, "purpose": "slurmdbd-password"}


def plan(spec: ClusterSpec, kms_endpoint: str) -> AliAccounting | None:
    """None unless slurm.accounting (the spec refused it on a cloud that does not build it). `kms_endpoint`: the KMS
    VPC domain the MUNGE key hook calls too."""
    if spec.slurm is None or not spec.slurm.accounting:
        return None
    if spec.network.existing is not None:
        raise ConfigError(
            f"{CLUSTER_KEY}.slurm.accounting",
            "true with network.existing on alicloud: the database's whitelist is the vSwitch range the cluster "
            "creates, which it does not know for a vSwitch it joins; use accounting false or a network the cluster "
            "creates",
        )
    offer = accounting_catalog.cloud_offer("alicloud")
    dbd = accounting_catalog.data()["slurmdbd"]
    context = password_context(spec)
    nodes_cidr, _ = vswitch_cidrs(spec.network.cidr)  # the head and the GPU nodes are in the first
    cluster_key = spec.encryption_key != "provider"
    return AliAccounting(
        engine=str(offer["engine"]),
        engine_version=str(offer["engineVersion"]),
        category=str(offer["category"]),
        instance_class=str(offer["instanceClass"]),
        storage_type=str(offer["storageType"]),
        storage_gb=int(offer["storageGb"]),
        backup_retention_days=int(offer["backupRetentionDays"]),
        backup_periods=tuple(str(d) for d in offer["backupPeriods"]),
        charge_type=str(offer["chargeType"]),
        deletion_protection=bool(offer["deletionProtection"]),
        parameters={str(k): str(v) for k, v in accounting_catalog.data()["mysqlSettings"].items()},
        database=str(dbd["database"]),
        user=str(dbd["user"]),
        account_type=str(offer["accountType"]),
        privilege=str(offer["privilege"]),
        port=int(dbd["storagePort"]),
        dbd_port=int(dbd["port"]),
        password_length=int(dbd["passwordLength"]),
        password_min_each=int(offer["passwordMinEach"]),
        security_ips=(nodes_cidr,),
        secret_action=str(offer["secretAction"]),
        key_spec=str(offer["passwordKeySpec"]),
        own_key=not cluster_key,
        encryption_context=context,
        hook_env={
            "MUNGE_CIPHERTEXT": DB_CIPHERTEXT_PLACEHOLDER,  # the name the decrypting hook reads
            "KMS_ENDPOINT": kms_endpoint,
            "ENCRYPTION_CONTEXT": json.dumps(context, sort_keys=True, separators=(",", ":")),
        },
        notes=(one_line(str(offer["diskEncryptionNote"])),) if cluster_key else (),
    )
