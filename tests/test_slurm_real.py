"""Our rendered slurm.conf, gres.conf and cgroup.conf loaded by a real slurmctld and slurmd (Debian 12's slurm-wlm
22.05.8; the nodes run 25.11.5): every shipped Slurm stack and the GCP and Azure Slurm configs the tests plan.

What 22.05 cannot judge is stripped, from the list in tests/slurm_22_05.yaml (each entry with its reason), and only
that; the lines changed to run here are listed there too. Skips, saying why, without the daemons (Debian: apt-get
install -y slurmctld slurmd slurm-client munge libpmix-dev); the two-daemon tests need root (slurmd, device files)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.bootstrap.slurm_conf import SlurmLayout
from components.layout import alicloud, aws, azure, gcp, huaweicloud, tencentcloud
from components.layout.slurm import slurm_layout
from components.spec import build_spec

from . import slurm_local as local
from .conftest import ROOT, aws_values, spec_of
from .test_azure_resources import azure_values
from .test_layout_gcp import gcp_values

SKIP = local.skip_reason()
needs_slurm = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="slurmd runs jobs and device files are made as root")
CLEANUP = ROOT / "components" / "bootstrap" / "slurm_cleanup.sh"
PLANS: dict[str, Callable[[Any], Any]] = {
    "aws": aws.plan,
    "alicloud": alicloud.plan,
    "gcp": gcp.plan,
    "azure": azure.plan,
    "tencentcloud": tencentcloud.plan,
    "huaweicloud": huaweicloud.plan,
}
# the shipped stacks with scheduler slurm (README, Shipped stacks)
SHIPPED = ("aws-slurm-h100", "aws-h100-cmk", "alicloud-a100-cmk", "tencentcloud-slurm", "huaweicloud-slurm")


def stack_spec(stack: str) -> Any:
    values = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    return build_spec(values, stack)


@cache
def cloud_layout_of(stack: str) -> SlurmLayout:
    return cloud_layout(stack_spec(stack))


def cloud_layout(spec: Any) -> SlurmLayout:
    """What the cloud's own layout renders (with its placement groups as switches)."""
    layout: SlurmLayout = PLANS[spec.cloud](spec).slurm.layout
    return layout


def two_switches() -> SlurmLayout:
    """A cloud that builds two placement groups: the only case with a topology (components/layout/slurm.py)."""
    layout = slurm_layout(stack_spec("aws-slurm-h100"), switches=("pg-a", "pg-b"))
    assert layout is not None
    return layout


CONFIGS: dict[str, Callable[[], SlurmLayout]] = {
    **{stack: (lambda s=stack: cloud_layout_of(s)) for stack in SHIPPED},
    "gcp-a3mega-slurm": cache(lambda: cloud_layout(spec_of(gcp_values(scheduler="slurm")))),
    "azure-nd-h100-slurm": cache(lambda: cloud_layout(spec_of(azure_values(scheduler="slurm")))),
    "two-placement-groups": cache(two_switches),
    # gpuPartition as GRES: every H100 split into 1g.10gb MIG instances (gpu:1g.10gb:56); MPS: test_slurm_sharing_real
    "aws-mig-slurm": cache(lambda: cloud_layout(spec_of(aws_values(scheduler="slurm", gpuPartition="1g.10gb")))),
}


@dataclasses.dataclass(frozen=True)
class ForSlurm2205:
    files: dict[str, str]
    dynamic_conf: str
    stripped: tuple[str, ...]  # what tests/slurm_22_05.yaml `unknown:` took out


def for_22_05(layout: SlurmLayout) -> ForSlurm2205:
    unknown = local.data()["unknown"]
    files = {n: t for n, t in layout.files().items() if n not in unknown["files"]}
    stripped = [f"files.{n}" for n in layout.files() if n in unknown["files"]]
    words = []
    for word in layout.dynamic_conf().split():
        key = word.split("=", 1)[0]
        if key in unknown["dynamicConf"]:
            stripped.append(f"dynamicConf.{key}")
        else:
            words.append(word)
    return ForSlurm2205(files, " ".join(words), tuple(stripped))


def test_every_entry_of_the_22_05_list_is_used_by_a_config_checked_here():
    unknown = local.data()["unknown"]
    listed = {f"files.{n}" for n in unknown["files"]} | {f"dynamicConf.{k}" for k in unknown["dynamicConf"]}
    used = {s for make in CONFIGS.values() for s in for_22_05(make()).stripped}
    assert used == listed
    # and the shipped stacks need none of it: 22.05 loads their files as rendered
    assert all(for_22_05(CONFIGS[s]()).stripped == () for s in SHIPPED)


def expected(name: str, state: Path) -> set[str]:
    return {line.format(state=state) for line in local.data()["expected"][name]["lines"]}


def unexpected(log: str, allowed: set[str]) -> list[str]:
    """The error, fatal and warning lines of a log (timestamps cut) that are neither allowed word for word nor the
    machine's own (tests/slurm_22_05.yaml `expected.machine`)."""
    machine = [re.compile(p) for p in local.data()["expected"]["machine"]["patterns"]]
    out = []
    for line in local.judged(log):
        text = re.sub(r"^\[[^]]*\] ", "", line)
        if text not in allowed and not any(p.fullmatch(text) for p in machine):
            out.append(line)
    return out


@dataclasses.dataclass
class Controller:
    name: str
    layout: SlurmLayout
    cluster: local.Cluster
    first: str  # slurmctld's log of its first start (empty StateSaveLocation)
    second: str  # of its restart, with the state the first saved


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def controller(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    """slurmctld on the config's files, started, stopped, and started again: the fixture ends with it running."""
    if SKIP:
        pytest.skip(SKIP)
    layout = CONFIGS[request.param]()
    root = tmp_path_factory.mktemp(request.param)
    with contextlib.ExitStack() as stack:
        munge = stack.enter_context(local.munged(root / "munge"))
        cluster = local.prepare(root / "slurm", for_22_05(layout).files, munge.socket)
        with local.slurmctld(cluster):
            time.sleep(0.5)  # what it logs just after taking over
        first = local.read(cluster.ctld_log)
        stack.enter_context(local.slurmctld(cluster))
        time.sleep(0.5)
        second = local.read(cluster.ctld_log)[len(first) :]
        yield Controller(request.param, layout, cluster, first, second)


@needs_slurm
def test_slurmctld_loads_the_rendered_files_with_no_error_and_restarts_clean(controller):
    c = controller
    state = c.cluster.root / "state"
    assert f"slurmctld version {local.data()['version']}" in c.first
    assert unexpected(c.first, expected("slurmctldFirstStart", state)) == []
    assert unexpected(c.second, set()) == []
    # MailProg is a program that exists (defect 10c): slurmctld checks it at every start
    assert "MailProg" not in c.first + c.second
    # the partition and its GPU defaults are what slurmctld now holds
    part = c.cluster.run("scontrol", "show", "partition", c.layout.partition, "--oneliner").stdout
    node = c.layout.node
    assert f"PartitionName={c.layout.partition} " in part and f"DefMemPerGPU={node.mem_per_gpu_mib}" in part
    assert f"DefCpuPerGPU={node.cpus_per_gpu}" in part
    config = c.cluster.run("scontrol", "show", "config").stdout
    assert re.search(rf"^MaxNodeCount\s+= {c.layout.max_node_count}$", config, re.M)
    assert re.search(r"^MailProg\s+= /usr/bin/logger$", config, re.M)


@needs_slurm
def test_a_replacement_registers_while_every_dead_node_still_holds_its_slot(controller):
    """Defect 10b: maxNodes nodes die without `scontrol delete` and the group starts as many replacements: all of them
    fit in MaxNodeCount; one more does not ("node table is full"), which the head's cleanup prevents."""
    c = controller
    # the nodes as `scontrol create` makes them, a slot each as a registration takes: State=FUTURE and without Gres,
    # as slurmctld loads gres.conf for a CLOUD node it creates and stops on its AutoDetect (22.05 "fatal: Cannot use
    # AutoDetect on cloud node"; an error since 23.11), while a slot does not depend on either
    node = [w for w in for_22_05(c.layout).dynamic_conf.split() if not w.startswith("Gres=")]
    names = [f"dead{i}" for i in range(c.layout.max_nodes)] + [f"new{i}" for i in range(c.layout.max_nodes)]
    assert len(names) == c.layout.max_node_count
    for name in [*names, "one-more"]:
        c.cluster.run("scontrol", "create", f"NodeName={name}", *node, "State=FUTURE")
    shown = c.cluster.run("scontrol", "--future", "show", "node", "--oneliner").stdout
    present = set(re.findall(r"^NodeName=(\S+)", shown, re.M))
    assert present == set(names)
    assert "error: Unable to add node 'one-more', node table is full" in local.read(c.cluster.ctld_log)


@needs_slurm
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_slurmd_reads_the_node_definition_and_the_gres(config, tmp_path):
    layout = CONFIGS[config]()
    rendered = for_22_05(layout)
    cluster = local.prepare(tmp_path / "slurm", rendered.files, tmp_path / "no-munge")
    gres = ["slurmd", "-G", "-Z", "--conf", rendered.dynamic_conf, "-f", str(cluster.conf)]
    # gres.conf as rendered: AutoDetect=nvml is read, and only NVML itself (the NVIDIA driver's) is missing here
    proc = subprocess.run(gres, capture_output=True, text=True, timeout=60)
    assert (proc.stdout + proc.stderr).strip().splitlines() == [
        "slurmd: We were configured with nvml functionality, but that lib wasn't found on the system."
    ]
    if rendered.dynamic_conf != layout.dynamic_conf():
        # what was stripped is what 22.05 does not know (tests/slurm_22_05.yaml `unknown.dynamicConf`)
        whole = subprocess.run(
            [*gres[:4], layout.dynamic_conf(), *gres[5:]], capture_output=True, text=True, timeout=60
        )
        assert "unrecognized key: Topology" in whole.stdout + whole.stderr


def written_out_gres(layout: SlurmLayout, devices: Path) -> str:
    """gres.conf with the GPUs NVML would find written out, on character devices made here (major 195 is NVIDIA's)."""
    devices.mkdir()
    for i in range(layout.node.gpus):
        os.mknod(devices / f"nvidia{i}", 0o600 | stat.S_IFCHR, os.makedev(195, i))
    kind = layout.node.gres.split(":")
    typed = f" Type={kind[1]}" if len(kind) == 3 else ""
    mps = f"Name=mps Count={layout.node.mps}\n" if layout.node.mps else ""  # NVML does not detect it: as rendered
    return f"Name=gpu{typed} File={devices}/nvidia[0-{layout.node.gpus - 1}]\n{mps}"


def slurmd_gres(layout: SlurmLayout, tmp_path: Path) -> str:
    """What `slurmd -G` prints of the node's GRES with the GPUs written out (it must judge nothing and succeed)."""
    rendered = for_22_05(layout)
    files = {**rendered.files, "gres.conf": written_out_gres(layout, tmp_path / "dev")}
    cluster = local.prepare(tmp_path / "slurm", files, tmp_path / "no-munge")
    proc = subprocess.run(
        ["slurmd", "-G", "-Z", "--conf", rendered.dynamic_conf, "-f", str(cluster.conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    assert local.judged(out) == [] and proc.returncode == 0, out
    return out


@needs_slurm
@needs_root
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_slurmd_counts_the_gpus_of_the_node_definition(config, tmp_path):
    layout = CONFIGS[config]()
    out = slurmd_gres(layout, tmp_path)
    kind = layout.node.gres.split(":")
    typed = kind[1] if len(kind) == 3 else "(null)"  # an untyped GRES (gpu:<count>) has no type
    assert f"Gres Name=gpu Type={typed} Count={layout.node.gpus} " in out


def this_machine(gpus: int) -> SlurmLayout:
    """The aws-slurm-h100 layout for a node like this machine: its vCPUs, a few GiB, `gpus` H100s. The rendering is
    the real one (DefMemPerGPU, DefCpuPerGPU from the node), only the catalog row is this machine's."""
    spec = stack_spec("aws-slurm-h100")
    cpus = os.cpu_count() or 1
    row = spec.instance.model_copy(update={"vcpus": cpus, "gpus": gpus, "memoryGiB": 4.0})
    layout = slurm_layout(dataclasses.replace(spec, instance=row))
    assert layout is not None
    return layout


@contextlib.contextmanager
def pair(tmp_path: Path, layout: SlurmLayout, **extra: str) -> Iterator[local.Cluster]:
    """slurmctld and one slurmd registered as a dynamic node, with the GPUs written out on device files."""
    files = {**for_22_05(layout).files, "gres.conf": written_out_gres(layout, tmp_path / "dev")}
    with local.munged(tmp_path / "munge") as munge:
        cluster = local.prepare(tmp_path / "slurm", files, munge.socket, {**local.data()["pair"], **extra})
        with local.slurmctld(cluster), local.slurmd(cluster, for_22_05(layout).dynamic_conf):
            try:
                yield cluster
            finally:
                end_jobs(cluster)


def end_jobs(cluster: local.Cluster) -> None:
    """Cancel what is left and wait for it to end while slurmd can kill it (a job's slurmstepd outlives slurmd)."""
    ids = cluster.run("squeue", "--noheader", "-o", "%i", check=False).stdout.split()
    if ids:
        cluster.run("scancel", *ids, check=False)
        local.wait_for(lambda: not cluster.run("squeue", "--noheader", check=False).stdout.strip(), "no jobs", 60)


def jobs(cluster: local.Cluster) -> list[tuple[str, str, str]]:
    out = cluster.run("squeue", "--noheader", "-o", "%i %T %N").stdout
    return [tuple(line.split(" ", 2)) for line in out.splitlines()]  # type: ignore[misc]


@needs_slurm
@needs_root
def test_two_one_gpu_jobs_share_a_node(tmp_path):
    """Defect 10a: each `--gres=gpu:h100:1` job gets DefMemPerGPU and DefCpuPerGPU, not the whole node, so the second
    runs beside the first (before, it waited for Resources: the first had all the node's memory)."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("two jobs of one core each need two cores")
    layout = this_machine(gpus=2)
    node = layout.node
    assert node.mem_per_gpu_mib * 2 <= node.real_memory_mib
    with pair(tmp_path, layout) as cluster:
        for _ in range(2):
            # a minute at most, should the test machine lose them
            cluster.run("sbatch", "--gres=gpu:h100:1", "--time=1", "--output=/dev/null", "--wrap", "exec sleep 60")
        deadline = time.monotonic() + 30
        while [state for _, state, _ in jobs(cluster)] != ["RUNNING", "RUNNING"] and time.monotonic() < deadline:
            time.sleep(0.5)
        running = jobs(cluster)
        assert [(state, where) for _, state, where in running] == [("RUNNING", layout_node(cluster))] * 2, running
        for job_id, _, _ in running:
            shown = cluster.run("scontrol", "show", "job", job_id, "--oneliner").stdout
            # the partition's defaults, per GPU, as slurmctld applied them
            assert f" MemPerTres=gpu:{node.mem_per_gpu_mib} " in shown, shown
            assert f" CpusPerTres=gpu:{node.cpus_per_gpu} " in shown, shown
        log = local.read(cluster.slurmd_log)  # before the cancel, which a job's step logs as an error
    allowed = expected("slurmd", cluster.root) | expected("slurmdHardware", cluster.root)
    assert unexpected(log, allowed) == []


def layout_node(cluster: local.Cluster) -> str:
    names = cluster.run("sinfo", "--noheader", "--Node", "-o", "%N").stdout.split()
    assert len(names) == 1
    return names[0]


@needs_slurm
@needs_root
def test_the_head_cleanup_deletes_a_node_that_stopped_responding(tmp_path):
    """Defect 10b with the real scontrol and sinfo: slurmd killed (a reclaimed instance), slurmctld marks the node not
    responding, slurm_cleanup.sh deletes it and its slot is free again."""
    layout = this_machine(gpus=1)
    with pair(tmp_path, layout, **local.data()["deadNode"]) as cluster:
        name = layout_node(cluster)
        seen = tmp_path / "seen"
        env = {**cluster.env(), "DEAD_AFTER_SECONDS": "0", "SEEN_FILE": str(seen)}
        # a node that answers is left alone
        proc = subprocess.run(["bash", str(CLEANUP)], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and proc.stderr == "" and seen.read_text() == ""
        pid = int((cluster.root / "slurmd.pid").read_text())
        os.kill(pid, 9)
        local.wait_for(lambda: bool(cluster.run("sinfo", "--dead", "--noheader", "-o", "%N").stdout), "dead node", 60)
        proc = subprocess.run(["bash", str(CLEANUP)], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == f"gpu-cluster-slurm-cleanup: deleted {name}: not responding for 0 s\n"
        assert cluster.run("scontrol", "show", "node", "--oneliner").stdout.strip() == "No nodes in the system"


def changed(layout: SlurmLayout, *, gpus: int, more_nodes: int = 0) -> SlurmLayout:
    """The same cluster after a compute-side change: GPU nodes of another type (its per-GPU defaults) and maxNodes up
    (MaxNodeCount): only nodes.conf differs, the head's own files are the same."""
    spec = stack_spec("aws-slurm-h100")
    cpus = os.cpu_count() or 1
    row = spec.instance.model_copy(update={"vcpus": cpus, "gpus": gpus, "memoryGiB": 4.0})
    out = slurm_layout(dataclasses.replace(spec, instance=row, max_nodes=spec.max_nodes + more_nodes))
    assert out is not None and out.head_files() == layout.head_files() and out.nodes_conf != layout.nodes_conf
    return out


def partition_value(cluster: local.Cluster, key: str) -> str:
    shown = cluster.run("scontrol", "show", "partition", "gpu", "--oneliner").stdout
    match = re.search(rf"\b{key}=(\S+)", shown)
    assert match, shown
    return match.group(1)


def max_node_count(cluster: local.Cluster) -> int:
    match = re.search(r"^MaxNodeCount\s+= (\d+)$", cluster.run("scontrol", "show", "config").stdout, re.M)
    assert match
    return int(match.group(1))


@needs_slurm
@needs_root
@pytest.mark.skipif(not local.can_unshare(), reason="configless slurmd needs a mount namespace (unshare -m, root)")
def test_a_changed_nodes_conf_reaches_slurmctld_and_the_configless_node_and_a_running_job_survives(tmp_path):
    """Issue 28: the GPU nodes' part of slurm.conf is `Include nodes.conf`; configless serves it to slurmd, and
    `scontrol reconfigure` (what the head's gpu-cluster-slurm-conf runs on a change) applies a new one while a job
    runs. MaxNodeCount: 22.05 stops slurmctld on a reconfigure that changes it ("fatal: MaxNodeCount has changed
    (4->10) during reconfig, slurmctld must be restarted", slurm-22.05.8 src/slurmctld/read_config.c) and takes it at a
    restart, which keeps the running job (its state in StateSaveLocation); 25.11, which the nodes run, has no such
    check and its reconfigure starts a new slurmctld in place (scontrol(1) since 23.11; catalog/slurm.yaml
    computeConfig), so the test changes MaxNodeCount with a restart and the rest with a reconfigure."""
    layout = this_machine(gpus=2)
    retyped = changed(layout, gpus=1)
    grown = changed(layout, gpus=1, more_nodes=3)
    assert retyped.max_node_count == layout.max_node_count < grown.max_node_count
    files = {**for_22_05(layout).files, "gres.conf": written_out_gres(layout, tmp_path / "dev")}
    with local.munged(tmp_path / "munge") as munge:
        cluster = local.prepare(tmp_path / "slurm", files, munge.socket, local.data()["pair"])
        cache = cluster.root / "spool" / "conf-cache"
        with contextlib.ExitStack() as stack:
            ctld = stack.enter_context(local.slurmctld(cluster))
            stack.enter_context(local.configless_slurmd(cluster, for_22_05(layout).dynamic_conf, munge))
            # configless serves the included file: the node got it with slurm.conf
            assert (cache / "nodes.conf").read_text() == layout.nodes_conf
            assert "\nInclude nodes.conf\n" in (cache / "slurm.conf").read_text()
            job = cluster.run("sbatch", "--parsable", "--gres=gpu:h100:1", "--time=2", "--output=/dev/null",
                              "--wrap", "exec sleep 120").stdout.strip()  # fmt: skip
            local.wait_for(lambda: [s for _, s, _ in jobs(cluster)] == ["RUNNING"], "running job", 30)
            node = layout_node(cluster)
            assert partition_value(cluster, "DefMemPerGPU") == str(layout.node.mem_per_gpu_mib)
            # another GPU type: nodes.conf rewritten beside slurm.conf, then a reconfigure
            (cluster.conf_dir / "nodes.conf").write_text(retyped.nodes_conf)
            cluster.run("scontrol", "reconfigure")
            local.wait_for(lambda: partition_value(cluster, "DefMemPerGPU") == str(retyped.node.mem_per_gpu_mib),
                           "the new DefMemPerGPU", 30)  # fmt: skip
            local.wait_for(lambda: (cache / "nodes.conf").read_text() == retyped.nodes_conf, "the node's new copy", 30)
            assert ctld.poll() is None and jobs(cluster) == [(job, "RUNNING", node)]
            # maxNodes up: on 22.05 a restart of slurmctld, with the state it saved
            (cluster.conf_dir / "nodes.conf").write_text(grown.nodes_conf)
            local.stop(ctld)
            stack.enter_context(local.slurmctld(cluster))
            assert max_node_count(cluster) == grown.max_node_count
            local.wait_for(lambda: bool(jobs(cluster)), "the job after the restart", 30)
            assert jobs(cluster) == [(job, "RUNNING", node)]
            end_jobs(cluster)
