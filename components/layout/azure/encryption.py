"""Azure customer-managed keys, pure: the cluster's Key Vault, key and disk encryption set, and what cannot take
the key (data: catalog/encryption/azure.yaml, sources there).

`encryption.key: provider` (the default) gives `None`: nothing is registered and no disk names a set.
`auto`: one RBAC vault (purge protection, soft delete) and one RSA key with a rotation policy per cluster; a
key id given is used as given (no vault or key is created). Either way one user-assigned identity is the
encryption identity of the disk encryption set and of the shared filesystem, so its role on the key can exist
before the set does and every disk waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .. import Scratch
from ..shared import Shared
from .data import encryption_data


@dataclass(frozen=True)
class AzureEncryption:
    auto: bool  # create the vault and the key
    key_url: str | None  # the key id given (auto: None, known at deploy)
    vault_uri: str | None  # the given key's vault, https://VAULT.vault.azure.net
    key_name: str  # auto: the key's name in the cluster's vault
    vault_sku: str
    purge_protection: bool
    soft_delete_days: int
    default_action: str
    bypass: str
    kty: str
    key_size: int
    rotate_after_create: str
    notify_before_expiry: str
    expiry: str
    role: str
    encryption_type: str
    filesystem: str | None  # lustre | nfs: the shared filesystem the stack creates takes the key
    notes: tuple[str, ...]  # what keeps a platform key, what the user must do, for the plan's warnings
    aks_reader_role: str  # the role the AKS control plane identity holds on the disk encryption set


def key_plan(spec: ClusterSpec, shared: Shared | None, scratch: Scratch) -> AzureEncryption | None:
    """The key decision, made in the layout's `plan()`: a refused key raises before any resource is registered.
    `scratch`: the nodes' scratch as built (none on AKS)."""
    if spec.encryption_key == "provider":
        return None
    d = encryption_data()
    auto = spec.encryption_key == "auto"
    filesystem = shared.kind if shared is not None and not shared.existing else None
    if not auto and filesystem == "lustre":
        # AmlFilesystem's keyEncryptionKey needs the vault's resource id (sourceVault, required), which a key id
        # (https://VAULT.vault.azure.net/keys/NAME) does not carry
        raise ConfigError(
            f"{CLUSTER_KEY}.encryption.key",
            "a key id with storage.shared kind lustre: Azure Managed Lustre needs the key's vault resource id, "
            "which a key id does not give; use encryption.key auto, or kind nfs",
        )
    notes = []
    if scratch.kind == "nvme":
        notes.append(f"encryption.key: {d['notes']['localNvme']}")
    if spec.slurm is not None and spec.slurm.accounting:
        notes.append(f"encryption.key: {d['notes']['mysqlFlexible']}")
    if not auto:
        notes.append(f"encryption.key: {d['notes']['givenKey'].format(identity=f'{spec.name}-cmk')}")
    return AzureEncryption(
        auto=auto,
        key_url=None if auto else spec.encryption_key,
        # a key id is https://VAULT.vault.azure.net/keys/NAME[/VERSION] (capabilities encryption.keyPattern)
        vault_uri=None if auto else "/".join(spec.encryption_key.split("/")[:3]),
        key_name=str(d["key"]["name"]) if auto else spec.encryption_key.split("/")[4],
        vault_sku=str(d["vault"]["sku"]),
        purge_protection=bool(d["vault"]["purgeProtection"]),
        soft_delete_days=int(d["vault"]["softDeleteRetentionDays"]),
        default_action=str(d["vault"]["defaultAction"]),
        bypass=str(d["vault"]["bypass"]),
        kty=str(d["key"]["kty"]),
        key_size=int(d["key"]["size"]),
        rotate_after_create=str(d["key"]["rotateAfterCreate"]),
        notify_before_expiry=str(d["key"]["notifyBeforeExpiry"]),
        expiry=str(d["key"]["expiry"]),
        role=str(d["role"]),
        encryption_type=str(d["encryptionType"]),
        filesystem=filesystem,
        notes=tuple(notes),
        aks_reader_role=str(d["aksReaderRole"]),  # catalog aksReaderRole
    )
