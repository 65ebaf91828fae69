"""The Slurm configuration the nodes run, as data and rendered text: the types the Slurm parts take (`SlurmLayout`,
`NodeDefinition`, `Ports`, `Topology`, `Packages`), the paths and tokens they share, and slurm.conf, gres.conf,
cgroup.conf and topology.yaml rendered from a layout (sources in catalog/slurm.yaml). The spec-reading half is
`components.layout.slurm`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import yaml

from ..catalog.accounting import data as accounting_data
from ..catalog.slurm import data

HEAD_PLACEHOLDER = "@@GPU_CLUSTER_SLURM_HEAD@@"
SLURMCTLD_HOST_TOKEN = "@@GPU_CLUSTER_SLURMCTLD_HOST@@"
IMAGE_DISTRO = "ubuntu-22.04"  # every image in catalog/<cloud>.yaml `images:`
CONF_DIR = "/etc/slurm"
HEALTH_PROGRAM = "/usr/local/sbin/gpu-cluster-slurm-health"
# slurm.mps: slurmd's Prolog, TaskProlog and Epilog, one program under three names (slurm_mps.sh), and where it keeps
# the per-GPU MPS daemons' pipe directories
MPS_PROGRAM = "/usr/local/sbin/gpu-cluster-slurm-mps"
MPS_PROLOG = f"{MPS_PROGRAM}-prolog"
MPS_TASK_PROLOG = f"{MPS_PROGRAM}-task-prolog"
MPS_EPILOG = f"{MPS_PROGRAM}-epilog"
MPS_STATE = "/run/gpu-cluster-mps"
# an elastic partition's launch target (a launch template id), known only at deploy: filled into the channel's text
LAUNCH_PLACEHOLDER = "@@GPU_CLUSTER_SLURM_LAUNCH_{}@@"
LAUNCH_ENV = "launch.env"  # in CONF_DIR: LAUNCH_<partition>=<target>, read by the resume program
# power saving (slurm.partitions): slurmctld runs these with a hostlist; one script, which acts by the name it runs as
RESUME_PROGRAM = "/usr/local/sbin/gpu-cluster-slurm-resume"
SUSPEND_PROGRAM = "/usr/local/sbin/gpu-cluster-slurm-suspend"
RESUME_FAIL_PROGRAM = "/usr/local/sbin/gpu-cluster-slurm-resume-fail"
LOCAL_STATE_DIR = "/var/spool/slurmctld"
# slurm.accounting: the head fills in its own address (AccountingStorageHost: sacct on the login node reaches slurmdbd
# there) and short hostname (DbdHost) at boot; the database's address is known at deploy (the cloud fills it into the
# head's user data, as HEAD_PLACEHOLDER), its password at boot (read from the cloud's secret store by the head's hook)
HEAD_ADDRESS_TOKEN = "@@GPU_CLUSTER_HEAD_ADDRESS@@"
DBD_HOST_TOKEN = "@@GPU_CLUSTER_DBD_HOST@@"
DB_HOST_PLACEHOLDER = "@@GPU_CLUSTER_DB_HOST@@"
DB_PASSWORD_TOKEN = "@@GPU_CLUSTER_DB_PASSWORD@@"
SLURMDBD_LOG = "/var/log/slurm/slurmdbd.log"
SLURMCTLD_LOG = "/var/log/slurm/slurmctld.log"
SLURMD_LOG = "/var/log/slurm/slurmd.log"
TOPOLOGY_NAME = "placement"
# The compute-side part of slurm.conf, `Include`d by it: what a change of the GPU nodes (nodes, maxNodes, the instance
# type, placement) changes. It reaches the head through the cloud's in-place channel at run time, never through the
# head's user data (docs/slurm.md, Growing and changing the GPU nodes).
NODES_CONF = "nodes.conf"
# Each file of the compute-side configuration, in the one text the channel carries, starts with this line and its name
FILE_HEADER = "# gpu-cluster file: "


@dataclass(frozen=True)
class Packages:
    """What a node installs for its role, from where (catalog/slurm.yaml `packages:`)."""

    version: str
    repo: str
    key: str
    pin_origin: str
    head: tuple[str, ...]
    compute: tuple[str, ...]
    login: tuple[str, ...]
    munge: tuple[str, ...]
    nfs_server: tuple[str, ...]
    nfs_client: tuple[str, ...]


@dataclass(frozen=True)
class NodeDefinition:
    """The GPU nodes as Slurm sees them (from the catalog row)."""

    cpus: int | None  # the catalog's vCPUs; slurmd -Z detects sockets/cores/threads itself
    real_memory_mib: int
    gres: str  # gpu:<type>:<count>; with gpuPartition gpu:<MIG profile>:<instances>, each MIG instance a GPU
    feature: str  # the NodeSet feature that puts the node in its partition
    memory_note: str  # the margin applied, and why
    mps: int = 0  # slurm.mps: the node's mps GRES count (catalog/slurm.yaml mps.perGpu per GPU); 0: none

    @property
    def all_gres(self) -> str:
        """The node's Gres= value: the GPUs, and the MPS shares beside them."""
        return f"{self.gres},mps:{self.mps}" if self.mps else self.gres

    @property
    def gpus(self) -> int:
        return int(self.gres.rsplit(":", 1)[1])

    @property
    def mem_per_gpu_mib(self) -> int:
        """DefMemPerGPU: RealMemory shared evenly by the GPUs (catalog/slurm.yaml jobDefaults)."""
        return self.real_memory_mib // self.gpus

    @property
    def cpus_per_gpu(self) -> int | None:
        """DefCpuPerGPU: the vCPUs shared evenly by the GPUs, rounded down to whole cores of two threads
        (catalog/slurm.yaml jobDefaults); None when the catalog has no vCPU count."""
        if self.cpus is None:
            return None
        share = self.cpus // self.gpus
        return max(share - share % 2, 1)


@dataclass(frozen=True)
class ElasticPartition:
    """An elastic partition (power saving): `State=CLOUD` nodes `<name>-<i>` that the head's resume program launches
    from the partition's cloud template (`launch`) and its suspend program deletes."""

    name: str
    node: NodeDefinition
    hostlist: str  # gpu-[0-3]
    max_nodes: int
    min_nodes: int  # the first min_nodes stay up once launched (SuspendExcNodes)
    default: bool
    launch: str = ""  # the cloud's launch target: a launch template id, filled at deploy (LAUNCH_PLACEHOLDER)

    @property
    def kept(self) -> str | None:
        """The nodes never suspended: the partition's first `min_nodes`, as a hostlist."""
        if self.min_nodes == 0:
            return None
        return f"{self.name}-0" if self.min_nodes == 1 else f"{self.name}-[0-{self.min_nodes - 1}]"


@dataclass(frozen=True)
class PowerSave:
    """slurm.conf's power-saving settings (catalog/slurm.yaml powerSave)."""

    suspend_time: int
    resume_timeout: int
    suspend_timeout: int


@dataclass(frozen=True)
class Accounting:
    """slurm.accounting: slurmdbd on the head, its database the cloud's managed MySQL (catalog/accounting.yaml)."""

    port: int  # DbdPort = AccountingStoragePort
    storage_port: int
    database: str  # StorageLoc
    user: str  # StorageUser
    packages: tuple[str, ...]  # the head's slurmdbd
    service: str  # the cloud's managed database, for the summary
    # StorageParameters: what the cloud's database requires of the connection (Azure: TLS with a CA); None: nothing
    storage_parameters: str | None = None

    def slurm_conf_lines(self) -> list[str]:
        d = accounting_data()["slurmdbd"]
        return [
            # slurmctld sends every job's record to slurmdbd on the head; sacct and sacctmgr ask it there
            f"AccountingStorageType={d['accountingStorageType']}",
            f"AccountingStorageHost={HEAD_ADDRESS_TOKEN}",
            f"AccountingStoragePort={self.port}",
            f"JobAcctGatherType={d['jobAcctGather']}",
        ]


@dataclass(frozen=True)
class Topology:
    """topology/tree: one leaf switch per placement group (jobs then stay inside one group)."""

    name: str
    switches: tuple[str, ...]


@dataclass(frozen=True)
class Ports:
    slurmctld: int
    slurmd: int
    srun_range: tuple[int, int]
    nfs: int


@dataclass(frozen=True)
class SlurmLayout:
    cluster_name: str
    partition: str
    node: NodeDefinition
    max_nodes: int
    max_node_count: int  # MaxNodeCount: max_nodes and room for the replacements of dead nodes (max_node_count())
    packages: Packages
    ports: Ports
    topology: Topology | None
    state_dir: str
    shared_path: str | None  # storage.shared: /home and the state live there; else the head exports /home
    export_cidr: str  # who may mount the head's /home (the cluster network)
    slurm_uid: int
    munge_key_bytes: int
    slurm_conf: str  # controller-wide, the same whatever the GPU nodes are; `Include`s NODES_CONF
    nodes_conf: str  # compute-side: MaxNodeCount, the node set, the partition and its per-GPU defaults
    gres_conf: str
    cgroup_conf: str
    topology_yaml: str | None
    # slurm.partitions: the elastic partitions and their power saving (empty: the group's dynamic nodes, `partition`)
    elastic: tuple[ElasticPartition, ...] = ()
    power_save: PowerSave | None = None
    # slurm.users: "<name> <uid> <sudo> <key base64 or ->" lines (users.conf, through the channel); None: no users
    users_conf: str | None = None
    containers: str = "none"  # slurm.containers: pyxis puts plugstack.conf in the channel and enroot/pyxis on nodes
    accounting: Accounting | None = None  # slurm.accounting: slurmdbd on the head (slurmdbd_conf: its template)
    slurmdbd_conf: str | None = None  # DB_HOST_PLACEHOLDER until deploy, DB_PASSWORD_TOKEN until boot
    # the GPU nodes' job map for the DCGM exporter's hpc_job label (bootstrap/slurm_jobmap.py): with the exporter on
    # NVIDIA GPUs, not with MIG instances as the GRES
    job_map: bool = False

    @property
    def power_saving(self) -> str:
        """What the `slurm.powerSaving` output says: the elastic partitions' ranges and timers, or off."""
        if not self.elastic or self.power_save is None:
            return "off: the partition has the group's nodes (nodes), which register on boot"
        power = self.power_save
        parts = ", ".join(f"{p.name} {p.min_nodes}..{p.max_nodes}" for p in self.elastic)
        return (
            f"on: {parts} nodes; launched when jobs wait, deleted after {power.suspend_time} s idle, a launch not up "
            f"within {power.resume_timeout} s is deleted and its job requeued"
        )

    @property
    def mps(self) -> bool:
        """slurm.mps: the cluster's nodes or its elastic partitions' carry MPS shares (GresTypes gains mps)."""
        return bool(self.node.mps or any(p.node.mps for p in self.elastic))

    @property
    def home_export(self) -> bool:
        """The head NFS-exports /home (no storage.shared): the simple, not the durable, choice."""
        return self.shared_path is None

    def files(self) -> dict[str, str]:
        """The configuration files slurmctld serves to every node (configless), by name under /etc/slurm."""
        return {**self.head_files(), **self.compute_files()}

    def head_files(self) -> dict[str, str]:
        """What the head's bootstrap carries: nothing a change of the GPU nodes changes (with elastic partitions
        gres.conf names their nodes, so it travels with nodes.conf)."""
        if self.elastic:
            return {"slurm.conf": self.slurm_conf, "cgroup.conf": self.cgroup_conf}
        return {"slurm.conf": self.slurm_conf, "gres.conf": self.gres_conf, "cgroup.conf": self.cgroup_conf}

    def compute_files(self) -> dict[str, str]:
        """What a change of the GPU nodes changes: sent through the cloud's in-place channel (`compute_config`)."""
        out = {NODES_CONF: self.nodes_conf}
        if self.users_conf is not None:
            out["users.conf"] = self.users_conf
        if self.containers == "pyxis":
            # spank plugins of each node's plugstack.conf.d (pyxis links itself there)
            out["plugstack.conf"] = f"include {data()['containers']['pyxis']['plugstackDir']}/*\n"
        if self.elastic:
            out["gres.conf"] = self.gres_conf
            out[LAUNCH_ENV] = "".join(f"LAUNCH_{p.name}={p.launch}\n" for p in self.elastic)
        if self.topology_yaml is not None:
            out["topology.yaml"] = self.topology_yaml
        return out

    @property
    def compute_config(self) -> str:
        """The text the channel carries: every compute-side file after a `FILE_HEADER<name>` line; the head's
        gpu-cluster-slurm-conf splits it into /etc/slurm and reconfigures (components/bootstrap/slurm_conf_sync.sh)."""
        return compute_config_text(self.compute_files())

    def dynamic_conf(self, switch: str | None = None) -> str:
        """What a GPU node registers with (`slurmd -Z --conf ...`): its GRES, memory, feature and switch."""
        parts = [
            f"Feature={self.node.feature}",
            f"Gres={self.node.all_gres}",
            f"RealMemory={self.node.real_memory_mib}",
        ]
        if self.topology is not None:
            chosen = switch or self.topology.switches[0]
            if chosen not in self.topology.switches:
                raise ValueError(f"switch {chosen!r} is not one of {self.topology.switches}")
            parts.append(f"Topology={self.topology.name}:{chosen}")
        return " ".join(parts)


def launch_placeholder(partition: str) -> str:
    return LAUNCH_PLACEHOLDER.format(partition)


def packages(distro: str = IMAGE_DISTRO) -> Packages:
    entry = data()["packages"][distro]
    return Packages(
        version=str(entry["version"]),
        repo=str(entry["repo"]),
        key=str(entry["key"]),
        pin_origin=str(entry["pinOrigin"]),
        head=tuple(entry["head"]),
        compute=tuple(entry["compute"]),
        login=tuple(entry["login"]),
        munge=tuple(entry["munge"]),
        nfs_server=tuple(entry["nfsServer"]),
        nfs_client=tuple(entry["nfsClient"]),
    )


def real_memory_mib(memory_gib: float) -> int:
    """The catalog's memory less the margin (the larger of a percentage and a floor: catalog/slurm.yaml)."""
    margin = data()["realMemoryMargin"]
    total = memory_gib * 1024
    reserve = max(total * float(margin["percent"]) / 100, float(margin["minimumMiB"]))
    return math.floor(total - reserve)


def gres_type(gpu: str | None) -> str:
    """The GRES type for a catalog GPU model: `H100` -> `h100`, `A100-80GB` -> `a100`.

    With AutoDetect=nvml Slurm names a GPU after its NVML name, spaces as underscores and lowercased (e.g.
    nvidia_h100_80gb_hbm3; SchedMD/slurm gpu_common_underscorify_tolower), and a configured Type "must either exactly
    match or be a substring of the GPU name reported by slurmd via the AutoDetect mechanism" (gres.conf(5)): the
    model's lowercase core name is that substring for every NVML name of the model (as the health check matches).
    """
    core = (gpu or "gpu").split("-")[0].lower()
    return re.sub(r"[^a-z0-9_]", "_", core)


def max_node_count(max_nodes: int) -> int:
    """MaxNodeCount: every node of the group may be replaced once while the dead one still holds its slot
    (catalog/slurm.yaml maxNodeCount), within Slurm's own limit."""
    rule = data()["maxNodeCount"]
    return min(max_nodes * int(rule["perMaxNode"]), int(rule["limit"]))


def topology_for(switches: tuple[str, ...]) -> Topology | None:
    """A tree topology only when there are two switches or more. With one, every node sits under the same switch
    and topology/tree chooses as topology/flat would; and it costs a warning at every slurmd start: slurmd checks
    topology.yaml against its own node record, which no switch lists (a dynamic node joins its switch in slurmctld
    only), so "no switch can reach all nodes through its descendants" (SchedMD/slurm slurm-25.11.5
    src/plugins/topology/tree/switch_record.c switch_record_validate; docs/slurm.md, Topology)."""
    return Topology(TOPOLOGY_NAME, switches) if len(switches) > 1 else None


def compute_config_text(files: dict[str, str]) -> str:
    return "".join(f"{FILE_HEADER}{name}\n{text}" for name, text in files.items())


def compute_config_files(text: str) -> dict[str, str]:
    """The files of a compute-side configuration text, by name: what slurm_conf_sync.sh writes on the head."""
    out: dict[str, str] = {}
    name = None
    for line in text.splitlines(keepends=True):
        if line.startswith(FILE_HEADER):
            name = line[len(FILE_HEADER) :].strip()
            out[name] = ""
        elif name is None:
            raise ValueError("text before the first file header")
        else:
            out[name] += line
    return out


def render_slurm_conf(layout: SlurmLayout) -> str:
    """The controller-wide slurm.conf: nothing in it depends on the GPU nodes, which are in NODES_CONF."""
    d = data()
    ports = layout.ports
    lines = [
        f"# gpu-cluster {layout.cluster_name}: rendered by components/bootstrap/slurm_conf.py (catalog/slurm.yaml)",
        f"ClusterName={layout.cluster_name}",
        f"SlurmctldHost={SLURMCTLD_HOST_TOKEN}",
        f"SlurmctldPort={ports.slurmctld}",
        f"SlurmdPort={ports.slurmd}",
        # srun on the login node listens here; the login node's firewall opens exactly this range
        f"SrunPortRange={ports.srun_range[0]}-{ports.srun_range[1]}",
        # configless: slurmd and sackd fetch this file and the others from slurmctld
        # power saving: a node whose launch failed, or that a Spot reclaim took down, is idle again once suspended
        # (slurm.conf(5) idle_on_node_suspend), so a later job may launch it again
        "SlurmctldParameters=enable_configless" + (",idle_on_node_suspend" if layout.elastic else ""),
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "SlurmUser=slurm",
        f"StateSaveLocation={layout.state_dir}",
        "SlurmdSpoolDir=/var/spool/slurmd",
        f"SlurmctldLogFile={SLURMCTLD_LOG}",
        f"SlurmdLogFile={SLURMD_LOG}",
        "ProctrackType=proctrack/cgroup",
        "TaskPlugin=task/cgroup,task/affinity",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "GresTypes=gpu,mps" if layout.mps else "GresTypes=gpu",
        # the MPS daemon of a gres/mps job's GPU (gres.html, "MPS Management": "A prolog program should be used to
        # start and stop MPS servers as needed")
        *([f"Prolog={MPS_PROLOG}", f"TaskProlog={MPS_TASK_PROLOG}", f"Epilog={MPS_EPILOG}"] if layout.mps else []),
        # a login shell's small locked-memory limit must not follow the job to the nodes: RDMA (EFA, InfiniBand,
        # eRDMA) registers GPU and host memory (Slurm FAQ "locked memory", slurm.conf(5) PropagateResourceLimits)
        "PropagateResourceLimitsExcept=MEMLOCK",
        # dynamic nodes (slurmd -Z): no fan-out tree (dynamic_nodes.html); MaxNodeCount is in NODES_CONF
        f"TreeWidth={d['treeWidth']}",
        # a DOWN node (rebooted, not responding) takes jobs again once it registers; a drained one stays drained
        "ReturnToService=2",
        f"HealthCheckProgram={HEALTH_PROGRAM}",
        f"HealthCheckInterval={d['healthCheckInterval']}",
        "HealthCheckNodeState=ANY",
        # --mail-type notices go to the head's journal: no mail is delivered from the private nodes (catalog/slurm.yaml)
        f"MailProg={d['mailProg']['path']}",
        *(layout.accounting.slurm_conf_lines() if layout.accounting is not None else []),
        # the GPU nodes: a relative path is read beside this file, and configless serves it to every node too
        f"Include {NODES_CONF}",
    ]
    return "\n".join(lines) + "\n"


def render_slurmdbd_conf(cluster_name: str, accounting: Accounting) -> str:
    """slurmdbd.conf(5): slurmdbd on the head, its database at DB_HOST_PLACEHOLDER. The head writes it 0600, owned by
    SlurmUser, with DB_PASSWORD_TOKEN replaced by the password from the cloud's secret store (slurm_head.sh)."""
    d = accounting_data()["slurmdbd"]
    lines = [
        f"# gpu-cluster {cluster_name}: rendered by components/bootstrap/slurm_conf.py (catalog/accounting.yaml)",
        "AuthType=auth/munge",
        f"DbdHost={DBD_HOST_TOKEN}",
        f"DbdPort={accounting.port}",
        "SlurmUser=slurm",
        f"LogFile={SLURMDBD_LOG}",
        f"StorageType={d['storageType']}",
        f"StorageHost={DB_HOST_PLACEHOLDER}",
        f"StoragePort={accounting.storage_port}",
        f"StorageUser={accounting.user}",
        f"StoragePass={DB_PASSWORD_TOKEN}",
        f"StorageLoc={accounting.database}",
        *([f"StorageParameters={accounting.storage_parameters}"] if accounting.storage_parameters else []),
    ]
    return "\n".join(lines) + "\n"


def render_nodes_conf(layout: SlurmLayout) -> str:
    """The compute-side part of slurm.conf (NODES_CONF): what changes with the GPU nodes."""
    if layout.elastic:
        return render_elastic_conf(layout)
    node = layout.node
    nodeset = f"{layout.partition}_nodes"
    lines = [
        f"# gpu-cluster {layout.cluster_name}: the GPU nodes, rendered by components/bootstrap/slurm_conf.py",
        # dynamic nodes (slurmd -Z): the group's maximum, and as many slots again for the replacements of nodes that
        # died without leaving until the head's cleanup deletes them (catalog/slurm.yaml maxNodeCount)
        f"MaxNodeCount={layout.max_node_count}",
        # GPU nodes register themselves (slurmd -Z --conf "<below>"): CPUs are detected by slurmd
        f"# GPU nodes: CPUs={node.cpus} (catalog) Gres={node.all_gres} RealMemory={node.real_memory_mib} "
        f"Feature={node.feature}",
        f"# RealMemory: {node.memory_note}",
        f"Nodeset={nodeset} Feature={node.feature}",
        # a GPU job gets its GPUs' share of the node's memory and CPUs, not the whole node (catalog/slurm.yaml
        # jobDefaults): two 1-GPU jobs share a node
        f"# DefMemPerGPU: RealMemory {node.real_memory_mib} / {node.gpus} GPUs; DefCpuPerGPU: "
        + (f"{node.cpus} vCPUs / {node.gpus} GPUs, in whole cores" if node.cpus else "not set (no vCPU count)"),
        f"PartitionName={layout.partition} Nodes={nodeset} Default=YES MaxTime=INFINITE State=UP{_job_defaults(node)}",
    ]
    return "\n".join(lines) + "\n"


def render_elastic_conf(layout: SlurmLayout) -> str:
    """NODES_CONF of elastic partitions: power saving, and per partition its CLOUD nodes and the partition. Every
    setting here changes in place through the cloud's channel (a reconfigure), never the head's user data."""
    power = layout.power_save
    assert power is not None
    kept = [p.kept for p in layout.elastic if p.kept]
    lines = [
        f"# gpu-cluster {layout.cluster_name}: elastic partitions, rendered by components/bootstrap/slurm_conf.py",
        # slurm.schedmd.com/power_save.html: slurmctld launches a CLOUD node for a job and deletes it when idle
        f"ResumeProgram={RESUME_PROGRAM}",
        f"SuspendProgram={SUSPEND_PROGRAM}",
        f"ResumeFailProgram={RESUME_FAIL_PROGRAM}",
        f"SuspendTime={power.suspend_time}",
        f"ResumeTimeout={power.resume_timeout}",
        f"SuspendTimeout={power.suspend_timeout}",
        *([f"SuspendExcNodes={','.join(kept)}"] if kept else []),
    ]
    for part in layout.elastic:
        node = part.node
        cpus = f" CPUs={node.cpus}" if node.cpus else ""
        lines += [
            f"# {part.name}: RealMemory: {node.memory_note}",
            f"NodeName={part.hostlist}{cpus} RealMemory={node.real_memory_mib} Gres={node.all_gres} "
            f"Feature={node.feature} State=CLOUD",
            f"PartitionName={part.name} Nodes={part.hostlist} Default={'YES' if part.default else 'NO'} "
            f"MaxTime=INFINITE State=UP{_job_defaults(node)}",
        ]
    return "\n".join(lines) + "\n"


def _job_defaults(node: NodeDefinition) -> str:
    cpus = f" DefCpuPerGPU={node.cpus_per_gpu}" if node.cpus_per_gpu is not None else ""
    return f"{cpus} DefMemPerGPU={node.mem_per_gpu_mib}"


def render_gres_conf(elastic: tuple[ElasticPartition, ...] = (), mps: int = 0) -> str:
    """NVML finds the GPUs, their device files and their NUMA/NVLink affinity (gres.conf(5) AutoDetect), and with
    MIG on (gpuPartition) each MIG instance, whose type is its profile. Not for
    CLOUD nodes: slurmctld reads gres.conf for them itself and stops with `fatal: Cannot use AutoDetect on cloud node`
    (slurm-22.05.8 src/common/gres.c gres_g_node_config_load; the real slurmctld in tests/test_slurm_real.py), so an
    elastic partition's GPUs are written out on NVIDIA's device files (/dev/nvidia<i>), as slurm-gcp does.
    `mps`: the node's MPS count, which NVML does not detect; Slurm spreads it evenly over the GPUs (gres.html MPS
    Management). On CLOUD nodes each GPU's share is written out on its device file, as gres.html's second MPS example
    does ("Name=mps Count=200 File=/dev/nvidia0")."""
    if not elastic:
        return "AutoDetect=nvml\n" + (f"Name=mps Count={mps}\n" if mps else "")
    lines = []
    for part in elastic:
        node = part.node
        kind = node.gres.split(":")
        typed = f" Type={kind[1]}" if len(kind) == 3 else ""
        lines.append(f"NodeName={part.hostlist} Name=gpu{typed} File=/dev/nvidia[0-{node.gpus - 1}]")
        lines += [
            f"NodeName={part.hostlist} Name=mps Count={node.mps // node.gpus} File=/dev/nvidia{i}"
            for i in range(node.gpus if node.mps else 0)
        ]
    return "\n".join(lines) + "\n"


def render_cgroup_conf() -> str:
    # jobs see only the GPUs, cores and memory they were given (cgroup.conf(5))
    return "ConstrainCores=yes\nConstrainDevices=yes\nConstrainRAMSpace=yes\n"


def render_topology_yaml(topology: Topology) -> str:
    """topology.yaml(5): one tree topology (the cluster default) whose leaf switches are the placement groups.

    Dynamic nodes name their switch at registration (`Topology=<name>:<switch>`), so no node is listed here."""
    body = [
        {
            "topology": topology.name,
            "cluster_default": True,
            "tree": {"switches": [{"switch": s} for s in topology.switches]},
        }
    ]
    return yaml.safe_dump(body, sort_keys=False)
