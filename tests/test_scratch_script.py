"""The scratch bootstrap, run for real against a stubbed device layout (no root, no real disks)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from components.layout import scratch_script
from components.layout.aws import EBS_GLOBS, INSTANCE_STORE_GLOBS

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "scratch.sh"
STUBS = {
    "findmnt": 'echo "$ROOT_SOURCE"',
    "lsblk": 'case "$*" in *PKNAME*) echo "$ROOT_DISK" ;; *MOUNTPOINT*) echo "${IN_USE_MOUNT:-}" ;; esac',
    "mountpoint": 'exit "${MOUNTED:-1}"',
    "blkid": 'if [ -n "${EXISTING_FS:-}" ]; then echo "$EXISTING_FS"; else exit 2; fi',
    "mdadm": "exit 0",
    "mkfs.xfs": "exit 0",
    "mount": "exit 0",
    "sleep": "exit 0",
}


def by_id(layout: Path, glob: str, name: str, target: str) -> None:
    folder = layout / Path(glob).parent.relative_to("/")
    folder.mkdir(parents=True, exist_ok=True)
    (layout / "dev" / target).touch()
    (folder / name).symlink_to(layout / "dev" / target)


def run(
    tmp_path: Path,
    globs: tuple[str, ...],
    expected: int,
    stubs: dict[str, str] | None = None,
    script: Path | None = None,
    **env: str,
) -> tuple[subprocess.CompletedProcess, list[str]]:
    """The script (default `SCRIPT`, which the mutation harness may replace) against the stubs, plus `stubs`."""
    stub_bin = tmp_path / "bin"
    stub_bin.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    for name, body in {**STUBS, **(stubs or {})}.items():
        path = stub_bin / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{log}"\n{body}\n')
        path.chmod(0o755)
    full_env = {
        "PATH": f"{stub_bin}:{os.environ['PATH']}",
        "SCRATCH_PATH": str(tmp_path / "scratch"),
        "DEVICE_GLOBS": " ".join(str(tmp_path) + g for g in globs),
        "EXPECTED_DEVICES": str(expected),
        "WAIT_SECONDS": "2",
        "ROOT_SOURCE": str(tmp_path / "dev" / "nvme0n1p1"),
        "ROOT_DISK": "nvme0n1",
        **env,
    }
    proc = subprocess.run(["bash", str(script or SCRIPT)], env=full_env, capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls


def test_script_is_the_one_shipped_in_user_data():
    assert scratch_script() == SCRIPT.read_text()


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_shellcheck_clean():
    subprocess.run(["shellcheck", str(SCRIPT)], check=True)


@pytest.mark.parametrize("count", [2, 4, 8, 16, 32])
def test_stripes_every_instance_store_device(tmp_path, count):
    (tmp_path / "dev").mkdir()
    for i in range(1, count + 1):
        by_id(tmp_path, INSTANCE_STORE_GLOBS[0], f"nvme-Amazon_EC2_NVMe_Instance_Storage_AWS{i:04d}", f"nvme{i}n1")
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, count)
    assert proc.returncode == 0, proc.stderr
    create = [c for c in calls if c.startswith("mdadm --create")]
    assert len(create) == 1 and f"--raid-devices={count}" in create[0] and "--level=0" in create[0]
    assert sorted(create[0].split()[-count:]) == sorted(
        str(tmp_path / "dev" / f"nvme{i}n1") for i in range(1, count + 1)
    )
    assert any(c.startswith("mkfs.xfs -f -L gc-scratch /dev/md/gpu-cluster-scratch") for c in calls)
    assert any(c.startswith("mount -o defaults,noatime,nofail /dev/md/gpu-cluster-scratch") for c in calls)


def test_single_ebs_disk_skips_the_root_volume_and_raid(tmp_path):
    (tmp_path / "dev").mkdir()
    by_id(tmp_path, EBS_GLOBS[0], "nvme-Amazon_Elastic_Block_Store_vol0root", "nvme0n1")
    by_id(tmp_path, EBS_GLOBS[0], "nvme-Amazon_Elastic_Block_Store_vol0root-part1", "nvme0n1p1")
    by_id(tmp_path, EBS_GLOBS[0], "nvme-Amazon_Elastic_Block_Store_vol0scratch", "nvme1n1")
    proc, calls = run(tmp_path, EBS_GLOBS, 1)
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith("mdadm --create")]
    assert f"mkfs.xfs -f -L gc-scratch {tmp_path}/dev/nvme1n1" in calls


def test_already_mounted_is_a_no_op(tmp_path):
    (tmp_path / "dev").mkdir()
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 8, MOUNTED="0")
    assert proc.returncode == 0
    assert not [c for c in calls if c.startswith(("mdadm", "mkfs"))]


def test_reboot_remounts_the_existing_filesystem(tmp_path):
    (tmp_path / "dev").mkdir()
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 8, EXISTING_FS="/dev/md127")
    assert proc.returncode == 0
    assert any(c.startswith("mount -o defaults,noatime,nofail /dev/md127") for c in calls)
    assert not [c for c in calls if c.startswith(("mdadm --create", "mkfs"))]


def test_devices_striped_by_the_image_are_bind_mounted(tmp_path):
    (tmp_path / "dev").mkdir()
    for i in range(1, 3):
        by_id(tmp_path, INSTANCE_STORE_GLOBS[0], f"nvme-Amazon_EC2_NVMe_Instance_Storage_AWS{i}", f"nvme{i}n1")
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 2, IN_USE_MOUNT="/opt/dlami/nvme")
    assert proc.returncode == 0, proc.stderr
    assert f"mount --bind /opt/dlami/nvme {tmp_path}/scratch" in calls
    assert not [c for c in calls if c.startswith(("mdadm --create", "mkfs"))]


def test_no_devices_fails_loudly(tmp_path):
    (tmp_path / "dev").mkdir()
    proc, _ = run(tmp_path, INSTANCE_STORE_GLOBS, 2)
    assert proc.returncode == 1 and "no scratch devices match" in proc.stderr
