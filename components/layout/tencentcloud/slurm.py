"""`scheduler: slurm` on Tencent Cloud (pure): the head node, the MUNGE key and the compute-side configuration in SSM.

The head is a private CVM instance in the nodes' subnet with its own security group, running slurmctld; the GPU
nodes (nodeGroup: instances) join it as the shared layout's nodes (components/layout/slurm.py); the login node is
the submit host. The MUNGE key is a random secret the stack makes and keeps in an SSM secret; the head's view of the
GPU nodes (`SlurmLayout.compute_config`) is another secret's version, updated in place. Every node reads them at boot
with the nodes' CAM role, which may read these two secrets and nothing else (catalog/slurm.yaml clouds.tencentcloud):
no key is in the user data. `components/tencentcloud/slurm.py` builds it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from ... import bootstrap
from ...bootstrap import Part
from ...bootstrap.slurm import compute_parts, head_parts, login_parts
from ...bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ...catalog.slurm import cloud_data as slurm_cloud
from ...spec import ClusterSpec
from ..slurm import CloudSlurm, refuse_oversized_compute_config, slurm_layout
from .logs import data as logs_data

MUNGE_HOOK = "tencentcloud_munge_key.sh"
CONF_HOOK = "tencentcloud_slurm_conf.sh"
TCCLI_LOCK = "/run/lock/gpu-cluster-tccli.lock"
_NAME = re.compile(r"[^A-Za-z0-9_-]")  # SSM secret names: letters, digits, '_' and '-' (ssm/secret.py secret_name)


@dataclass(frozen=True)
class TencentSlurm(CloudSlurm):
    """The head's type and image, the two SSM secrets and the user data of the head and the login node."""

    head_os_name: str  # the public image the head boots, as the login node's
    munge_secret: str
    conf_secret: str
    secret_version: str
    policy_name: str  # the nodes' role's custom policy reading the two secrets
    head_user_data: str  # the head's address is its own: no placeholder
    login_user_data: str  # HEAD_PLACEHOLDER until deploy (as the GPU nodes' user data)

    def node_policy(self, region: str, owner_uin: str, creator_uin: str) -> str:
        """The nodes' CAM role: GetSecretValue on the key's and the configuration's secrets only (SSM's resource for
        one secret, catalog/logs/tencentcloud.yaml credentials.secretResource)."""
        pattern = str(logs_data()["credentials"]["secretResource"])
        resources = [
            pattern.format(region=region, owner=owner_uin, creator=creator_uin, name=name)
            for name in (self.munge_secret, self.conf_secret)
        ]
        action = f"name/{slurm_cloud('tencentcloud')['secretAction']}"
        statement = {"action": [action], "effect": "allow", "resource": resources}
        return json.dumps({"statement": [statement], "version": "2.0"}, sort_keys=True)


def secret_name(spec: ClusterSpec, what: str) -> str:
    """One per cluster and stack (SSM names are unique per region and account), at most 128 characters."""
    return _NAME.sub("-", f"{spec.name}-{spec.stack}-slurm-{what}")[:128]


def _ssm_env(spec: ClusterSpec) -> dict[str, str]:
    credentials = logs_data()["credentials"]
    index = str(credentials["tccli"]["index"])
    return {
        "REGION": spec.region,
        "SSM_ENDPOINT": str(credentials["ssmEndpoint"]),
        "TCCLI_INDEX": index,
        "TCCLI_HOST": str(urlsplit(index).hostname),
        "TCCLI_VENV": str(credentials["tccli"]["venv"]),
        "TCCLI_LOCK": TCCLI_LOCK,
    }


def _key_env(spec: ClusterSpec) -> dict[str, str]:
    version = str(slurm_cloud("tencentcloud")["secretVersion"])
    return {"MUNGE_SECRET": secret_name(spec, "munge-key"), "MUNGE_SECRET_VERSION": version, **_ssm_env(spec)}


def _conf_env(spec: ClusterSpec) -> dict[str, str]:
    version = str(slurm_cloud("tencentcloud")["secretVersion"])
    return {"SLURM_CONF_SECRET": secret_name(spec, "compute-conf"), "SLURM_CONF_VERSION": version, **_ssm_env(spec)}


def tencent_slurm(
    spec: ClusterSpec,
    os_name: str,
    switch: str | None,
    extra_parts: tuple[Part, ...] = (),  # after the head's and the login node's Slurm parts: monitoring.logs
    login_extra: tuple[Part, ...] = (),  # after the login node's: the self-hosted monitoring
) -> TencentSlurm | None:
    """None unless `scheduler: slurm`; `switch`: the placement group or HPC cluster the nodes share, if any."""
    layout = slurm_layout(spec, switches=(switch,) if switch else ())
    if layout is None:
        return None
    assert spec.slurm is not None and spec.slurm.head_instance_type is not None
    refuse_oversized_compute_config(layout, "tencentcloud", "SSM secret version")
    key_hook, key_env = bootstrap.script(MUNGE_HOOK), _key_env(spec)
    head = head_parts(layout, key_hook=key_hook, key_hook_env=key_env, conf_hook=bootstrap.script(CONF_HOOK),
                      conf_hook_env=_conf_env(spec))  # fmt: skip
    login = login_parts(layout, head_address=HEAD_PLACEHOLDER, key_hook=key_hook, key_hook_env=key_env)
    return TencentSlurm(
        layout=layout,
        head_instance_type=spec.slurm.head_instance_type,
        head_os_name=os_name,
        munge_secret=key_env["MUNGE_SECRET"],
        conf_secret=secret_name(spec, "compute-conf"),
        secret_version=key_env["MUNGE_SECRET_VERSION"],
        policy_name=secret_name(spec, "secrets-read"),
        # Tencent takes 16 KB of user data (gzip, then Base64): the scripts go without their comments, as the GPU
        # nodes' do (layout/node.py)
        head_user_data=bootstrap.cloud_init(bootstrap.without_comments((*head, *extra_parts))),
        login_user_data=bootstrap.cloud_init(bootstrap.without_comments((*login, *extra_parts, *login_extra))),
    )


def slurm_compute_parts(spec: ClusterSpec, slurm: TencentSlurm, switch: str | None) -> tuple[Part, ...]:
    """The GPU nodes' Slurm parts: slurmd registering with the head (its address filled in at deploy)."""
    return compute_parts(
        slurm.layout,
        head_address=HEAD_PLACEHOLDER,
        key_hook=bootstrap.script(MUNGE_HOOK),
        key_hook_env=_key_env(spec),
        switch=switch,
    )
