"""The Slurm bootstrap scripts, run for real against stubbed apt, systemd, MUNGE and Slurm commands (no root)."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from components.bootstrap import cloud_init, script
from components.bootstrap.slurm import compute_parts, head_parts, login_parts
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER
from components.layout.slurm import slurm_layout

from .conftest import aws_values, spec_of
from .hook_helpers import run_aws_secret_hook

HERE = Path(__file__).resolve().parent.parent / "components" / "bootstrap"
SCRIPTS = ("slurm_common.sh", "slurm_head.sh", "slurm_compute.sh", "slurm_login.sh", "slurm_health.sh")
KEY = bytes(range(128))
MADISON = (
    "  slurm-smd | 25.11.5-1 | https://packages.microsoft.com/repos/slurm-ubuntu-jammy stable/main amd64 Packages\n"
    "  slurm-smd | 25.05.5-1 | https://packages.microsoft.com/repos/slurm-ubuntu-jammy stable/main amd64 Packages\n"
)


def layout():
    spec = spec_of(aws_values(scheduler="slurm", nodes=2))
    out = slurm_layout(spec)
    assert out is not None
    return out


class Box:
    """A scratch root: stub commands that log their argv, the scripts' paths redirected under it."""

    def __init__(self, tmp: Path, key: bytes = KEY, madison: str = MADISON, health_exit: int = 0) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.calls = tmp / "calls.log"
        self.key_file = tmp / "munge.key"
        hook = tmp / "hook"
        hook.write_text(f"#!/bin/bash\necho {base64.b64encode(key).decode()}\n")
        hook.chmod(0o755)
        (tmp / "madison.txt").write_text(madison)
        logged = (
            "apt-get",
            "apt-mark",
            "gpg",
            "systemctl",
            "useradd",
            "groupadd",
            "chown",
            "exportfs",
            "mount",
            "scontrol",
        )
        stubs = {name: "" for name in logged}
        stubs.update(
            {
                "apt-cache": f'cat "{tmp}/madison.txt"',
                "gpg": "cat >/dev/null",  # reads the key (a stub that does not would break curl's pipe)
                "curl": "echo KEY",
                "getent": "exit 2",
                "mountpoint": "exit 1",
                "hostname": 'case "$1" in -s) echo ip-10-46-0-9 ;; -I) echo "10.46.0.9 172.17.0.1" ;; esac',
                "sleep": "exit 0",
                "slurmd": "",
                "sackd": "",
            }
        )
        for name, body in stubs.items():
            path = self.bin / name
            log = f'echo "{name} $*" >>"{self.calls}"\n' if name in logged else ""
            path.write_text(f"#!/bin/bash\n{log}{body}\n")
            path.chmod(0o755)
        health = tmp / "health"
        checks = [{"name": "gpus", "ok": False}, {"name": "fabric", "ok": False}, {"name": "ecc", "ok": True}]
        # health.sh's result format: `"name": "...", "ok": ...` (json.dumps writes the same spacing)
        (tmp / "result.json").write_text(json.dumps({"healthy": health_exit == 0, "checks": checks}))
        health.write_text(
            "#!/bin/bash\n"
            f'cp "{tmp}/result.json" "$HEALTH_RESULT"\n'
            'echo "ACTION=$ACTION WAIT=$WAIT_SECONDS DCGM=$DCGM_LEVEL EXPECTED_GPUS=$EXPECTED_GPUS"'
            f' >"{tmp}/health-env"\n'
            f"exit {health_exit}\n"
        )
        health.chmod(0o755)
        (tmp / "health.env").write_text('EXPECTED_GPUS="8"\nACTION="replace"\nDCGM_LEVEL="1"\n')
        self.env = {
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "SLURM_COMMON": str(HERE / "slurm_common.sh"),
            "APT_LIST": str(tmp / "slurm.list"),
            "APT_PIN": str(tmp / "slurm.pin"),
            "APT_KEYRING": str(tmp / "keyring.gpg"),
            "MUNGE_KEY": str(self.key_file),
            "MUNGE_KEY_HOOK": str(hook),
            "LOG_DIR": str(tmp / "log"),
            "SPOOL_DIR": str(tmp / "spool"),
            "HOME_DIR": str(tmp / "home"),
            "DROPIN": str(tmp / "dropin.conf"),
            "CONF_DIR": str(tmp / "etc-slurm"),
            "CONF_SOURCE": str(tmp / "conf-source"),
            "STATE_DIR": str(tmp / "state"),
            "EXPORTS": str(tmp / "exports" / "gpu-cluster.exports"),
            "HEALTH": str(health),
            "HEALTH_ENV": str(tmp / "health.env"),
            "RESULT": str(tmp / "slurm-health.json"),
            "ATTEMPTS": "2",
            "RETRY_SECONDS": "0",
        }

    def role_env(self, part_env: dict[str, str]) -> dict[str, str]:
        """The part's own settings file, with the paths redirected into the box."""
        keep = {k: v for k, v in part_env.items() if k not in self.env}
        return {**keep, **self.env}

    def run(self, name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(HERE / name), *args],
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def called(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []


def part_env(parts, name: str) -> dict[str, str]:
    """The KEY="value" settings a part writes to /etc/gpu-cluster/<name>.env, read back."""
    for part in parts:
        for f in part.files:
            if f.path == f"/etc/gpu-cluster/{name}.env":
                return {k: json.loads(v) for k, v in (line.split("=", 1) for line in f.content.splitlines())}
    raise AssertionError(f"no {name}.env")


@pytest.mark.parametrize("name", [*SCRIPTS, "aws_munge_key.sh"])
def test_shellcheck_clean(name):
    proc = subprocess.run(["shellcheck", "-x", str(HERE / name)], capture_output=True, text=True, cwd=HERE)
    assert proc.returncode == 0, proc.stdout


def test_head_installs_the_pinned_slurm_writes_the_key_and_the_confs_and_exports_home(tmp_path):
    lay = layout()
    parts = head_parts(lay, key_hook="#!/bin/bash\n", key_hook_env={"MUNGE_SECRET_ID": "s"}, conf_hook="")
    box = Box(tmp_path)
    src = tmp_path / "conf-source"
    src.mkdir()
    for name, text in lay.head_files().items():
        (src / name).write_text(text)
    # the channel's text, fetched by the real gpu-cluster-slurm-conf (slurm_conf_sync.sh) through a stub hook
    (tmp_path / "channel.txt").write_text(lay.compute_config)
    sync = tmp_path / "bin" / "conf-sync"
    sync.write_text(
        f'#!/bin/bash\necho "conf-sync $*" >>"{box.calls}"\n'
        f'CONF_HOOK="{tmp_path}/bin/channel" APPLIED="{tmp_path}/applied" ENV_FILE=/nonexistent '
        f'exec bash "{HERE}/slurm_conf_sync.sh" "$@"\n'
    )
    (tmp_path / "bin" / "channel").write_text(f'#!/bin/bash\ncat "{tmp_path}/channel.txt"\n')
    for stub in (sync, tmp_path / "bin" / "channel"):
        stub.chmod(0o755)
    env = {**box.role_env(part_env(parts, "slurm-head")), "CONF_SYNC": str(sync)}
    proc = box.run("slurm_head.sh", env=env)
    assert proc.returncode == 0, proc.stderr
    calls = box.called()
    # the slurm user first (fixed uid), MUNGE and the NFS server from Ubuntu, then slurm-smd at the one version
    assert calls.index(
        "useradd --system --uid 11100 --gid 11100 --home-dir /var/lib/slurm --shell /usr/sbin/nologin slurm"
    ) < (calls.index("apt-get install -y -q munge nfs-kernel-server"))
    assert "apt-get install -y -q slurm-smd=25.11.5-1 slurm-smd-client=25.11.5-1 slurm-smd-slurmctld=25.11.5-1" in calls
    assert "apt-mark hold slurm-smd slurm-smd-client slurm-smd-slurmctld" in calls
    assert (tmp_path / "slurm.list").read_text().strip() == lay.packages.repo
    assert 'Pin: origin "packages.microsoft.com"' in (tmp_path / "slurm.pin").read_text()
    # the key: decoded, 0400, owned by munge, never printed
    assert box.key_file.read_bytes() == KEY
    assert stat.S_IMODE(box.key_file.stat().st_mode) == 0o400
    assert any(c.startswith("chown munge:munge ") for c in calls)
    assert base64.b64encode(KEY).decode() not in proc.stdout + proc.stderr + "\n".join(calls)
    # SlurmctldHost names this host, the files land in CONF_DIR, /home is exported to the cluster network
    conf = (tmp_path / "etc-slurm" / "slurm.conf").read_text()
    assert "SlurmctldHost=ip-10-46-0-9(10.46.0.9)\n" in conf and "@@" not in conf
    assert (tmp_path / "etc-slurm" / "gres.conf").exists() and (tmp_path / "etc-slurm" / "cgroup.conf").exists()
    # the GPU nodes' part of slurm.conf comes from the channel, installed before slurmctld starts (issue 28)
    assert conf.endswith("Include nodes.conf\n") and "MaxNodeCount" not in conf
    assert (tmp_path / "etc-slurm" / "nodes.conf").read_text() == lay.nodes_conf
    assert calls.index("conf-sync --install") < calls.index("systemctl restart slurmctld")
    # one placement group: no topology (docs/slurm.md, Topology)
    assert not (tmp_path / "etc-slurm" / "topology.yaml").exists()
    assert (
        tmp_path / "exports" / "gpu-cluster.exports"
    ).read_text() == "/home 10.42.0.0/16(rw,sync,no_subtree_check)\n"
    assert "exportfs -ra" in calls
    assert calls[-1] == "systemctl restart slurmctld"
    assert any(c.startswith(f"chown slurm:slurm {tmp_path}/state") for c in calls)


def test_a_version_the_repository_does_not_list_is_an_error_not_a_guess(tmp_path):
    box = Box(tmp_path, madison=MADISON.replace("25.11.5-1", "25.11.4-1"))
    env = box.role_env(part_env(compute_parts(layout(), head_address="10.0.0.5", key_hook=""), "slurm-compute"))
    proc = box.run("slurm_compute.sh", env=env)
    assert proc.returncode == 1
    assert "slurm-smd 25.11.5 is not in" in proc.stderr
    assert not any(c.startswith("apt-get install -y -q slurm-smd") for c in box.called())


def test_a_short_or_missing_key_is_refused_and_no_key_file_is_left(tmp_path):
    box = Box(tmp_path, key=b"short")
    env = box.role_env(part_env(login_parts(layout(), head_address="10.0.0.5", key_hook=""), "slurm-login"))
    proc = box.run("slurm_login.sh", env=env)
    assert proc.returncode == 1
    assert "no MUNGE key" in proc.stderr
    assert not box.key_file.exists() and not list(tmp_path.glob("munge.key.*"))
    assert "systemctl restart munge" not in box.called()


def test_compute_registers_as_a_dynamic_node_with_the_head_and_mounts_home(tmp_path):
    lay = layout()
    box = Box(tmp_path)
    parts = compute_parts(lay, head_address="10.42.0.7", key_hook="")
    proc = box.run("slurm_compute.sh", env=box.role_env(part_env(parts, "slurm-compute")))
    assert proc.returncode == 0, proc.stderr
    dropin = (tmp_path / "dropin.conf").read_text()
    assert dropin == (
        "[Service]\nExecStart=\nExecStart="
        f"{box.bin}/slurmd --systemd -Z --conf-server 10.42.0.7:6817 "
        f'--conf "Feature=gpu Gres=gpu:h100:8 RealMemory={lay.node.real_memory_mib}"\n'
    )
    calls = box.called()
    assert f"mount -t nfs4 -o rw,hard,_netdev 10.42.0.7:/home {tmp_path}/home" in calls
    assert "apt-get install -y -q munge nfs-common" in calls
    assert calls[-1] == "systemctl restart slurmd"


def test_compute_leave_deletes_this_node_from_slurm(tmp_path):
    box = Box(tmp_path)
    proc = box.run("slurm_compute.sh", "leave")
    assert proc.returncode == 0
    assert box.called() == ["scontrol delete nodename=ip-10-46-0-9"]


def test_login_runs_sackd_against_the_head_without_reconfigure(tmp_path):
    box = Box(tmp_path)
    parts = login_parts(layout(), head_address="10.42.0.7", key_hook="")
    proc = box.run("slurm_login.sh", env=box.role_env(part_env(parts, "slurm-login")))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "dropin.conf").read_text() == (
        f"[Service]\nExecStart=\nExecStart={box.bin}/sackd --systemd --conf-server 10.42.0.7:6817 --disable-reconfig\n"
    )
    assert (
        "apt-get install -y -q slurm-smd=25.11.5-1 slurm-smd-client=25.11.5-1 slurm-smd-sackd=25.11.5-1" in box.called()
    )


def test_shared_storage_binds_home_and_seeds_it_once(tmp_path):
    box = Box(tmp_path)
    (box.bin / "mountpoint").write_text(f'#!/bin/bash\n[ "$2" = "{tmp_path}/shared" ]\n')
    (tmp_path / "shared").mkdir()
    home = tmp_path / "home"
    (home / "ubuntu").mkdir(parents=True)
    env = {**box.env, "SHARED_PATH": str(tmp_path / "shared"), "HEAD_ADDRESS": "10.0.0.5", "SLURMCTLD_PORT": "6817"}
    env.update(SLURM_PACKAGES="", OS_PACKAGES="", SLURM_UID="11100")
    proc = box.run("slurm_login.sh", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "shared" / "home" / "ubuntu").is_dir()
    assert f"mount --bind {tmp_path}/shared/home {home}" in box.called()
    assert not any(c.startswith("mount -t nfs4") for c in box.called())


def test_health_program_drains_a_failing_node_with_the_failed_checks(tmp_path):
    box = Box(tmp_path, health_exit=1)
    proc = box.run("slurm_health.sh")
    assert proc.returncode == 1
    assert box.called() == ["scontrol update nodename=ip-10-46-0-9 state=drain reason=gpu-cluster health: gpus,fabric"]
    # the boot check's expectations, in report mode, fast
    assert (tmp_path / "health-env").read_text().strip() == "ACTION=report WAIT=1 DCGM=0 EXPECTED_GPUS=8"


def test_health_program_leaves_a_healthy_node_alone_and_does_nothing_without_the_check(tmp_path):
    box = Box(tmp_path, health_exit=0)
    assert box.run("slurm_health.sh").returncode == 0
    assert box.called() == []
    proc = box.run("slurm_health.sh", env={**box.env, "HEALTH": str(tmp_path / "missing")})
    assert proc.returncode == 0 and box.called() == []


def test_aws_hook_reads_the_secret_by_name_in_the_instance_region(tmp_path):
    proc, calls = run_aws_secret_hook(
        tmp_path, HERE / "aws_munge_key.sh", 'MUNGE_SECRET_ID="gpu-cluster/s/c/munge-key"', "QUJD"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "QUJD\n"  # the key alone on stdout
    assert calls == [
        "secretsmanager",
        "get-secret-value",
        "--region",
        "us-east-1",
        "--secret-id",
        "gpu-cluster/s/c/munge-key",
        "--query",
        "SecretString",
        "--output",
        "text",
    ]


def test_parts_render_as_cloud_init_with_the_head_placeholder_for_the_cloud_to_fill():
    lay = layout()
    text = cloud_init(compute_parts(lay, head_address=HEAD_PLACEHOLDER, key_hook=script("aws_munge_key.sh")))
    assert f'HEAD_ADDRESS="{HEAD_PLACEHOLDER}"' in text
    assert "/usr/local/sbin/gpu-cluster-slurm-health" in text and "gpu-cluster-slurm-leave.service" in text
