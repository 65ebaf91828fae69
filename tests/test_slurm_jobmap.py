"""Per-job GPU metrics on Slurm GPU nodes: slurm_jobmap.sh against a stubbed pgrep and a procfs of the test's own
(the real daemons: tests/test_slurm_jobmap_real.py), and what the layouts render for each Slurm cloud's GPU nodes."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from components.bootstrap import cloud_init, startup_script
from components.bootstrap.metrics import UNIT_PATH, exporter_command, metrics_part
from components.bootstrap.slurm import compute_parts
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER
from components.bootstrap.slurm_jobmap import PROGRAM
from components.catalog.slurm import data
from components.layout import alicloud, aws, azure, gcp
from components.layout.slurm import slurm_layout

from .conftest import ROOT, aws_values, spec_of
from .hook_helpers import assert_shellcheck_clean, stub_bin
from .test_alicloud_slurm import slurm_values
from .test_azure_resources import azure_values
from .test_layout_gcp import gcp_values

SCRIPT = ROOT / "components" / "bootstrap" / "slurm_jobmap.sh"
DIRECTORY = str(data()["jobMap"]["directory"])
DROPIN = f"{UNIT_PATH}.d/slurm-jobmap.conf"
BASH = shutil.which("bash") or "/bin/bash"


class Node:
    """A procfs with the tasks' environments, and a pgrep answering: the root slurmstepds' pids (`-u 0 -x`), their
    children (`-P`), logged."""

    def __init__(self, tmp: Path) -> None:
        self.proc, self.map, self.calls = tmp / "proc", tmp / "jobmap", tmp / "pgrep.log"
        self.proc.mkdir()
        self.stepds: list[int] = []
        self.children: dict[int, list[int]] = {}
        self.bin = stub_bin(tmp, {"pgrep": ""}, tools=("sort", "cat", "mv", "rm", "mkdir", "sleep"))
        self._write_pgrep()

    def _write_pgrep(self) -> None:
        stepds = ",".join(map(str, self.stepds))
        children = "\n".join(str(c) for s in self.stepds for c in self.children.get(s, []))
        body = (
            f'echo "$*" >>"{self.calls}"\n'
            'case "$*" in\n'
            f'  "-u 0 -x -d, slurmstepd") [ -n "{stepds}" ] || exit 1; echo "{stepds}" ;;\n'
            f'  "-P {stepds}") [ -n "{children}" ] || exit 1; printf "%s\\n" {children.replace(chr(10), " ")} ;;\n'
            "  *) exit 3 ;;\n"
            "esac\n"
        )
        (self.bin / "pgrep").write_text("#!/bin/bash\n" + body)

    def task(self, stepd: int, pid: int, **env: str) -> None:
        """A process `stepd` started, with its environment (NUL-separated, as /proc/<pid>/environ)."""
        if stepd not in self.stepds:
            self.stepds.append(stepd)
        self.children.setdefault(stepd, []).append(pid)
        (self.proc / str(pid)).mkdir()
        text = "".join(f"{k}={v}\0" for k, v in {"PATH": "/usr/bin", **env}.items())
        (self.proc / str(pid) / "environ").write_text(text)
        self._write_pgrep()

    def end(self, stepd: int) -> None:
        for pid in self.children.pop(stepd, []):
            (self.proc / str(pid) / "environ").unlink()
        self.stepds.remove(stepd)
        self._write_pgrep()

    def env(self) -> dict[str, str]:
        return {"PATH": str(self.bin), "PROC": str(self.proc), "JOBMAP_DIR": str(self.map), "EVERY": "1"}

    def once(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BASH, str(SCRIPT), "once"], env=self.env(), capture_output=True, text=True, timeout=30, check=False
        )

    def files(self) -> dict[str, list[str]]:
        return {p.name: p.read_text().splitlines() for p in sorted(self.map.iterdir())}


def test_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


def test_each_gpu_file_names_the_jobs_of_its_tasks(tmp_path):
    """A batch job on GPUs 0-1 and 3 (Slurm's ranges), its srun step's task on GPU 3, two gres/mps jobs sharing GPU 2,
    the extern step's sleep (no GPU variable) and a job without GPUs: a file per used GPU, its jobs sorted."""
    node = Node(tmp_path)
    node.task(100, 101, SLURM_JOB_ID="41", SLURM_JOB_GPUS="0-1,3")
    node.task(110, 111, SLURM_JOB_ID="41", SLURM_JOB_GPUS="0-1,3", SLURM_STEP_ID="0", SLURM_STEP_GPUS="3")
    node.task(120, 121, SLURM_JOB_ID="52", SLURM_JOB_GPUS="2", CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="50")
    node.task(130, 131, SLURM_JOB_ID="43", SLURM_JOB_GPUS="2", CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="50")
    node.task(140, 141)  # the extern step's sleep: nothing of the job's
    node.task(150, 151, SLURM_JOB_ID="60")  # a CPU-only job
    got = node.once()
    assert got.returncode == 0 and got.stderr == "", got.stderr
    assert node.files() == {"0": ["41"], "1": ["41"], "2": ["43", "52"], "3": ["41"]}
    assert node.calls.read_text().splitlines() == ["-u 0 -x -d, slurmstepd", "-P 100,110,120,130,140,150"]


def test_a_gpu_whose_jobs_ended_loses_its_file_and_the_rest_are_left_as_they_are(tmp_path):
    node = Node(tmp_path)
    node.task(100, 101, SLURM_JOB_ID="7", SLURM_JOB_GPUS="0")
    node.task(200, 201, SLURM_JOB_ID="8", SLURM_JOB_GPUS="1")
    assert node.once().returncode == 0
    kept = (node.map / "0").stat().st_ino
    (node.map / "README").write_text("not a GPU's\n")  # not the writer's: left alone
    node.end(200)
    assert node.once().returncode == 0
    assert node.files() == {"0": ["7"], "README": ["not a GPU's"]}
    # unchanged, so not rewritten: the exporter reads the same file
    assert (node.map / "0").stat().st_ino == kept


def test_a_task_that_ended_meanwhile_is_skipped_quietly(tmp_path):
    node = Node(tmp_path)
    node.task(100, 101, SLURM_JOB_ID="7", SLURM_JOB_GPUS="0")
    node.task(100, 102, SLURM_JOB_ID="7", SLURM_JOB_GPUS="0")
    (node.proc / "102" / "environ").unlink()  # pgrep saw it, it was gone before the read
    got = node.once()
    assert got.returncode == 0 and got.stderr == ""
    assert node.files() == {"0": ["7"]}


def test_forged_or_broken_values_name_no_gpu_and_no_job(tmp_path):
    node = Node(tmp_path)
    node.task(100, 101, SLURM_JOB_ID="7;rm -rf /", SLURM_JOB_GPUS="0")
    node.task(200, 201, SLURM_JOB_ID="8", SLURM_JOB_GPUS="../etc,x,1")
    assert node.once().returncode == 0
    assert node.files() == {"1": ["8"]}


def test_no_slurmstepd_empties_the_map(tmp_path):
    node = Node(tmp_path)
    node.task(100, 101, SLURM_JOB_ID="7", SLURM_JOB_GPUS="0,1")
    assert node.once().returncode == 0 and set(node.files()) == {"0", "1"}
    node.end(100)
    assert node.once().returncode == 0
    assert node.files() == {}


def test_the_service_looks_again_and_empties_the_map_when_stopped(tmp_path):
    node = Node(tmp_path)
    proc = subprocess.Popen([BASH, str(SCRIPT)], env=node.env(), stderr=subprocess.PIPE, text=True)
    try:
        node.task(100, 101, SLURM_JOB_ID="7", SLURM_JOB_GPUS="3")
        deadline = time.monotonic() + 20
        while node.files() != {"3": ["7"]} if node.map.exists() else True:
            assert time.monotonic() < deadline, "no map after 20 s"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and err == ""
    assert node.files() == {}


def test_an_unknown_argument_is_refused(tmp_path):
    node = Node(tmp_path)
    got = subprocess.run([BASH, str(SCRIPT), "twice"], env=node.env(), capture_output=True, text=True, check=False)
    assert got.returncode == 2 and "usage" in got.stderr


# --- what the layouts render ---------------------------------------------------------------------------------------


def test_every_other_node_keeps_its_exporter_unit_and_the_drop_in_only_adds_the_directory():
    unit = next(f for f in metrics_part(True).files if f.path == UNIT_PATH)
    image = "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"
    command = f"/usr/bin/docker run --rm --name dcgm-exporter --gpus all --cap-add SYS_ADMIN --net host {image}"
    assert f"\nExecStart={command}\n" in unit.content and exporter_command() == command
    mapped = exporter_command(DIRECTORY)
    assert mapped == command.replace(
        f" {image}", f" -v {DIRECTORY}:{DIRECTORY}:ro -e DCGM_HPC_JOB_MAPPING_DIR={DIRECTORY} {image}"
    )


def compute_files(parts) -> dict[str, str]:
    return {f.path: f.content for p in parts for f in p.files}


def slurm_compute(values) -> dict[str, str]:
    layout = slurm_layout(spec_of(values))
    assert layout is not None
    return compute_files(compute_parts(layout, head_address=HEAD_PLACEHOLDER, key_hook="#!/bin/sh\n"))


def test_a_slurm_gpu_node_runs_the_writer_and_gives_the_exporter_its_directory():
    files = slurm_compute(aws_values(scheduler="slurm"))
    assert files[DROPIN] == f"[Service]\nExecStart=\nExecStart={exporter_command(DIRECTORY)}\n"
    unit = files["/etc/systemd/system/gpu-cluster-slurm-jobmap.service"]
    assert f"Environment=JOBMAP_DIR={DIRECTORY} EVERY={data()['jobMap']['everySeconds']}\n" in unit
    assert f"ExecStart={PROGRAM}\n" in unit and "Restart=always\n" in unit
    # the program as the repository has it, less its comment lines (user data size)
    program = files[PROGRAM]
    assert program.startswith("#!/bin/bash\nset -uo pipefail\n") and "pgrep -u 0 -x -d, slurmstepd" in program


@pytest.mark.parametrize(
    "values",
    [
        aws_values(scheduler="slurm", monitoring={"dcgmExporter": False}),
        aws_values(scheduler="slurm", gpuPartition="1g.10gb"),
    ],
    ids=["no-exporter", "mig"],
)
def test_no_job_map_without_the_exporter_or_on_mig_instances(values):
    files = slurm_compute(values)
    assert DROPIN not in files and PROGRAM not in files


PLANS = {
    "aws": lambda: aws.plan(spec_of(aws_values(scheduler="slurm"))).slurm.compute_parts,
    "gcp": lambda: gcp.plan(spec_of(gcp_values(scheduler="slurm"))).slurm.compute_parts,
    "azure": lambda: azure.plan(spec_of(azure_values(scheduler="slurm"))).slurm.compute_parts,
}


@pytest.mark.parametrize("cloud", sorted(PLANS))
def test_every_slurm_cloud_renders_the_job_map_into_its_gpu_nodes(cloud):
    parts = PLANS[cloud]()
    files = compute_files(parts)
    assert DROPIN in files and PROGRAM in files
    rendered = startup_script(parts) if cloud == "gcp" else cloud_init(parts)
    assert rendered is not None and "DCGM_HPC_JOB_MAPPING_DIR" in rendered
    assert ["systemctl", "enable", "--now", "gpu-cluster-slurm-jobmap.service"] in [
        list(c) for p in parts for c in p.commands
    ]


def test_alibaba_slurm_gpu_nodes_render_the_job_map():
    layout = alicloud.plan(spec_of(slurm_values()))
    assert "DCGM_HPC_JOB_MAPPING_DIR" in layout.user_data and f"path: {PROGRAM}\n" in layout.user_data
