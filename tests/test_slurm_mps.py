"""slurm.mps on the GPU nodes: slurm_mps.sh as slurmd runs it (Prolog, TaskProlog, Epilog) against a stubbed
systemctl, and what the layout renders for the cluster's nodes and its elastic partitions."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components.bootstrap import cloud_init
from components.bootstrap.slurm import compute_parts
from components.bootstrap.slurm_conf import MPS_EPILOG, MPS_PROGRAM, MPS_PROLOG, MPS_TASK_PROLOG
from components.layout.slurm import slurm_layout

from .conftest import ROOT, aws_values, spec_of

SCRIPT = ROOT / "components" / "bootstrap" / "slurm_mps.sh"


class Node:
    """The program under its three names, its state directory and a systemctl that logs and may fail."""

    def __init__(self, tmp: Path, start_fails: bool = False) -> None:
        self.state = tmp / "state"
        self.calls = tmp / "systemctl.log"
        self.systemctl = tmp / "systemctl"
        rc = 1 if start_fails else 0
        self.systemctl.write_text(f'#!/bin/bash\necho "$*" >>"{self.calls}"\n[ "$1" = start ] && exit {rc}\nexit 0\n')
        self.systemctl.chmod(0o755)
        for name in (MPS_PROLOG, MPS_TASK_PROLOG, MPS_EPILOG):
            (tmp / Path(name).name).symlink_to(SCRIPT)
        self.tmp = tmp

    def run(self, program: str, **env: str) -> subprocess.CompletedProcess[str]:
        base = {"PATH": os.environ["PATH"], "MPS_STATE": str(self.state), "SYSTEMCTL": str(self.systemctl)}
        return subprocess.run(
            ["bash", str(self.tmp / Path(program).name)],
            env={**base, **env},
            capture_output=True,
            text=True,
            check=False,
        )

    def systemctl_calls(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []


def test_an_mps_job_starts_its_gpus_daemon_and_its_tasks_reach_it(tmp_path):
    node = Node(tmp_path)
    mps = {"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "3", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}
    assert node.run(MPS_PROLOG, **mps).returncode == 0
    assert node.systemctl_calls() == ["start gpu-cluster-mps@3.service"]
    # the task's own CUDA_VISIBLE_DEVICES is 0 (its cgroup shows one GPU): the prolog's record names the node's GPU
    task = node.run(MPS_TASK_PROLOG, SLURM_JOB_ID="7", CUDA_VISIBLE_DEVICES="0", CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="50")
    assert task.returncode == 0 and task.stdout == f"export CUDA_MPS_PIPE_DIRECTORY={node.state}/gpu3\n"
    assert node.run(MPS_EPILOG, SLURM_JOB_ID="7").returncode == 0
    assert not (node.state / "job-7").exists()


def test_a_whole_gpu_job_stops_the_daemons_of_its_gpus_and_its_tasks_get_nothing(tmp_path):
    node = Node(tmp_path)
    assert node.run(MPS_PROLOG, SLURM_JOB_ID="8", CUDA_VISIBLE_DEVICES="1,3").returncode == 0
    assert node.systemctl_calls() == ["stop gpu-cluster-mps@1.service", "stop gpu-cluster-mps@3.service"]
    task = node.run(MPS_TASK_PROLOG, SLURM_JOB_ID="8", CUDA_VISIBLE_DEVICES="0,1")
    assert task.returncode == 0 and task.stdout == ""


def test_a_job_without_gpus_touches_no_daemon(tmp_path):
    node = Node(tmp_path)
    assert node.run(MPS_PROLOG, SLURM_JOB_ID="9").returncode == 0
    assert node.systemctl_calls() == []


def test_a_daemon_that_does_not_start_fails_the_prolog(tmp_path):
    """A failed Prolog drains the node and requeues the job (slurm.conf(5) Prolog), rather than run it without MPS."""
    node = Node(tmp_path, start_fails=True)
    got = node.run(MPS_PROLOG, SLURM_JOB_ID="7", CUDA_VISIBLE_DEVICES="0", CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="25")
    assert got.returncode == 1 and "the MPS daemon of GPU 0 did not start" in got.stderr
    assert not (node.state / "job-7").exists()


def test_the_program_under_another_name_refuses(tmp_path):
    (tmp_path / "other").symlink_to(SCRIPT)
    got = subprocess.run(["bash", str(tmp_path / "other")], capture_output=True, text=True, check=False)
    assert got.returncode == 2 and "run as gpu-cluster-slurm-mps-" in got.stderr


# --- what the layout renders -----------------------------------------------------------------------------------------


def layout_of(**slurm):
    nodes = 0 if "partitions" in slurm else 2
    layout = slurm_layout(spec_of(aws_values(scheduler="slurm", nodes=nodes, slurm=slurm)))
    assert layout is not None
    return layout


def test_mps_names_the_three_programs_in_slurm_conf_and_installs_them_on_the_gpu_nodes():
    layout = layout_of(mps=True)
    conf = layout.slurm_conf.splitlines()
    assert [f"Prolog={MPS_PROLOG}", f"TaskProlog={MPS_TASK_PROLOG}", f"Epilog={MPS_EPILOG}"] == [
        line for line in conf if line.split("=")[0] in ("Prolog", "TaskProlog", "Epilog")
    ]
    parts = compute_parts(layout, head_address="10.0.0.4", key_hook="#!/bin/bash\n")
    names = [p.name for p in parts]
    assert names.index("slurm-mps") < names.index("slurm-compute")  # before slurmd takes its first job
    (mps,) = [p for p in parts if p.name == "slurm-mps"]
    assert {f.path for f in mps.files} == {MPS_PROGRAM, "/etc/systemd/system/gpu-cluster-mps@.service"}
    assert {c[-1] for c in mps.commands if c[0] == "ln"} == {MPS_PROLOG, MPS_TASK_PROLOG, MPS_EPILOG}
    assert "gpu-cluster-slurm-mps" in cloud_init(parts)


def test_without_mps_nothing_of_it_is_rendered():
    layout = layout_of()
    assert not any(line.startswith(("Prolog=", "TaskProlog=", "Epilog=")) for line in layout.slurm_conf.splitlines())
    parts = compute_parts(layout, head_address="10.0.0.4", key_hook="#!/bin/bash\n")
    assert "slurm-mps" not in [p.name for p in parts]


def test_an_elastic_partition_writes_each_gpus_mps_share_on_its_device_file():
    layout = layout_of(mps=True, partitions=[{"name": "h100", "maxNodes": 2}])
    (part,) = layout.elastic
    gpus = part.node.gpus
    assert part.node.mps == 100 * gpus
    assert f"Gres={part.node.gres},mps:{100 * gpus} " in layout.nodes_conf
    lines = layout.gres_conf.splitlines()
    assert lines[0] == f"NodeName={part.hostlist} Name=gpu Type=h100 File=/dev/nvidia[0-{gpus - 1}]"
    assert lines[1:] == [f"NodeName={part.hostlist} Name=mps Count=100 File=/dev/nvidia{i}" for i in range(gpus)]
    assert "GresTypes=gpu,mps" in layout.slurm_conf.splitlines()


@pytest.mark.parametrize("mps", [False, True])
def test_the_cluster_layout_is_unchanged_by_mps_elsewhere(mps):
    """A partition without mps keeps its one gpu line, as before."""
    layout = layout_of(mps=mps, partitions=[{"name": "h100", "maxNodes": 2}])
    assert len(layout.gres_conf.splitlines()) == 1 + (layout.elastic[0].node.gpus if mps else 0)
