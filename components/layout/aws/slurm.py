"""AWS's half of `scheduler: slurm`, pure: the head node, the MUNGE key's secret and the three bootstraps.

The head is a small CPU instance in the node subnet (private), with Canonical's Ubuntu 22.04 (the login image) and
the node instance profile, whose role may read exactly the cluster's MUNGE secret (an inline policy on its ARN).
The GPU nodes get `compute_parts` after their own parts; the login node gets `login_user_data`. Both carry
`HEAD_PLACEHOLDER`, replaced by the head's private IP at deploy (components/aws/slurm.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import bootstrap, catalog
from ...bootstrap import Part, script
from ...bootstrap.mounts import Mount
from ...bootstrap.slurm import PowerHooks, cluster_parts
from ...catalog.slurm import cloud_data
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ..slurm import CloudSlurm, slurm_layout
from .accounting import AwsAccounting
from .accounting import plan as accounting_plan

KEY_HOOK = "aws_munge_key.sh"
CONF_HOOK = "aws_slurm_conf.sh"
POWER_HOOK = "aws_slurm_power.sh"
NODE_NAME_HOOK = "aws_slurm_node_name.sh"


@dataclass(frozen=True)
class AwsSlurm(CloudSlurm):
    head_image_parameter: str  # SSM parameter of the head's AMI (catalog/aws.yaml images.login)
    secret_name: str  # Secrets Manager name of the MUNGE key (the hooks read it by name)
    secret_action: str
    recovery_window_days: int
    conf_parameter: str  # the SSM parameter holding the compute-side configuration (updated in place)
    conf_action: str
    head_user_data: str
    login_user_data: str  # HEAD_PLACEHOLDER until deploy
    compute_parts: tuple[Part, ...]  # HEAD_PLACEHOLDER until deploy
    accounting: AwsAccounting | None = None  # slurm.accounting: RDS; the head's user data has DB_HOST_PLACEHOLDER

    @property
    def head_role_of_its_own(self) -> bool:
        """The head carries a role the GPU and login nodes do not: it launches nodes (elastic partitions) or reads the
        accounting database's password."""
        return bool(self.layout.elastic) or self.accounting is not None


def secret_name(spec: ClusterSpec) -> str:
    """One name per stack and cluster (Secrets Manager names take letters, digits and /_+=.@-)."""
    return f"gpu-cluster/{spec.stack}/{spec.name}/munge-key"


def conf_parameter(spec: ClusterSpec) -> str:
    """The SSM parameter of the GPU nodes' Slurm configuration: one per stack and cluster (catalog/slurm.yaml
    clouds.aws.computeConfig)."""
    return f"/gpu-cluster/{spec.stack}/{spec.name}/slurm-compute-conf"


def _power_hooks(spec: ClusterSpec) -> PowerHooks:
    """Elastic partitions on AWS: run-instances from the partition's template with the node's name as a tag, read back
    by the node from its instance metadata (catalog/slurm.yaml clouds.aws.powerSave)."""
    power = cloud_data("aws")["powerSave"]
    bad = [key for key in spec.base_tags if any(c in key for c in power["forbiddenTagKeyChars"])]
    if bad:
        raise ConfigError(
            f"{CLUSTER_KEY}.tags",
            f"{', '.join(bad)}: elastic partitions' nodes read their Slurm name from instance metadata tags, which "
            "EC2 allows only when no tag key holds a space or a slash (EC2 User Guide, work-with-tags-in-IMDS); "
            "rename them",
        )
    env = {"NAME_TAG": power["nameTag"], "CLUSTER_TAG": power["clusterTag"], "CLUSTER": spec.name}
    return PowerHooks(power=script(POWER_HOOK), power_env=env, node_name=script(NODE_NAME_HOOK))


def plan(
    spec: ClusterSpec, mount: Mount | None, login_extra: tuple[Part, ...] = (), head_extra: tuple[Part, ...] = ()
) -> AwsSlurm | None:
    """None unless scheduler slurm. `mount`: storage.shared's mount (the head and the login node mount it too);
    `login_extra` (the self-hosted Prometheus and Grafana, the logs' agent) after the login node's Slurm parts,
    `head_extra` (the logs' agent) after the head's."""
    layout = slurm_layout(spec)
    if layout is None:
        return None
    assert spec.slurm is not None and spec.slurm.head_instance_type is not None
    if spec.identity.existing is not None:
        raise ConfigError(
            f"{CLUSTER_KEY}.identity.existing",
            f"{spec.identity.existing} with scheduler slurm: the nodes read the MUNGE key from a secret the cluster "
            "creates, and the cluster cannot grant that to an instance profile it does not own; drop identity.existing",
        )
    aws = cloud_data("aws")
    name = secret_name(spec)
    login_image: dict[str, Any] = catalog.cpu_image("aws", spec.slurm.head_instance_type)
    parameter = conf_parameter(spec)
    limit = int(aws["computeConfig"]["maxValueBytes"])
    size = len(layout.compute_config.encode())
    if size > limit:  # the placeholders are longer than the ids that replace them: the deployed text is shorter
        raise ConfigError(
            f"{CLUSTER_KEY}.slurm",
            f"the GPU nodes' Slurm configuration (nodes.conf, partitions, users) is {size} bytes, over the {limit} "
            "bytes of the SSM parameter it travels in (catalog/slurm.yaml clouds.aws.computeConfig); list fewer "
            "partitions or users, or drop their SSH keys",
        )
    accounting = accounting_plan(spec)
    head, login, compute = cluster_parts(
        layout,
        key_hook=script(KEY_HOOK),
        key_hook_env={"MUNGE_SECRET_ID": name},
        conf_hook=script(CONF_HOOK),
        conf_hook_env={"SLURM_CONF_PARAMETER": parameter},
        mount=mount,
        power=_power_hooks(spec) if layout.elastic else None,
        dbd=accounting.hook if accounting is not None else None,
    )
    return AwsSlurm(
        layout=layout,
        head_instance_type=spec.slurm.head_instance_type,
        head_image_parameter=str(login_image["ssmParameter"]),
        secret_name=name,
        secret_action=str(aws["secretAction"]),
        recovery_window_days=int(aws["recoveryWindowInDays"]),
        conf_parameter=parameter,
        conf_action=str(aws["computeConfig"]["action"]),
        head_user_data=bootstrap.cloud_init((*head, *head_extra)),
        login_user_data=bootstrap.cloud_init((*login, *login_extra)),
        compute_parts=compute,
        accounting=accounting,
    )
