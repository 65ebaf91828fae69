"""Elastic Slurm partitions on Alibaba Cloud (`slurm.partitions`): what the head's resume program launches and what
it may do (catalog/slurm.yaml clouds.alicloud.powerSave).

Per partition the GPU node as `plan` lays it out for the partition's type and market (`partition_spec`), made into an
ECS launch template by components/alicloud/partitions.py; the head runs RunInstances from it, one node at a time.
The template is pulumi-alicloud 4.0.0's `ecs.EcsLaunchTemplate`, whose one `network_interfaces` block takes no
traffic mode and no network card index (ecs/_inputs.py EcsLaunchTemplateNetworkInterfacesArgs: delete_on_release,
description, name, primary_ip, security_group_id, vswitch_id). So a partition of an eRDMA type (when the
cluster's fabric is wired) gets its ERIs in the RunInstances call instead: its template carries no vSwitch and no
security group, and the channel's launch line names them with the ERIs' network card indices
(`launch_target`); the resume program (alicloud_slurm_power.sh) sends them as `NetworkInterface.N.*`, the primary ENI
first (InstanceType Primary, card 0), as nodes.py gives the cluster's own instances. Why a template and explicit
parameters combine: catalog/slurm.yaml clouds.alicloud.powerSave (sources there).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ...bootstrap import script
from ...bootstrap.slurm import PowerHooks
from ...catalog import InstanceType
from ...catalog.slurm import cloud_data as slurm_cloud
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .identity import RAM_ROLE_NAME

POWER_HOOK = "alicloud_slurm_power.sh"
NODE_NAME_HOOK = "alicloud_slurm_node_name.sh"


def power_save() -> dict[str, Any]:
    """catalog/slurm.yaml clouds.alicloud.powerSave."""
    power: dict[str, Any] = slurm_cloud("alicloud")["powerSave"]
    return power


def power_hooks(spec: ClusterSpec) -> PowerHooks:
    """The head's hook (RunInstances from the partition's template, DeleteInstances of the node's instance) and the
    node's (its Slurm name from its instance name)."""
    power = power_save()
    env = {
        "ECS_ENDPOINT": str(power["endpoint"]).format(region=spec.region),
        "ECS_API_VERSION": str(power["apiVersion"]),
        "REGION": spec.region,
        "CLUSTER": spec.name,
        "NAME_TAG": str(power["nameTag"]),
        "CLUSTER_TAG": str(power["clusterTag"]),
        "POLL_SECONDS": str(power["pollSeconds"]),
        "POLLS": str(power["polls"]),
    }
    return PowerHooks(
        power=script(POWER_HOOK),
        power_env=env,
        node_name=script(NODE_NAME_HOOK),
        node_name_env={"CLUSTER": spec.name, "NAME_URL": str(power["instanceNameUrl"])},
    )


def head_role_name(spec: ClusterSpec) -> str:
    """The head's own RAM role (the nodes' role is `<cluster>-<stack>-nodes`): letters, digits, '.', '-'; 1 to 64."""
    return RAM_ROLE_NAME.sub("-", f"{spec.name}-{spec.stack}-head")[:64]


def power_document(spec: ClusterSpec, account: str, node_role: str) -> str:
    """The head's RAM policy: create instances tagged as this cluster's, delete only instances tagged so, find them,
    and give them the nodes' role (catalog/slurm.yaml clouds.alicloud.powerSave, where each scope is sourced)."""
    power = power_save()
    actions, tag = power["actions"], power["clusterTag"]
    statements = [
        {
            "Action": [actions["launch"]],
            "Condition": {"StringEquals": {f"acs:RequestTag/{tag}": [spec.name]}},
            "Effect": "Allow",
            "Resource": ["*"],
        },
        {
            "Action": [actions["delete"]],
            "Condition": {"StringEquals": {f"acs:ResourceTag/{tag}": [spec.name]}},
            "Effect": "Allow",
            "Resource": [str(power["instanceArn"]).format(region=spec.region, account=account)],
        },
        {"Action": [actions["find"]], "Effect": "Allow", "Resource": ["*"]},
        {
            "Action": [actions["passRole"]],
            "Effect": "Allow",
            "Resource": [str(power["roleArn"]).format(account=account, name=node_role)],
        },
    ]
    return json.dumps({"Statement": statements, "Version": "1"}, sort_keys=True)


def eri_warning(index: int, row: InstanceType) -> str:
    """An elastic partition of an eRDMA type in a cluster whose fabric is not wired: what its nodes do not get."""
    return (
        f"{CLUSTER_KEY}.slurm.partitions[{index}].instanceType: {row.instanceType} has {row.fabricDevices} eRDMA "
        "interface(s), which its elastic nodes do not get: the cluster's fabric is not wired (fabric: none, or the "
        f"cluster's instanceType has no fabric); 0 of {row.fabricGbps:g} Gb/s wired (NCCL runs over TCP between them)"
    )


def launch_target(template: str, vswitch: str, security_groups: list[str], eri_cards: tuple[int, ...]) -> str:
    """The channel's LAUNCH_<partition> value: the template id alone, or (a partition with ERIs) the template, the
    vSwitch, the security groups (comma-separated) and the ERIs' card indices (comma-separated, primary first), which
    alicloud_slurm_power.sh turns into RunInstances' NetworkInterface.N parameters."""
    if not eri_cards:
        return template
    return f"{template} {vswitch} {','.join(security_groups)} {','.join(str(card) for card in eri_cards)}"


def partition_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """What a launch template cannot carry."""
    if spec.partitions and spec.reservation:
        yield ConfigError(
            f"{CLUSTER_KEY}.reservation",
            "set with slurm.partitions on alicloud: pulumi-alicloud 4.0.0's ecs.EcsLaunchTemplate takes no private "
            "pool (no private_pool_options argument), so the partitions' nodes could not use it; drop reservation",
        )
