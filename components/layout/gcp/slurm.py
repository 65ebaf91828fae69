"""`scheduler: slurm` on GCP: the head VM, the MUNGE secret and the Slurm bootstraps (catalog/slurm.yaml clouds.gcp)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ... import bootstrap, catalog
from ...bootstrap import Part
from ...bootstrap.mounts import Mount
from ...bootstrap.slurm import PowerHooks, cluster_parts
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ..slurm import CloudSlurm, slurm_layout
from .accounting import GcpAccounting
from .accounting import plan as accounting_plan
from .data import slurm_data
from .identity import account_id
from .nodes import startup_script

# --- Slurm ----------------------------------------------------------------------------------
# scheduler: slurm on GCP (components/layout/slurm.py is the cloud-neutral layer): the head is a private VM in the
# host subnet on the nodes' service account, which may read exactly the cluster's MUNGE secret. The host VPC's
# internal rule already admits every port between the head, the GPU nodes and the login node (all in the host
# subnet), and nothing from outside: no Slurm firewall rule of its own.

MUNGE_KEY_HOOK = "gcp_munge_key.sh"
CONF_HOOK = "gcp_slurm_conf.sh"
POWER_HOOK = "gcp_slurm_power.sh"
NODE_NAME_HOOK = "gcp_slurm_node_name.sh"


@dataclass(frozen=True)
class GcpSlurm(CloudSlurm):
    """`scheduler: slurm` on GCP: the head VM, the MUNGE secret and the three bootstraps (catalog/slurm.yaml
    `clouds.gcp`)."""

    head_image: str  # projects/P/global/images/family/F (the login node's Ubuntu 22.04)
    secret_id: str  # the Secret Manager secret holding the MUNGE key
    secret_role: str  # granted on that secret to the nodes' service account
    conf_key: str  # the project metadata item holding the compute-side configuration (updated in place)
    head_script: str  # the head's startup-script (SOURCE_PLACEHOLDER until deploy with storage.shared)
    login_script: str  # HEAD_PLACEHOLDER (and SOURCE_PLACEHOLDER) until deploy
    compute_parts: tuple[Part, ...]  # appended to the GPU nodes' bootstrap; HEAD_PLACEHOLDER until deploy
    power: HeadPower | None = None  # slurm.partitions: the head's own service account and what it may launch
    accounting: GcpAccounting | None = None  # slurm.accounting: Cloud SQL; the head's script has DB_HOST_PLACEHOLDER

    @property
    def head_account_id(self) -> str | None:
        """The head's own service account, which the GPU and login nodes do not carry: it launches nodes (elastic
        partitions) or reads the accounting database's password; None: the head runs as the nodes' account."""
        if self.power is not None:
            return self.power.account_id
        return self.accounting.head_account_id if self.accounting is not None else None


@dataclass(frozen=True)
class HeadPower:
    """Elastic partitions on GCP: the head's own service account (it creates and deletes the nodes) and the custom
    role it holds, bound on the project under `condition` (catalog/slurm.yaml clouds.gcp.powerSave)."""

    account_id: str  # the head's service account (the GPU and login nodes keep the nodes' account)
    role_id: str  # the custom role: exactly `permissions`
    permissions: tuple[str, ...]
    condition: str  # IAM condition (CEL): instances and disks only under `<cluster>-` in the cluster's zone
    act_as_role: str  # granted on the nodes' service account only: launch nodes that run as it


def munge_secret_id(spec: ClusterSpec) -> str:
    """One secret per stack and cluster in the project: letters, digits, '-' and '_' (catalog/slurm.yaml clouds.gcp)."""
    text = re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.stack}-{spec.name}-munge-key")
    return text[: int(slurm_data()["secret"]["idMaxLength"])]


def conf_key(spec: ClusterSpec) -> str:
    """The project metadata key of the GPU nodes' Slurm configuration: one per stack and cluster in the project."""
    text = re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.stack}-{spec.name}-slurm-conf")
    return text[: int(slurm_data()["computeConfig"]["keyMaxLength"])]


def node_instance_prefix(spec: ClusterSpec) -> str:
    """Elastic nodes' instance names are `<cluster>-<node>`: unique per cluster in the zone, and what the head's role
    is scoped to (RFC 1035 and at most 63: a 31-character cluster name, a 15-character partition, 4 digits)."""
    return f"{spec.name}-"


def power_condition(project: str, zone: str, prefix: str) -> str:
    """The IAM condition of the head's launch role: on Compute Engine instances and disks (a boot disk is named as its
    instance), only names under `prefix` in the cluster's zone; the role's other permissions (use the templates, the
    subnets, the placement policies, read the operations) name no instance and are not narrowed (IAM "Configure
    resource-based access": `resource.type != "compute.googleapis.com/Instance" || resource.name.startsWith(...)`)."""
    base = f"projects/{project}/zones/{zone}"
    return (
        f'(resource.type != "compute.googleapis.com/Instance" || '
        f'resource.name.startsWith("{base}/instances/{prefix}")) && '
        f'(resource.type != "compute.googleapis.com/Disk" || resource.name.startsWith("{base}/disks/{prefix}"))'
    )


def role_id(spec: ClusterSpec) -> str:
    """The custom role's id: letters, digits, underscores and periods, 3 to 64 (catalog/slurm.yaml powerSave)."""
    text = re.sub(r"[^A-Za-z0-9_.]", "_", f"gpuCluster_{spec.stack}_{spec.name}_slurmPower")
    return text[:64]


def _power(spec: ClusterSpec, project: str, zone: str, placement: bool) -> tuple[PowerHooks, HeadPower]:
    """The head's resume/suspend hook (instances.insert from the partition's template, instances.delete) and the
    right to do exactly that (catalog/slurm.yaml clouds.gcp.powerSave)."""
    if spec.identity.existing:
        raise ConfigError(
            f"{CLUSTER_KEY}.identity.existing",
            "set with slurm.partitions on gcp: the head launches nodes that run as the nodes' service account, which "
            "needs iam.serviceAccounts.actAs granted on that account, and the cluster grants only on accounts it "
            "creates; drop identity.existing",
        )
    data = slurm_data()
    power = data["powerSave"]
    prefix = node_instance_prefix(spec)
    env = {
        "PROJECT": project,
        "ZONE": zone,
        "CLUSTER": spec.name,
        "COMPUTE_API": str(power["apiUrl"]),
        "TOKEN_URL": str(data["hook"]["tokenUrl"]),
        "POLL_SECONDS": str(power["pollSeconds"]),
        "POLLS": str(power["polls"]),
    }
    hooks = PowerHooks(power=bootstrap.script(POWER_HOOK), power_env=env, node_name=bootstrap.script(NODE_NAME_HOOK))
    permissions = (*power["permissions"], *([power["placementPermission"]] if placement else []))
    head = HeadPower(
        account_id=account_id(spec.name, "-head"),
        role_id=role_id(spec),
        permissions=tuple(permissions),
        condition=power_condition(project, zone, prefix),
        act_as_role=str(power["actAsRole"]),
    )
    return hooks, head


def slurm_plan(
    spec: ClusterSpec,
    project: str,
    mount: Mount | None,
    zone: str = "",
    placement: bool = False,
    monitoring: Part | None = None,
    taken: tuple[str, ...] = (),
    lustre: bool = False,
    head_parts: tuple[Part, ...] = (),
    login_parts: tuple[Part, ...] = (),
) -> GcpSlurm | None:
    """None unless scheduler slurm. `mount`: storage.shared's (the head and the login node mount it too);
    `monitoring`: the self-hosted Prometheus and Grafana part, after the login node's Slurm parts; `taken` and
    `lustre`: the cluster's subnet ranges and whether it builds Managed Lustre (slurm.accounting's peering range);
    `head_parts`, `login_parts`: after the head's and the login node's Slurm parts (the Ops Agent)."""
    layout = slurm_layout(spec)
    if layout is None:
        return None
    assert spec.slurm is not None and spec.slurm.head_instance_type is not None
    data = slurm_data()
    secret_id = munge_secret_id(spec)
    hook = bootstrap.script(MUNGE_KEY_HOOK)
    hook_env = {
        "MUNGE_SECRET": f"projects/{project}/secrets/{secret_id}",
        "METADATA_TOKEN_URL": str(data["hook"]["tokenUrl"]),
        "SECRET_MANAGER_URL": str(data["hook"]["apiUrl"]),
    }
    entry = catalog.cpu_image("gcp", spec.slurm.head_instance_type)  # images.login of the head's architecture
    key = conf_key(spec)
    conf_env = {"SLURM_CONF_KEY": key, "METADATA_URL": str(data["computeConfig"]["metadataUrl"])}
    hooks, power = _power(spec, project, zone, placement) if layout.elastic else (None, None)
    accounting = accounting_plan(spec, project, taken, lustre)
    head, login, compute = cluster_parts(
        layout,
        key_hook=hook,
        key_hook_env=hook_env,
        conf_hook=bootstrap.script(CONF_HOOK),
        conf_hook_env=conf_env,
        mount=mount,
        power=hooks,
        dbd=accounting.hook if accounting is not None else None,
    )
    head_script = startup_script((*head, *head_parts))
    login_script = startup_script((*login, *((monitoring,) if monitoring else ()), *login_parts))
    assert head_script is not None and login_script is not None
    return GcpSlurm(
        layout=layout,
        head_instance_type=spec.slurm.head_instance_type,
        head_image=f"projects/{entry['project']}/global/images/family/{entry['family']}",
        secret_id=secret_id,
        secret_role=str(data["secret"]["accessorRole"]),
        conf_key=key,
        head_script=head_script,
        login_script=login_script,
        compute_parts=compute,
        power=power,
        accounting=accounting,
    )
