"""Azure customer-managed keys: the cluster's Key Vault and key (`encryption.key: auto`) or the key named, the
encryption identity and its role on the key, and the disk encryption set every managed disk names (decisions in
`components.layout.azure.encryption`, planned by the layout's `plan()`)."""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure

from ..resources import invoke_options
from .context import Context, Key
from .identity import role_assignment
from .vault import rbac_vault, vault_name


def disk_set(ctx: Context) -> azure.compute.DiskEncryptionSetParametersArgs | None:
    """A managed disk's `diskEncryptionSet` (None with encryption.key provider: the disk as before)."""
    key = ctx.key
    return azure.compute.DiskEncryptionSetParametersArgs(id=key.des_id) if key is not None else None


def build(ctx: Context) -> Key | None:
    enc = ctx.layout.encryption
    if enc is None:
        return None
    for message in enc.notes:
        pulumi.log.warn(message, resource=ctx.component)
    name, rg, layout = ctx.name, ctx.resource_group_name, ctx.layout
    identity = azure.managedidentity.UserAssignedIdentity(
        f"{name}-cmk-identity",
        resource_group_name=rg,
        location=ctx.location,
        tags=ctx.tagged("cmk-identity"),
        opts=ctx.opts,
    )
    vault = key = grant = None
    key_url: pulumi.Input[str]
    if enc.auto:
        # Destroying the key (or its vault) destroys every disk and filesystem encrypted with it: protected, and
        # kept in Azure when the stack forgets them (purge protection holds them for the retention anyway).
        kept = pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(protect=True, retain_on_delete=True))
        client = azure.authorization.get_client_config_output(opts=invoke_options(ctx.component))
        vname = vault_name(layout.spec.name, pulumi.get_project(), pulumi.get_stack(), f"{name}-cmk")
        vault = rbac_vault(
            ctx,
            "cmk-vault",
            name=vname,
            tenant_id=client.tenant_id,
            sku=enc.vault_sku,
            purge_protection=enc.purge_protection,
            soft_delete_days=enc.soft_delete_days,
            default_action=enc.default_action,
            bypass=enc.bypass,
            opts=kept,
        )
        key = azure.keyvault.Key(
            f"{name}-cmk-key",
            resource_group_name=rg,
            vault_name=vault.name,
            key_name=enc.key_name,
            properties=azure.keyvault.KeyPropertiesArgs(
                kty=enc.kty,
                key_size=enc.key_size,
                rotation_policy=azure.keyvault.RotationPolicyArgs(
                    attributes=azure.keyvault.KeyRotationPolicyAttributesArgs(expiry_time=enc.expiry),
                    lifetime_actions=[
                        azure.keyvault.LifetimeActionArgs(
                            action=azure.keyvault.ActionArgs(type="rotate"),
                            trigger=azure.keyvault.TriggerArgs(time_after_create=enc.rotate_after_create),
                        ),
                        azure.keyvault.LifetimeActionArgs(
                            action=azure.keyvault.ActionArgs(type="notify"),
                            trigger=azure.keyvault.TriggerArgs(time_before_expiry=enc.notify_before_expiry),
                        ),
                    ],
                ),
            ),
            tags=ctx.tagged("cmk-key"),
            opts=kept,
        )
        grant = role_assignment(
            ctx,
            "cmk-role",
            enc.role,
            identity.principal_id,
            key.id,
            client.subscription_id,
            "disk encryption set and shared filesystem wrap their keys",
        )
        # the URL resolves once the role exists: what names it (the set, the filesystem) is created after
        key_url = pulumi.Output.all(key.key_uri_with_version, grant.id).apply(lambda a: str(a[0]))
        # the vault's DNS name (Azure public cloud, as capabilities encryption.keyPattern), after the role exists
        vault_uri: pulumi.Input[str] = grant.id.apply(lambda _: f"https://{vname}.vault.azure.net")
    else:
        assert enc.key_url is not None and enc.vault_uri is not None
        key_url, vault_uri = enc.key_url, enc.vault_uri
    des = azure.compute.DiskEncryptionSet(
        f"{name}-cmk-des",
        resource_group_name=rg,
        location=ctx.location,
        encryption_type=enc.encryption_type,
        active_key=azure.compute.KeyForDiskEncryptionSetArgs(
            key_url=key_url, source_vault=azure.compute.SourceVaultArgs(id=vault.id) if vault else None
        ),
        identity=azure.compute.EncryptionSetIdentityArgs(type="UserAssigned", user_assigned_identities=[identity.id]),
        rotation_to_latest_key_version_enabled=True,
        tags=ctx.tagged("cmk-des"),
        opts=ctx.opts,
    )
    return Key(
        key_url,
        vault_uri,
        enc.key_name,
        vault.id if vault else None,
        identity.id,
        identity.principal_id,
        des.id,
        des,
        vault,
        key,
        grant,
    )
