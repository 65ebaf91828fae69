"""The health check, run for real against stubbed GPUs and fabric devices (no root, no GPU)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from components import bootstrap
from components.bootstrap.health import HealthCheck, health_part, health_script

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "health.sh"
H100 = "NVIDIA H100 80GB HBM3"


def fi_info(domains: int) -> str:
    return "".join(
        f"provider: efa\n    fabric: efa\n    domain: rdmap{i}s0-rdm\n    version: 122.0\n" for i in range(domains)
    )


def ibstat(active: int, down: int = 0, ethernet: int = 1) -> str:
    ports = []
    for i in range(active + down):
        state = "Active" if i < active else "Down"
        ports.append(
            f"CA 'mlx5_ib{i}'\n\tPort 1:\n\t\tState: {state}\n\t\tPhysical state: LinkUp\n\t\tLink layer: InfiniBand\n"
        )
    for i in range(ethernet):
        ports.append(f"CA 'mlx5_an{i}'\n\tPort 1:\n\t\tState: Active\n\t\tLink layer: Ethernet\n")
    return "".join(ports)


def ibv_devinfo(active: int, down: int = 0) -> str:
    out = []
    for i in range(active + down):
        state = "PORT_ACTIVE (4)" if i < active else "PORT_DOWN (1)"
        out.append(f"hca_id:\terdma_{i}\n\tport:\t1\n\t\t\tstate:\t\t\t{state}\n")
    return "".join(out)


def run(tmp_path: Path, gpus: list[str], ecc: list[str] | None = None, hook: bool = True, **env: str):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "gpus.txt").write_text("".join(f"{g}\n" for g in gpus))
    ecc_lines = ecc if ecc is not None else [f"{i}, 0, [N/A]" for i in range(len(gpus))]
    (tmp_path / "ecc.txt").write_text("".join(f"{line}\n" for line in ecc_lines))
    stubs = {
        "nvidia-smi": (
            f'case "$*" in *ecc.errors*) cat "{tmp_path}/ecc.txt" ;; -L) cat "{tmp_path}/mig.txt" 2>/dev/null ;; '
            f'*) cat "{tmp_path}/gpus.txt" ;; esac'
        ),
        "fi_info": f'cat "{tmp_path}/fabric.txt" 2>/dev/null',
        "ibstat": f'cat "{tmp_path}/fabric.txt" 2>/dev/null',
        "ibv_devinfo": f'cat "{tmp_path}/fabric.txt" 2>/dev/null',
        "dcgmi": 'exit "${DCGM_EXIT:-0}"',
        "sleep": "exit 0",
    }
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    hook_path = tmp_path / "hook"
    hook_path.write_text(f"#!/bin/bash\ntouch {tmp_path}/replaced\n")
    hook_path.chmod(0o755)
    result = tmp_path / "health.json"
    full_env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "EXPECTED_GPUS": str(len(gpus)),
        "GPU_MODEL": "H100",
        "WAIT_SECONDS": "2",
        "HEALTH_RESULT": str(result),
        "UNHEALTHY_HOOK": str(hook_path) if hook else str(tmp_path / "missing"),
        "SYSFS_NET": str(tmp_path / "net"),
        **env,
    }
    proc = subprocess.run(["bash", str(SCRIPT)], env=full_env, capture_output=True, text=True, timeout=30)
    report = json.loads(result.read_text())
    return proc, report, (tmp_path / "replaced").exists()


def failed(report) -> list[str]:
    return [c["name"] for c in report["checks"] if not c["ok"]]


def test_shellcheck_clean():
    proc = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_a_healthy_efa_node_passes(tmp_path):
    (tmp_path / "fabric.txt").write_text(fi_info(32))
    proc, report, replaced = run(
        tmp_path, [H100] * 8, FABRIC_KIND="efa", EXPECTED_FABRIC_DEVICES="32", ACTION="replace"
    )
    assert proc.returncode == 0, proc.stderr
    assert report["healthy"] is True and failed(report) == [] and not replaced
    assert {c["name"] for c in report["checks"]} == {"gpus", "ecc", "fabric"}


def test_seven_of_eight_gpus_fails_and_asks_for_replacement(tmp_path):
    (tmp_path / "fabric.txt").write_text(fi_info(32))
    proc, report, replaced = run(
        tmp_path, [H100] * 7, EXPECTED_GPUS="8", FABRIC_KIND="efa", EXPECTED_FABRIC_DEVICES="32", ACTION="replace"
    )
    assert proc.returncode == 1
    assert report["healthy"] is False and failed(report) == ["gpus"] and replaced
    assert "expected 8, found 7" in proc.stderr


def test_a_dead_efa_device_fails(tmp_path):
    (tmp_path / "fabric.txt").write_text(fi_info(31))
    proc, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND="efa", EXPECTED_FABRIC_DEVICES="32")
    assert proc.returncode == 1 and failed(report) == ["fabric"]


def test_report_only_never_runs_the_hook(tmp_path):
    (tmp_path / "fabric.txt").write_text(fi_info(1))
    proc, report, replaced = run(tmp_path, [H100] * 8, FABRIC_KIND="efa", EXPECTED_FABRIC_DEVICES="4", ACTION="report")
    assert proc.returncode == 1 and not replaced and report["action"] == "report"


def test_a_wrong_gpu_model_fails(tmp_path):
    proc, report, _ = run(tmp_path, [H100] * 7 + ["NVIDIA A100-SXM4-80GB"])
    assert proc.returncode == 1 and failed(report) == ["gpus"]


def test_uncorrectable_ecc_errors_or_pending_retirement_fail(tmp_path):
    _, report, _ = run(tmp_path, [H100] * 2, ecc=["0, 0, No", "1, 3, No"])
    assert failed(report) == ["ecc"] and "GPU 1" in json.dumps(report)
    _, report, _ = run(tmp_path, [H100] * 2, ecc=["0, 0, Yes", "1, 0, No"])
    assert failed(report) == ["ecc"]


@pytest.mark.parametrize(("active", "down", "ok"), [(8, 0, True), (7, 1, False)])
def test_infiniband_counts_active_infiniband_ports_only(tmp_path, active, down, ok):
    (tmp_path / "fabric.txt").write_text(ibstat(active, down, ethernet=1))
    _, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND="infiniband", EXPECTED_FABRIC_DEVICES="8")
    assert report["healthy"] is ok
    assert next(c for c in report["checks"] if c["name"] == "fabric")["found"] == str(active)


@pytest.mark.parametrize("kind", ["erdma", "gpudirect-rdma"])
def test_rdma_ports(tmp_path, kind):
    (tmp_path / "fabric.txt").write_text(ibv_devinfo(1, down=1))
    _, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND=kind, EXPECTED_FABRIC_DEVICES="2")
    assert failed(report) == ["fabric"]


def test_tcpx_counts_gpu_nics_that_are_up(tmp_path):
    for i, state in enumerate(["up"] * 9 + ["down"]):
        nic = tmp_path / "net" / f"eth{i}"
        (nic / "device").mkdir(parents=True)
        (nic / "operstate").write_text(state + "\n")
    (tmp_path / "net" / "lo").mkdir(parents=True)  # virtual: no device link
    proc, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND="gpudirect-tcpxo", EXPECTED_FABRIC_DEVICES="8")
    assert report["healthy"] is True, proc.stderr
    proc, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND="gpudirect-tcpxo", EXPECTED_FABRIC_DEVICES="9")
    assert failed(report) == ["fabric"]


def test_local_nvme_and_dcgm(tmp_path):
    disks = tmp_path / "dev" / "disk" / "by-id"
    disks.mkdir(parents=True)
    for i in range(3):
        (disks / f"nvme-Amazon_EC2_NVMe_Instance_Storage_{i}").touch()
    (disks / "nvme-Amazon_EC2_NVMe_Instance_Storage_0-part1").touch()
    glob = str(disks / "nvme-Amazon_EC2_NVMe_Instance_Storage_*")
    _, report, _ = run(tmp_path, [H100] * 8, EXPECTED_NVME="4", NVME_GLOBS=glob, DCGM_LEVEL="1", DCGM_EXIT="1")
    assert failed(report) == ["nvme", "dcgm"]


def test_the_part_installs_the_script_its_settings_and_the_hook():
    check = HealthCheck(8, "H100", "efa", 32, 8, ("/dev/disk/by-id/x*",), "replace")
    part = health_part(check, "#!/bin/bash\necho hook\n")
    files = {f.path: f for f in part.files}
    assert files["/usr/local/sbin/gpu-cluster-health"].content == health_script() == SCRIPT.read_text()
    env = files["/etc/gpu-cluster/health.env"].content
    assert 'EXPECTED_GPUS="8"' in env and 'EXPECTED_FABRIC_DEVICES="32"' in env and 'ACTION="replace"' in env
    assert "/usr/local/sbin/gpu-cluster-unhealthy" in files
    assert "gpu-cluster-health.service" in " ".join(part.commands[-1])
    report_only = health_part(HealthCheck(8, "H100", "efa", 32, 8, (), "report"), "#!/bin/bash\n")
    assert "/usr/local/sbin/gpu-cluster-unhealthy" not in {f.path for f in report_only.files}
    assert health_part(None).empty
    assert "gpu-cluster-health" in bootstrap.cloud_init([part])


def test_mig_devices_are_counted(tmp_path):
    (tmp_path / "mig.txt").write_text("GPU 0: NVIDIA H100\n" + "  MIG 1g.10gb     Device  0: (UUID: MIG-x)\n" * 7)
    _, report, _ = run(tmp_path, [H100], EXPECTED_MIG_DEVICES="7")
    assert report["healthy"] is True
    _, report, _ = run(tmp_path, [H100], EXPECTED_MIG_DEVICES="14")
    assert failed(report) == ["mig"]


def test_nvme_is_counted_once_per_device_across_globs(tmp_path):
    real = tmp_path / "dev"
    real.mkdir()
    links = tmp_path / "by-id"
    links.mkdir()
    for i in range(2):
        (real / f"nvme{i}n1").touch()
        (links / f"nvme-Disk_{i}").symlink_to(real / f"nvme{i}n1")
        (links / f"nvme-eui.{i}").symlink_to(real / f"nvme{i}n1")  # a second name for the same device
    globs = f"{links}/nvme-Disk_* {links}/nvme-eui.*"
    _, report, _ = run(tmp_path, [H100], EXPECTED_NVME="3", NVME_GLOBS=globs)
    assert failed(report) == ["nvme"]
    assert next(c for c in report["checks"] if c["name"] == "nvme")["found"] == "2"


def test_the_result_says_it_belongs_to_this_boot(tmp_path):
    _, report, _ = run(tmp_path, [H100])
    assert report["status"] == "done" and "boot" in report


def test_the_result_is_valid_json_whatever_the_names_hold(tmp_path):
    # a model text with a quote and a backslash lands in `expected` and `detail` of a failed check;
    # run() parses the result as JSON, so an unescaped character fails here
    model = 'H"1\\00'
    _, report, _ = run(tmp_path, [f"NVIDIA {model} 80GB", "NVIDIA A100"], GPU_MODEL=model)
    gpus = next(c for c in report["checks"] if c["name"] == "gpus")
    assert gpus["ok"] is False and gpus["expected"] == f"2 x {model}" and model in gpus["detail"]
