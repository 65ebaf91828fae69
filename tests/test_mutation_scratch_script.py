"""The scratch bootstrap: behaviours the mutation harness found unpinned (tests/mutation/shell_mutants.py).

Same approach as test_scratch_script.py: the real script against stubbed tools and a device layout
in a temporary folder. `SCRIPT` is what the harness replaces with a mutated copy.
"""

from __future__ import annotations

import stat
from pathlib import Path

from components.layout.aws import INSTANCE_STORE_GLOBS

from .test_scratch_script import by_id
from .test_scratch_script import run as scratch_run

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "scratch.sh"
STORE = "nvme-Amazon_EC2_NVMe_Instance_Storage_AWS"


def run(tmp_path: Path, globs: tuple[str, ...], expected: int, stubs: dict[str, str] | None = None, **env: str):
    # this module's SCRIPT (the harness's copy), with more wait rounds for the late-device cases
    return scratch_run(tmp_path, globs, expected, stubs, SCRIPT, **{"WAIT_SECONDS": "5", **env})


def store_devices(tmp_path: Path, count: int) -> None:
    (tmp_path / "dev").mkdir(exist_ok=True)
    for i in range(1, count + 1):
        by_id(tmp_path, INSTANCE_STORE_GLOBS[0], f"{STORE}{i}", f"nvme{i}n1")


def created(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("mdadm --create")]


def test_all_devices_present_means_no_waiting(tmp_path):
    store_devices(tmp_path, 4)
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 4)
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith("sleep")]


def test_devices_that_appear_late_are_waited_for(tmp_path):
    """The cloud attaches instance store after boot starts: the script re-scans after each wait."""
    (tmp_path / "dev").mkdir()
    by_id(tmp_path, INSTANCE_STORE_GLOBS[0], f"{STORE}1", "nvme1n1")
    link_dir = tmp_path / Path(INSTANCE_STORE_GLOBS[0]).parent.relative_to("/")
    # the second device shows up during the second wait
    late = (
        f'n=$(grep -c "^sleep" "{tmp_path}/calls.log"); '
        f'if [ "$n" -ge 2 ]; then touch "{tmp_path}/dev/nvme2n1"; '
        f'ln -sf "{tmp_path}/dev/nvme2n1" "{link_dir}/{STORE}2"; fi'
    )
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 2, stubs={"sleep": late})
    assert proc.returncode == 0, proc.stderr
    assert len([c for c in calls if c.startswith("sleep")]) == 2
    assert len(created(calls)) == 1 and "--raid-devices=2" in created(calls)[0]


def test_fewer_devices_than_expected_stripes_those_found(tmp_path):
    store_devices(tmp_path, 2)
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 4, WAIT_SECONDS="2")
    assert proc.returncode == 0, proc.stderr
    assert len(created(calls)) == 1 and "--raid-devices=2" in created(calls)[0]
    assert "expected 4 devices, found 2" in proc.stderr


def test_a_device_matched_by_two_globs_is_striped_once(tmp_path):
    store_devices(tmp_path, 2)
    link_dir = str(Path(INSTANCE_STORE_GLOBS[0]).parent)
    globs = (f"{link_dir}/{STORE}*", f"{link_dir}/nvme-Amazon_EC2_NVMe_*")
    proc, calls = run(tmp_path, globs, 2)
    assert proc.returncode == 0, proc.stderr
    assert len(created(calls)) == 1 and "--raid-devices=2" in created(calls)[0]
    assert sorted(created(calls)[0].split()[-2:]) == [f"{tmp_path}/dev/nvme1n1", f"{tmp_path}/dev/nvme2n1"]


def test_an_array_from_an_earlier_boot_is_assembled_before_looking_for_its_filesystem(tmp_path):
    (tmp_path / "dev").mkdir()
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 8, EXISTING_FS="/dev/md127")
    assert proc.returncode == 0, proc.stderr
    tools = [c.split()[0] + (" " + c.split()[1] if c.startswith("mdadm") else "") for c in calls]
    assert tools.index("mdadm --assemble") < tools.index("blkid")


def test_blank_mountpoints_of_other_devices_do_not_hide_the_image_mount(tmp_path):
    """`lsblk -o MOUNTPOINT` prints an empty line for each unmounted device, in any order."""
    store_devices(tmp_path, 2)
    lsblk = 'case "$*" in *PKNAME*) echo "$ROOT_DISK" ;; *MOUNTPOINT*) printf "\\n   \\n/opt/dlami/nvme\\n" ;; esac'
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 2, stubs={"lsblk": lsblk})
    assert proc.returncode == 0, proc.stderr
    assert f"mount --bind /opt/dlami/nvme {tmp_path}/scratch" in calls
    assert not created(calls)


def test_the_scratch_is_shared_but_sticky(tmp_path):
    """Every user may write to /scratch; nobody may delete another user's files (mode 1777)."""
    store_devices(tmp_path, 2)
    proc, _ = run(tmp_path, INSTANCE_STORE_GLOBS, 2)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE((tmp_path / "scratch").stat().st_mode) == 0o1777


def test_a_glob_that_matches_nothing_is_no_device(tmp_path):
    """The by-id folder exists (the root EBS volume is there) but no instance store: fail, do not mkfs a glob."""
    (tmp_path / "dev").mkdir()
    by_id(tmp_path, INSTANCE_STORE_GLOBS[0], "nvme-Amazon_Elastic_Block_Store_vol0root", "nvme0n1")
    proc, calls = run(tmp_path, INSTANCE_STORE_GLOBS, 2, WAIT_SECONDS="1")
    assert proc.returncode == 1 and "no scratch devices match" in proc.stderr
    assert not [c for c in calls if c.startswith(("mdadm --create", "mkfs"))]
