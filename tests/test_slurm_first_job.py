"""The first job: `gpu-cluster-nccl-test` on the login node, run against a real slurmctld and slurmd (Debian's 22.05,
as tests/test_slurm_real.py): its srun step (the nccl-tests build on a GPU node, skipped when the image has a build)
and its sbatch job (mpirun, one rank per GPU, each rank with the node's NCCL settings) go through real Slurm; MPI and
all_reduce_perf are stand-ins that print what they were given. Skips without the daemons or root."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from components.bootstrap import slurm as slurm_parts

from .conftest import ROOT
from .test_slurm_real import needs_root, needs_slurm, pair, this_machine

SCRIPT = ROOT / "components" / "bootstrap" / "slurm_nccl_test.sh"


def _exe(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


@needs_slurm
@needs_root
def test_the_first_job_runs_all_reduce_perf_with_one_rank_per_gpu_and_the_nodes_nccl_settings(tmp_path):
    home, image = tmp_path / "home", tmp_path / "image"
    home.mkdir()
    # the GPU image's MPI (its mpirun runs the command once, saying how it was asked to map) and nccl-tests build
    _exe(image / "mpi" / "bin" / "mpirun", 'echo "mpirun $1 $2 $3 $4" >>"$HOME/calls"; shift 4; exec "$@"')
    _exe(
        image / "nccl-tests" / "all_reduce_perf",
        'echo "all_reduce_perf $* NCCL_DEBUG=$NCCL_DEBUG" >>"$HOME/calls"\necho "# Avg bus bandwidth    : 42.5 "',
    )
    nccl_env = tmp_path / "nccl.env"
    nccl_env.write_text("NCCL_DEBUG=INFO\n")
    settings = tmp_path / "nccl-test.env"
    part = slurm_parts.nccl_test_part()
    shipped = next(f.content for f in part.files if f.path.endswith(".env"))
    # the shipped settings, with the image's directories of this test first
    settings.write_text(
        shipped.replace('PREBUILT="', f'PREBUILT="{image}/nccl-tests ').replace(
            'MPI_HOMES="', f'MPI_HOMES="{image}/mpi '
        )
    )
    with pair(tmp_path, this_machine(gpus=2)) as cluster:
        env = {**cluster.env(), "HOME": str(home), "ENV_FILE": str(settings), "NCCL_ENV": str(nccl_env)}
        proc = subprocess.run(
            ["bash", str(SCRIPT), "-N", "1"], env=env, cwd=home, capture_output=True, text=True, timeout=180
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "# Avg bus bandwidth    : 42.5" in proc.stdout
    calls = (home / "calls").read_text().splitlines()
    assert calls == [
        "mpirun --map-by ppr:2:node --bind-to none",  # one rank per GPU of the partition's nodes (gpu:h100:2)
        "all_reduce_perf -b 8 -e 8G -f 2 -g 1 NCCL_DEBUG=INFO",
    ]
    assert sorted(p.name for p in home.glob("nccl-test-*.out")) != []


def test_the_login_node_gets_the_first_job_with_the_pinned_nccl_tests():
    part = slurm_parts.nccl_test_part()
    env = next(f.content for f in part.files if f.path == "/etc/gpu-cluster/nccl-test.env")
    assert 'NCCL_TESTS_TAG="v2.19.6"' in env and 'NCCL_TESTS_REPO="https://github.com/NVIDIA/nccl-tests"' in env
    assert 'MPI_HOMES="/opt/amazon/openmpi ' in env  # the DLAMI's MPI first
    assert os.path.basename(slurm_parts.NCCL_TEST) == "gpu-cluster-nccl-test"
