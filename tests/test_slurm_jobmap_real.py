"""The job map (components/bootstrap/slurm_jobmap.sh) with the real slurmctld and slurmd (Debian's 22.05) running real
jobs on GPUs written out on device files, as tests/test_slurm_sharing_real.py does: it finds the jobs through the
tasks slurmd's slurmstepd started, on this machine's real procfs, with the real pgrep."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from . import slurm_local as local
from .conftest import ROOT
from .test_slurm_real import end_jobs, jobs, needs_root, needs_slurm, pair
from .test_slurm_sharing_real import mps_programs, sharing_machine

SCRIPT = ROOT / "components" / "bootstrap" / "slurm_jobmap.sh"


def only_this_cluster(tmp_path: Path, cluster: local.Cluster) -> Path:
    """A pgrep that answers the real one, the root slurmstepds only of this test's slurmd (they have its SLURM_CONF
    in their environment): another test's daemons on this machine (pytest -n) would add their own jobs 1, 2, ..."""
    real = shutil.which("pgrep")
    assert real
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pgrep").write_text(
        "#!/bin/bash\n"
        f'[ "$*" = "-u 0 -x -d, slurmstepd" ] || exec {real} "$@"\n'
        f"for pid in $({real} -u 0 -x slurmstepd); do\n"
        f"  tr '\\0' '\\n' 2>/dev/null </proc/$pid/environ | grep -qx 'SLURM_CONF={cluster.conf}' && echo $pid\n"
        "done | paste -sd, | grep .\n"
    )
    (bin_dir / "pgrep").chmod(0o755)
    return bin_dir


def look(jobmap: Path, bin_dir: Path) -> dict[str, list[str]]:
    """One look (`once`), as the service takes every few seconds: the map it leaves."""
    bash = shutil.which("bash")
    assert bash
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "JOBMAP_DIR": str(jobmap)}
    got = subprocess.run([bash, str(SCRIPT), "once"], env=env, capture_output=True, text=True, timeout=60)
    assert got.returncode == 0 and got.stderr == "", got.stderr
    return {p.name: p.read_text().splitlines() for p in sorted(jobmap.iterdir())}


def submit(cluster: local.Cluster, gres: str, wrap: str = "exec sleep 60") -> str:
    out = cluster.run(
        "sbatch", "--parsable", f"--gres={gres}", "--mem=64M", "--time=1", "--output=/dev/null", "--wrap", wrap
    ).stdout
    return out.strip().split(";")[0]


def running(cluster: local.Cluster, *ids: str) -> bool:
    return {(i, s) for i, s, _ in jobs(cluster)} >= {(i, "RUNNING") for i in ids}


@needs_slurm
@needs_root
def test_jobs_sharing_a_gpu_through_mps_and_a_whole_gpu_jobs_step_are_mapped_to_their_gpu(tmp_path):
    """A node of one GPU with slurm.mps (the MPS Prolog ours, against a recording systemctl): two `--gres=mps:50` jobs
    share GPU 0 and both are in its file; when one ends only the other is; after both, a whole-GPU job whose task runs
    in an srun step takes the file, and when it ends the file goes."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("two jobs of one core each need two cores")
    programs, _, _ = mps_programs(tmp_path)
    jobmap = tmp_path / "jobmap"
    with pair(tmp_path, sharing_machine(gpus=1, mps=True), **programs) as cluster:
        only = only_this_cluster(tmp_path, cluster)
        first, second = submit(cluster, "mps:50"), submit(cluster, "mps:50")
        local.wait_for(lambda: running(cluster, first, second), "both MPS jobs running", 30)
        local.wait_for(lambda: look(jobmap, only) == {"0": sorted([first, second], key=int)}, "both jobs on GPU 0", 30)
        cluster.run("scancel", first)
        local.wait_for(lambda: look(jobmap, only) == {"0": [second]}, "the ended job out of the map", 30)
        end_jobs(cluster)
        assert look(jobmap, only) == {}
        whole = submit(cluster, "gpu:h100:1", "exec srun --gres=gpu:h100:1 --mem=32M sleep 60")
        local.wait_for(lambda: running(cluster, whole), "the whole-GPU job running", 30)
        local.wait_for(lambda: look(jobmap, only) == {"0": [whole]}, "the whole-GPU job on GPU 0", 30)
        end_jobs(cluster)
        assert look(jobmap, only) == {}


@needs_slurm
@needs_root
def test_a_job_on_the_second_gpu_names_that_gpu_not_its_own_first(tmp_path):
    """A node of two GPUs: a one-GPU job fills GPU 0, the next gets GPU 1, whose file names it (the node's index, not
    the job's CUDA_VISIBLE_DEVICES, which a device cgroup would make 0)."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("two jobs of one core each need two cores")
    jobmap = tmp_path / "jobmap"
    with pair(tmp_path, sharing_machine(gpus=2)) as cluster:
        only = only_this_cluster(tmp_path, cluster)
        a = submit(cluster, "gpu:h100:1")
        local.wait_for(lambda: running(cluster, a), "the first job running", 30)
        b = submit(cluster, "gpu:h100:1")
        local.wait_for(lambda: running(cluster, a, b), "both jobs running", 30)
        # slurmctld's own account of each job's GPU index on the node
        index = {}
        for job in (a, b):
            shown = cluster.run("scontrol", "show", "job", "-d", job, "--oneliner").stdout
            found = re.search(r"GRES=gpu:h100:1\(IDX:(\d+)\)", shown)
            assert found, shown
            index[found.group(1)] = [job]
        assert set(index) == {"0", "1"}
        local.wait_for(lambda: look(jobmap, only) == index, "each job on its GPU", 30)
