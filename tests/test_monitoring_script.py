"""components/bootstrap/monitoring.sh against stubbed commands: the Prometheus tarball is installed only when its
sha256 matches the pin, Grafana at the pinned version and held, the admin password generated once, then both
services restarted; a wrong checksum installs and starts nothing."""

from __future__ import annotations

import hashlib
import stat
import tarfile
from pathlib import Path

import pytest

from components import bootstrap
from components.bootstrap.monitoring import install_env

from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin

VERSION = install_env()["PROMETHEUS_VERSION"]

# `install` without -o/-g (no prometheus user here); every other command logs its argv to $LOG
_INSTALL = """args=(); skip=0
for a in "$@"; do
  if [ "$skip" = 1 ]; then skip=0; continue; fi
  case "$a" in -o|-g) skip=1 ;; *) args+=("$a") ;; esac
done
exec /usr/bin/install "${args[@]}"
"""
_CURL = """echo "curl $*" >>"$LOG"
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
if [ -n "$out" ]; then cp "$TARBALL" "$out"; else echo "armored key"; fi
"""


def _tarball(tmp_path: Path) -> Path:
    root = tmp_path / "release" / f"prometheus-{VERSION}.linux-amd64"
    root.mkdir(parents=True)
    for name in ("prometheus", "promtool"):
        (root / name).write_text(f'#!/bin/bash\necho "{name} $*" >>"$LOG"\n')
        (root / name).chmod(0o755)
    path = tmp_path / "prometheus.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(root, arcname=root.name)
    return path


def _run(tmp_path: Path, sha256: str | None = None):
    tarball = _tarball(tmp_path)
    log = tmp_path / "log"
    log.touch()
    stubs = {
        "install": _INSTALL,
        "curl": _CURL,
        "dpkg": 'echo "dpkg $*" >>"$LOG"; echo amd64\n',
        "dpkg-query": "exit 1\n",  # grafana not installed yet
        "gpg": 'echo "gpg $*" >>"$LOG"; cat >/dev/null\n',
        "apt-get": 'echo "apt-get $*" >>"$LOG"\n',
        "apt-mark": 'echo "apt-mark $*" >>"$LOG"\n',
        "id": "exit 1\n",
        "useradd": 'echo "useradd $*" >>"$LOG"\n',
        "chown": 'echo "chown $*" >>"$LOG"\n',
        "systemctl": 'echo "systemctl $*" >>"$LOG"\n',
    }
    bin_dir = stub_bin(tmp_path, stubs)
    script = tmp_path / "gpu-cluster-monitoring"
    script.write_text(bootstrap.script("monitoring.sh"))
    env = {
        **install_env(),
        "PROMETHEUS_SHA256_AMD64": sha256 or hashlib.sha256(tarball.read_bytes()).hexdigest(),
        "PROMETHEUS_DIR": str(tmp_path / "opt"),
        "PROMETHEUS_CONFIG": str(tmp_path / "prometheus.yml"),
        "TSDB_DIR": str(tmp_path / "tsdb"),
        "PASSWORD_FILE": str(tmp_path / "grafana-admin-password"),
        "KEYRING": str(tmp_path / "keyrings" / "grafana.gpg"),
        "APT_LIST": str(tmp_path / "grafana.list"),
        "ENV_FILE": str(tmp_path / "absent.env"),
        "TARBALL": str(tarball),
        "LOG": str(log),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    (tmp_path / "tmp").mkdir()
    return run_hook(script, bin_dir, env), log.read_text().splitlines(), env


def test_the_script_is_shellcheck_clean(tmp_path):
    path = tmp_path / "monitoring.sh"
    path.write_text(bootstrap.script("monitoring.sh"))
    assert_shellcheck_clean(path)


def test_a_matching_checksum_installs_both_pins_and_starts_them(tmp_path):
    run, log, env = _run(tmp_path)
    assert run.returncode == 0, run.stderr
    opt = Path(env["PROMETHEUS_DIR"])
    assert (opt / "prometheus").exists() and (opt / "VERSION").read_text().strip() == VERSION
    url = env["PROMETHEUS_URL"].replace("{arch}", "amd64")
    assert any(line.startswith("curl -fsSL --retry 5 -o ") and line.endswith(url) for line in log)
    assert any(line == f"promtool check config {env['PROMETHEUS_CONFIG']}" for line in log)
    assert f"apt-get install -y -q grafana={env['GRAFANA_VERSION']}" in log
    assert "apt-mark hold grafana" in log
    assert (tmp_path / "grafana.list").read_text().startswith(f"deb [signed-by={env['KEYRING']}] https://apt.grafana")
    password = Path(env["PASSWORD_FILE"])
    assert len(password.read_text()) >= 32 and stat.S_IMODE(password.stat().st_mode) == 0o640
    assert log[-1] == "systemctl restart gpu-cluster-prometheus.service grafana-server.service"


def test_the_password_is_generated_once(tmp_path):
    Path(tmp_path / "grafana-admin-password").write_text("kept")
    run, _, env = _run(tmp_path)
    assert run.returncode == 0, run.stderr
    assert Path(env["PASSWORD_FILE"]).read_text() == "kept"


@pytest.mark.parametrize("wrong", ["0" * 64])
def test_a_wrong_checksum_installs_and_starts_nothing(tmp_path, wrong):
    run, log, env = _run(tmp_path, sha256=wrong)
    assert run.returncode != 0
    assert not (Path(env["PROMETHEUS_DIR"]) / "prometheus").exists()
    assert not [line for line in log if line.startswith(("systemctl", "apt-get", "promtool"))]
    assert not list((tmp_path / "tmp").iterdir())  # the download removed


# monitoring.notify: alertmanager.sh installs Alertmanager beside Prometheus, from its own pinned tarball
def _am_tarball(tmp_path: Path, version: str) -> Path:
    root = tmp_path / "am-release" / f"alertmanager-{version}.linux-amd64"
    root.mkdir(parents=True)
    for name in ("alertmanager", "amtool"):
        (root / name).write_text(f'#!/bin/bash\necho "{name} $*" >>"$LOG"\n')
        (root / name).chmod(0o755)
    path = tmp_path / "alertmanager.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(root, arcname=root.name)
    return path


def _run_alertmanager(tmp_path: Path, sha256: str | None = None):
    from components.bootstrap import alertmanager

    env0 = alertmanager.install_env()
    tarball = _am_tarball(tmp_path, env0["ALERTMANAGER_VERSION"])
    log = tmp_path / "log"
    log.touch()
    stubs = {
        "install": _INSTALL,
        "curl": _CURL,
        "dpkg": 'echo "dpkg $*" >>"$LOG"; echo amd64\n',
        "id": "exit 0\n",
        "useradd": 'echo "useradd $*" >>"$LOG"\n',
        "systemctl": 'echo "systemctl $*" >>"$LOG"\n',
    }
    bin_dir = stub_bin(tmp_path, stubs)
    script = tmp_path / "gpu-cluster-alertmanager"
    script.write_text(bootstrap.script("alertmanager.sh"))
    env = {
        **env0,
        "ALERTMANAGER_SHA256_AMD64": sha256 or hashlib.sha256(tarball.read_bytes()).hexdigest(),
        "ALERTMANAGER_DIR": str(tmp_path / "am"),
        "ALERTMANAGER_CONFIG": str(tmp_path / "alertmanager.yml"),
        "ALERTMANAGER_DATA": str(tmp_path / "am-data"),
        "ENV_FILE": str(tmp_path / "absent.env"),
        "TARBALL": str(tarball),
        "LOG": str(log),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    (tmp_path / "tmp").mkdir()
    return run_hook(script, bin_dir, env), log.read_text().splitlines(), env


def test_the_alertmanager_script_is_shellcheck_clean(tmp_path):
    path = tmp_path / "alertmanager.sh"
    path.write_text(bootstrap.script("alertmanager.sh"))
    assert_shellcheck_clean(path)


def test_alertmanager_is_installed_checked_by_amtool_and_started(tmp_path):
    run, log, env = _run_alertmanager(tmp_path)
    assert run.returncode == 0, run.stderr
    am = Path(env["ALERTMANAGER_DIR"])
    assert (am / "alertmanager").exists() and (am / "amtool").exists()
    assert (am / "VERSION").read_text().strip() == env["ALERTMANAGER_VERSION"]
    url = env["ALERTMANAGER_URL"].replace("{arch}", "amd64")
    assert any(line.startswith("curl -fsSL --retry 5 -o ") and line.endswith(url) for line in log)
    assert f"amtool check-config {env['ALERTMANAGER_CONFIG']}" in log
    assert Path(env["ALERTMANAGER_DATA"]).is_dir()
    assert log[-1] == "systemctl restart gpu-cluster-alertmanager.service"


def test_a_wrong_alertmanager_checksum_starts_nothing(tmp_path):
    run, log, env = _run_alertmanager(tmp_path, sha256="0" * 64)
    assert run.returncode != 0
    assert not (Path(env["ALERTMANAGER_DIR"]) / "alertmanager").exists()
    assert not [line for line in log if line.startswith(("systemctl", "amtool"))]
    assert not list((tmp_path / "tmp").iterdir())  # the download removed
