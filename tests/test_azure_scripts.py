"""The Azure node scripts, run for real against stubbed sysfs, commands and requests (no root, no IB)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

BOOTSTRAP = Path(__file__).resolve().parent.parent / "components" / "bootstrap"
IB = BOOTSTRAP / "azure_ib.sh"
HTTP = BOOTSTRAP / "azure_health_http.sh"
HOOK = BOOTSTRAP / "azure_unhealthy.sh"


def stub(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


@pytest.mark.parametrize("script", [IB, HTTP, HOOK], ids=lambda p: p.name)
def test_shellcheck_clean(script):
    proc = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# --- azure_ib.sh ---------------------------------------------------------------------------------------


def ib_node(tmp_path: Path, ib_ports: int = 8, ethernet: int = 1, topo: bool = True, peermem: bool = True) -> dict:
    sysfs_ib, modules = tmp_path / "infiniband", tmp_path / "module"
    for i in range(ib_ports + ethernet):
        port = sysfs_ib / f"mlx5_{i}" / "ports" / "1"
        port.mkdir(parents=True)
        (port / "link_layer").write_text("InfiniBand\n" if i < ib_ports else "Ethernet\n")
    modules.mkdir()
    if peermem:
        (modules / "nvidia_peermem").mkdir()
    topo_file = tmp_path / "ndv5-topo.xml"
    if topo:
        topo_file.write_text("<system version='1'></system>\n")
    return {
        "NCCL_TOPO_FILE": str(topo_file),
        "EXPECTED_IB_DEVICES": "8",
        "SYSFS_IB": str(sysfs_ib),
        "SYSFS_MODULE": str(modules),
    }


def run_ib(tmp_path: Path, env: dict, modprobe: str = "exit 1") -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "modprobe", modprobe)
    full = {"PATH": f"{bin_dir}:{os.environ['PATH']}", **env}
    return subprocess.run(["bash", str(IB)], env=full, capture_output=True, text=True, timeout=30)


def test_a_ready_ndv5_node_passes(tmp_path):
    proc = run_ib(tmp_path, ib_node(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "8 InfiniBand ports" in proc.stderr and "ready for NCCL" in proc.stderr


def test_a_missing_topology_file_fails_and_is_named(tmp_path):
    env = ib_node(tmp_path, topo=False)
    proc = run_ib(tmp_path, env)
    assert proc.returncode == 1 and f"missing: NCCL topology file {env['NCCL_TOPO_FILE']}" in proc.stderr


def test_nvidia_peermem_is_loaded_when_missing(tmp_path):
    env = ib_node(tmp_path, peermem=False)
    proc = run_ib(
        tmp_path, env, modprobe=f'[ "$1" = nvidia-peermem ] && mkdir -p "{env["SYSFS_MODULE"]}/nvidia_peermem"'
    )
    assert proc.returncode == 0, proc.stderr
    assert "loading it" in proc.stderr


def test_nvidia_peermem_that_will_not_load_fails(tmp_path):
    proc = run_ib(tmp_path, ib_node(tmp_path, peermem=False))
    assert proc.returncode == 1 and "nvidia_peermem kernel module" in proc.stderr


def test_a_missing_ib_port_fails_and_ethernet_ports_do_not_count(tmp_path):
    proc = run_ib(tmp_path, ib_node(tmp_path, ib_ports=7, ethernet=2))
    assert proc.returncode == 1 and "InfiniBand ports: 7 of 8" in proc.stderr


# --- azure_health_http.sh ------------------------------------------------------------------------------


def probe(tmp_path: Path, result: dict | None, request: str = "GET /health HTTP/1.1", stale: bool = False):
    boot = int(time.time()) - 600
    (tmp_path / "stat").write_text(f"cpu  1 2 3\nbtime {boot}\nprocesses 9\n")
    health = tmp_path / "health.json"
    if result is not None:
        health.write_text(json.dumps(result))
        if stale:
            os.utime(health, (boot - 3600, boot - 3600))
    env = {"PATH": os.environ["PATH"], "HEALTH_RESULT": str(health), "PROC_STAT": str(tmp_path / "stat")}
    raw = f"{request}\r\nHost: localhost:9401\r\nUser-Agent: ApplicationHealthExtension/1.0\r\n\r\n"
    # bytes, not text: the answer's CRLFs must reach the test as sent
    proc = subprocess.run(["bash", str(HTTP)], input=raw.encode(), env=env, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    head, _, body = proc.stdout.decode().partition("\r\n\r\n")
    status = head.split("\r\n")[0]
    length = next(int(h.split(": ")[1]) for h in head.split("\r\n") if h.startswith("Content-Length"))
    assert length == len(body.encode())
    return status, json.loads(body)


def test_a_healthy_node_answers_healthy(tmp_path):
    status, body = probe(tmp_path, {"healthy": True, "action": "replace", "checks": []})
    assert status == "HTTP/1.1 200 OK" and body == {"ApplicationHealthState": "Healthy"}


def test_an_unhealthy_node_answers_unhealthy_with_a_2xx(tmp_path):
    status, body = probe(tmp_path, {"healthy": False, "action": "replace", "checks": []})
    assert status == "HTTP/1.1 200 OK" and body == {"ApplicationHealthState": "Unhealthy"}


def test_no_result_yet_is_not_an_answer(tmp_path):
    status, body = probe(tmp_path, None)
    assert status.startswith("HTTP/1.1 503") and "ApplicationHealthState" not in body


def test_a_check_still_running_is_not_an_answer(tmp_path):
    status, body = probe(tmp_path, {"healthy": None, "status": "running", "boot": "b"})
    assert status.startswith("HTTP/1.1 503") and "ApplicationHealthState" not in body


def test_a_result_from_before_this_boot_is_not_trusted(tmp_path):
    status, _ = probe(tmp_path, {"healthy": True, "action": "replace", "checks": []}, stale=True)
    assert status.startswith("HTTP/1.1 503")


@pytest.mark.parametrize("request_line", ["GET / HTTP/1.1", "POST /health HTTP/1.1", "GET /healthz HTTP/1.1"])
def test_only_get_health_is_served(tmp_path, request_line):
    status, _ = probe(tmp_path, {"healthy": True, "checks": []}, request=request_line)
    assert status.startswith("HTTP/1.1 404")


def test_a_query_string_is_ignored(tmp_path):
    status, _ = probe(tmp_path, {"healthy": True, "checks": []}, request="GET /health?probe=1 HTTP/1.1")
    assert status == "HTTP/1.1 200 OK"


# --- azure_unhealthy.sh --------------------------------------------------------------------------------


def run_hook(tmp_path: Path, active: bool, start_ok: bool = True) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    calls = tmp_path / "calls"
    stub(
        bin_dir,
        "systemctl",
        f'echo "$*" >> "{calls}"; case "$1" in is-active) exit {0 if active else 3} ;; '
        f"start) exit {0 if start_ok else 1} ;; esac",
    )
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", str(HOOK)], env=env, capture_output=True, text=True, timeout=30)
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_the_hook_calls_nothing_when_the_endpoint_listens(tmp_path):
    proc, calls = run_hook(tmp_path, active=True)
    assert proc.returncode == 0 and calls == ["is-active --quiet gpu-cluster-health-http.socket"]
    assert "automatic repairs will replace this instance" in proc.stderr


def test_the_hook_starts_the_endpoint_when_it_is_down(tmp_path):
    proc, calls = run_hook(tmp_path, active=False)
    assert proc.returncode == 0 and calls[-1] == "start gpu-cluster-health-http.socket"


def test_the_hook_fails_when_the_endpoint_cannot_start(tmp_path):
    proc, _ = run_hook(tmp_path, active=False, start_ok=False)
    assert proc.returncode == 1 and "Unknown" in proc.stderr
