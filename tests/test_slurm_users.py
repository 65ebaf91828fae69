"""slurm.users: the people who submit jobs, the same user and uid on the head, the login node and every GPU node.
The spec's keyed refusals; users.conf through the channel (adding a user changes no node's user data); the timer part
on every role; slurm_users.sh with stubbed account commands (root: it makes homes and authorized_keys)."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest

from components.bootstrap.slurm_conf import compute_config_files
from components.errors import ConfigErrors
from components.layout.aws import plan as aws_plan
from components.spec import build_spec

from .conftest import ROOT, aws_values, plan_json, plan_stack_with, spec_of

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHVzZXJrZXk alice@lab"
USERS = [{"name": "alice", "uid": 20001, "sshPublicKey": KEY, "sudo": True}, {"name": "bob", "uid": 20002}]
SCRIPT = ROOT / "components" / "bootstrap" / "slurm_users.sh"


def errors_of(values: dict) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(values, "test")
    return [(e.key, e.message) for e in info.value.errors]


def test_every_users_problem_is_keyed_and_reported_at_once():
    users = [{"name": "ubuntu", "uid": 11100}, {"name": "alice", "uid": 20001}, {"name": "alice", "uid": 20001}]
    got = errors_of(aws_values(scheduler="slurm", slurm={"users": users}))
    k = "gpu-cluster:cluster.slurm.users"
    assert [key for key, _ in got] == [f"{k}[0].name", f"{k}[0].uid", f"{k}[2].name", f"{k}[2].uid"]
    assert got[0][1].startswith("'ubuntu' is a user the nodes already have")
    assert got[1][1] == "11100 is the slurm user's uid; pick another in 1000..59999"
    assert got[3][1] == "20001 is given to two users; each needs its own uid"
    # the model's own bounds, keyed too
    low = errors_of(aws_values(scheduler="slurm", slurm={"users": [{"name": "carol", "uid": 999}]}))
    assert low[0][0] == f"{k}[0].uid"


def test_users_travel_in_the_channel_and_every_role_runs_the_users_timer():
    layout = aws_plan(spec_of(aws_values(scheduler="slurm", slurm={"users": USERS})))
    files = compute_config_files(layout.slurm.layout.compute_config)
    encoded = base64.b64encode(KEY.encode()).decode()
    assert files["users.conf"] == f"alice 20001 true {encoded}\nbob 20002 false -\n"
    head, login, gpu = layout.slurm.head_user_data, layout.slurm.login_user_data, layout.user_data
    for text in (head, login, gpu):
        assert "/usr/local/sbin/gpu-cluster-slurm-users" in text and "gpu-cluster-slurm-users.timer" in text
        assert "alice" not in text  # the names are in the channel, never in a node's user data
    assert 'USERS_PUBLISH="/home/.gpu-cluster/users.conf"' in head and 'HOMES="true"' in head
    assert 'USERS_SOURCE="/home/.gpu-cluster/users.conf"' in gpu and 'HOMES="false"' in gpu


def test_adding_a_user_changes_only_the_channel():
    before = plan_json(plan_stack_with("aws-slurm-h100", slurm={"partition": "gpu", "users": USERS[:1]}))
    after = plan_json(plan_stack_with("aws-slurm-h100", slurm={"partition": "gpu", "users": USERS}))
    from components.diff import diff_plans

    d = diff_plans(before, after)
    assert [c.type.split(":")[-1] for c in d.changed] == ["Parameter"]
    assert [(c.key, c.policy) for c in d.spec_changes] == [("cluster.slurm.users", "in-place")]


def test_a_stack_without_users_has_no_users_part():
    layout = aws_plan(spec_of(aws_values(scheduler="slurm")))
    assert "slurm-users" not in layout.slurm.head_user_data
    assert "users.conf" not in compute_config_files(layout.slurm.layout.compute_config)


def run_users(tmp_path: Path, conf: str, *, homes: bool, existing: dict[str, int] | None = None) -> tuple[int, str]:
    """slurm_users.sh with id/getent/groupadd/useradd/usermod/visudo stubbed (they log their arguments)."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    known = " ".join(f"{n}={u}" for n, u in (existing or {}).items())
    stubs = {
        "id": f'for kv in {known}; do [ "${{kv%%=*}}" = "$2" ] && {{ echo "${{kv#*=}}"; exit 0; }}; done; exit 1',
        "getent": "exit 2",
        "groupadd": 'echo "groupadd $*" >>"$LOG"',
        "useradd": 'echo "useradd $*" >>"$LOG"',
        "usermod": 'echo "usermod $*" >>"$LOG"',
        "visudo": 'cp "$2" "$LOG.sudoers"',
        "chown": "exit 0",
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "users.conf").write_text(conf)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "ENV_FILE": "/nonexistent",
        "LOG": str(log),
        "USERS_SOURCE": str(tmp_path / "users.conf"),
        "USERS_PUBLISH": str(tmp_path / "home" / ".gpu-cluster" / "users.conf") if homes else "",
        "HOMES": "true" if homes else "false",
        "HOME_DIR": str(tmp_path / "home"),
        "SUDOERS": str(tmp_path / "sudoers"),
        "STATE": str(tmp_path / "state"),
    }
    (tmp_path / "home").mkdir()
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    return proc.returncode, (log.read_text() if log.exists() else "") + proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="makes homes owned by the users' uids (install -o)")
def test_the_head_creates_each_user_its_home_key_and_sudo(tmp_path):
    encoded = base64.b64encode(KEY.encode()).decode()
    code, out = run_users(tmp_path, f"alice 20001 true {encoded}\nbob 20002 false -\n", homes=True)
    assert code == 0, out
    assert "groupadd --gid 20001 alice" in out and "groupadd --gid 20002 bob" in out
    assert (
        f"useradd --uid 20001 --gid 20001 --no-create-home --home-dir {tmp_path}/home/alice --shell /bin/bash alice"
        in out
    )
    assert (tmp_path / "home" / "alice" / ".ssh" / "authorized_keys").read_text() == KEY + "\n"
    assert not (tmp_path / "home" / "bob" / ".ssh").exists()
    assert (tmp_path / "calls.sudoers").read_text() == "alice ALL=(ALL) NOPASSWD:ALL\n"
    assert (tmp_path / "home" / ".gpu-cluster" / "users.conf").read_text().startswith("alice 20001 true ")
    assert (tmp_path / "state").read_text().split() == ["alice", "bob"]


def test_a_node_creates_the_users_without_homes_and_locks_one_dropped(tmp_path):
    (tmp_path / "state").write_text("alice\ncarol\n")
    code, out = run_users(tmp_path, "alice 20001 false -\n", homes=False, existing={"alice": 20001})
    assert code == 0, out
    assert "useradd" not in out  # alice exists with her uid: unlocked, not recreated
    assert "usermod -U -e  alice" in out
    assert "usermod -L -e 1 carol" in out  # dropped from the list: locked, files kept
    assert not (tmp_path / "home" / "alice").exists()


def test_a_user_whose_uid_differs_is_reported_not_forced(tmp_path):
    code, out = run_users(tmp_path, "alice 20001 false -\n", homes=False, existing={"alice": 1001})
    assert code == 1
    assert "alice exists with uid 1001, not 20001: left as it is" in out
    assert "useradd" not in out and "usermod -U" not in out
