"""`scheduler: slurm` on alicloud: the head node, the MUNGE key KMS-encrypted and its hook, the compute parts."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ... import bootstrap, catalog
from ...bootstrap import File, Part
from ...bootstrap.slurm import PowerHooks, compute_parts, head_parts, login_parts
from ...bootstrap.slurm_conf import HEAD_PLACEHOLDER
from ...catalog.slurm import cloud_data as slurm_cloud
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ..shared import Shared
from ..slurm import CloudSlurm, slurm_layout
from .accounting import AliAccounting
from .accounting import plan as accounting_plan
from .nodes import DRIVER_BOOT_FILE, Placement
from .partitions import head_role_name, power_hooks


@dataclass(frozen=True)
class AliSlurm(CloudSlurm):
    """`scheduler: slurm` on alicloud: a private head node, the MUNGE key KMS-encrypted, a client login node.

    The key is `random.RandomBytes` (a secret), encrypted with the cluster's own KMS key (`kms.Ciphertext`): only the
    ciphertext reaches the nodes, and only the cluster's node RAM role may call kms:Decrypt on that one key. A KMS
    *secret* would need a KMS instance (KMS 3.0: pulumi-alicloud 4.0.0 kms/secret.py, dkms_instance_id "In KMS 3.0,
    this parameter is required"); a key without one is a default key, free and region-wide (kms/key.py).
    """

    head_image_regex: str
    kms_endpoint: str  # the KMS shared gateway's VPC domain the hook calls
    conf_parameter: str  # the OOS parameter holding the compute-side configuration (updated in place)
    encryption_context: Mapping[str, str]
    head_user_data: str  # CIPHERTEXT_PLACEHOLDER until deploy
    login_user_data: str  # HEAD_PLACEHOLDER and CIPHERTEXT_PLACEHOLDER until deploy
    # the GPU nodes' user data (AlicloudLayout.user_data) carries both placeholders too
    power: PowerHooks | None = None  # slurm.partitions: the head's resume/suspend hook and the nodes' name hook
    # slurm.partitions or accounting: the head's own RAM role (it launches and deletes nodes, or decrypts the
    # database's password); None: the head carries the nodes' role
    head_role_name: str | None = None
    # slurm.accounting: ApsaraDB RDS; the head's user data has DB_HOST_PLACEHOLDER and DB_CIPHERTEXT_PLACEHOLDER
    accounting: AliAccounting | None = None


# --- scheduler: slurm ------------------------------------------------------------------------------------
MUNGE_HOOK = "alicloud_munge_key.sh"
CIPHERTEXT_PLACEHOLDER = "@@GPU_CLUSTER_MUNGE_CIPHERTEXT@@"  # the key's KMS ciphertext, known at deploy
# KMS Decrypt through the shared gateway's VPC domain (KMS API Decrypt: "VPC domain names:
# kms-vpc.<REGION_ID>.aliyuncs.com")
KMS_VPC_ENDPOINT = "https://kms-vpc.{region}.aliyuncs.com"
CONF_HOOK = "alicloud_slurm_conf.sh"
# The GPU driver installer reboots a fresh node: slurmd registers only in a boot with the driver (the same test the
# erdma unit makes), so a node never joins without its GPUs (ExecCondition: a non-zero exit skips the unit).
SLURM_AFTER_DRIVER = f"""[Service]
ExecCondition=/bin/sh -c '! [ "$(cat {DRIVER_BOOT_FILE} 2>/dev/null)" = "$(cat /proc/sys/kernel/random/boot_id)" ]'
"""


def munge_hook() -> str:
    """The key hook: KMS Decrypt of the key's ciphertext with the node's RAM role (tested on stubs)."""
    return bootstrap.script(MUNGE_HOOK)


def _hook_env(spec: ClusterSpec) -> dict[str, str]:
    context = json.dumps(slurm_encryption_context(spec), sort_keys=True, separators=(",", ":"))
    return {
        "MUNGE_CIPHERTEXT": CIPHERTEXT_PLACEHOLDER,
        "KMS_ENDPOINT": KMS_VPC_ENDPOINT.format(region=spec.region),
        "ENCRYPTION_CONTEXT": context,
    }


def slurm_encryption_context(spec: ClusterSpec) -> dict[str, str]:
    """Bound to the ciphertext: Decrypt succeeds only with the same context (KMS Encrypt EncryptionContext)."""
    return {"gpu-cluster": spec.name, "stack": spec.stack, "purpose": "munge-key"}


def conf_parameter(spec: ClusterSpec) -> str:
    """The OOS parameter of the GPU nodes' Slurm configuration: letters, digits, '-' and '_' (catalog/slurm.yaml
    clouds.alicloud.computeConfig), one per stack and cluster."""
    limit = int(slurm_cloud("alicloud")["computeConfig"]["nameMaxLength"])
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-cluster-{spec.stack}-{spec.name}-slurm-compute-conf")[:limit]


def _conf_env(spec: ClusterSpec) -> dict[str, str]:
    endpoint = str(slurm_cloud("alicloud")["computeConfig"]["endpoint"]).format(region=spec.region)
    return {"SLURM_CONF_PARAMETER": conf_parameter(spec), "OOS_ENDPOINT": endpoint}


def _switches(spec: ClusterSpec, placement: Placement) -> tuple[str, ...]:
    """One switch per deployment set the nodes are in (what the nodes get, not what was asked)."""
    return (f"{spec.name}-ds",) if placement == "cluster" else ()


def ali_slurm(
    spec: ClusterSpec,
    placement: Placement,
    shared: Shared | None,
    extra_parts: tuple[Part, ...] = (),  # after the head's and the login node's Slurm parts: monitoring.logs' Logtail
    login_extra: tuple[Part, ...] = (),  # after the login node's: the self-hosted monitoring
) -> AliSlurm | None:
    layout = slurm_layout(spec, switches=_switches(spec, placement))
    if layout is None:
        return None
    assert spec.slurm is not None and spec.slurm.head_instance_type is not None
    limit = int(slurm_cloud("alicloud")["computeConfig"]["maxValueChars"])
    size = len(layout.compute_config)
    if size > limit:  # the placeholders are longer than the template ids replacing them: the deployed text is shorter
        raise ConfigError(
            f"{CLUSTER_KEY}.slurm",
            f"the GPU nodes' Slurm configuration (nodes.conf, partitions, users) is {size} characters, over the "
            f"{limit} of the OOS parameter it travels in (catalog/slurm.yaml clouds.alicloud.computeConfig); list "
            "fewer partitions or users, or drop their SSH keys",
        )
    hook, env = munge_hook(), _hook_env(spec)
    mount = shared.mount if shared else None
    power = power_hooks(spec) if layout.elastic else None
    accounting = accounting_plan(spec, env["KMS_ENDPOINT"])
    head = head_parts(
        layout,
        key_hook=hook,
        key_hook_env=env,
        conf_hook=bootstrap.script(CONF_HOOK),
        conf_hook_env=_conf_env(spec),
        mount=mount,
        power=power,
        dbd=accounting.hook if accounting is not None else None,
    )
    login = login_parts(layout, head_address=HEAD_PLACEHOLDER, key_hook=hook, key_hook_env=env, mount=mount)
    return AliSlurm(
        layout=layout,
        head_instance_type=spec.slurm.head_instance_type,
        # a CPU VM: the plain public Ubuntu image of its architecture, as the login node's
        head_image_regex=str(catalog.cpu_image("alicloud", spec.slurm.head_instance_type)["nameRegex"]),
        kms_endpoint=env["KMS_ENDPOINT"],
        conf_parameter=conf_parameter(spec),
        encryption_context=slurm_encryption_context(spec),
        head_user_data=bootstrap.cloud_init((*head, *extra_parts)),
        login_user_data=bootstrap.cloud_init((*login, *extra_parts, *login_extra)),
        power=power,
        head_role_name=head_role_name(spec) if power or accounting else None,
        accounting=accounting,
    )


def slurm_compute_parts(spec: ClusterSpec, slurm: AliSlurm, placement: Placement) -> tuple[Part, ...]:
    """The GPU nodes' Slurm parts; with elastic partitions, slurmd as the CLOUD node its instance name names."""
    switches = _switches(spec, placement) if slurm.power is None else ()
    parts = compute_parts(
        slurm.layout,
        head_address=HEAD_PLACEHOLDER,
        key_hook=munge_hook(),
        key_hook_env=_hook_env(spec),
        switch=switches[0] if switches else None,
        node_name_hook=slurm.power.node_name if slurm.power else None,
        node_name_env=slurm.power.node_name_env if slurm.power else None,
    )
    after_driver = Part(
        "slurm-after-driver",
        files=(
            File("/etc/systemd/system/gpu-cluster-slurm-compute.service.d/10-after-driver.conf", SLURM_AFTER_DRIVER),
        ),
        summary="slurmd registers only in a boot with the GPU driver installed",
    )
    return (after_driver, *parts)
