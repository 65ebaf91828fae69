"""The head's dead-node cleanup (bootstrap/slurm_cleanup.sh and its timer, defect 10b): run for real against stubbed
sinfo and scontrol; its units checked by systemd-analyze. tests/test_slurm_real.py runs it against a real slurmctld."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from components.bootstrap import cloud_init, script
from components.bootstrap.slurm import cleanup_part, head_parts
from components.catalog.slurm import data
from components.layout.slurm import slurm_layout

from .conftest import aws_values, spec_of
from .hook_helpers import BOOTSTRAP, assert_shellcheck_clean, stub_bin

SCRIPT = BOOTSTRAP / "slurm_cleanup.sh"


class Head:
    """Stubbed sinfo (prints `dead`, or fails) and scontrol (logs its argv, fails for the nodes in `refuse`)."""

    def __init__(self, tmp: Path, dead: str = "", sinfo_fails: bool = False, refuse: tuple[str, ...] = ()) -> None:
        self.tmp = tmp
        self.calls = tmp / "calls"
        self.seen = tmp / "state" / "slurm-dead-nodes"
        (tmp / "dead.txt").write_text(dead)
        refused = " ".join(f"nodename={n}" for n in refuse)
        self.bin = stub_bin(
            tmp,
            {
                "sinfo": f'echo "sinfo $*" >>"{self.calls}"\n'
                + ("exit 1\n" if sinfo_fails else f'cat "{tmp}/dead.txt"\n'),
                "scontrol": f'echo "scontrol $*" >>"{self.calls}"\ncase " {refused} " in *" $2 "*) exit 1 ;; esac\n',
            },
        )

    def run(self, after: int = 900) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "DEAD_AFTER_SECONDS": str(after),
            "SEEN_FILE": str(self.seen),
        }
        return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)

    def called(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def deleted(self) -> list[str]:
        return [c.removeprefix("scontrol delete nodename=") for c in self.called() if c.startswith("scontrol delete")]

    def seen_since(self) -> dict[str, int]:
        return {n: int(t) for n, t in (line.split() for line in self.seen.read_text().splitlines())}


def test_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


def test_asks_slurmctld_only_for_the_nodes_not_responding(tmp_path):
    head = Head(tmp_path)
    assert head.run().returncode == 0
    assert head.called() == ["sinfo --dead --noheader --Node --format=%N"]


def test_a_node_seen_dead_for_the_first_time_is_remembered_not_deleted(tmp_path):
    head = Head(tmp_path, dead="ip-10-0-0-5\nip-10-0-0-6\n")
    before = int(time.time())
    proc = head.run()
    assert proc.returncode == 0 and proc.stderr == ""
    assert head.deleted() == []
    seen = head.seen_since()
    assert sorted(seen) == ["ip-10-0-0-5", "ip-10-0-0-6"] and all(before <= t <= time.time() for t in seen.values())


def test_a_node_dead_for_the_threshold_is_deleted_and_forgotten(tmp_path):
    head = Head(tmp_path, dead="old\nrecent\n")
    head.seen.parent.mkdir()
    now = int(time.time())
    head.seen.write_text(f"old {now - 901}\nrecent {now - 60}\n")
    proc = head.run(after=900)
    assert proc.returncode == 0
    assert head.deleted() == ["old"]
    assert proc.stderr.startswith("gpu-cluster-slurm-cleanup: deleted old: not responding for 9")
    # the recent one keeps its first sighting: its clock does not restart
    assert head.seen_since() == {"recent": now - 60}


def test_a_node_that_answers_again_is_forgotten(tmp_path):
    head = Head(tmp_path, dead="still\n")
    head.seen.parent.mkdir()
    head.seen.write_text("back 100\nstill 200\n")
    assert head.run(after=10**10).returncode == 0
    assert head.deleted() == [] and head.seen_since() == {"still": 200}


def test_a_node_listed_in_two_partitions_is_deleted_once(tmp_path):
    head = Head(tmp_path, dead="n1\nn1\n")
    assert head.run(after=0).returncode == 0
    assert head.deleted() == ["n1"] and head.seen.read_text() == ""


def test_a_node_slurm_will_not_delete_is_tried_again_and_the_run_fails(tmp_path):
    """Only a dynamic node with no running job and no reservation can be deleted (dynamic_nodes.html)."""
    head = Head(tmp_path, dead="busy\nfree\n", refuse=("busy",))
    proc = head.run(after=0)
    assert proc.returncode == 1
    assert head.deleted() == ["busy", "free"]
    assert "could not delete busy" in proc.stderr and "deleted free" in proc.stderr
    assert list(head.seen_since()) == ["busy"]


def test_slurmctld_not_answering_fails_and_keeps_what_was_seen(tmp_path):
    head = Head(tmp_path, sinfo_fails=True)
    head.seen.parent.mkdir()
    head.seen.write_text("n1 100\n")
    proc = head.run(after=0)
    assert proc.returncode == 1 and "sinfo failed" in proc.stderr
    assert head.deleted() == [] and head.seen.read_text() == "n1 100\n"
    assert not list(head.seen.parent.glob("slurm-dead-nodes.*"))  # no temporary file left


def test_the_head_runs_it_on_a_timer_with_the_catalog_threshold():
    rule = data()["deadNodeCleanup"]
    assert rule == {"afterSeconds": 900, "everySeconds": 300}
    layout = slurm_layout(spec_of(aws_values(scheduler="slurm", nodes=2)))
    assert layout is not None
    parts = head_parts(layout, key_hook="#!/bin/bash\n", conf_hook="#!/bin/bash\n")
    part = parts[-1]
    assert part == cleanup_part() and part.name == "slurm-cleanup"
    files = {f.path: f for f in part.files}
    assert files["/usr/local/sbin/gpu-cluster-slurm-cleanup"].content == script("slurm_cleanup.sh")
    assert files["/usr/local/sbin/gpu-cluster-slurm-cleanup"].permissions == "0755"
    assert files["/etc/gpu-cluster/slurm-cleanup.env"].content == 'DEAD_AFTER_SECONDS="900"\n'
    timer = files["/etc/systemd/system/gpu-cluster-slurm-cleanup.timer"].content
    assert "OnBootSec=300\n" in timer and "OnUnitActiveSec=300\n" in timer and "WantedBy=timers.target\n" in timer
    service = files["/etc/systemd/system/gpu-cluster-slurm-cleanup.service"].content
    assert "Type=oneshot\n" in service and "After=slurmctld.service\n" in service
    assert part.commands[-1] == ("systemctl", "enable", "--now", "gpu-cluster-slurm-cleanup.timer")
    assert "gpu-cluster-slurm-cleanup.timer" in cloud_init(parts)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (Debian: systemd)")
def test_systemd_analyze_verifies_the_timer_and_its_service(tmp_path):
    """As the head gets them, the program's path put where it is here (verify checks that it is executable)."""
    files = {f.path: f.content for f in cleanup_part().files}
    program = tmp_path / "gpu-cluster-slurm-cleanup"
    program.write_text(files["/usr/local/sbin/gpu-cluster-slurm-cleanup"])
    program.chmod(0o755)
    units = []
    for path, text in files.items():
        if path.startswith("/etc/systemd/system/"):
            unit = tmp_path / Path(path).name
            unit.write_text(text.replace("/usr/local/sbin/gpu-cluster-slurm-cleanup", str(program)))
            units.append(str(unit))
    proc = subprocess.run(["systemd-analyze", "verify", *units], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout + proc.stderr == ""
