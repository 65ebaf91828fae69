"""The GCP shell scripts run for real against stubbed commands (no root, no GPU, no network):
gcp_fabric.sh (TCPXO and gIB enablement), gcp_health_http.sh (the autohealing endpoint), gcp_unhealthy.sh."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from components import catalog
from components.layout import gcp as gcp_layout
from components.layout.gcp import fabric as gcp_fabric

from .test_layout_gcp import layout_of, typed

HERE = Path(__file__).resolve().parent.parent / "components" / "bootstrap"
BEGIN = "# >>> from Google's TCPXO installer (gpu-cluster-gcp-fabric)"
PROFILE = "export NCCL_FASTRAK_CTRL_DEV=eth0\nexport NCCL_FASTRAK_IFNAME=eth1,eth2\nNOT_EXPORTED=1\n"


@pytest.mark.parametrize("name", ["gcp_fabric.sh", "gcp_health_http.sh", "gcp_unhealthy.sh"])
def test_shellcheck_clean(name):
    proc = subprocess.run(["shellcheck", str(HERE / name)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def settings(layout: gcp_layout.GcpLayout) -> dict[str, str]:
    """The gcp-fabric.env the layout renders, as the script's environment."""
    script = layout.startup_script or ""
    body = script.split(f"cat > {gcp_fabric.FABRIC_ENV} <<'", 1)[1].split("\n", 1)[1]
    text = body.split("\nGPU_CLUSTER_EOF_", 1)[0]
    return {k: json.loads(v) for k, v in (line.split("=", 1) for line in text.splitlines())}


def fabric(tmp_path: Path, env: dict[str, str], *, ready: bool = True, profile: bool = True, installed: str = ""):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "calls.log"
    var_lib = tmp_path / "var-lib"
    var_lib.mkdir(exist_ok=True)
    (tmp_path / "profile.txt").write_text(PROFILE)
    stubs = {
        "dpkg": f'case " {installed} " in *" $2 "*) exit 0 ;; *) exit 1 ;; esac',
        "docker": (
            f'echo "docker $*" >>"{calls}"; '
            + (
                f'case "$*" in *install*) mkdir -p "{var_lib}/tcpxo/lib64"; '
                f'cp "{tmp_path}/profile.txt" "{var_lib}/tcpxo/lib64/nccl-env-profile.sh" ;; esac'
                if profile
                else "true"
            )
        ),
        "journalctl": "echo 'I RxDM: Buffer manager initialization complete'" if ready else "true",
        "curl": "echo key",
        "gpg": 'while [ $# -gt 0 ]; do [ "$1" = -o ] && { cat >"$2"; exit 0; }; shift; done',
        "sleep": "exit 0",
    }
    for name in ("modprobe", "udevadm", "systemctl", "apt-mark", "ldconfig", "gcloud"):
        stubs[name] = f'echo "{name} $*" >>"{calls}"'
    # nvidia-ctk appears once apt-get installs nvidia-container-toolkit
    ctk = bin_dir / "nvidia-ctk"
    stubs["apt-get"] = (
        f'echo "apt-get $*" >>"{calls}"; case "$*" in *nvidia-container-toolkit*) '
        f'printf \'#!/bin/bash\\necho "nvidia-ctk $*" >>{calls}\\n\' >"{ctk}"; chmod +x "{ctk}" ;; esac'
    )
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    nccl_env = tmp_path / "nccl.env"
    if not nccl_env.exists():
        nccl_env.write_text("# static\nLD_LIBRARY_PATH=/var/lib/tcpxo/lib64\n")
    full = {
        **env,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "NCCL_ENV": str(nccl_env),
        "APT_SOURCES": str(tmp_path / "sources"),
        "KEYRINGS": str(tmp_path / "keyrings"),
        "VAR_LIB": str(var_lib),
        "RXDM_WAIT": "2",
    }
    if "ENV_PROFILE" in env:
        full["ENV_PROFILE"] = str(var_lib / "tcpxo/lib64/nccl-env-profile.sh")
    proc = subprocess.run(["bash", str(HERE / "gcp_fabric.sh")], env=full, capture_output=True, text=True)
    return proc, (calls.read_text() if calls.exists() else ""), nccl_env.read_text()


def test_tcpxo_installs_the_helper_runs_the_installer_and_waits_for_rxdm(tmp_path):
    env = settings(layout_of())
    proc, calls, nccl = fabric(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert "apt-get install -y -q apt-transport-artifact-registry" in calls
    assert "apt-get install -y -q dkms dmabuf-import-helper" in calls
    assert "modprobe import-helper" in calls and "udevadm trigger --action=add" in calls
    assert "nvidia-ctk runtime configure --runtime=docker" in calls  # docker with the NVIDIA runtime
    data = catalog.load("gcp").rules["fabricEnablement"]["gpudirect-tcpxo"]
    assert f"{data['ncclPluginImage']} install --install-nccl" in calls
    assert "systemctl restart gpu-cluster-rxdm.service" in calls
    assert "gcloud auth configure-docker --quiet us-docker.pkg.dev" in calls
    sources = (tmp_path / "sources" / "gpu-cluster-gpudirect-tcpxo.list").read_text()
    assert "gpudirect-tcpxo-apt" in sources
    # the installer's exports are merged into nccl.env once, whatever the number of runs
    assert nccl.count(BEGIN) == 1
    assert "NCCL_FASTRAK_CTRL_DEV=eth0\nNCCL_FASTRAK_IFNAME=eth1,eth2\n" in nccl and "NOT_EXPORTED" not in nccl
    assert nccl.startswith("# static\nLD_LIBRARY_PATH=/var/lib/tcpxo/lib64\n")
    proc, _, again = fabric(tmp_path, env, installed="dkms dmabuf-import-helper apt-transport-artifact-registry")
    assert proc.returncode == 0 and again == nccl


def test_tcpxo_fails_when_rxdm_never_gets_ready_or_the_installer_writes_nothing(tmp_path):
    env = settings(layout_of())
    proc, _, _ = fabric(tmp_path, env, ready=False)
    assert proc.returncode == 1 and "did not become ready" in proc.stderr
    (tmp_path / "b").mkdir()
    proc, calls, _ = fabric(tmp_path / "b", env, profile=False)
    assert proc.returncode == 1 and "wrote no" in proc.stderr
    assert "gpu-cluster-rxdm" not in calls


@pytest.mark.parametrize("lib", [True, False])
def test_rdma_installs_and_holds_the_gib_plugin(tmp_path, lib):
    env = settings(typed("a4-highgpu-8g"))
    lib_dir = tmp_path / "gib" / "lib64"
    if lib:
        lib_dir.mkdir(parents=True)
    proc, calls, _ = fabric(tmp_path, {**env, "LIB_DIR": str(lib_dir)})
    assert "apt-get install -y -q nccl-gib=1.1.0 ibverbs-utils" in calls
    assert "apt-mark hold nccl-gib" in calls and "ldconfig" in calls
    assert sorted(p.name for p in (tmp_path / "keyrings").iterdir()) == [
        "gpu-cluster-apt-key.gpg",
        "gpu-cluster-repo-signing-key.gpg",
    ]
    assert proc.returncode == (0 if lib else 1), proc.stderr


def test_unknown_kind_fails(tmp_path):
    proc, _, _ = fabric(tmp_path, {"FABRIC_KIND": "gpudirect-tcpx"})
    assert proc.returncode == 1 and "nothing to enable" in proc.stderr


# --- the health endpoint --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_health_endpoint_answers_200_only_while_healthy(tmp_path):
    port, result = free_port(), tmp_path / "health.json"
    boot = tmp_path / "boot_id"
    boot.write_text("b-2\n")
    env = {
        **os.environ,
        "HEALTH_PORT": str(port),
        "HEALTH_RESULT": str(result),
        "HEALTH_PATH": "/health",
        "BOOT_ID_FILE": str(boot),
    }
    proc = subprocess.Popen(["bash", str(HERE / "gcp_health_http.sh")], env=env)
    try:
        url = f"http://127.0.0.1:{port}/health"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        assert get(url) == (503, "no health result yet\n")  # still booting
        # an earlier boot's verdict is never this boot's, whatever it says
        result.write_text(json.dumps({"healthy": True, "status": "done", "boot": "b-1", "checks": []}))
        assert get(url) == (503, "no health result of this boot yet\n")
        # this boot's check is running: a rebooted node is not condemned while it checks itself
        result.write_text(json.dumps({"healthy": None, "status": "running", "boot": "b-2"}))
        assert get(url) == (200, "check running\n")
        result.write_text(json.dumps({"healthy": True, "status": "done", "boot": "b-2", "checks": []}))
        assert get(url) == (200, "healthy\n")
        result.write_text(json.dumps({"healthy": False, "status": "done", "boot": "b-2", "checks": []}))
        assert get(url) == (503, "unhealthy\n")
        result.write_text(json.dumps({"healthy": True, "checks": []}))  # no boot id recorded
        assert get(url) == (200, "healthy\n")
        result.write_text(json.dumps({"healthy": False, "checks": [{"name": "gpus", "ok": False}]}))
        assert get(url) == (503, "unhealthy\n")
        result.write_text("{not json")
        assert get(url)[0] == 503
        result.write_text(json.dumps({"healthy": "true"}))  # only a JSON true counts
        assert get(url)[0] == 503
        assert get(f"http://127.0.0.1:{port}/other")[0] == 404
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def test_unhealthy_hook_only_logs(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "logger").write_text(f'#!/bin/bash\necho "$*" >"{tmp_path}/logged"\n')
    (bin_dir / "logger").chmod(0o755)
    proc = subprocess.run(
        ["bash", str(HERE / "gcp_unhealthy.sh")],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0
    assert "autohealing recreates this VM" in (tmp_path / "logged").read_text()
