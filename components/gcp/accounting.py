"""`slurm.accounting` on GCP: the Cloud SQL for MySQL instance slurmdbd writes to (decided in layout/gcp/accounting.py).

- Network: private services access on the cluster's host VPC: a VPC_PEERING range (the layout's, clear of every subnet
  of the cluster) and the servicenetworking connection; the instance has a private IP only (ipv4Enabled false). The
  host VPC's existing rules are untouched: the head opens the connections, and Cloud SQL is reached over the peering.
- The password: `random.RandomPassword` (a secret output) as the payload of a Secret Manager secret replicated in the
  cluster's region only; the head's own service account (components/gcp/slurm.py) holds the accessor role on exactly
  that secret.
- The instance: Google encrypts its disk at rest (Google-managed key: a customer-managed key is not applied to it,
  docs/gcp.md), automated backups with binary logging, SchedMD's settings as database flags. `pulumi destroy` deletes
  it (deletion protection off, as on AWS: catalog/accounting.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_random as random

from ..layout.gcp import GcpLayout
from ..layout.gcp.accounting import GcpAccounting
from .network import Network
from .secrets import regional_secret


@dataclass(frozen=True)
class Database:
    plan: GcpAccounting
    instance: gcp.sql.DatabaseInstance
    secret: gcp.secretmanager.Secret
    version: gcp.secretmanager.SecretVersion
    peering: gcp.servicenetworking.Connection

    @property
    def address(self) -> pulumi.Output[str]:
        address: pulumi.Output[str] = self.instance.private_ip_address
        return address

    def output(self) -> dict[str, object]:
        return {
            "service": "Cloud SQL for MySQL",
            "instance": self.instance.name,
            "address": self.instance.private_ip_address,
            "passwordSecret": self.secret.id,
            "check": "sacct -a  # jobs of every user, from slurmdbd",
        }


def build_database(name: str, layout: GcpLayout, net: Network, child: pulumi.ResourceOptions) -> Database | None:
    """The database, its private address and its password (the head's account is granted it by
    components/gcp/slurm.py); None unless slurm.accounting."""
    slurm = layout.slurm
    plan = slurm.accounting if slurm is not None else None
    if plan is None:
        return None
    spec = layout.spec
    project = layout.project or None
    host = net.host  # the cluster's own VPC: network.existing is refused by the layout
    peering_range = gcp.compute.GlobalAddress(
        f"{name}-db-psa",
        purpose=plan.peering_purpose,
        address_type="INTERNAL",
        address=plan.peering_address,
        prefix_length=plan.peering_prefix,
        network=host.id,
        project=project,
        description=f"gpu-cluster {spec.name}: private services access for the Slurm accounting database",
        opts=child,
    )
    peering = gcp.servicenetworking.Connection(
        f"{name}-db-psa-connection",
        network=host.id,
        service=plan.peering_service,
        reserved_peering_ranges=[peering_range.name],
        opts=child,
    )
    password = random.RandomPassword(
        f"{name}-db-password-value", length=plan.password_length, special=False, opts=child
    )
    secret = regional_secret(f"{name}-db-password", layout, plan.secret_id, "db-password", child)
    version = gcp.secretmanager.SecretVersion(
        f"{name}-db-password-version", secret=secret.id, secret_data=password.result, opts=child
    )
    instance = gcp.sql.DatabaseInstance(
        f"{name}-db",
        database_version=plan.database_version,
        region=spec.region,
        project=project,
        deletion_protection=plan.deletion_protection,  # the provider's own guard: off, `pulumi destroy` deletes it
        settings=gcp.sql.DatabaseInstanceSettingsArgs(
            tier=plan.tier,
            edition=plan.edition,
            availability_type=plan.availability_type,
            disk_type=plan.disk_type,
            disk_size=plan.disk_size_gb,
            disk_autoresize=plan.disk_autoresize,
            deletion_protection_enabled=plan.deletion_protection,
            location_preference=gcp.sql.DatabaseInstanceSettingsLocationPreferenceArgs(zone=layout.zone),
            ip_configuration=gcp.sql.DatabaseInstanceSettingsIpConfigurationArgs(
                ipv4_enabled=False,  # no public IP
                private_network=host.id,
                allocated_ip_range=peering_range.name,
            ),
            backup_configuration=gcp.sql.DatabaseInstanceSettingsBackupConfigurationArgs(
                enabled=True,
                binary_log_enabled=True,
                transaction_log_retention_days=plan.backup_retention_days,
                backup_retention_settings=gcp.sql.DatabaseInstanceSettingsBackupConfigurationBackupRetentionSettingsArgs(
                    retained_backups=plan.backup_retention_days
                ),
            ),
            database_flags=[
                gcp.sql.DatabaseInstanceSettingsDatabaseFlagArgs(name=k, value=v) for k, v in plan.flags.items()
            ],
            user_labels={**layout.labels, "gpu-cluster_role": "slurm-accounting"},
        ),
        # the peering must exist before an instance can take a private IP on it; disk_size "will override the resizing
        # from disk_autoresize ... To avoid this, set lifecycle.ignore_changes on this field" (pulumi-gcp sql settings)
        opts=pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(depends_on=[peering], ignore_changes=["settings.diskSize"])
        ),
    )
    gcp.sql.Database(f"{name}-db-database", name=plan.database, instance=instance.name, project=project, opts=child)
    gcp.sql.User(
        f"{name}-db-user",
        name=plan.user,
        instance=instance.name,
        password=password.result,
        project=project,
        opts=child,
    )
    return Database(plan, instance, secret, version, peering)
