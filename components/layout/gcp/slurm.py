"""`scheduler: slurm` on GCP: the head VM, the MUNGE secret and the Slurm bootstraps (catalog/slurm.yaml clouds.gcp)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ... import bootstrap, catalog
from ...bootstrap import Part
from ...bootstrap.mounts import Mount
from ...bootstrap.slurm import cluster_parts
from ...spec import ClusterSpec
from ..slurm import CloudSlurm, slurm_layout
from .data import slurm_data
from .nodes import startup_script

# --- Slurm ----------------------------------------------------------------------------------
# scheduler: slurm on GCP (components/layout/slurm.py is the cloud-neutral layer): the head is a private VM in the
# host subnet on the nodes' service account, which may read exactly the cluster's MUNGE secret. The host VPC's
# internal rule already admits every port between the head, the GPU nodes and the login node (all in the host
# subnet), and nothing from outside: no Slurm firewall rule of its own.

MUNGE_KEY_HOOK = "gcp_munge_key.sh"
CONF_HOOK = "gcp_slurm_conf.sh"


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


def munge_secret_id(spec: ClusterSpec) -> str:
    """One secret per stack and cluster in the project: letters, digits, '-' and '_' (catalog/slurm.yaml clouds.gcp)."""
    text = re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.stack}-{spec.name}-munge-key")
    return text[: int(slurm_data()["secret"]["idMaxLength"])]


def conf_key(spec: ClusterSpec) -> str:
    """The project metadata key of the GPU nodes' Slurm configuration: one per stack and cluster in the project."""
    text = re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.stack}-{spec.name}-slurm-conf")
    return text[: int(slurm_data()["computeConfig"]["keyMaxLength"])]


def slurm_plan(spec: ClusterSpec, project: str, mount: Mount | None, monitoring: Part | None = None) -> GcpSlurm | None:
    """None unless scheduler slurm. `mount`: storage.shared's (the head and the login node mount it too);
    `monitoring`: the self-hosted Prometheus and Grafana part, after the login node's Slurm parts."""
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
    head, login, compute = cluster_parts(
        layout,
        key_hook=hook,
        key_hook_env=hook_env,
        conf_hook=bootstrap.script(CONF_HOOK),
        conf_hook_env=conf_env,
        mount=mount,
    )
    head_script = startup_script(head)
    login_script = startup_script((*login, *((monitoring,) if monitoring else ())))
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
    )
