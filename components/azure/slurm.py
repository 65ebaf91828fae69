"""`scheduler: slurm` on Azure: the MUNGE key's Key Vault, the head node, and what the GPU and login nodes need.

- MUNGE key: `random.RandomBytes` (a secret output) stored as a Key Vault secret (base64) in a vault of the cluster:
  RBAC mode, public network access disabled, a private endpoint in the node subnet and its privatelink DNS zone
  linked to the VNet. The nodes' user-assigned identity holds Key Vault Secrets User on exactly that secret (a role
  assignment at the secret's scope); the head, the GPU nodes and the login node carry that identity, so one grant
  covers all three. No key is in any custom data, input or output.
- Head node: a private VM in the node subnet running slurmctld (layout.azure.slurm). The node NSG already admits
  everything from inside the VNet (Slurm's ports included) and nothing from the internet. With elastic partitions or
  accounting it carries a user-assigned identity of its own (`head_identity`), which the GPU and login nodes do not:
  it alone creates the nodes, and reads the accounting database's password (components/azure/accounting.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native as azure
import pulumi_random as random

from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..bootstrap.slurm_conf import DB_HOST_PLACEHOLDER, HEAD_PLACEHOLDER
from ..layout.azure import AzureSlurm
from ..resources import fill, invoke_options
from . import vm
from .accounting import Database, build_database
from .context import Context
from .identity import Identity, role_assignment
from .network import Network, private_link
from .partitions import Power, build_power
from .vault import rbac_vault


@dataclass(frozen=True)
class SlurmHead:
    plan: AzureSlurm
    vm: azure.compute.VirtualMachine
    nic: azure.network.NetworkInterface
    vault: azure.keyvault.Vault
    secret: azure.keyvault.Secret
    grant: azure.authorization.RoleAssignment
    address: pulumi.Output[str]
    power: Power | None = None  # elastic partitions: the head's own identity, its role, the partitions' scale sets
    head_identity: Identity | None = None  # partitions or accounting: the head's own (else it carries the nodes')
    database: Database | None = None  # slurm.accounting: MySQL Flexible Server

    def login_custom_data(
        self,
        encode: Any,
        mount_source: pulumi.Input[str] | None,
        more: Mapping[str, pulumi.Input[str] | None] | None = None,
    ) -> pulumi.Input[str]:
        """The login node's custom data (base64 by `encode`), the head's address and the shared filesystem's
        source filled in at deploy (and `more` tokens: the monitoring part's)."""
        values = {HEAD_PLACEHOLDER: self.address, SOURCE_PLACEHOLDER: mount_source, **(more or {})}
        return fill(self.plan.login_custom_data, values, encode)

    def output(self, access: dict[str, Any]) -> dict[str, Any]:
        """`slurm`: where the controller runs, how to submit and check, which secret holds the key (not the key)."""
        layout = self.plan.layout
        return {
            "headNode": {"id": self.vm.id, "privateIp": self.address},
            "partition": layout.partition,
            "slurmVersion": layout.packages.version,
            "login": access.get("command"),
            "check": "sinfo -N -l",
            "mungeKeySecret": self.secret.id,
            "powerSaving": layout.power_saving,
            **({"accounting": self.database.output()} if self.database is not None else {}),
        }


def _first_ip(configs: Any) -> Any:
    return configs[0].private_ip_address if configs else None


def _vault(
    ctx: Context, net: Network, plan: AzureSlurm, identity: Identity
) -> tuple[azure.keyvault.Vault, azure.keyvault.Secret, azure.authorization.RoleAssignment, list[pulumi.Resource]]:
    name, rg = ctx.name, ctx.resource_group_name
    client = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component))
    vault = rbac_vault(
        ctx,
        "slurm-vault",
        name=plan.vault_name,
        tenant_id=client.tenant_id,
        sku=plan.vault_sku,
        purge_protection=True,
        soft_delete_days=plan.soft_delete_days,
        public_network_access="Disabled",
        default_action="Deny",
        bypass="None",
    )
    key = random.RandomBytes(f"{name}-munge-key-bytes", length=plan.key_bytes, opts=ctx.opts)
    encoded: pulumi.Input[str] = key.base64
    secret = azure.keyvault.Secret(
        f"{name}-munge-key",
        resource_group_name=rg,
        vault_name=vault.name,
        secret_name=plan.secret_name,
        # base64 of the key; RandomBytes marks it secret through the engine (additional_secret_outputs), which the
        # offline plan has not: marked here too, so it is a secret in state and in every plan
        properties=azure.keyvault.SecretPropertiesArgs(
            value=pulumi.Output.secret(encoded), content_type="application/octet-stream;base64"
        ),
        tags=ctx.tagged("munge-key"),
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(additional_secret_outputs=["properties"])),
    )
    grant = role_assignment(
        ctx,
        "role-munge-key",
        plan.secrets_user_role,
        identity.principal_id or "",
        secret.id,  # this one secret, not the vault
        client.subscription_id,
        "the nodes read the Slurm MUNGE key",
    )
    dns = private_link(
        ctx,
        net,
        "slurm-vault",
        target_id=vault.id,
        group_id=plan.group_id,
        zone_name=plan.private_dns_zone,
        connection="slurm-vault",
    )
    # a node that boots before these exist fails to read the key: the VMs wait for them
    return vault, secret, grant, [grant, dns.link, dns.records]


def head_identity(
    ctx: Context, plan: AzureSlurm, secret: azure.keyvault.Secret
) -> tuple[Identity, list[pulumi.Resource]]:
    """The head's own user-assigned identity, which reads the MUNGE key by a grant of its own (the nodes keep theirs:
    the same one-secret grant)."""
    created = azure.managedidentity.UserAssignedIdentity(
        f"{ctx.name}-head-identity",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        tags=ctx.tagged("head-identity"),
        opts=ctx.opts,
    )
    client = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component))
    key_grant = role_assignment(
        ctx,
        "head-role-munge-key",
        plan.secrets_user_role,
        created.principal_id,
        secret.id,
        client.subscription_id,
        "the Slurm head reads the MUNGE key",
    )
    identity = Identity(created.id, created.name, [], [], created.client_id, created.principal_id)
    return identity, [key_grant]


def _database(
    ctx: Context, net: Network, plan: AzureSlurm, vault: azure.keyvault.Vault, head: Identity,
    after: list[pulumi.Resource],
) -> tuple[Database | None, list[pulumi.Resource]]:  # fmt: skip
    """slurm.accounting: the database, and the head's right to read its password (that one secret only)."""
    database = build_database(ctx, net, vault, after)
    if database is None:
        return None, []
    client = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component))
    grant = role_assignment(
        ctx,
        "head-role-db-password",
        plan.secrets_user_role,
        head.principal_id or "",
        database.secret.id,  # this one secret, not the vault
        client.subscription_id,
        "the Slurm head reads the accounting database's password",
    )
    return database, [*database.ready, grant]


def build_head(
    ctx: Context,
    net: Network,
    identity: Identity,
    mount_source: pulumi.Input[str] | None = None,
    subnets: list[pulumi.Resource] | None = None,
) -> SlurmHead | None:
    """`mount_source`: storage.shared's, known at deploy (the head keeps /home and the state there); `subnets`: what
    holds the VNet's other subnets (the accounting database's subnet is written after them)."""
    plan = ctx.layout.slurm
    if plan is None:
        return None
    layout = ctx.layout
    vault, secret, grant, ready = _vault(ctx, net, plan, identity)
    nic = vm.nic(ctx, "head", net.subnet.id)  # private: no public IP
    address: pulumi.Output[str] = nic.ip_configurations.apply(_first_ip)
    # the GPU nodes' Slurm configuration: updated in place, never the custom data (a new head VM)
    user_data: pulumi.Input[str] = plan.compute_config_b64
    power = None
    own: Identity | None = None
    if plan.head_identity_of_its_own:
        own, grants = head_identity(ctx, plan, secret)
        ready = [*ready, *grants]
    if layout.partitions:
        # the head creates and deletes the nodes with its own identity; the channel carries the partitions' VM bodies
        # beside nodes.conf
        assert own is not None
        power = build_power(ctx, net, identity, own, plan, address, mount_source)
        user_data, ready = power.user_data, [*ready, *power.ready]
    head_carries = own or identity
    database, db_ready = _database(ctx, net, plan, vault, head_carries, subnets or [])
    ready = [*ready, *db_ready]
    # the cluster's image (Ubuntu 22.04, as the Slurm layer expects); /home (the NFS export) lives on its disk
    head = vm.virtual_machine(
        ctx,
        "head",
        size=plan.head_instance_type,
        nic=nic,
        identity=head_carries,
        custom_data=fill(
            plan.head_custom_data,
            {SOURCE_PLACEHOLDER: mount_source, DB_HOST_PLACEHOLDER: database.address if database else None},
            layout.custom_data_b64_for,
        ),
        disk_size_gb=layout.os_disk_gb,
        host_encryption=layout.encryption_at_host,
        depends_on=[secret, *ready],
        user_data=user_data,
        # a new image or root size would replace the head (its state, the queue, /home without storage.shared): it
        # keeps its own, as the AWS head keeps its AMI; patch or grow it in place instead
        ignore_changes=("storageProfile.imageReference", "storageProfile.osDisk.diskSizeGB"),
    )
    return SlurmHead(plan, head, nic, vault, secret, grant, address, power, own, database)
