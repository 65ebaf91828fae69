"""Per-job GPU metrics on Slurm GPU nodes: slurm_jobmap.sh against a stubbed pgrep and a procfs of the test's own
(the real daemons: tests/test_slurm_jobmap_real.py), and what the layouts render for each Slurm cloud's GPU nodes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from components.bootstrap import cloud_init, monitoring, startup_script
from components.bootstrap.metrics import UNIT_PATH, exporter_command, metrics_part
from components.bootstrap.slurm import compute_parts
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER
from components.bootstrap.slurm_jobmap import PROGRAM
from components.catalog.slurm import data
from components.layout import alicloud, aws, azure, gcp
from components.layout.aws import monitoring as aws_monitoring
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
        # a new file renamed over the old one: the running service never execs a file still open for writing
        # (ETXTBSY, "Text file busy")
        staged = self.bin / ".pgrep.new"
        staged.write_text("#!/bin/bash\n" + body)
        staged.chmod(0o755)
        os.replace(staged, self.bin / "pgrep")

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
    node.task(200, 201, SLURM_JOB_ID="8", SLURM_JOB_GPUS="../etc,x,1,0-99999999,1000")
    assert node.once().returncode == 0
    assert node.files() == {"1": ["8"]}


def test_a_steps_task_is_mapped_by_its_steps_gpus_not_what_it_inherited(tmp_path):
    """srun passes the batch script's environment on (SLURM_JOB_GPUS, anything the user exported); Slurm sets the
    step's own SLURM_STEP_GPUS over it. Without a step id (the batch script) the job's are Slurm's."""
    node = Node(tmp_path)
    node.task(110, 111, SLURM_JOB_ID="41", SLURM_JOB_GPUS="0-3", SLURM_STEP_ID="0", SLURM_STEP_GPUS="2")
    node.task(120, 121, SLURM_JOB_ID="42", SLURM_JOB_GPUS="5", SLURM_STEP_GPUS="0-3")  # exported into a batch job
    assert node.once().returncode == 0
    assert node.files() == {"2": ["41"], "5": ["42"]}


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


# --- the dashboards: a job variable, and totals that count a shared GPU once ----------------------------------------

BOARDS = monitoring.dashboards()
# GPU 0 of node a shared by jobs 7 and 8 (MPS: the exporter repeats its series once per job), GPU 1 without a job
SERIES = {
    "DCGM_FI_DEV_GPU_UTIL": (50, 10),
    "DCGM_FI_DEV_POWER_USAGE": (100, 200),
    "DCGM_FI_DEV_FB_USED": (10, 20),
    "DCGM_FI_DEV_FB_FREE": (30, 20),
    "DCGM_FI_DEV_FB_RESERVED": (0, 0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.5, 0.25),
    "DCGM_FI_DEV_XID_ERRORS": (0, 43),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": (0, 0),
}


def _input_series() -> list[dict[str, str]]:
    out = []
    for name, (shared, alone) in SERIES.items():
        out += [{"series": f'{name}{{node="a",gpu="0",hpc_job="{j}"}}', "values": f"{shared}x5"} for j in (7, 8)]
        out.append({"series": f'{name}{{node="a",gpu="1"}}', "values": f"{alone}x5"})
    out.append({"series": 'up{job="dcgm-exporter",node="a"}', "values": "1x5"})
    return out


def promtool_eval(tmp_path, cases: list[tuple[str, list[tuple[dict[str, str], float]]]]) -> None:
    """`promtool test rules` evaluating each expression on SERIES: its samples must be exactly the expected ones."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus)")
    tests = {
        "rule_files": [],
        "tests": [
            {
                "interval": "1m",
                "input_series": _input_series(),
                "promql_expr_test": [
                    {
                        "expr": expr,
                        "eval_time": "2m",
                        "exp_samples": [
                            {"labels": "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "value": value}
                            for labels, value in samples
                        ],
                    }
                    for expr, samples in cases
                ],
            }
        ],
    }
    path = tmp_path / "dashboards_test.yml"
    path.write_text(yaml.safe_dump(tests))
    run = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def _overview(title_start: str) -> list[str]:
    panel = next(p for p in BOARDS["dashboard-overview.json"]["panels"] if p["title"].startswith(title_start))
    return [t["expr"] for t in panel["targets"]]


def test_the_overview_counts_a_gpu_shared_by_jobs_once(tmp_path):
    (gpus,) = _overview("GPUs reporting")
    (power,) = _overview("Power draw, whole cluster")
    (util,) = _overview("GPU utilisation per node")
    (memory,) = _overview("GPU memory used per node")
    (tensor,) = _overview("Tensor pipe active")
    xid, remap = _overview("GPUs with an XID error")
    (per_job,) = _overview("GPU utilisation per Slurm job")
    promtool_eval(
        tmp_path,
        [
            ("count(DCGM_FI_DEV_GPU_UTIL)", [({}, 3)]),  # the control: the shared GPU's series are there twice
            (gpus, [({}, 2)]),
            (power, [({}, 300)]),
            (util, [({"node": "a"}, 30)]),
            (memory, [({"node": "a"}, 37.5)]),
            (tensor, [({}, 0.375)]),
            (xid, [({}, 1)]),
            (remap, [({}, 0)]),
            (per_job, [({"hpc_job": "7"}, 50), ({"hpc_job": "8"}, 50)]),
        ],
    )


def test_the_node_dashboard_selects_a_jobs_gpus_and_all_keeps_the_gpus_without_a_job(tmp_path):
    board = BOARDS["dashboard-nodes.json"]
    job = next(v for v in board["templating"]["list"] if v["name"] == "job")
    assert job["query"]["query"] == 'label_values(DCGM_FI_DEV_GPU_UTIL{node=~"$node"}, hpc_job)'
    assert job["multi"] and job["includeAll"] and job["allValue"] == ".*"
    gpu_targets = [t for p in board["panels"] for t in p["targets"] if "DCGM_" in t["expr"]]
    assert len(gpu_targets) == 11
    for target in gpu_targets:
        assert 'hpc_job=~"$job"' in target["expr"] and "{{hpc_job}}" in target["legendFormat"], target
    (util,) = [t["expr"] for p in board["panels"] if p["title"] == "GPU utilisation" for t in p["targets"]]
    everything = util.replace("$node", ".*").replace("$job", job["allValue"])
    one_job = util.replace("$node", ".*").replace("$job", "7")
    promtool_eval(
        tmp_path,
        [
            (
                everything,
                [
                    ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "node": "a", "gpu": "0", "hpc_job": "7"}, 50),
                    ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "node": "a", "gpu": "0", "hpc_job": "8"}, 50),
                    ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "node": "a", "gpu": "1"}, 10),
                ],
            ),
            (one_job, [({"__name__": "DCGM_FI_DEV_GPU_UTIL", "node": "a", "gpu": "0", "hpc_job": "7"}, 50)]),
        ],
    )


def test_every_dashboard_query_parses(tmp_path):
    """Each panel's query, its variables given values, as a recording rule: promtool judges the PromQL."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus)")
    exprs = [
        t["expr"].replace("$node", ".*").replace("$job", ".*").replace("$__rate_interval", "5m")
        for board in BOARDS.values()
        for p in board["panels"]
        for t in p["targets"]
    ]
    rules = {"groups": [{"name": "g", "rules": [{"record": f"r{i}", "expr": e} for i, e in enumerate(exprs)]}]}
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    run = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_prometheus_keeps_the_exporters_labels():
    """The login node's Prometheus relabels targets only: no metric relabelling drops hpc_job."""
    spec = spec_of(aws_values(login={}, scheduler="slurm"))
    thresholds = monitoring.Thresholds(**spec.monitoring.alerts.model_dump())
    settings = monitoring.Monitoring("c", aws_monitoring.discovery(spec), 15, thresholds, "gpu")
    config = yaml.safe_load(monitoring.prometheus_config(settings))
    for job in config["scrape_configs"]:
        assert "metric_relabel_configs" not in job
        assert all("hpc_job" not in json.dumps(r) for r in job["relabel_configs"])
