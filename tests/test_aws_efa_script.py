"""The AWS EFA boot check, run for real against a stubbed `fi_info`, `ldconfig` and plugin library on disk."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "aws_efa.sh"
TOOLS = ("awk", "cat", "dirname", "grep", "head", "mkdir", "sed", "sort")
# `fi_info --version` and `fi_info -p efa -t FI_EP_RDM` as libfabric prints them (one block per domain)
FI_INFO = r"""
if [ "$1" = --version ]; then
  printf 'fi_info: 1.22.0amzn4.0\nlibfabric: %s\nlibfabric api: 1.22\n' "${LIBFABRIC:-1.22.0amzn4.0}"
  exit 0
fi
for i in $(seq 1 "${DOMAINS:-4}"); do
  printf 'provider: efa\n    fabric: efa\n    domain: rdmap%ss0-rdm\n    version: 122.0\n    type: FI_EP_RDM\n' "$i"
done
"""


def run(
    tmp_path: Path, *, plugin: str | None = "1.21.1", plugin_dir: str = "lib", ldconf: str = "", **env: str
) -> tuple[subprocess.CompletedProcess, list[str], dict]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    for tool in (*TOOLS, "seq"):
        found = shutil.which(tool)
        assert found, tool
        if not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    efa = tmp_path / "opt/amazon/efa"
    (efa / "bin").mkdir(parents=True, exist_ok=True)
    for name, body, where in (("fi_info", FI_INFO, efa / "bin"), ("ldconfig", "", bin_dir)):
        path = where / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{log}"\n{body}\n')
        path.chmod(0o755)
    (tmp_path / "opt/amazon/efa_installed_packages").write_text("# EFA installer version: 1.50.0\n# Debug packages\n")
    dirs = [tmp_path / "opt/amazon/ofi-nccl/lib/x86_64-linux-gnu", tmp_path / "opt/amazon/ofi-nccl" / plugin_dir]
    if plugin is not None:
        dirs[1].mkdir(parents=True, exist_ok=True)
        # the version string sits among binary bytes, as in the shipped library
        banner = f"NET/OFI Initializing aws-ofi-nccl {plugin}".encode()
        (dirs[1] / "libnccl-net.so").write_bytes(b"\x7fELF\x00" + banner)
    ldconf_dir = tmp_path / "ld.so.conf.d"
    ldconf_dir.mkdir(exist_ok=True)
    if ldconf:
        (ldconf_dir / "100_ofinccl.conf").write_text(ldconf.replace("$ROOT", str(tmp_path)) + "\n")
    result = tmp_path / "efa.json"
    full_env = {
        "PATH": str(bin_dir),
        "EFA_DIR": str(efa),
        "INSTALLED_PACKAGES": str(tmp_path / "opt/amazon/efa_installed_packages"),
        "PLUGIN_DIRS": " ".join(str(d) for d in dirs),
        "PLUGIN_LIBRARIES": "libnccl-net-ofi.so libnccl-net.so",
        "MIN_LIBFABRIC": "1.18.0",
        "MIN_OFI_NCCL": "1.7.0",
        "LDCONF_DIR": str(ldconf_dir),
        "RESULT": str(result),
        **env,
    }
    bash = shutil.which("bash")
    assert bash
    proc = subprocess.run([bash, str(SCRIPT)], env=full_env, capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls, json.loads(result.read_text()) if result.exists() else {}


def test_a_dlami_node_passes_and_the_plugin_directory_joins_the_loader_path(tmp_path):
    proc, calls, result = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert result["usable"] is True and result["problems"] == []
    assert (result["efaInstaller"], result["libfabric"], result["awsOfiNccl"]) == ("1.50.0", "1.22.0", "1.21.1")
    assert result["efaDomains"] == 4 and result["plugin"].endswith("/opt/amazon/ofi-nccl/lib/libnccl-net.so")
    conf = (tmp_path / "ld.so.conf.d/90-gpu-cluster-ofi-nccl.conf").read_text()
    assert conf.strip() == str(tmp_path / "opt/amazon/ofi-nccl/lib")
    assert "ldconfig " in calls


def test_a_plugin_directory_the_image_already_configures_is_left_alone(tmp_path):
    proc, calls, _ = run(tmp_path, ldconf="$ROOT/opt/amazon/ofi-nccl/lib")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "ld.so.conf.d/90-gpu-cluster-ofi-nccl.conf").exists()
    assert "ldconfig " not in calls


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"plugin": None}, "aws-ofi-nccl not found"),
        ({"plugin": "1.6.0"}, "aws-ofi-nccl 1.6.0 is older than 1.7.0"),
        ({"LIBFABRIC": "1.17.1amzn1.0"}, "libfabric 1.17.1 is older than 1.18.0"),
        ({"DOMAINS": "0"}, "the efa provider lists no RDM endpoint"),
    ],
)
def test_a_node_without_what_nccl_needs_fails_and_says_what(tmp_path, kwargs, problem):
    proc, _, result = run(tmp_path, **kwargs)
    assert proc.returncode == 1
    assert result["usable"] is False
    assert any(problem in p for p in result["problems"]), result["problems"]
    assert problem in proc.stderr


def test_versions_compare_as_versions_not_as_text(tmp_path):
    proc, _, result = run(tmp_path, plugin="1.10.0", MIN_OFI_NCCL="1.9.2")
    assert proc.returncode == 0, proc.stderr
    assert result["awsOfiNccl"] == "1.10.0"


def test_an_image_without_the_efa_installer_fails(tmp_path):
    proc, _, result = run(tmp_path, EFA_DIR=str(tmp_path / "nowhere"))
    assert proc.returncode == 1
    assert any("fi_info not found" in p for p in result["problems"])


def test_shellcheck_clean():
    proc = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
