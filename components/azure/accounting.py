"""`slurm.accounting` on Azure: the Azure Database for MySQL Flexible Server slurmdbd writes to (decided in
layout/azure/accounting.py).

- Network: private access only. A subnet delegated to Microsoft.DBforMySQL/flexibleServers (written after the VNet's
  other subnets: Azure writes one subnet of a VNet at a time) and a private DNS zone linked to the VNet, where the
  server's name resolves to its private address; public network access disabled. The node NSG already admits
  everything from inside the VNet, so the head reaches MySQL's port.
- The password: `random.RandomPassword` (a secret output) as a secret in the cluster's Slurm Key Vault, beside the
  MUNGE key (private endpoint, RBAC); the head's own identity is granted Key Vault Secrets User on exactly that secret
  (components/azure/slurm.py).
- The server: MySQL 8.0, Burstable, automated backups, SchedMD's settings as server parameters. `pulumi destroy`
  deletes it with the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure
import pulumi_random as random

from ..layout.azure.accounting import AzureAccounting
from ..resources import Joined
from .context import Context
from .network import Network, private_zone


@dataclass(frozen=True)
class Database:
    plan: AzureAccounting
    server: azure.dbformysql.Server
    secret: azure.keyvault.Secret
    subnet: azure.network.Subnet
    zone: azure.privatedns.PrivateZone
    ready: list[pulumi.Resource]  # what the head's boot waits for (the database, its settings, its password)

    @property
    def address(self) -> pulumi.Output[str]:
        """The server's name, which the private DNS zone resolves inside the VNet (and its TLS certificate names)."""
        fqdn: pulumi.Output[str] = self.server.fully_qualified_domain_name
        return fqdn

    def output(self) -> dict[str, object]:
        return {
            "service": "Azure Database for MySQL Flexible Server",
            "server": self.server.name,
            "address": self.address,
            "passwordSecret": self.secret.id,
            "check": "sacct -a  # jobs of every user, from slurmdbd",
        }


def _setting_suffix(name: str) -> str:
    return name.replace("_", "-")


def build_database(
    ctx: Context, net: Network, vault: azure.keyvault.Vault, after: list[pulumi.Resource]
) -> Database | None:
    """The server, its subnet, DNS zone and password (the head's identity is granted it by components/azure/slurm.py);
    None unless slurm.accounting. `after`: what holds the VNet's other subnets."""
    slurm = ctx.layout.slurm
    plan = slurm.accounting if slurm is not None else None
    if plan is None:
        return None
    name, rg = ctx.name, ctx.resource_group_name
    assert not isinstance(net.subnet, Joined) and not isinstance(net.vnet, Joined)  # the layout refuses existing
    zone, link = private_zone(ctx, net, "db", plan.private_dns_zone)
    subnet = azure.network.Subnet(
        f"{name}-db-subnet",
        resource_group_name=rg,
        virtual_network_name=net.vnet.name,
        address_prefix=plan.subnet_cidr,
        delegations=[azure.network.DelegationArgs(name="mysql-flexible-server", service_name=plan.delegation)],
        default_outbound_access=False,
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=[net.subnet, *after])),
    )
    least = plan.password_min_each  # Azure's three-of-four character classes, sure of three
    password = random.RandomPassword(
        f"{name}-db-password-value",
        length=plan.password_length,
        special=False,
        min_upper=least,
        min_lower=least,
        min_numeric=least,
        opts=ctx.opts,
    )
    value: pulumi.Input[str] = password.result
    secret = azure.keyvault.Secret(
        f"{name}-db-password",
        resource_group_name=rg,
        vault_name=vault.name,
        secret_name=plan.secret_name,
        # marked secret here too: the offline plan has not the engine's additional_secret_outputs of RandomPassword
        properties=azure.keyvault.SecretPropertiesArgs(value=pulumi.Output.secret(value)),
        tags=ctx.tagged("db-password"),
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(additional_secret_outputs=["properties"])),
    )
    server = azure.dbformysql.Server(
        f"{name}-db",
        resource_group_name=rg,
        location=ctx.location,
        version=plan.version,
        administrator_login=plan.user,
        administrator_login_password=pulumi.Output.secret(value),  # a secret in the plan too, as the vault's copy
        sku=azure.dbformysql.MySQLServerSkuArgs(name=plan.sku_name, tier=plan.sku_tier),
        storage=azure.dbformysql.StorageArgs(storage_size_gb=plan.storage_gb, auto_grow=plan.storage_auto_grow),
        backup=azure.dbformysql.BackupArgs(
            backup_retention_days=plan.backup_retention_days, geo_redundant_backup=plan.geo_redundant_backup
        ),
        high_availability=azure.dbformysql.HighAvailabilityArgs(mode=plan.high_availability),
        availability_zone=ctx.zones[0] if ctx.zones else None,  # beside the head when the cluster has a zone
        network=azure.dbformysql.NetworkArgs(
            delegated_subnet_resource_id=subnet.id,
            private_dns_zone_resource_id=zone.id,
            public_network_access="Disabled",
        ),
        tags=ctx.tagged("slurm-accounting"),
        # the zone must be linked to the VNet before the server registers its name in it; the service grows the
        # storage (autoGrow): a later apply must not shrink it back
        opts=pulumi.ResourceOptions.merge(
            ctx.opts, pulumi.ResourceOptions(depends_on=[link], ignore_changes=["storage.storageSizeGB"])
        ),
    )
    database = azure.dbformysql.Database(
        f"{name}-db-database",
        resource_group_name=rg,
        server_name=server.name,
        database_name=plan.database,
        opts=ctx.opts,
    )
    settings = [
        azure.dbformysql.Configuration(
            f"{name}-db-{_setting_suffix(key)}",
            resource_group_name=rg,
            server_name=server.name,
            configuration_name=key,
            value=value,
            source="user-override",
            opts=ctx.opts,
        )
        for key, value in plan.configurations.items()
    ]
    return Database(plan, server, secret, subnet, zone, [server, database, secret, *settings])
