"""GCP's half of `slurm.accounting`, pure: the Cloud SQL for MySQL instance slurmdbd writes to, where it lives and how
the head reads its password (catalog/accounting.yaml clouds.gcp).

- The database: Cloud SQL for MySQL 8.0, a shared-core tier, zonal, SSD, automated backups with binary logging kept a
  week, SchedMD's settings as database flags; private IP only (no public IPv4).
- Its address: private services access on the cluster's host VPC, a /24 range allocated for the peering (the first
  candidate clear of every subnet the cluster has) and the servicenetworking connection; no subnet changes.
- The password: random, in a Secret Manager secret of the cluster's; the head runs as a service account of its own
  (the GPU and login nodes keep the nodes' account), which alone may read that secret (gcp_db_password.sh).
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
from .data import slurm_data
from .identity import account_id

PASSWORD_HOOK = "gcp_db_password.sh"


@dataclass(frozen=True)
class GcpAccounting:
    database_version: str
    edition: str
    tier: str
    availability_type: str
    disk_type: str
    disk_size_gb: int
    disk_autoresize: bool
    backup_retention_days: int
    deletion_protection: bool
    flags: Mapping[str, str]  # SchedMD's MySQL settings, as Cloud SQL database flags
    database: str  # slurmdbd's StorageLoc
    user: str  # the user slurmdbd logs in as
    port: int  # MySQL's
    dbd_port: int  # slurmdbd's, for sacct on the login node
    secret_id: str  # the password's Secret Manager secret
    secret_role: str
    password_length: int
    peering_range: str  # the private services access range (address/prefix) on the host VPC
    peering_purpose: str
    peering_service: str
    head_account_id: str  # the head's own service account
    hook_env: Mapping[str, str]

    @property
    def peering_address(self) -> str:
        return str(ipaddress.IPv4Network(self.peering_range).network_address)

    @property
    def peering_prefix(self) -> int:
        return ipaddress.IPv4Network(self.peering_range).prefixlen

    @property
    def hook(self) -> DbdHook:
        return DbdHook(script(PASSWORD_HOOK), self.hook_env)


def secret_id(spec: ClusterSpec) -> str:
    """One secret per stack and cluster in the project, beside the MUNGE key's (letters, digits, '-' and '_')."""
    text = re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.stack}-{spec.name}-slurmdbd-password")
    return text[: int(slurm_data()["secret"]["idMaxLength"])]


def peering_range(candidates: list[str], taken: tuple[str, ...]) -> str | None:
    """The first candidate that overlaps none of the cluster's ranges (None: every one does)."""
    used = [ipaddress.IPv4Network(c) for c in taken]
    for candidate in candidates:
        net = ipaddress.IPv4Network(candidate)
        if not any(net.overlaps(u) for u in used):
            return candidate
    return None


def plan(spec: ClusterSpec, project: str, taken: tuple[str, ...], lustre: bool) -> GcpAccounting | None:
    """None unless slurm.accounting. `taken`: every subnet range of the cluster's VPCs; `lustre`: storage.shared
    builds Managed Lustre, which makes the host VPC's private services access connection itself."""
    if spec.slurm is None or not spec.slurm.accounting:
        return None
    key = f"{CLUSTER_KEY}.slurm.accounting"
    if spec.network.existing is not None:
        raise ConfigError(
            key,
            "true with network.existing on gcp: the database's private IP comes from a private services access range "
            "and connection the cluster adds to its own VPC, which it does not do to a VPC it joins; use accounting "
            "false or a network the cluster creates",
        )
    if lustre:
        raise ConfigError(
            key,
            "true with storage.shared Managed Lustre on gcp: both need the host VPC's one servicenetworking connection "
            "(private services access), and one connection holding both ranges is not built yet; use accounting "
            "false, or an existing shared filesystem",
        )
    offer = accounting_catalog.cloud_offer("gcp")
    dbd = accounting_catalog.data()["slurmdbd"]
    candidates = [str(c) for c in offer["peeringCandidates"]]
    found = peering_range(candidates, taken)
    if found is None:
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr}: the cluster's ranges overlap every range the accounting database's private services "
            f"access may take ({', '.join(candidates)}, catalog/accounting.yaml clouds.gcp); use a range such as "
            "10.42.0.0/16",
        )
    hook = slurm_data()["hook"]
    sid = secret_id(spec)
    return GcpAccounting(
        database_version=str(offer["databaseVersion"]),
        edition=str(offer["edition"]),
        tier=str(offer["instanceClass"]),
        availability_type=str(offer["availabilityType"]),
        disk_type=str(offer["diskType"]),
        disk_size_gb=int(offer["storageGb"]),
        disk_autoresize=bool(offer["diskAutoresize"]),
        backup_retention_days=int(offer["backupRetentionDays"]),
        deletion_protection=bool(offer["deletionProtection"]),
        flags={str(k): str(v) for k, v in accounting_catalog.data()["mysqlSettings"].items()},
        database=str(dbd["database"]),
        user=str(dbd["user"]),
        port=int(dbd["storagePort"]),
        dbd_port=int(dbd["port"]),
        secret_id=sid,
        secret_role=str(offer["secretRole"]),
        password_length=int(dbd["passwordLength"]),
        peering_range=found,
        peering_purpose=str(offer["peeringPurpose"]),
        peering_service=str(offer["peeringService"]),
        head_account_id=account_id(spec.name, "-head"),
        hook_env={
            "DB_PASSWORD_SECRET": f"projects/{project}/secrets/{sid}",
            "METADATA_TOKEN_URL": str(hook["tokenUrl"]),
            "SECRET_MANAGER_URL": str(hook["apiUrl"]),
        },
    )
