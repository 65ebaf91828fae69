"""Real Slurm daemons on this machine for tests/test_slurm_real.py: our rendered files in a temporary directory, the
lines tests/slurm_22_05.yaml names changed to run here (and nothing else), a munged of the test's own, slurmctld and
slurmd in the foreground, their logs read back. Debian 12's packages: slurmctld, slurmd, slurm-client, munge."""

from __future__ import annotations

import getpass
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parent / "slurm_22_05.yaml"
BINARIES = ("slurmctld", "slurmd", "scontrol", "sinfo", "sbatch", "squeue", "munged")
PACKAGES = "slurmctld slurmd slurm-client munge libpmix-dev"
INSTALL = f"Debian: apt-get install -y {PACKAGES}"
# a judged line: Slurm's error, fatal and warning prefixes (log.c: "error: ", "fatal: ", "warning: "/"WARNING: ")
JUDGED = re.compile(r"\b(error|fatal|warning):", re.I)


@cache
def data() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(DATA.read_text())
    return loaded


def missing() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


@cache
def installed_version() -> str | None:
    """`slurmctld -V` -> `slurm-wlm 22.05.8` -> `22.05`."""
    if shutil.which("slurmctld") is None:
        return None
    out = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"(\d+\.\d+)\.\d+", out)
    return match.group(1) if match else None


def skip_reason() -> str | None:
    """Why the real daemons cannot run here, or None."""
    absent = missing()
    if absent:
        return f"{', '.join(absent)} not installed ({INSTALL})"
    # Debian's mpi/pmix plugin (slurm-wlm-basic-plugins) dlopens pmix2/lib/libpmix.so, which only libpmix-dev ships:
    # without it every slurmctld and slurmd start logs "pmi/pmix: can not load PMIx library" (a packaging gap, not ours)
    if list(Path("/usr/lib").glob("*/slurm-wlm/mpi_pmix*.so")) and not list(
        Path("/usr/lib").glob("*/pmix2/lib/libpmix.so")
    ):
        return f"libpmix-dev not installed: Debian's mpi/pmix plugin logs errors without it ({INSTALL})"
    version = installed_version()
    if version != data()["version"]:
        return f"Slurm {version} installed; tests/slurm_22_05.yaml lists what Slurm {data()['version']} cannot judge"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def judged(text: str) -> list[str]:
    return [line for line in text.splitlines() if JUDGED.search(line)]


def set_lines(conf: str, values: Mapping[str, str]) -> str:
    """slurm.conf with `Key=value` lines replaced (each key must be there once) and the keys it lacks appended."""
    out = conf
    for key, value in values.items():
        pattern = re.compile(rf"^{re.escape(key)}=.*$", re.M)
        found = len(pattern.findall(out))
        assert found <= 1, f"{key} set {found} times"
        out = pattern.sub(lambda _m, k=key, v=value: f"{k}={v}", out) if found else f"{out}{key}={value}\n"
    return out


@dataclass
class Munge:
    socket: Path
    process: subprocess.Popen[bytes]


@contextmanager
def munged(root: Path) -> Iterator[Munge]:
    """A munged of the test's own (foreground, its own key and socket), stopped at the end."""
    root.mkdir(mode=0o700, parents=True)
    key = root / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o400)
    sock = root / "munge.socket"
    args = [
        "munged",
        "--foreground",
        "--force",  # as root, and the socket directory is private to its user
        f"--socket={sock}",
        f"--key-file={key}",
        f"--log-file={root / 'munged.log'}",
        f"--pid-file={root / 'munged.pid'}",
        f"--seed-file={root / 'munged.seed'}",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(sock.exists, "munged's socket", 20)
        yield Munge(sock, proc)
    finally:
        stop(proc)


def wait_for(check: Any, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {seconds} s")
        time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (slurmctld saves its state), then SIGKILL if it will not go."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@dataclass
class Cluster:
    """A temporary directory holding the configuration, the state, the spools and the logs."""

    root: Path
    conf_dir: Path
    ctld_port: int
    slurmd_port: int

    @property
    def conf(self) -> Path:
        return self.conf_dir / "slurm.conf"

    @property
    def ctld_log(self) -> Path:
        return self.root / "log" / "slurmctld.log"

    @property
    def slurmd_log(self) -> Path:
        return self.root / "log" / "slurmd.log"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(list(args), env=self.env(), capture_output=True, text=True, timeout=60)
        if check:
            assert proc.returncode == 0, f"{' '.join(args)}: {proc.stdout}{proc.stderr}"
        return proc


def prepare(
    root: Path, files: Mapping[str, str], munge_socket: Path, extra: Mapping[str, str] | None = None
) -> Cluster:
    """The rendered files under root/etc, with only the `local:` and `add:` lines of tests/slurm_22_05.yaml changed
    (and `extra`, the two-daemon test's own)."""
    cluster = Cluster(root, root / "etc", free_port(), free_port())
    for sub in ("etc", "state", "spool", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    local = {
        "SlurmctldHost": f"{socket.gethostname().split('.')[0]}(127.0.0.1)",
        "SlurmctldPort": str(cluster.ctld_port),
        "SlurmdPort": str(cluster.slurmd_port),
        "SlurmUser": getpass.getuser(),
        "StateSaveLocation": str(root / "state"),
        "SlurmdSpoolDir": str(root / "spool"),
        "SlurmctldLogFile": str(cluster.ctld_log),
        "SlurmdLogFile": str(cluster.slurmd_log),
        "HealthCheckProgram": "/bin/true",
        "SlurmctldPidFile": str(root / "slurmctld.pid"),
        "SlurmdPidFile": str(root / "slurmd.pid"),
        "AuthInfo": f"socket={munge_socket}",
        **(extra or {}),
    }
    listed = set(data()["local"]) | set(data()["add"]) | set(data()["pair"]) | set(data()["deadNode"])
    listed |= set(data()["elastic"]) | set(data()["accounting"]["slurmConf"]) | set(data()["mps"])
    listed |= set(data()["accounting"]["slurmConfAdd"])
    assert set(local) <= listed, f"not in tests/slurm_22_05.yaml: {sorted(set(local) - listed)}"
    for name, text in files.items():
        (cluster.conf_dir / name).write_text(set_lines(text, local) if name == "slurm.conf" else text)
    return cluster


@contextmanager
def slurmctld(cluster: Cluster) -> Iterator[subprocess.Popen[bytes]]:
    """slurmctld in the foreground, until it says it is the primary controller; stopped (state saved) at the end."""
    start = cluster.ctld_log.stat().st_size if cluster.ctld_log.exists() else 0
    proc = subprocess.Popen(
        ["slurmctld", "-D", "-f", str(cluster.conf)],
        env=cluster.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(
            lambda: proc.poll() is not None or "Running as primary controller" in log_since(cluster.ctld_log, start),
            "primary controller",
            60,
        )
        assert proc.poll() is None, f"slurmctld exited {proc.returncode}: {log_since(cluster.ctld_log, start)}"
        yield proc
    finally:
        stop(proc)


@contextmanager
def slurmd(cluster: Cluster, dynamic_conf: str) -> Iterator[subprocess.Popen[bytes]]:
    """slurmd registering as a dynamic node (-Z --conf), as the GPU nodes do, until the node is in sinfo."""
    proc = subprocess.Popen(
        ["slurmd", "-D", "-Z", "--conf", dynamic_conf, "-f", str(cluster.conf)],
        env=cluster.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    yield from _registered(cluster, proc)


def _registered(cluster: Cluster, proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """Wait until the slurmd `proc` is a node in sinfo (or has exited: an error), yield it, and stop it after."""
    try:
        wait_for(
            lambda: proc.poll() is not None or bool(cluster.run("sinfo", "--noheader", "--Node", "-o", "%N").stdout),
            "registered node",
            60,
        )
        assert proc.poll() is None, f"slurmd exited {proc.returncode}: {read(cluster.slurmd_log)}"
        yield proc
    finally:
        stop(proc)


def read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def log_since(path: Path, offset: int) -> str:
    if not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


@contextmanager
def configless_slurmd(cluster: Cluster, dynamic_conf: str, munge: Munge) -> Iterator[subprocess.Popen[bytes]]:
    """slurmd as the GPU nodes run it: no slurm.conf of its own, the files fetched from slurmctld (configless,
    `--conf-server`) into SlurmdSpoolDir/conf-cache. In a mount namespace of its own (unshare -m, root): slurmd fetches
    before it reads AuthInfo, so the test's munged must be at MUNGE's default socket there, and /etc/slurm is empty."""
    empty = cluster.root / "no-etc-slurm"
    empty.mkdir(exist_ok=True)
    setup = (
        "mount -t tmpfs none /run && mkdir /run/munge && "
        f"ln -s {munge.socket} /run/munge/munge.socket.2 && mount --bind {empty} /etc/slurm && "
        f"exec slurmd -D -Z --conf-server 127.0.0.1:{cluster.ctld_port} --conf '{dynamic_conf}'"
    )
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    proc = subprocess.Popen(
        ["unshare", "-m", "sh", "-c", setup], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    yield from _registered(cluster, proc)


def can_unshare() -> bool:
    return (
        shutil.which("unshare") is not None
        and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
    )


# slurm.accounting (tests/test_slurm_accounting_real.py): a MariaDB of the test's own, standing in for the cloud's
# managed MySQL, and slurmdbd with our slurmdbd.conf. Debian 12's packages: mariadb-server, slurmdbd.
ACCOUNTING_BINARIES = ("mariadb-install-db", "mariadbd", "mariadb", "slurmdbd", "sacct", "sacctmgr")
ACCOUNTING_INSTALL = "Debian: apt-get install -y slurmdbd mariadb-server"


def accounting_skip_reason() -> str | None:
    """Why the accounting daemons cannot run here (after the Slurm ones), or None."""
    reason = skip_reason()
    if reason is not None:
        return reason
    absent = [b for b in ACCOUNTING_BINARIES if shutil.which(b) is None]
    return f"{', '.join(absent)} not installed ({ACCOUNTING_INSTALL})" if absent else None


@dataclass
class Database:
    host: str
    port: int
    user: str
    password: str
    log: Path


@contextmanager
def mariadb(root: Path, settings: Mapping[str, str], database: str, user: str, password: str) -> Iterator[Database]:
    """mariadbd on 127.0.0.1 and a free port, data in root, with `settings` (SchedMD's) on its command line, and the
    account slurmdbd logs in with (as a managed service's master user: all rights on its database)."""
    data_dir, sock, log = root / "data", root / "mysql.sock", root / "mariadb.log"
    root.mkdir(parents=True)
    install = [
        "mariadb-install-db", "--no-defaults", f"--datadir={data_dir}", "--user=root",
        "--auth-root-authentication-method=socket", "--skip-test-db",
    ]  # fmt: skip
    subprocess.run(install, check=True, capture_output=True, timeout=120)
    port = free_port()
    args = [
        "mariadbd", "--no-defaults", f"--datadir={data_dir}", f"--socket={sock}", f"--port={port}",
        "--bind-address=127.0.0.1", "--user=root", f"--log-error={log}", f"--pid-file={root / 'mariadb.pid'}",
        *(f"--{key}={value}" for key, value in settings.items()),
    ]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: proc.poll() is not None or sock.exists(), "mariadbd's socket", 60)
        assert proc.poll() is None, f"mariadbd exited {proc.returncode}: {read(log)}"
        sql = (
            f"CREATE DATABASE {database}; CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{password}'; "
            f"GRANT ALL ON {database}.* TO '{user}'@'127.0.0.1';"
        )
        subprocess.run(["mariadb", f"--socket={sock}", "-u", "root", "-e", sql], check=True, timeout=60)
        yield Database("127.0.0.1", port, user, password, log)
    finally:
        stop(proc)


def stop_pid_file(path: Path) -> None:
    """A daemon that forked (slurmdbd as systemd starts it): SIGTERM by its pid file, then wait for it to go."""
    if not path.exists():
        return
    pid = int(path.read_text().strip())
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
