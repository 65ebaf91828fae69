"""slurm.accounting with real daemons (Debian 12's slurmdbd and slurmctld 22.05.8, MariaDB 10.11): our rendered
slurmdbd.conf, written by the head's own slurm_dbd.sh (the password from a hook, the cluster registered), slurmdbd on a
MariaDB started with SchedMD's settings (catalog/accounting.yaml), slurmctld and slurmd with our slurm.conf; a job runs
and `sacct` shows it. The lines changed to run here are listed in tests/slurm_22_05.yaml `accounting:`. Skips, saying
why, without the daemons (Debian: apt-get install -y slurmdbd mariadb-server, and the Slurm packages)."""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from components.bootstrap.slurm_conf import (
    DB_HOST_PLACEHOLDER,
    DB_PASSWORD_TOKEN,
    DBD_HOST_TOKEN,
    HEAD_ADDRESS_TOKEN,
    SlurmLayout,
)
from components.catalog import accounting as accounting_catalog
from components.layout.slurm import slurm_layout

from . import slurm_local as local
from .conftest import ROOT
from .test_slurm_real import for_22_05, stack_spec, unexpected, written_out_gres

SKIP = local.accounting_skip_reason()
needs_accounting = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="slurmd runs jobs and mariadbd runs as root here")
SLURMDBD_SCRIPT = ROOT / "components" / "bootstrap" / "slurm_dbd.sh"


def accounting_layout() -> SlurmLayout:
    """aws-slurm-h100 with accounting on, for a node like this machine (as test_slurm_real.this_machine)."""
    spec = stack_spec("aws-slurm-h100")
    row = spec.instance.model_copy(update={"vcpus": os.cpu_count() or 1, "gpus": 1, "memoryGiB": 4.0})
    assert spec.slurm is not None
    slurm = spec.slurm.model_copy(update={"accounting": True})
    layout = slurm_layout(dataclasses.replace(spec, instance=row, slurm=slurm))
    assert layout is not None and layout.accounting is not None and layout.slurmdbd_conf is not None
    return layout


def stub(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


@needs_accounting
@needs_root
def test_a_job_is_in_sacct_through_our_slurmdbd_conf_on_mariadb(tmp_path):
    layout = accounting_layout()
    acct = layout.accounting
    assert acct is not None and layout.slurmdbd_conf is not None
    password = secrets.token_hex(16)  # letters and digits, as the cloud's RandomPassword(special=False)
    dbd_port = local.free_port()
    with (
        local.munged(tmp_path / "munge") as munge,
        local.mariadb(
            tmp_path / "mariadb",
            accounting_catalog.data()["localMysqlSettings"],
            acct.database,
            acct.user,
            password,
        ) as db,
    ):
        # slurm.conf as the head writes it: slurm_dbd.sh puts this machine's address in (AccountingStorageHost)
        files = {**for_22_05(layout).files, "gres.conf": written_out_gres(layout, tmp_path / "dev")}
        assert f"AccountingStorageHost={HEAD_ADDRESS_TOKEN}\n" in files["slurm.conf"]
        here_too = {"AccountingStoragePort": str(dbd_port), "AccountingStoragePass": str(munge.socket)}
        cluster = local.prepare(tmp_path / "slurm", files, munge.socket, {**local.data()["pair"], **here_too})
        # slurmdbd.conf's template as the cloud fills it at deploy (the database's address), run here
        pid_file = tmp_path / "slurmdbd.pid"
        dbd_log = tmp_path / "slurmdbd.log"
        here = {
            "DbdPort": str(dbd_port),
            "SlurmUser": "root",
            "LogFile": str(dbd_log),
            "StoragePort": str(db.port),
            "PidFile": str(pid_file),
            "AuthInfo": f"socket={munge.socket}",
        }
        listed = {**local.data()["accounting"]["slurmdbdConf"], **local.data()["accounting"]["slurmdbdAdd"]}
        assert set(here) == set(listed)
        template = tmp_path / "slurmdbd.conf.template"
        template.write_text(local.set_lines(layout.slurmdbd_conf.replace(DB_HOST_PLACEHOLDER, db.host), here))
        template.chmod(0o600)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        stub(bin_dir, "password-hook", f"printf '%s\\n' '{password}'")
        # systemd on the head: `restart slurmdbd` starts it (it forks, as its unit does), the rest is a no-op here
        stub(bin_dir, "systemctl", 'if [ "$1" = restart ] && [ "$2" = slurmdbd ]; then exec slurmdbd; fi; exit 0')
        env = {
            **cluster.env(),
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "DBD_TEMPLATE": str(template),
            "DB_PASSWORD_HOOK": str(bin_dir / "password-hook"),
            "CONF_DIR": str(cluster.conf_dir),
            "CLUSTER_NAME": layout.cluster_name,
            "SLURM_USER": "root",
            "RETRY_SECONDS": "1",
        }
        try:
            run = subprocess.run(["bash", str(SLURMDBD_SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, run.stderr + local.read(dbd_log)
            assert password not in run.stdout + run.stderr  # the password is never logged
            assert HEAD_ADDRESS_TOKEN not in cluster.conf.read_text()
            conf = cluster.conf_dir / "slurmdbd.conf"
            assert stat.S_IMODE(conf.stat().st_mode) == 0o600
            assert f"StoragePass={password}\n" in conf.read_text() and "@@" not in conf.read_text()
            registered = cluster.run("sacctmgr", "--noheader", "--parsable2", "show", "cluster", "format=cluster")
            assert registered.stdout.split() == [layout.cluster_name]
            # the script again (a reboot of the head): the cluster is found, not added twice
            again = subprocess.run(["bash", str(SLURMDBD_SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
            assert again.returncode == 0 and "is registered" in again.stderr, again.stderr
            assert cluster.run(
                "sacctmgr", "--noheader", "--parsable2", "show", "cluster", "format=cluster"
            ).stdout.split() == [layout.cluster_name]
            with local.slurmctld(cluster), local.slurmd(cluster, for_22_05(layout).dynamic_conf):
                job = cluster.run("sbatch", "--parsable", "--output=/dev/null", "--wrap", "true").stdout.strip()
                local.wait_for(
                    lambda: "COMPLETED" in cluster.run(
                        "sacct", "--noheader", "--parsable2", "-X", "-j", job, "-o", "JobID,State", check=False
                    ).stdout,
                    f"job {job} COMPLETED in sacct",
                    60,
                )  # fmt: skip
                shown = cluster.run("sacct", "--noheader", "--parsable2", "-X", "-j", job, "-o", "JobID,State,Cluster")
                assert shown.stdout.strip() == f"{job}|COMPLETED|{layout.cluster_name}"
                # judged before slurmctld stops: its SIGTERM can close the connection with slurmdbd's last reply
                # unread, and slurmdbd then logs "Connection reset by peer" (seen once in CI under load)
                log = local.read(dbd_log)
        finally:
            local.stop_pid_file(pid_file)
    # SchedMD's settings satisfy slurmdbd's own check, and our slurmdbd.conf loads without an error or a warning
    assert "Database settings not recommended values" not in log
    assert unexpected(log, set()) == [], log


def _tls_files(root: Path) -> dict[str, Path]:
    """A CA and a server certificate it signs for 127.0.0.1 (openssl), as a managed MySQL's."""
    root.mkdir()
    ca, ca_key, key, csr, cert, ext = (root / n for n in ("ca.pem", "ca.key", "server.key", "s.csr", "s.pem", "ext"))

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
            "-subj", "/CN=gpu-cluster test CA")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
            "-out", str(cert), "-days", "2", "-extfile", str(ext))  # fmt: skip
    return {"ca": ca, "cert": cert, "key": key}


def _slurmdbd_reaches(tmp_path: Path, conf: str, db: local.Database, munge_socket: Path) -> tuple[bool, str]:
    """slurmdbd with `conf` (its database's address, port and password put in, this machine's lines set): whether it
    created its tables in the database and started within 30 s, and its log."""
    log, etc = tmp_path / "slurmdbd.log", tmp_path / "etc"
    etc.mkdir()
    here = {
        "DbdPort": str(local.free_port()),
        "SlurmUser": "root",
        "LogFile": str(log),
        "StoragePort": str(db.port),
        "PidFile": str(tmp_path / "slurmdbd.pid"),
        "AuthInfo": f"socket={munge_socket}",
    }
    text = conf.replace(DB_HOST_PLACEHOLDER, db.host).replace(DB_PASSWORD_TOKEN, db.password)
    (etc / "slurmdbd.conf").write_text(local.set_lines(text.replace(DBD_HOST_TOKEN, "localhost"), here))
    (etc / "slurmdbd.conf").chmod(0o600)
    (etc / "slurm.conf").write_text("ClusterName=tls\n")  # slurmdbd.conf is read beside SLURM_CONF
    env = {**os.environ, "SLURM_CONF": str(etc / "slurm.conf")}
    proc = subprocess.Popen(["slurmdbd", "-D"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = db.log.parent / "mysql.sock"
    tables = [
        "mariadb",
        f"--socket={sock}",
        "-u",
        "root",
        "--skip-column-names",
        "-e",
        "SHOW TABLES FROM slurm_acct_db",
    ]

    def created() -> bool:  # its tables in the database, and its start logged
        found = subprocess.run(tables, capture_output=True, text=True, timeout=30).stdout
        return "cluster_table" in found and "started" in local.read(log)

    try:
        local.wait_for(created, "slurmdbd's tables", 30)
        return True, local.read(log)
    except AssertionError:
        return False, local.read(log)
    finally:
        local.stop(proc)


@needs_accounting
@needs_root
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test's CA (apt-get install openssl)")
def test_azure_s_slurmdbd_conf_connects_over_the_tls_the_database_requires(tmp_path):
    """Azure Database for MySQL requires TLS: with the rendered StorageParameters (SSL_CA, the test's CA in place of the
    system bundle) slurmdbd 22.05.8 connects and creates its tables; the same file without the line is refused."""
    from components.layout.azure import plan as azure_plan

    from .conftest import spec_of
    from .test_azure_accounting import values

    slurm = azure_plan(spec_of(values())).slurm
    assert slurm is not None and slurm.layout.slurmdbd_conf is not None
    conf = slurm.layout.slurmdbd_conf
    parameters = "StorageParameters=SSL_CA=/etc/ssl/certs/ca-certificates.crt\n"
    assert parameters in conf
    tls = _tls_files(tmp_path / "tls")
    listed = local.data()["accountingTls"]
    required = {"ssl-ca": str(tls["ca"]), "ssl-cert": str(tls["cert"]), "ssl-key": str(tls["key"])}
    required["require-secure-transport"] = "ON"
    assert set(required) == set(listed["mariadbAdd"]) and set(listed["slurmdbdConf"]) == {"StorageParameters"}
    settings = {**accounting_catalog.data()["localMysqlSettings"], **required}
    user, database = accounting_catalog.data()["slurmdbd"]["user"], accounting_catalog.data()["slurmdbd"]["database"]
    with (
        local.munged(tmp_path / "munge") as munge,
        local.mariadb(tmp_path / "mariadb", settings, database, user, secrets.token_hex(16)) as db,
    ):
        plain_dir, tls_dir = tmp_path / "plain", tmp_path / "with-tls"
        plain_dir.mkdir()
        tls_dir.mkdir()
        refused, refused_log = _slurmdbd_reaches(plain_dir, conf.replace(parameters, ""), db, munge.socket)
        here = conf.replace(parameters, f"StorageParameters=SSL_CA={tls['ca']}\n")
        reached, log = _slurmdbd_reaches(tls_dir, here, db, munge.socket)
    # without TLS MariaDB turns the login away (it answers 1045 to an insecure connection it must refuse)
    assert not refused and "mysql_real_connect failed" in refused_log, refused_log
    assert reached, log
    assert "slurmdbd version 22.05.8 started" in log and "error" not in log.lower(), log


def test_the_slurmdbd_conf_lines_changed_here_are_in_the_rendered_file():
    layout = accounting_layout()
    assert layout.slurmdbd_conf is not None
    for key in local.data()["accounting"]["slurmdbdConf"]:
        assert f"\n{key}=" in layout.slurmdbd_conf, key
    for key in local.data()["accounting"]["slurmdbdAdd"]:
        assert f"\n{key}=" not in layout.slurmdbd_conf, key
    for key in local.data()["accounting"]["slurmConf"]:
        assert f"\n{key}=" in layout.slurm_conf, key
    for key in local.data()["accounting"]["slurmConfAdd"]:
        assert f"\n{key}=" not in layout.slurm_conf, key


def test_slurm_dbd_sh_fails_without_a_password_and_writes_nothing(tmp_path):
    """An empty hook answer is no password: nothing is written, slurmdbd is not started."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub(bin_dir, "password-hook", "exit 0")
    stub(bin_dir, "systemctl", f'echo "$@" >>{tmp_path / "calls"}')
    template = tmp_path / "t"
    template.write_text("StoragePass=@@GPU_CLUSTER_DB_PASSWORD@@\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "slurm.conf").write_text("AccountingStorageHost=@@GPU_CLUSTER_HEAD_ADDRESS@@\n")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "DBD_TEMPLATE": str(template),
        "DB_PASSWORD_HOOK": str(bin_dir / "password-hook"),
        "CONF_DIR": str(tmp_path / "etc"),
        "CLUSTER_NAME": "c",
        "ATTEMPTS": "2",
        "RETRY_SECONDS": "0",
    }
    started = time.monotonic()
    run = subprocess.run(["bash", str(SLURMDBD_SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and time.monotonic() - started < 30
    assert "no database password" in run.stderr and "slurmdbd.conf not written" in run.stderr
    assert not list((tmp_path / "etc").glob("slurmdbd.conf*")) and not (tmp_path / "calls").exists()
