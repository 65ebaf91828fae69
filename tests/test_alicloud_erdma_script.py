"""The Alibaba ERI bring-up script, run for real against stubbed `ip`, `dhclient`, `networkctl` and `ibv_devinfo`."""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from components import bootstrap

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "alicloud_erdma.sh"
# eth0 has its address from the image; eth1 (the secondary ERI) is down without one until DHCP runs.
IP_STUB = r"""
case "$*" in
  "-o link show") printf '1: lo: <LOOPBACK,UP>\n2: eth0: <BROADCAST,UP>\n3: eth1: <BROADCAST>\n' ;;
  "-4 -o addr show dev eth0") echo '2: eth0    inet 10.45.0.7/17 brd 10.45.127.255 scope global eth0' ;;
  "-4 -o addr show dev eth1") [ -z "${ETH1_HAS_IP:-}" ] || echo '3: eth1    inet 10.45.0.8/17 scope global eth1' ;;
esac
exit 0
"""
IBV_STUB = r"""
for i in $(seq 1 "${ACTIVE_PORTS:-2}"); do printf 'hca_id:\terdma_%s\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n' "$i"; done
"""
# tools the script needs besides the stubs; PATH holds only these, so a missing dhclient is really missing
TOOLS = ("awk", "cut", "grep", "mkdir", "seq", "cat")


def run(tmp_path: Path, stubs: dict[str, str], **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        link = bin_dir / tool
        if not link.exists():
            link.symlink_to(found)
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{log}"\n{body}\n')
        path.chmod(0o755)
    full_env = {
        "PATH": str(bin_dir),
        "ERI_COUNT": "2",
        "MTU": "1400",
        "NETWORKD_DIR": str(tmp_path / "network"),
        **env,
    }
    bash = shutil.which("bash")
    assert bash
    proc = subprocess.run([bash, str(SCRIPT)], env=full_env, capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls


def stubs(**extra: str) -> dict[str, str]:
    return {"ip": IP_STUB, "ibv_devinfo": IBV_STUB, **extra}


def test_script_is_the_one_shipped_in_user_data():
    assert bootstrap.script("alicloud_erdma.sh") == SCRIPT.read_text()


def test_brings_up_the_secondary_eri_with_dhclient_and_sets_the_mtu_on_both(tmp_path):
    proc, calls = run(tmp_path, stubs(dhclient="exit 0"))
    assert proc.returncode == 0, proc.stderr
    assert "dhclient -v eth1" in calls
    assert not [c for c in calls if c.startswith("dhclient") and "eth0" in c]  # the image's lease is kept
    for nic in ("eth0", "eth1"):
        assert f"ip link set dev {nic} up" in calls
        assert f"ip link set dev {nic} mtu 1400" in calls
    # MTU after DHCP: a lease may carry its own MTU
    assert calls.index("dhclient -v eth1") < calls.index("ip link set dev eth1 mtu 1400")
    assert "2 eRDMA ports ACTIVE" in proc.stderr


def test_an_eri_with_an_address_gets_no_dhcp(tmp_path):
    proc, calls = run(tmp_path, stubs(dhclient="exit 0"), ETH1_HAS_IP="1", MTU="8500")
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith("dhclient")]
    assert "ip link set dev eth1 mtu 8500" in calls


def test_without_dhclient_a_networkd_unit_is_written(tmp_path):
    proc, calls = run(tmp_path, stubs(networkctl="exit 0"))
    assert proc.returncode == 0, proc.stderr
    unit = (tmp_path / "network" / "10-gpu-cluster-eth1.network").read_text()
    assert "Name=eth1" in unit and "DHCP=ipv4" in unit and "MTUBytes=1400" in unit
    assert calls.index("networkctl reload") < calls.index("networkctl reconfigure eth1")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ERI_COUNT": "3"}, "expected 3 ERIs, found 2 interfaces"),
        ({"ACTIVE_PORTS": "1"}, "1 of 2 eRDMA ports are ACTIVE"),
    ],
)
def test_fails_loudly_when_fewer_eris_come_up_than_were_wired(tmp_path, env, message):
    proc, _ = run(tmp_path, stubs(dhclient="exit 0"), **env)
    assert proc.returncode == 1
    assert message in proc.stderr


def test_fails_when_the_erdma_stack_is_missing(tmp_path):
    proc, _ = run(tmp_path, {"ip": IP_STUB, "dhclient": "exit 0"})
    assert proc.returncode == 1
    assert "ibv_devinfo not found" in proc.stderr


def test_a_failing_dhcp_stops_the_script(tmp_path):
    proc, calls = run(tmp_path, stubs(dhclient="exit 2"))
    assert proc.returncode != 0
    assert "ip link set dev eth1 mtu 1400" not in calls


def test_requires_its_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("ERI_COUNT", "MTU")}
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and "ERI_COUNT is not set" in proc.stderr


# --- the eRDMA stack: installed when missing, after the GPU driver ------------------------------------------

INSTALLER = "http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh"


def install_stubs(tmp_path: Path, **extra: str) -> dict[str, str]:
    """wget "downloads" an env_setup.sh that only logs how it was run; eadm answers after the install."""
    setup = f'echo "env_setup.sh $*" >> "{tmp_path}/calls.log"'
    base = {
        "dhclient": "exit 0",
        "wget": f'out="${{@: -2:1}}"; printf \'%s\\n\' {shlex.quote(setup)} > "$out"',
        "mktemp": f'mkdir -p "{tmp_path}/work" && echo "{tmp_path}/work"',
        "bash": f'exec "{shutil.which("bash")}" "$@"',
    }
    return stubs(**{**base, **extra})


def test_installs_the_missing_stack_with_the_documented_command_before_the_eris(tmp_path):
    proc, calls = run(tmp_path, install_stubs(tmp_path), ERDMA_INSTALLER=INSTALLER)
    assert proc.returncode == 0, proc.stderr
    wget = next(c for c in calls if c.startswith("wget"))
    assert wget.endswith(f"-O env_setup.sh {INSTALLER}")
    assert "env_setup.sh --egs" in calls  # Alibaba's eRDMA stack for GPU instances
    assert calls.index("env_setup.sh --egs") < calls.index("dhclient -v eth1")


def test_an_image_with_the_stack_is_left_alone(tmp_path):
    proc, calls = run(tmp_path, install_stubs(tmp_path, eadm="exit 0"), ERDMA_INSTALLER=INSTALLER)
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith("wget") or c.startswith("env_setup")]


def test_waits_for_the_gpu_driver_installed_in_this_boot(tmp_path):
    """Alibaba's order: the eRDMA-only install is for a host whose GPU driver is installed; the driver
    installer of the user data runs in the first boot and reboots: the stack follows at the next boot."""
    (tmp_path / "boot_id").write_text("boot-1\n")
    (tmp_path / "driver-boot").write_text("boot-1\n")
    env = {
        "ERDMA_INSTALLER": INSTALLER,
        "BOOT_ID_FILE": str(tmp_path / "boot_id"),
        "DRIVER_BOOT_FILE": str(tmp_path / "driver-boot"),
    }
    # first boot: no stack yet, so no ibv_devinfo either; the ERIs still come up and the unit succeeds
    first = {k: v for k, v in install_stubs(tmp_path).items() if k != "ibv_devinfo"}
    proc, calls = run(tmp_path, first, **env)
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith("wget")]
    assert "stack follows it at the next boot" in proc.stderr
    assert "ip link set dev eth1 mtu 1400" in calls
    # the next boot (another boot id): installed
    (tmp_path / "boot_id").write_text("boot-2\n")
    proc, calls = run(tmp_path, install_stubs(tmp_path), **env)
    assert proc.returncode == 0, proc.stderr
    assert "env_setup.sh --egs" in calls


def test_a_failed_install_fails_the_unit(tmp_path):
    proc, calls = run(tmp_path, install_stubs(tmp_path, wget="exit 4"), ERDMA_INSTALLER=INSTALLER)
    assert proc.returncode != 0
    assert "env_setup.sh --egs" not in calls


def test_shellcheck_clean():
    proc = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
