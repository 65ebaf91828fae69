"""MIG: the profiles per GPU as data, the spec's validation, and the boot script against a stubbed nvidia-smi."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components import catalog
from components.bootstrap.mig import mig_part
from components.errors import ConfigError
from components.spec import build_spec

from .conftest import aws_values, spec_of

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "mig.sh"


def row(cloud, instance_type):
    return catalog.find(cloud, instance_type)[0]


@pytest.mark.parametrize(
    ("cloud", "itype", "first", "last"),
    [
        ("aws", "p4d.24xlarge", "1g.5gb", "7g.40gb"),
        ("aws", "p4de.24xlarge", "1g.10gb", "7g.80gb"),
        ("aws", "p5.48xlarge", "1g.10gb", "7g.80gb"),
        ("azure", "Standard_NC40ads_H100_v5", "1g.12gb", "7g.94gb"),  # the 94 GB H100 NVL
        ("aws", "p5en.48xlarge", "1g.18gb", "7g.141gb"),
        ("aws", "p6-b200.48xlarge", "1g.23gb", "7g.180gb"),
    ],
)
def test_profiles_follow_the_gpu_and_its_memory(cloud, itype, first, last):
    profiles = catalog.mig_profiles(row(cloud, itype))
    assert profiles is not None
    names = list(profiles)
    assert names[0] == first and names[-1] == last
    assert profiles[first] == 7 and profiles[last] == 1


@pytest.mark.parametrize(("cloud", "itype"), [("aws", "g4dn.xlarge"), ("gcp", "g2-standard-4"), ("aws", "g5.xlarge")])
def test_gpus_without_mig_have_no_profiles(cloud, itype):
    assert catalog.mig_profiles(row(cloud, itype)) is None


def test_a_valid_partition_resolves_to_the_instances_per_gpu():
    spec = spec_of(aws_values(gpuPartition="3g.40gb"))
    assert spec.gpu_partition == ("3g.40gb", 2)
    assert spec_of(aws_values()).gpu_partition is None


@pytest.mark.parametrize(
    ("cluster", "needle"),
    [
        ({"gpu": "T4:1", "gpuPartition": "1g.5gb"}, "have no MIG"),
        ({"gpuPartition": "1g.5gb"}, "H100 takes 1g.10gb, 1g.20gb"),
    ],
)
def test_bad_partitions_exit_with_the_key(cluster, needle):
    with pytest.raises(ConfigError) as info:
        build_spec(aws_values(**cluster), "test")
    errors = getattr(info.value, "errors", [info.value])
    assert [e.key for e in errors] == ["gpu-cluster:cluster.gpuPartition"]
    assert needle in errors[0].message


def run(tmp_path: Path, listing: str, current: str = "Enabled", count: int = 7, marked: bool = False):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "calls"
    (tmp_path / "listing").write_text(listing)
    stubs = {
        "nvidia-smi": (
            f'echo "nvidia-smi $*" >> {calls}\n'
            f'case "$*" in "-L") cat {tmp_path}/listing ;; *index*) printf "0\\n1\\n" ;; '
            f'*mig.mode.current*) printf "{current}\\n{current}\\n" ;; esac'
        ),
        "systemctl": f'echo "systemctl $*" >> {calls}',
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    mark = tmp_path / "rebooted"
    if marked:
        mark.touch()
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "MIG_PROFILE": "1g.10gb",
        "MIG_COUNT": str(count),
        "REBOOT_MARK": str(mark),
    }
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_script_is_shellcheck_clean():
    assert subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True).returncode == 0


def test_partitions_every_gpu_once(tmp_path):
    proc, calls = run(tmp_path, "GPU 0: H100\nGPU 1: H100\n", count=3)
    assert proc.returncode == 0, proc.stderr
    assert "nvidia-smi -mig 1" in calls
    assert "nvidia-smi mig -cgi 1g.10gb,1g.10gb,1g.10gb -C" in calls


def test_an_already_partitioned_node_is_left_alone(tmp_path):
    listing = "GPU 0: H100\n" + "  MIG 1g.10gb Device 0\n" * 7 + "GPU 1: H100\n" + "  MIG 1g.10gb Device 0\n" * 7
    proc, calls = run(tmp_path, listing)
    assert proc.returncode == 0 and not any("-cgi" in c or "-mig 1" in c for c in calls)


def test_a_pending_mode_reboots_once_then_fails(tmp_path):
    proc, calls = run(tmp_path, "GPU 0: H100\n", current="Disabled")
    assert proc.returncode == 0 and "systemctl reboot" in calls
    again = tmp_path / "after-reboot"
    again.mkdir()
    proc, calls = run(again, "GPU 0: H100\n", current="Disabled", marked=True)
    assert proc.returncode == 1 and "systemctl reboot" not in calls


def test_the_part_carries_the_profile():
    part = mig_part(("2g.20gb", 3))
    env = next(f for f in part.files if f.path.endswith("mig.env")).content
    assert 'MIG_PROFILE="2g.20gb"' in env and 'MIG_COUNT="3"' in env
    assert mig_part(None).empty
