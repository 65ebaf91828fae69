"""The cloud-neutral Slurm layer (`scheduler: slurm`): pure data and the rendered configuration files.

Contract for every cloud (the AWS wiring in `components/aws/slurm.py` is the worked example):

1. `slurm_layout(spec, switches=...)` -> `SlurmLayout`: the node definition from the catalog row, the partition,
   the topology and the text of slurm.conf, gres.conf, cgroup.conf and topology.yaml. `switches` names one switch
   per placement group the cloud built (default: one, when `spec.placement` is `cluster`, else none); a topology is
   written only for two switches or more (`topology_for`).
   Raises `ConfigError` for what is not built (MIG partitions as GRES). With `slurm.accounting` it holds slurmdbd's
   settings and slurmdbd.conf (`accounting_for`); the cloud builds the database and fills its address in.
2. `components.bootstrap.slurm.head_parts / compute_parts / login_parts` turn it into bootstrap `Part`s. Each takes
   the cloud's munge-key hook: a shell script that prints the cluster's MUNGE key, base64, on stdout (read with the
   node's own identity from the cloud's secret store; the key is never in user data, inputs or outputs). The head's
   also takes the cloud's conf hook, which prints `SlurmLayout.compute_config` (nodes.conf, topology.yaml: what a change
   of the GPU nodes changes) from a resource the cloud updates in place; the head's own files never change with them.
3. The compute and login parts take `head_address`: the head node's private address, or `HEAD_PLACEHOLDER` when it
   is known only at deploy; the cloud then replaces the placeholder in the rendered user data with the head
   instance's private IP (as `bootstrap.mounts.SOURCE_PLACEHOLDER` is replaced with a filesystem's address).
4. The head fills `SLURMCTLD_HOST_TOKEN` itself at boot with `<short hostname>(<address>)`: slurmctld only starts
   on the host that SlurmctldHost names, and the hostname is the cloud's to choose.

Design (why, with sources in catalog/slurm.yaml): every image is Ubuntu 22.04, whose own Slurm (21.08) lacks dynamic
nodes, sackd and topology.yaml, so the nodes install SchedMD's packages (slurm-smd 25.11) from packages.microsoft.com.
GPU nodes register as dynamic nodes (`slurmd -Z`): a managed group's nodes get names nobody knows in advance, and
instances mode works the same way. They join the partition through a NodeSet on a feature, and (with two placement
groups or more) their group's switch through `Topology=<topology>:<switch>` at registration. The partition gives a GPU
job its GPUs' share of the node (DefMemPerGPU, DefCpuPerGPU); MaxNodeCount leaves room for the replacements of nodes
that died, which the head's cleanup timer deletes (components/bootstrap/slurm_cleanup.sh). With `slurm.partitions`
the GPU nodes are elastic instead: `State=CLOUD` nodes per partition that the head's resume program launches from the
partition's cloud template when jobs wait, and its suspend program deletes when idle (power saving; `ElasticPartition`).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..bootstrap.slurm_conf import (
    LOCAL_STATE_DIR,
    Accounting,
    ElasticPartition,
    NodeDefinition,
    Ports,
    PowerSave,
    SlurmLayout,
    gres_type,
    launch_placeholder,
    max_node_count,
    packages,
    real_memory_mib,
    render_cgroup_conf,
    render_gres_conf,
    render_nodes_conf,
    render_slurm_conf,
    render_slurmdbd_conf,
    render_topology_yaml,
    topology_for,
)
from ..catalog import InstanceType
from ..catalog import accounting as accounting_catalog
from ..catalog.slurm import cloud_data, data
from ..errors import CLUSTER_KEY, ConfigError, refuse
from ..spec import ClusterSpec, PartitionSpec
from ..spec.model import SlurmUser


@dataclass(frozen=True)
class CloudSlurm:
    """What every cloud's half of `scheduler: slurm` holds (its own fields follow): the layout and the head's type."""

    layout: SlurmLayout
    head_instance_type: str

    @property
    def key_bytes(self) -> int:
        """The MUNGE key's length, for the cloud's random key (catalog/slurm.yaml mungeKeyBytes)."""
        return self.layout.munge_key_bytes


def cluster_name(spec: ClusterSpec) -> str:
    # ClusterName is lowercased by Slurm and used in file names: the spec's name already is [a-z][a-z0-9-]*
    return spec.name.replace("-", "_")


def default_switches(spec: ClusterSpec) -> tuple[str, ...]:
    """One switch when the cloud packs the nodes into one placement group (`placement: cluster`)."""
    return (f"{spec.name}-pg",) if spec.placement == "cluster" else ()


def _problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """What the catalog must give (the spec refused the Slurm options that are not built)."""
    k = f"{CLUSTER_KEY}."
    assert spec.slurm is not None
    if spec.instance.memoryGiB is None and not spec.partitions:
        yield ConfigError(
            f"{k}instanceType",
            f"{spec.instance.instanceType} has no memory in the catalog: Slurm's RealMemory cannot be set",
        )
    for i, part in enumerate(spec.partitions):
        if part.instance.memoryGiB is None:
            yield ConfigError(
                f"{k}slurm.partitions[{i}].instanceType",
                f"{part.instance.instanceType} has no memory in the catalog: Slurm's RealMemory cannot be set",
            )


def slurm_layout(spec: ClusterSpec, switches: tuple[str, ...] | None = None) -> SlurmLayout | None:
    """The Slurm layer of a cluster; None unless `scheduler: slurm`. See the module docstring for the contract."""
    if spec.scheduler != "slurm" or spec.slurm is None:
        return None
    refuse(_problems(spec))
    d = data()
    node = node_definition(spec.instance, spec.slurm.partition, spec.gpu_partition, spec.slurm.mps)
    ports = Ports(
        slurmctld=int(d["ports"]["slurmctld"]),
        slurmd=int(d["ports"]["slurmd"]),
        srun_range=(int(d["ports"]["srunRange"][0]), int(d["ports"]["srunRange"][1])),
        nfs=int(d["ports"]["nfs"]),
    )
    chosen = default_switches(spec) if switches is None else switches
    topology = topology_for(tuple(chosen))
    shared = spec.storage.shared.path if spec.storage.shared is not None else None
    state_dir = f"{shared}/slurm/state" if shared else LOCAL_STATE_DIR
    layout = SlurmLayout(
        cluster_name=cluster_name(spec),
        partition=spec.slurm.partition,
        node=node,
        max_nodes=spec.max_nodes,
        max_node_count=max_node_count(spec.max_nodes),
        packages=packages(),
        ports=ports,
        topology=topology,
        state_dir=state_dir,
        shared_path=shared,
        export_cidr=spec.network.cidr,
        slurm_uid=int(d["slurmUid"]),
        munge_key_bytes=int(d["mungeKeyBytes"]),
        slurm_conf="",
        nodes_conf="",
        gres_conf=render_gres_conf(mps=node.mps),
        cgroup_conf=render_cgroup_conf(),
        topology_yaml=render_topology_yaml(topology) if topology else None,
    )
    if job_map(spec):
        layout = replace(layout, job_map=True)
    if spec.slurm.users:
        layout = replace(layout, users_conf=users_conf(spec.slurm.users))
    if spec.slurm.containers != "none":
        layout = replace(layout, containers=spec.slurm.containers)
    if spec.slurm.accounting:
        accounting = accounting_for(spec.cloud)
        layout = replace(
            layout, accounting=accounting, slurmdbd_conf=render_slurmdbd_conf(layout.cluster_name, accounting)
        )
    if spec.partitions:
        power = d["powerSave"]
        layout = replace(
            layout,
            elastic=tuple(
                ElasticPartition(
                    name=p.name,
                    node=node_definition(p.instance, p.name, mps=spec.slurm.mps),
                    hostlist=p.hostlist,
                    max_nodes=p.max_nodes,
                    min_nodes=p.min_nodes,
                    default=p.default,
                    launch=launch_placeholder(p.name),
                )
                for p in spec.partitions
            ),
            power_save=PowerSave(
                suspend_time=spec.slurm.suspend_after_seconds or int(power["suspendAfterSeconds"]),
                resume_timeout=spec.slurm.resume_timeout_seconds or int(power["resumeTimeoutSeconds"]),
                suspend_timeout=int(power["suspendTimeoutSeconds"]),
            ),
            partition=next(p.name for p in spec.partitions if p.default),
            max_nodes=sum(p.max_nodes for p in spec.partitions),
        )
    return _with_conf(layout)


def job_map(spec: ClusterSpec) -> bool:
    """The GPU nodes write which jobs use each GPU for the DCGM exporter's hpc_job label (bootstrap/slurm_jobmap.py):
    where the exporter runs (monitoring.dcgmExporter, NVIDIA GPUs), and not on MIG instances (gpuPartition), whose
    Slurm GPU index counts the node's instances while the exporter names one by <GPU>.<GPU instance id>."""
    rows = (spec.instance, *(p.instance for p in spec.partitions))
    return spec.dcgm_exporter and spec.gpu_partition is None and any(r.gpu_vendor == "nvidia" for r in rows)


def accounting_for(cloud: str) -> Accounting:
    """slurmdbd's settings (catalog/accounting.yaml); the spec refused accounting on a cloud that does not build it."""
    d = accounting_catalog.data()["slurmdbd"]
    offer = accounting_catalog.cloud_offer(cloud)
    return Accounting(
        port=int(d["port"]),
        storage_port=int(d["storagePort"]),
        database=str(d["database"]),
        user=str(d["user"]),
        packages=tuple(d["packages"]),
        service=str(offer.get("service", "")),
        storage_parameters=str(offer["storageParameters"]) if offer.get("storageParameters") else None,
    )


def partition_spec(spec: ClusterSpec, part: PartitionSpec, **cloud: Any) -> ClusterSpec:
    """The cluster as one elastic partition's nodes see it: its type and market, launched one by one from its
    template, no group to scale or roll, no scheduler of its own (its Slurm parts are the cluster's compute parts);
    `cloud`: what the cloud's launch decides otherwise (node_group, placement, fabric_wired)."""
    return replace(
        spec,
        instance=part.instance,
        nodes=0,
        max_nodes=part.max_nodes,
        min_nodes=0,
        spot=part.spot,
        spot_on_demand_base=0,
        scaling=None,
        scheduler="none",
        slurm=None,
        partitions=(),
        budget=None,
        gpu_partition=None,
        # no group replaces a node: a failed check is reported, and Slurm's health program drains the node
        health_action=None if spec.health_action is None else "report",
        **{"node_group": "instances", **cloud},
    )


def users_conf(users: tuple[SlurmUser, ...]) -> str:
    """users.conf: one "<name> <uid> <sudo> <public key as base64, or ->" line per person (slurm_users.sh)."""
    lines = []
    for user in users:
        key = base64.b64encode(user.ssh_public_key.encode()).decode() if user.ssh_public_key else "-"
        lines.append(f"{user.name} {user.uid} {'true' if user.sudo else 'false'} {key}\n")
    return "".join(lines)


def node_definition(
    row: InstanceType, feature: str, mig: tuple[str, int] | None = None, mps: bool = False
) -> NodeDefinition:
    """A GPU node as Slurm sees it, from its catalog row; `mig` (gpuPartition: profile, instances per GPU) makes
    each MIG instance a GPU typed by its profile, `mps` adds the MPS shares (catalog/slurm.yaml mps)."""
    margin = data()["realMemoryMargin"]
    if mig is not None:
        # AutoDetect=nvml names a MIG instance's type after its GPU and profile; a configured Type need only be a
        # substring of it (gres.conf(5)), and the profile is one (Name=gpu Type=<profile>, as Compute Canada's
        # puppet-magic_castle nvidia_gres.sh writes MIG instances)
        gres = f"gpu:{mig[0]}:{mig[1] * row.gpus}"
    else:
        # a GPU the catalog does not name (gpu: null) is an untyped GRES: gpu:<count>
        gres = f"gpu:{gres_type(row.gpu)}:{row.gpus}" if row.gpu else f"gpu:{row.gpus}"
    return NodeDefinition(
        cpus=row.vcpus,
        real_memory_mib=real_memory_mib(float(row.memoryGiB or 0)),
        gres=gres,
        feature=feature,
        memory_note=f"{row.memoryGiB} GiB less {margin['percent']}% or {margin['minimumMiB']} MiB, whichever is "
        f"larger ({margin['source']})",
        mps=int(data()["mps"]["perGpu"]) * row.gpus if mps else 0,
    )


def _with_conf(layout: SlurmLayout) -> SlurmLayout:
    return replace(
        layout,
        slurm_conf=render_slurm_conf(layout),
        nodes_conf=render_nodes_conf(layout),
        gres_conf=render_gres_conf(layout.elastic, layout.node.mps),
    )


def refuse_oversized_compute_config(layout: SlurmLayout, cloud: str, store: str) -> None:
    """The nodes' view (nodes.conf, users) travels in one value of the cloud's secret store (`store`, as the message
    names it): refused by key when it outgrows catalog/slurm.yaml clouds.<cloud>.computeConfig.maxValueBytes."""
    limit = int(cloud_data(cloud)["computeConfig"]["maxValueBytes"])
    size = len(layout.compute_config.encode())
    if size > limit:
        raise ConfigError(
            f"{CLUSTER_KEY}.slurm",
            f"the GPU nodes' Slurm configuration (nodes.conf, users) is {size} bytes, over the {limit} of the {store} "
            f"it travels in (catalog/slurm.yaml clouds.{cloud}.computeConfig); list fewer users, or drop their SSH "
            "keys",
        )
