"""The health check: behaviours the mutation harness found unpinned (tests/mutation/shell_mutants.py).

Same approach as test_health_script.py: the real script against stubbed GPU and fabric tools.
`SCRIPT` is what the harness replaces with a mutated copy.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .test_health_script import H100, fi_info, ibv_devinfo

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "health.sh"


def run(tmp_path: Path, gpus: list[str], ecc: list[str] | None = None, **env: str):
    """Run the check; `sleep` is stubbed and logged, and at the second wait moves `gpus.later` into place."""
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
        # fi_info lists RDM and datagram endpoints; `-t FI_EP_RDM` keeps the RDM ones (one per device)
        "fi_info": (
            f'if [ "$*" = "-p efa -t FI_EP_RDM" ]; then cat "{tmp_path}/fabric.txt"; '
            f'else cat "{tmp_path}/fabric.txt" "{tmp_path}/fabric.txt"; fi'
        ),
        "ibv_devinfo": f'cat "{tmp_path}/fabric.txt" 2>/dev/null',
        "sleep": (
            f'echo sleep >> "{tmp_path}/sleeps"; '
            f'if [ -f "{tmp_path}/gpus.later" ] && [ "$(wc -l < "{tmp_path}/sleeps")" -ge 2 ]; then '
            f'mv "{tmp_path}/gpus.later" "{tmp_path}/gpus.txt"; fi'
        ),
    }
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    result = tmp_path / "health.json"
    full_env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "EXPECTED_GPUS": str(len(gpus)),
        "GPU_MODEL": "H100",
        "WAIT_SECONDS": "3",
        "HEALTH_RESULT": str(result),
        "UNHEALTHY_HOOK": str(tmp_path / "missing"),
        "SYSFS_NET": str(tmp_path / "net"),
        **env,
    }
    proc = subprocess.run(["bash", str(SCRIPT)], env=full_env, capture_output=True, text=True, timeout=30)
    sleeps = len((tmp_path / "sleeps").read_text().splitlines()) if (tmp_path / "sleeps").exists() else 0
    return proc, json.loads(result.read_text()), sleeps


def failed(report) -> list[str]:
    return [c["name"] for c in report["checks"] if not c["ok"]]


def test_a_healthy_node_is_judged_without_waiting(tmp_path):
    (tmp_path / "fabric.txt").write_text(fi_info(4))
    proc, report, sleeps = run(tmp_path, [H100] * 8, FABRIC_KIND="efa", EXPECTED_FABRIC_DEVICES="4")
    assert proc.returncode == 0 and report["healthy"] is True, proc.stderr
    assert sleeps == 0


def test_gpus_that_come_up_late_are_waited_for(tmp_path):
    (tmp_path / "gpus.later").write_text(f"{H100}\n" * 8)
    proc, report, sleeps = run(tmp_path, [H100] * 6, EXPECTED_GPUS="8")
    assert report["healthy"] is True, proc.stderr
    assert sleeps == 2


def test_efa_counts_reliable_datagram_endpoints_only(tmp_path):
    """fi_info also lists a datagram endpoint per device: 3 devices of 4 must not pass as 6."""
    (tmp_path / "fabric.txt").write_text(fi_info(3))
    _, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND="efa", EXPECTED_FABRIC_DEVICES="4")
    assert failed(report) == ["fabric"]
    assert next(c for c in report["checks"] if c["name"] == "fabric")["found"] == "3"


def test_more_gpus_than_the_type_has_fails(tmp_path):
    _, report, _ = run(tmp_path, [H100] * 9, EXPECTED_GPUS="8")
    assert failed(report) == ["gpus"]


def test_a_single_uncorrectable_ecc_error_fails(tmp_path):
    _, report, _ = run(tmp_path, [H100] * 2, ecc=["0, 0, No", "1, 1, No"])
    assert failed(report) == ["ecc"]
    assert next(c for c in report["checks"] if c["name"] == "ecc")["found"] == "GPU 1"


def test_no_pending_retirement_and_no_errors_pass(tmp_path):
    _, report, _ = run(tmp_path, [H100] * 2, ecc=["0, 0, No", "1, 0, No"])
    assert report["healthy"] is True and failed(report) == []


def test_all_rdma_ports_active_pass(tmp_path):
    (tmp_path / "fabric.txt").write_text(ibv_devinfo(2))
    _, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND="erdma", EXPECTED_FABRIC_DEVICES="2")
    assert report["healthy"] is True and failed(report) == []


def test_virtual_interfaces_are_not_gpu_nics(tmp_path):
    """A bridge or veth is up but has no PCI device: it must not stand in for a dead GPU NIC."""
    for i, state in enumerate(["up"] * 8 + ["down"]):  # host NIC + 7 GPU NICs up, one GPU NIC down
        nic = tmp_path / "net" / f"eth{i}"
        (nic / "device").mkdir(parents=True)
        (nic / "operstate").write_text(state + "\n")
    bridge = tmp_path / "net" / "docker0"
    bridge.mkdir(parents=True)
    (bridge / "operstate").write_text("up\n")
    _, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND="gpudirect-tcpx", EXPECTED_FABRIC_DEVICES="8")
    assert failed(report) == ["fabric"]
    assert next(c for c in report["checks"] if c["name"] == "fabric")["found"] == "7"


def test_a_node_without_fabric_reports_no_fabric_check(tmp_path):
    _, report, _ = run(tmp_path, [H100] * 8, FABRIC_KIND="none")
    assert {c["name"] for c in report["checks"]} == {"gpus", "ecc"}


def test_more_mig_devices_than_configured_fail(tmp_path):
    (tmp_path / "mig.txt").write_text("GPU 0: NVIDIA H100\n" + "  MIG 1g.10gb     Device  0: (UUID: MIG-x)\n" * 7)
    _, report, _ = run(tmp_path, [H100], EXPECTED_MIG_DEVICES="3")
    assert failed(report) == ["mig"]
