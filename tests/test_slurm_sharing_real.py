"""GPU sharing as Slurm GRES with the real slurmctld and slurmd (Debian's 22.05): MIG instances of gpuPartition as
gpu:<profile> and slurm.mps as mps:<100 per GPU>, with the GPUs NVML would find written out on device files (this
machine has none), as tests/test_slurm_real.py does."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from components.bootstrap.slurm_conf import MPS_EPILOG, MPS_PROLOG, MPS_TASK_PROLOG, SlurmLayout
from components.layout.slurm import slurm_layout

from . import slurm_local as local
from .conftest import ROOT
from .test_slurm_real import (
    end_jobs,
    jobs,
    layout_node,
    needs_root,
    needs_slurm,
    pair,
    slurmd_gres,
    stack_spec,
)


def sharing_machine(gpus: int, mig: tuple[str, int] | None = None, mps: bool = False) -> SlurmLayout:
    """The aws-slurm-h100 layout for a node like this machine (its vCPUs, 4 GiB, `gpus` H100s), with gpuPartition
    (`mig`: profile, instances per GPU as catalog/mig.yaml has them) or slurm.mps."""
    spec = stack_spec("aws-slurm-h100")
    row = spec.instance.model_copy(update={"vcpus": os.cpu_count() or 1, "gpus": gpus, "memoryGiB": 4.0})
    assert spec.slurm is not None
    slurm = spec.slurm.model_copy(update={"mps": mps})
    layout = slurm_layout(dataclasses.replace(spec, instance=row, gpu_partition=mig, slurm=slurm))
    assert layout is not None
    return layout


def test_mig_instances_are_the_gpu_gres_typed_by_their_profile():
    layout = sharing_machine(gpus=8, mig=("1g.10gb", 7))
    assert layout.node.gres == "gpu:1g.10gb:56" and layout.node.mps == 0
    assert "Gres=gpu:1g.10gb:56" in layout.dynamic_conf()
    assert layout.gres_conf == "AutoDetect=nvml\n"
    assert "GresTypes=gpu" in layout.slurm_conf.splitlines()


def test_mps_is_a_gres_of_100_per_gpu_beside_the_gpus():
    layout = sharing_machine(gpus=8, mps=True)
    assert "Gres=gpu:h100:8,mps:800" in layout.dynamic_conf()
    assert layout.gres_conf == "AutoDetect=nvml\nName=mps Count=800\n"
    assert "GresTypes=gpu,mps" in layout.slurm_conf.splitlines()


@needs_slurm
@needs_root
def test_slurmd_spreads_the_mps_count_over_the_gpus(tmp_path):
    """NVML's GPUs (written out here) take 100 mps each: gres.conf's Name=mps Count=800 without File is spread."""
    out = slurmd_gres(sharing_machine(gpus=8, mps=True), tmp_path)
    for i in range(8):
        assert f"Gres Name=mps Type=h100 Count=100 Index={i} " in out, out
        assert f"Gres Name=gpu Type=h100 Count=1 Index={i} " in out, out


@needs_slurm
@needs_root
def test_a_job_asks_one_mig_instance_by_its_profile(tmp_path):
    """slurmctld and a dynamic node of 7 x 1g.10gb (one H100 split): `--gres=gpu:1g.10gb:1` runs on it."""
    layout = sharing_machine(gpus=1, mig=("1g.10gb", 7))
    with pair(tmp_path, layout) as cluster:
        shown = cluster.run("scontrol", "show", "node", layout_node(cluster), "--oneliner").stdout
        assert " Gres=gpu:1g.10gb:7 " in shown, shown
        cluster.run("sbatch", "--gres=gpu:1g.10gb:1", "--time=1", "--output=/dev/null", "--wrap", "exec sleep 60")
        local.wait_for(lambda: [s for _, s, _ in jobs(cluster)] == ["RUNNING"], "the MIG job running", 30)


def mps_programs(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """slurm_mps.sh under its three names, run by slurmd from here: its state and systemctl's record in tmp_path."""
    state, calls = tmp_path / "mps-state", tmp_path / "systemctl.log"
    systemctl = tmp_path / "systemctl"
    systemctl.write_text(f'#!/bin/bash\necho "$*" >>{calls}\n')
    systemctl.chmod(0o755)
    programs = {}
    for key, path in (("Prolog", MPS_PROLOG), ("TaskProlog", MPS_TASK_PROLOG), ("Epilog", MPS_EPILOG)):
        link = tmp_path / Path(path).name
        link.symlink_to(ROOT / "components" / "bootstrap" / "slurm_mps.sh")
        wrapper = tmp_path / f"{link.name}-here"
        wrapper.write_text(f"#!/bin/bash\nMPS_STATE={state} SYSTEMCTL={systemctl} exec bash {link}\n")
        wrapper.chmod(0o755)
        programs[key] = str(wrapper)
    return programs, state, calls


@needs_slurm
@needs_root
def test_a_job_asks_a_share_of_a_gpu_through_mps_and_reaches_its_daemon(tmp_path):
    """slurmctld and a dynamic node of 1 GPU with mps:100: a `--gres=mps:50` job runs; slurmd's Prolog (ours) starts
    GPU 0's MPS daemon, the TaskProlog points the job's tasks at it; a whole-GPU job after it stops the daemon."""
    layout = sharing_machine(gpus=1, mps=True)
    conf = layout.slurm_conf.splitlines()
    assert {f"Prolog={MPS_PROLOG}", f"TaskProlog={MPS_TASK_PROLOG}", f"Epilog={MPS_EPILOG}"} <= set(conf)
    programs, state, calls = mps_programs(tmp_path)
    seen = tmp_path / "seen"
    with pair(tmp_path, layout, **programs) as cluster:
        shown = cluster.run("scontrol", "show", "node", layout_node(cluster), "--oneliner").stdout
        assert " Gres=gpu:h100:1,mps:h100:100 " in shown, shown  # slurmd types the mps of its GPU
        task = f"echo $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE >{seen}; exec sleep 60"
        cluster.run("sbatch", "--gres=mps:50", "--time=1", "--output=/dev/null", "--wrap", task)
        local.wait_for(lambda: [s for _, s, _ in jobs(cluster)] == ["RUNNING"], "the MPS job running", 30)
        local.wait_for(seen.exists, "the MPS job's task", 30)
        assert seen.read_text().split() == [f"{state}/gpu0", "50"]
        assert calls.read_text().splitlines() == ["start gpu-cluster-mps@0.service"]
        end_jobs(cluster)
        local.wait_for(lambda: not list(state.glob("job-*")), "the Epilog forgetting the job", 30)
        cluster.run("sbatch", "--gres=gpu:h100:1", "--time=1", "--output=/dev/null", "--wrap", "exit 0")
        local.wait_for(lambda: len(calls.read_text().splitlines()) == 2, "the whole-GPU job's Prolog", 30)
        assert calls.read_text().splitlines()[1] == "stop gpu-cluster-mps@0.service"
