"""Azure's half of `slurm.accounting`, pure: the Azure Database for MySQL Flexible Server slurmdbd writes to, where
it lives and how the head reads its password (catalog/accounting.yaml clouds.azure).

- The server: MySQL 8.0, Burstable Standard_B1ms, 20 GiB that grow, automated backups kept a week in the region, no
  high availability; SchedMD's settings as server parameters; TLS as the service requires it (slurmdbd's
  StorageParameters name the system CA bundle).
- Private access only: a /28 subnet delegated to Microsoft.DBforMySQL/flexibleServers at a fixed place of the VNet's
  free half (the third /26 block: no existing subnet moves), and a private DNS zone
  `<cluster>.private.mysql.database.azure.com` linked to the VNet, where the server's name resolves.
- The password: random, a secret in the cluster's Slurm Key Vault beside the MUNGE key; the head carries an identity of
  its own, which alone may read it (azure_db_password.sh, the MUNGE key's read pointed at this secret).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ...bootstrap import script
from ...bootstrap.slurm import DbdHook
from ...catalog import accounting as accounting_catalog
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .access import ACCESS_BLOCK_PREFIX

PASSWORD_HOOK = "azure_db_password.sh"


@dataclass(frozen=True)
class AzureAccounting:
    version: str
    sku_name: str
    sku_tier: str
    storage_gb: int
    storage_auto_grow: str
    backup_retention_days: int
    geo_redundant_backup: str
    high_availability: str
    configurations: Mapping[str, str]  # SchedMD's MySQL settings, as server parameters
    database: str  # slurmdbd's StorageLoc
    user: str  # the administrator login slurmdbd uses
    port: int  # MySQL's
    dbd_port: int  # slurmdbd's, for sacct on the login node
    subnet_cidr: str  # the delegated subnet
    delegation: str
    private_dns_zone: str
    secret_name: str  # the password's secret, in the Slurm vault
    password_length: int
    password_min_each: int  # upper-case letters, lower-case letters and digits, each at least this many
    hook_env: Mapping[str, str]

    @property
    def hook(self) -> DbdHook:
        return DbdHook(script(PASSWORD_HOOK), self.hook_env)


def dns_zone(spec: ClusterSpec, suffix: str) -> str:
    """`<cluster>.<suffix>`: the cluster's name as one DNS label (lower case letters, digits and hyphens)."""
    label = re.sub(r"[^a-z0-9-]", "-", spec.name.lower()).strip("-")[:63] or "gpu-cluster"
    return f"{label}.{suffix}"


def database_subnet(spec: ClusterSpec, node_cidr: str, block: int, prefix: int) -> str:
    """The first /`prefix` of the `block`th /26 of the VNet's free half (Bastion and the login node take blocks 0 and
    1, Managed Lustre the half's last /24); refused, keyed, when the half has no such block."""
    second = next(n for n in ipaddress.IPv4Network(spec.network.cidr).subnets(prefixlen_diff=1) if str(n) != node_cidr)
    blocks = list(second.subnets(new_prefix=ACCESS_BLOCK_PREFIX)) if second.prefixlen <= ACCESS_BLOCK_PREFIX else []
    if len(blocks) <= block:
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves {second} beside the node subnet, too small for the accounting database's "
            f"delegated subnet (a /{prefix} in the third /{ACCESS_BLOCK_PREFIX} of that half, after Bastion's and the "
            f"login node's); use a /{ACCESS_BLOCK_PREFIX - 3} or larger network",
        )
    return str(next(blocks[block].subnets(new_prefix=prefix)))


def plan(spec: ClusterSpec, node_cidr: str, key_hook_env: Mapping[str, str]) -> AzureAccounting | None:
    """None unless slurm.accounting. `key_hook_env`: the MUNGE key hook's settings (the vault, IMDS), which the
    password's hook shares with its own secret's name."""
    if spec.slurm is None or not spec.slurm.accounting:
        return None
    if spec.network.existing is not None:
        raise ConfigError(
            f"{CLUSTER_KEY}.slurm.accounting",
            "true with network.existing on azure: the database needs a subnet delegated to "
            "Microsoft.DBforMySQL/flexibleServers, which the cluster adds only to a VNet it creates; use accounting "
            "false or a network the cluster creates",
        )
    offer = accounting_catalog.cloud_offer("azure")
    dbd = accounting_catalog.data()["slurmdbd"]
    secret = str(offer["secretName"])
    return AzureAccounting(
        version=str(offer["version"]),
        sku_name=str(offer["instanceClass"]),
        sku_tier=str(offer["skuTier"]),
        storage_gb=int(offer["storageGb"]),
        storage_auto_grow=str(offer["storageAutoGrow"]),
        backup_retention_days=int(offer["backupRetentionDays"]),
        geo_redundant_backup=str(offer["geoRedundantBackup"]),
        high_availability=str(offer["highAvailability"]),
        configurations={str(k): str(v) for k, v in accounting_catalog.data()["mysqlSettings"].items()},
        database=str(dbd["database"]),
        user=str(dbd["user"]),
        port=int(dbd["storagePort"]),
        dbd_port=int(dbd["port"]),
        subnet_cidr=database_subnet(spec, node_cidr, int(offer["subnetBlock"]), int(offer["subnetPrefix"])),
        delegation=str(offer["delegation"]),
        private_dns_zone=dns_zone(spec, str(offer["privateDnsSuffix"])),
        secret_name=secret,
        password_length=int(dbd["passwordLength"]),
        password_min_each=int(offer["passwordMinEachClass"]),
        hook_env={**key_hook_env, "MUNGE_SECRET_NAME": secret},
    )
