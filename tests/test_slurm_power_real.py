"""Elastic partitions (slurm.partitions) with a real slurmctld and slurmd (Debian 12's 22.05.8): our rendered nodes.conf
and our power-saving program (components/bootstrap/slurm_power.sh, unchanged) under a test hook whose "cloud" starts
and stops a local slurmd as the CLOUD node. A job on a powered-down partition launches its node, runs, and the idle
node is deleted after SuspendTime; a launch that fails sets the node DOWN with the cloud's reason and powers it down,
so the job waits for the next launch instead of a dead node. Skips without the daemons or root (as test_slurm_real)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.bootstrap.slurm_conf import (
    LAUNCH_ENV,
    RESUME_FAIL_PROGRAM,
    RESUME_PROGRAM,
    SUSPEND_PROGRAM,
    ElasticPartition,
    PowerSave,
    SlurmLayout,
    render_nodes_conf,
    render_slurm_conf,
)

from . import slurm_local as local
from .conftest import ROOT
from .test_slurm_real import (
    cloud_layout,
    end_jobs,
    expected,
    for_22_05,
    needs_root,
    needs_slurm,
    stack_spec,
    this_machine,
    unexpected,
    written_out_gres,
)

POWER = ROOT / "components" / "bootstrap" / "slurm_power.sh"

# the test's "cloud": a launch starts slurmd as the node (it registers under the name it was launched as), a delete
# stops it; LAUNCH_FAILS makes every launch fail as a cloud out of capacity would
HOOK = """
cloud_launch() {
  [ -z "${LAUNCH_FAILS:-}" ] || { echo "InsufficientInstanceCapacity: none left" >&2; return 1; }
  [ "$2" = lt-test ] || { echo "wrong template $2" >&2; return 1; }
  echo "$1" >>"$CALLS/launched"
  # a launched instance has just booted, and slurmctld takes a powering-up node only when it booted after the
  # resume: slurmd a little later, in a time namespace whose boot time is then (unshare --boottime)
  (
    sleep 2
    up=$(cut -d. -f1 /proc/uptime)
    exec unshare --time --boottime "-${up}" slurmd -D -N "$1" -f "$TEST_SLURM_CONF" \
  ) </dev/null >>"$CALLS/slurmd.out" 2>&1 &
  echo $! >"$CALLS/$1.pid"
  echo "127.0.0.1 localhost"
}
cloud_terminate() {
  echo "$1" >>"$CALLS/deleted"
  # an instance deleted is gone at once (SIGKILL: a slurmd asked with SIGTERM can outlive the test); unshare --time
  # forks, so slurmd is the recorded process's child
  if [ -r "$CALLS/$1.pid" ]; then
    pkill -KILL -P "$(cat "$CALLS/$1.pid")"
    kill -KILL "$(cat "$CALLS/$1.pid")" 2>/dev/null
  fi
  rm -f "$CALLS/$1.pid"
  return 0
}
"""


def stop_launched(calls: Path) -> None:
    """The slurmd of every node still "running" (unshare --time forks: slurmd is the recorded process's child)."""
    for pid in calls.glob("*.pid"):
        subprocess.run(["pkill", "-KILL", "-P", pid.read_text().strip()], check=False)
        subprocess.run(["kill", "-KILL", pid.read_text().strip()], check=False)


def elastic(gpus: int = 1) -> SlurmLayout:
    """this machine as one elastic partition `gpu` of one node, suspended after a few seconds idle."""
    base = this_machine(gpus)
    part = ElasticPartition("gpu", dataclasses.replace(base.node, feature="gpu"), "gpu-0", 1, 0, True, "lt-test")
    layout = dataclasses.replace(base, elastic=(part,), power_save=PowerSave(5, 120, 10), partition="gpu")
    return dataclasses.replace(layout, slurm_conf=render_slurm_conf(layout), nodes_conf=render_nodes_conf(layout))


def install(tmp: Path, layout: SlurmLayout, env: dict[str, str]) -> dict[str, str]:
    """The programs under their names in a test directory, their settings, and nodes.conf pointing at them."""
    bin_dir, calls = tmp / "bin", tmp / "calls"
    bin_dir.mkdir()
    calls.mkdir()
    (tmp / "hook.sh").write_text(HOOK)
    power_env = tmp / "power.env"
    settings = {
        "POWER_HOOK": str(tmp / "hook.sh"),
        "LAUNCH_ENV": str(tmp / "etc-launch.env"),
        "CALLS": str(calls),
        "TEST_SLURM_CONF": str(tmp / "slurm" / "etc" / "slurm.conf"),  # where local.prepare writes it
    }
    # the program's own messages (slurmctld drops them) kept for the test's failure report
    power_env.write_text(
        "".join(f"export {k}={v}\n" for k, v in {**settings, **env}.items()) + f"exec 2>>{calls}/err\n"
    )
    (tmp / "etc-launch.env").write_text(layout.compute_files()[LAUNCH_ENV])
    nodes = layout.nodes_conf
    for program in (RESUME_PROGRAM, SUSPEND_PROGRAM, RESUME_FAIL_PROGRAM):
        target = bin_dir / Path(program).name
        # the real program, only its settings file moved here
        target.write_text(POWER.read_text().replace("/etc/gpu-cluster/slurm-power.env", str(power_env)))
        target.chmod(0o755)
        nodes = nodes.replace(program, str(target))
    return {"nodes.conf": nodes}


def node_state(cluster: local.Cluster) -> str:
    return cluster.run("sinfo", "--noheader", "--Node", "-n", "gpu-0", "-o", "%T").stdout.strip()


def wait(cluster: local.Cluster, check: Callable[[], bool], what: str, seconds: float) -> None:
    try:
        local.wait_for(check, what, seconds)
    except AssertionError as e:
        err = local.read(cluster.root.parent / "calls" / "err")
        err += cluster.run("scontrol", "show", "node", "gpu-0", check=False).stdout
        err += cluster.run("squeue", check=False).stdout
        raise AssertionError(f"{e}\n{err}\n{local.read(cluster.ctld_log)[-3000:]}") from None


def run(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The rendered files, the GPUs written out on device files, nodes.conf naming the installed programs."""
    layout = elastic()
    files = {**for_22_05(layout).files, "gres.conf": written_out_gres(layout, tmp_path / "dev")}
    files.update(install(tmp_path, layout, env))
    return files


@needs_slurm
@needs_root
def test_a_job_launches_its_node_which_is_deleted_once_idle(tmp_path):
    files = run(tmp_path, {})
    calls = tmp_path / "calls"
    with local.munged(tmp_path / "munge") as munge:
        cluster = local.prepare(
            tmp_path / "slurm", files, munge.socket, {**local.data()["pair"], **local.data()["elastic"]}
        )
        with local.slurmctld(cluster):
            assert node_state(cluster) == "idle~"  # powered down: no instance until a job needs it
            out = tmp_path / "job.out"
            cluster.run("sbatch", "-p", "gpu", "--gres=gpu:h100:1", "--time=1", f"--output={out}", "--wrap", "hostname")
            try:
                wait(cluster, lambda: out.exists() and out.read_text().strip() != "", "job output", 90)
                assert (calls / "launched").read_text().split() == ["gpu-0"]
                shown = cluster.run("scontrol", "show", "node", "gpu-0", "--oneliner").stdout
                assert "NodeAddr=127.0.0.1 " in shown, shown  # the address the resume program gave slurmctld
                # idle for SuspendTime: the suspend program deletes the instance, the node is powered down again
                wait(cluster, lambda: (calls / "deleted").exists(), "suspend", 90)
                assert (calls / "deleted").read_text().split() == ["gpu-0"]
                wait(cluster, lambda: node_state(cluster) == "idle~", "powered down", 60)
            finally:
                end_jobs(cluster)
                stop_launched(calls)


@needs_slurm
@needs_root
def test_a_failed_launch_downs_the_node_with_the_cloud_reason_and_powers_it_down(tmp_path):
    files = run(tmp_path, {"LAUNCH_FAILS": "1"})
    with local.munged(tmp_path / "munge") as munge:
        cluster = local.prepare(
            tmp_path / "slurm", files, munge.socket, {**local.data()["pair"], **local.data()["elastic"]}
        )
        with local.slurmctld(cluster):
            cluster.run("sbatch", "-p", "gpu", "--gres=gpu:h100:1", "--time=1", "--output=/dev/null", "--wrap", "true")
            try:
                seen: list[str] = []

                def reason() -> bool:
                    shown = cluster.run("sinfo", "--noheader", "--Node", "-n", "gpu-0", "-o", "%T|%E").stdout
                    seen.append(shown)
                    return "gpu-cluster launch failed: InsufficientInstanceCapacity" in shown

                wait(cluster, reason, "the launch failure's reason", 60)
                # the job is not lost with the node: it waits (requeued) for a later launch
                state = cluster.run("squeue", "--noheader", "-o", "%T").stdout.split()
                assert state and state[0] in ("PENDING", "CONFIGURING"), (state, seen[-1])
                # powered down again, so the next scheduling pass may launch it (idle_on_node_suspend)
                wait(cluster, lambda: "POWER" in node_state(cluster).upper() or "~" in node_state(cluster), "power", 60)
            finally:
                end_jobs(cluster)
                stop_launched(tmp_path / "calls")
    assert os.path.exists(tmp_path / "calls")


def without_accounting(spec: Any) -> Any:
    if spec.slurm is None or not spec.slurm.accounting:
        return spec
    return dataclasses.replace(spec, slurm=spec.slurm.model_copy(update={"accounting": False}))


# every shipped elastic stack, with its partitions as sinfo shows them powered down
ELASTIC_STACKS = {
    "aws-slurm-elastic": ["h100* 2 idle~", "l40s 4 idle~"],
    "gcp-slurm-elastic": ["a3mega* 2 idle~", "l4 4 idle~"],
    "azure-slurm-elastic": ["h100* 2 idle~", "a100 4 idle~"],
    "alicloud-slurm-elastic": ["ebmgn8v* 2 idle~", "a10 4 idle~"],
}


def load_twice(tmp_path: Path, layout: SlurmLayout, sinfo_format: str) -> tuple[list[str], str]:
    """slurmctld started on the layout's files, then again on the state it saved: both starts clean; sinfo's lines in
    `sinfo_format` and `scontrol show config` from the second."""
    files = {**for_22_05(layout).files, **install(tmp_path, layout, {})}
    with local.munged(tmp_path / "munge") as munge:
        cluster = local.prepare(tmp_path / "slurm", files, munge.socket, local.data()["elastic"])
        with local.slurmctld(cluster):
            time.sleep(0.5)
        first = local.read(cluster.ctld_log)
        with local.slurmctld(cluster):
            time.sleep(0.5)
            states = cluster.run("sinfo", "--noheader", "-o", sinfo_format).stdout.split("\n")
            config = cluster.run("scontrol", "show", "config").stdout
        second = local.read(cluster.ctld_log)[len(first) :]
    assert unexpected(first, expected("slurmctldFirstStart", cluster.root / "state")) == []
    assert unexpected(second, set()) == []
    return [s for s in states if s], config


@needs_slurm
@needs_root
@pytest.mark.parametrize("stack", sorted(ELASTIC_STACKS))
def test_the_shipped_elastic_stack_loads_and_restarts_clean_with_both_partitions_powered_down(tmp_path, stack):
    """The stack's rendered slurm.conf, nodes.conf and gres.conf (written out GPUs: slurmctld refuses AutoDetect on
    CLOUD nodes) as they are, only the programs installed here: no error on a restart, every node powered down. With
    slurm.accounting (aws-slurm-elastic) as the stack would be without it: slurmctld needs its slurmdbd, which
    tests/test_slurm_accounting_real.py runs with the accounting lines."""
    states, config = load_twice(tmp_path, cloud_layout(without_accounting(stack_spec(stack))), "%P %D %T")
    assert states == ELASTIC_STACKS[stack]
    assert re.search(r"^SuspendTime\s+= 600 sec$", config, re.M), config
    assert re.search(r"^ResumeTimeout\s+= 1800 sec$", config, re.M), config
    assert "idle_on_node_suspend" in config


@needs_slurm
@needs_root
def test_elastic_partitions_with_mps_load_clean_with_each_gpus_share_on_its_device_file(tmp_path):
    """slurm.mps on aws-slurm-elastic: gres.conf names each GPU's 100 shares on its device file (no AutoDetect on CLOUD
    nodes), which slurmctld reads for them itself; sinfo counts them beside the GPUs."""
    spec = without_accounting(stack_spec("aws-slurm-elastic"))
    spec = dataclasses.replace(spec, slurm=spec.slurm.model_copy(update={"mps": True}))
    layout = cloud_layout(spec)
    assert "Name=mps Count=100 File=/dev/nvidia7" in layout.gres_conf
    states, config = load_twice(tmp_path, layout, "%P %G")
    assert states == ["h100* gpu:h100:8,mps:h100:800", "l40s gpu:l40s:4,mps:l40s:400"]  # typed as their GPUs
    assert re.search(r"^GresTypes\s+= gpu,mps$", config, re.M), config
