"""What every Azure concern module needs from the component: names, tags, options, the resource group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native as azure

from ..layout.azure import AzureEncryption, AzureLayout


@dataclass
class Key:
    """What the disks and the shared filesystem name. `key_url` and `des_id` resolve only after the identity's
    role on the key exists, so whatever names them waits for it."""

    key_url: pulumi.Input[str]  # versioned (auto) or as given
    vault_uri: pulumi.Input[str]  # https://VAULT.vault.azure.net (a storage account names the key by vault and name)
    key_name: str
    vault_id: pulumi.Input[str] | None  # auto only: a key id does not carry its vault's resource id
    identity_id: pulumi.Input[str]  # the user-assigned encryption identity's resource id
    principal_id: pulumi.Input[str]
    des_id: pulumi.Input[str]
    des: azure.compute.DiskEncryptionSet
    vault: azure.keyvault.Vault | None = None
    key: azure.keyvault.Key | None = None
    grant: azure.authorization.RoleAssignment | None = None

    def output(self, enc: AzureEncryption) -> dict[str, Any]:
        return {
            "key": self.key_url,
            "created": enc.auto,
            "rotation": f"every {enc.rotate_after_create} (ISO 8601)" if enc.auto else None,
            "diskEncryptionSet": self.des_id,
            "principalId": self.principal_id,
        }


@dataclass(frozen=True)
class Context:
    """The component's shared inputs. Every resource is parented to the component (`opts`), so its URN
    is the same whichever module registers it."""

    name: str  # the component's name: resource names are f"{name}-<suffix>"
    component: pulumi.Resource  # the parent of every resource and invoke
    layout: AzureLayout
    opts: pulumi.ResourceOptions  # parent=the component, plus the alias transformation
    resource_group_name: pulumi.Input[str]
    zones: list[str] | None
    key: Key | None = None  # encryption.key not provider: the disk encryption set and key (azure/encryption.py)

    @property
    def location(self) -> str:
        return self.layout.location

    def tagged(self, suffix: str) -> dict[str, str]:
        return {**self.layout.tags, "Name": f"{self.layout.spec.name}-{suffix}"}
