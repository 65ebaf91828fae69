"""Azure's half of `scheduler: slurm`, pure: the head node, the MUNGE key's Key Vault and the three bootstraps.

The head is a small CPU VM in the node subnet (private, no public IP) with the cluster's image and the nodes'
user-assigned identity. The MUNGE key is a Key Vault secret (catalog/slurm.yaml `clouds.azure`) in a private
RBAC-mode vault of the cluster; the identity holds Key Vault Secrets User on that one secret, so the head, the GPU
nodes and the login node (all carry the identity) read it at boot with `azure_munge_key.sh`. The GPU nodes get
`compute_parts` after their own parts, the login node `login_custom_data`; both carry `HEAD_PLACEHOLDER`, replaced by
the head's private IP at deploy (components/azure/slurm.py). With elastic partitions or `slurm.accounting` the head
carries an identity of its own (`head_identity_of_its_own`); the accounting database is layout/azure/accounting.py's.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from ... import bootstrap
from ...bootstrap import Part, script
from ...bootstrap.mounts import Mount
from ...bootstrap.slurm import PowerHooks, cluster_parts
from ...catalog.slurm import cloud_data
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ..slurm import CloudSlurm, slurm_layout
from .accounting import AzureAccounting
from .accounting import plan as accounting_plan

KEY_HOOK = "azure_munge_key.sh"
CONF_HOOK = "azure_slurm_conf.sh"
POWER_HOOK = "azure_slurm_power.sh"
NODE_NAME_HOOK = "azure_slurm_node_name.sh"


@dataclass(frozen=True)
class AzureSlurm(CloudSlurm):
    vault_name: str  # the MUNGE key's vault (deterministic per stack: the hooks name it)
    vault_sku: str
    soft_delete_days: int
    secret_name: str
    secrets_user_role: str  # tenant-relative role definition id, assigned at the secret's scope
    private_dns_zone: str
    group_id: str
    head_custom_data: str
    login_custom_data: str  # HEAD_PLACEHOLDER until deploy
    compute_parts: tuple[Part, ...]  # HEAD_PLACEHOLDER until deploy
    accounting: AzureAccounting | None = None  # slurm.accounting; the head's custom data has DB_HOST_PLACEHOLDER

    @property
    def head_identity_of_its_own(self) -> bool:
        """The head carries an identity the GPU and login nodes do not: it creates and deletes nodes (elastic
        partitions) or reads the accounting database's password."""
        return bool(self.layout.elastic) or self.accounting is not None

    @property
    def compute_config_b64(self) -> str:
        """The head VM's `userData`: the compute-side configuration, base64 as the API wants it (catalog/slurm.yaml
        clouds.azure.computeConfig); updated in place, read from IMDS by azure_slurm_conf.sh."""
        return base64.b64encode(self.layout.compute_config.encode()).decode()


def vault_name(spec: ClusterSpec) -> str:
    """A Key Vault name (globally unique, 3-24 letters, digits and hyphens, starting with a letter), stable per stack
    and cluster: a deleted vault keeps its name for the soft-delete retention."""
    stem = re.sub(r"[^a-z0-9]", "", spec.name.lower())[:12] or "gpucluster"
    digest = hashlib.sha256(f"{spec.project}/{spec.stack}/{spec.name}/slurm".encode()).hexdigest()[:8]
    return f"{stem}slurm{digest}"[:24]


def hook_env(spec: ClusterSpec) -> dict[str, str]:
    """What the key hook reads (/etc/gpu-cluster/munge-key.env): where the secret is, never the secret."""
    d = cloud_data("azure")
    vault = d["keyVault"]
    return {
        "MUNGE_VAULT_URI": f"https://{vault_name(spec)}.{vault['dnsSuffix']}/",
        "MUNGE_SECRET_NAME": str(vault["secretName"]),
        "IMDS_TOKEN_URL": str(d["imds"]["tokenUrl"]),
        "IMDS_API_VERSION": str(d["imds"]["apiVersion"]),
        "KEYVAULT_RESOURCE": str(d["imds"]["resource"]),
        "KEYVAULT_API_VERSION": str(d["keyVaultApiVersion"]),
    }


def _power_hooks(spec: ClusterSpec) -> PowerHooks:
    """Elastic partitions on Azure: the head PUTs the VM `<cluster>-<node>` into the partition's scale set with its
    own identity's token and DELETEs it; the node's name is its VM name after the cluster's prefix
    (catalog/slurm.yaml clouds.azure.powerSave)."""
    d = cloud_data("azure")
    power, imds = d["powerSave"], d["imds"]
    env = {
        "CLUSTER": spec.name,
        "COMPUTE_API_VERSION": str(power["computeApiVersion"]),
        "NETWORK_API_VERSION": str(power["networkReadApiVersion"]),
        "MANAGEMENT_URL": str(power["managementUrl"]),
        "MANAGEMENT_RESOURCE": str(power["managementResource"]),
        "IMDS_TOKEN_URL": str(imds["tokenUrl"]),
        "IMDS_API_VERSION": str(imds["apiVersion"]),
        "IMDS_COMPUTE_URL": str(power["imdsNameUrl"]).rsplit("/", 1)[0],
        "IMDS_COMPUTE_API_VERSION": str(power["imdsApiVersion"]),
        "FORCE_DELETION": "true" if power["forceDeletion"] else "false",
        "POLL_SECONDS": str(power["pollSeconds"]),
    }
    # the node's hook takes the cluster's prefix from its settings (its VM name is `<cluster>-<node>`)
    return PowerHooks(
        power=script(POWER_HOOK),
        power_env=env,
        node_name=script(NODE_NAME_HOOK),
        node_name_env={"NODE_NAME_PREFIX": f"{spec.name}-"},
    )


def plan(spec: ClusterSpec, mount: Mount | None, node_cidr: str, monitoring: Part | None = None) -> AzureSlurm | None:
    """None unless scheduler slurm. `mount`: storage.shared's mount (its source SOURCE_PLACEHOLDER until deploy);
    `node_cidr`: the node subnet (the accounting database's subnet is in the VNet's other half)."""
    layout = slurm_layout(spec)
    if layout is None:
        return None
    assert spec.slurm is not None and spec.slurm.head_instance_type is not None
    k = f"{CLUSTER_KEY}."
    if spec.network.egress != "nat":
        raise ConfigError(
            f"{k}network.egress",
            f"{spec.network.egress} with scheduler slurm: every node installs Slurm and MUNGE from "
            "packages.microsoft.com and Ubuntu at boot; use nat",
        )
    d = cloud_data("azure")
    imds = d["computeConfig"]
    key_env = hook_env(spec)
    accounting = accounting_plan(spec, node_cidr, key_env)
    head, login, compute = cluster_parts(
        layout,
        key_hook=script(KEY_HOOK),
        key_hook_env=key_env,
        conf_hook=script(CONF_HOOK),
        conf_hook_env={"USER_DATA_URL": str(imds["userDataUrl"]), "IMDS_API_VERSION": str(imds["apiVersion"])},
        mount=mount,
        power=_power_hooks(spec) if layout.elastic else None,
        dbd=accounting.hook if accounting is not None else None,
    )
    vault = d["keyVault"]
    return AzureSlurm(
        layout=layout,
        head_instance_type=spec.slurm.head_instance_type,
        vault_name=vault_name(spec),
        vault_sku=str(vault["sku"]),
        soft_delete_days=int(vault["softDeleteRetentionDays"]),
        secret_name=str(vault["secretName"]),
        secrets_user_role=str(d["secretsUserRole"]),
        private_dns_zone=str(vault["privateDnsZone"]),
        group_id=str(vault["groupId"]),
        head_custom_data=bootstrap.cloud_init(head),
        login_custom_data=bootstrap.cloud_init((*login, *((monitoring,) if monitoring else ()))),
        compute_parts=compute,
        accounting=accounting,
    )
