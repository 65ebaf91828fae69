"""`scheduler: slurm` on Huawei Cloud (pure): the head node, the MUNGE key and the compute-side configuration in DEW.

The head is a private ECS in the nodes' subnet with its own security group, running slurmctld; the GPU nodes
(nodeGroup: instances) join it as the shared layout's nodes (components/layout/slurm.py); the login node is the
submit host. /home is the head's NFS export, or on `storage.shared` (SFS Turbo) when set. The MUNGE key is a random
secret the stack makes and keeps in a DEW CSMS secret on the cluster's key; the head's view of the GPU nodes
(`SlurmLayout.compute_config`) is another secret, a new version when it changes. Every node reads them at boot with
the agency's temporary credentials; the agency gets one custom policy reading these two secrets (and decrypting with
the cluster's key) only (catalog/slurm.yaml clouds.huaweicloud): no key is in the user data.
`components/huaweicloud/slurm.py` builds it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ... import bootstrap
from ...bootstrap import Part, gzipped
from ...bootstrap.slurm import compute_parts, head_parts, login_parts
from ...bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ...catalog import cpu_image
from ...catalog import monitoring as catalog_monitoring
from ...catalog.slurm import cloud_data as slurm_cloud
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from ..shared import Shared
from ..slurm import CloudSlurm, refuse_oversized_compute_config, slurm_layout
from .data import huawei_data
from .nodes import user_data_max

MUNGE_HOOK = "huaweicloud_munge_key.sh"
CONF_HOOK = "huaweicloud_slurm_conf.sh"
# CSMS CreateSecret name: "^[a-zA-Z0-9_-]{1,64}$" (huaweicloudsdkcsms 3.1.219 CreateSecretRequestBody.name; the
# provider's docs also allow '.', the API does not)
_NAME = re.compile(r"[^A-Za-z0-9_-]")
_NAME_MAX = 64


@dataclass(frozen=True)
class HuaweiSlurm(CloudSlurm):
    """The head's flavor and image, the two CSMS secrets, the agency's policy and the head's and login node's user
    data."""

    head_image_name_regex: str  # the public image the head boots, as the login node's
    munge_secret: str
    conf_secret: str
    role_name: str  # the agency's custom policy (iam.Role) reading the two secrets
    head_user_data: str  # SOURCE_PLACEHOLDER with storage.shared; the head's address is its own
    login_user_data: str  # HEAD_PLACEHOLDER until deploy (as the GPU nodes' user data)

    def role_policy(self, key_id: str) -> str:
        """The custom policy: read the latest version of exactly the key's and the configuration's secrets, and
        decrypt them with the cluster's key (ShowSecretVersion's dependency)."""
        grant = slurm_cloud("huaweicloud")["grant"]
        secrets = [str(grant["secretResource"]).format(name=n) for n in (self.munge_secret, self.conf_secret)]
        statements = [
            {"Action": [str(grant["secretAction"])], "Effect": "Allow", "Resource": secrets},
            {
                "Action": [str(grant["decryptAction"])],
                "Effect": "Allow",
                "Resource": [str(grant["keyResource"]).format(key_id=key_id)],
            },
        ]
        return json.dumps({"Statement": statements, "Version": "1.1"}, sort_keys=True)


def size_problems(slurm: HuaweiSlurm) -> list[ConfigError]:
    """The head's and the login node's user data within Huawei's 32 KB (gzip; the addresses filled in at deploy are
    shorter than their placeholders). The GPU nodes' is `nodes.node_problems`."""
    texts = {"Slurm head's": slurm.head_user_data, "login node's": slurm.login_user_data}
    return [
        ConfigError(
            f"{CLUSTER_KEY}.slurm",
            f"the {who} user data is {size} bytes (gzip), over Huawei's {user_data_max()} "
            f"({one_line(huawei_data()['userData']['source'])}); turn off monitoring or list fewer slurm.users",
        )
        for who, text in texts.items()
        if (size := len(gzipped(text))) > user_data_max()
    ]


def secret_name(spec: ClusterSpec, what: str) -> str:
    """One per cluster and stack (CSMS names are unique per project), at most 64 characters. A name that fits, or
    keeps part of `what` when cut (munge-key, compute-conf and secrets-read differ from their first letter), is cut
    at the end as before (the secrets keep their identity); a longer cluster and stack name is cut before
    `-slurm-{what}` instead, so the two secrets' names never become one."""
    stem, suffix = _NAME.sub("-", f"{spec.name}-{spec.stack}"), f"-slurm-{what}"
    if len(stem) + len("-slurm-") < _NAME_MAX:
        return (stem + suffix)[:_NAME_MAX]
    return stem[: _NAME_MAX - len(suffix)] + suffix


def _csms_env(spec: ClusterSpec) -> dict[str, str]:
    entry = catalog_monitoring.self_hosted("huaweicloud")
    assert entry is not None
    data = slurm_cloud("huaweicloud")
    return {
        "METADATA_URL": str(entry["credentials"]),
        "CSMS_ENDPOINT": str(data["endpoint"]).format(region=spec.region),
        "CSMS_VERSION": str(data["versionId"]),
    }


def _key_env(spec: ClusterSpec) -> dict[str, str]:
    return {"MUNGE_SECRET": secret_name(spec, "munge-key"), **_csms_env(spec)}


def _conf_env(spec: ClusterSpec) -> dict[str, str]:
    return {"SLURM_CONF_SECRET": secret_name(spec, "compute-conf"), **_csms_env(spec)}


def huawei_slurm(
    spec: ClusterSpec,
    shared: Shared | None,
    login_extra: tuple[Part, ...] = (),  # after the login node's Slurm parts: the self-hosted monitoring, ICAgent
    head_extra: tuple[Part, ...] = (),  # after the head's Slurm parts: ICAgent with monitoring.logs
) -> HuaweiSlurm | None:
    """None unless `scheduler: slurm`. No switch: no catalog flavor has a fabric (the nodes talk over the VPC)."""
    layout = slurm_layout(spec, switches=())
    if layout is None:
        return None
    assert spec.slurm is not None and spec.slurm.head_instance_type is not None
    refuse_oversized_compute_config(layout, "huaweicloud", "CSMS secret")
    key_hook, key_env = bootstrap.script(MUNGE_HOOK), _key_env(spec)
    mount = shared.mount if shared else None
    head = head_parts(layout, key_hook=key_hook, key_hook_env=key_env, conf_hook=bootstrap.script(CONF_HOOK),
                      conf_hook_env=_conf_env(spec), mount=mount)  # fmt: skip
    login = login_parts(layout, head_address=HEAD_PLACEHOLDER, key_hook=key_hook, key_hook_env=key_env, mount=mount)
    return HuaweiSlurm(
        layout=layout,
        head_instance_type=spec.slurm.head_instance_type,
        head_image_name_regex=str(cpu_image("huaweicloud", spec.slurm.head_instance_type)["nameRegex"]),
        munge_secret=key_env["MUNGE_SECRET"],
        conf_secret=secret_name(spec, "compute-conf"),
        role_name=secret_name(spec, "secrets-read"),
        # Huawei takes 32 KB of user data: the Slurm parts go without their comments, as Tencent's (layout/tencentcloud)
        head_user_data=bootstrap.cloud_init((*bootstrap.without_comments(head), *head_extra)),
        login_user_data=bootstrap.cloud_init((*bootstrap.without_comments(login), *login_extra)),
    )


def slurm_compute_parts(spec: ClusterSpec, slurm: HuaweiSlurm) -> tuple[Part, ...]:
    """The GPU nodes' Slurm parts: slurmd registering with the head (its address filled in at deploy), without their
    comments (32 KB)."""
    parts = compute_parts(
        slurm.layout, head_address=HEAD_PLACEHOLDER, key_hook=bootstrap.script(MUNGE_HOOK), key_hook_env=_key_env(spec)
    )
    return bootstrap.without_comments(parts)
