"""Tencent's `image: auto` (issue 33): the public Ubuntu 22.04 image and Ubuntu's NVIDIA server driver installed at
first boot from Tencent's private-network mirror (catalog/tencentcloud.yaml images.default gpuDriver), before the
health check and the metrics; none with an explicit image. The boot script against stubbed commands."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path
from typing import Any

import yaml

from components.layout import image_for
from components.layout import tencentcloud as tc

from .conftest import plan_json, plan_values, spec_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin
from .test_tencentcloud_resources import nodes, tencent_values

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "tencentcloud_gpu_driver.sh"
UNIT = "/etc/systemd/system/gpu-cluster-tencentcloud-gpu-driver.service"
ENV = "/etc/gpu-cluster/tencentcloud-gpu-driver.env"
MIRROR = "http://mirrors.tencentyun.com/ubuntu"


def cloud_config(user_data_b64: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(gzip.decompress(base64.b64decode(user_data_b64)).decode())
    return doc


def files(doc: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def enabled_units(doc: dict[str, Any]) -> list[str]:
    return [c[-1] for c in doc.get("runcmd", []) if isinstance(c, list) and c[:2] == ["systemctl", "enable"]]


def t4(**cluster: Any) -> dict[str, Any]:
    return tencent_values(instanceType="GN7.2XLARGE32", nodes=1, **cluster)


# --- the catalog and the plan -----------------------------------------------------------------------------------------


def test_the_auto_image_names_a_driver_branch_from_the_archive():
    entry = image_for("tencentcloud", "GN7.2XLARGE32")
    driver = entry["gpuDriver"]
    assert driver["branch"] == "580-server"
    assert driver["packages"] == ["nvidia-headless-580-server", "nvidia-utils-580-server"]
    assert driver["mirror"] == MIRROR and "packages.ubuntu.com" in driver["source"]


def test_auto_installs_the_driver_before_the_health_check():
    plan = plan_values(t4())
    (node,) = nodes(plan)
    doc = cloud_config(node["inputs"]["userData"])
    written = files(doc)
    assert 'DRIVER_BRANCH="580-server"' in written[ENV]
    assert 'PACKAGES="nvidia-headless-580-server nvidia-utils-580-server"' in written[ENV]
    assert f'MIRROR="{MIRROR}"' in written[ENV]
    unit = written[UNIT]
    assert "Before=" in unit and "gpu-cluster-health.service" in unit and "gpu-cluster-dcgm-exporter.service" in unit
    units = enabled_units(doc)
    assert units.index("gpu-cluster-tencentcloud-gpu-driver.service") < units.index("gpu-cluster-health.service")
    out = plan_json(plan)
    assert out["outputs"]["gpuDriver"] == (
        f"NVIDIA 580-server (Ubuntu's nvidia-headless-580-server nvidia-utils-580-server from {MIRROR}, "
        "installed at first boot)"
    )
    assert not [w for w in out["warnings"] if "without an NVIDIA driver" in w]


def test_the_hcc_nodes_get_it_too_before_the_nccl_environment():
    layout = tc.plan(spec_of(tencent_values()))
    doc = yaml.safe_load(layout.user_data)
    paths = [f["path"] for f in doc["write_files"]]
    assert paths.index(UNIT) < paths.index("/etc/gpu-cluster/nccl.env")
    assert layout.gpu_driver is not None and len(layout.user_data_b64) <= tc.nodes.USER_DATA_MAX


def test_an_explicit_image_brings_its_own_driver():
    plan = plan_values(t4(image="img-abcd1234"))
    (node,) = nodes(plan)
    assert UNIT not in files(cloud_config(node["inputs"]["userData"]))
    assert plan_json(plan)["outputs"]["gpuDriver"] is None
    assert tc.plan(spec_of(t4(image="img-abcd1234"))).gpu_driver is None


# --- tencentcloud_gpu_driver.sh against stubs -------------------------------------------------------------------------


def run_script(tmp_path: Path, *, installed: str = "", reports: str = "580.95.05", codename: str = "jammy"):
    """The script with nvidia-smi, apt-get, modprobe and uname stubbed: `apt-get install` makes nvidia-smi report
    `reports`. Returns the run, the commands' calls and the sources list written."""
    calls, state = tmp_path / "calls", tmp_path / "driver"
    if installed:
        state.write_text(installed)
    os_release = tmp_path / "os-release"
    os_release.write_text(f'NAME="Ubuntu"\nVERSION_CODENAME={codename}\n' if codename else 'NAME="Other"\n')
    stubs = {
        "nvidia-smi": f'[ -s "{state}" ] && cat "{state}"\n',
        "apt-get": f'echo "apt-get $*" >>"{calls}"\ncase "$*" in *install*) echo {reports} >"{state}" ;; esac\n',
        "modprobe": f'echo "modprobe $*" >>"{calls}"\n',
        "uname": "echo 5.15.0-100-generic\n",
    }
    bin_dir = stub_bin(tmp_path, stubs, tools=("bash", "cat", "head", "sed", "tr"))
    sources, blacklist = tmp_path / "nvidia.list", tmp_path / "blacklist.conf"
    env = {
        "DRIVER_BRANCH": "580-server",
        "PACKAGES": "nvidia-headless-580-server nvidia-utils-580-server",
        "MIRROR": MIRROR,
        "OS_RELEASE": str(os_release),
        "SOURCES": str(sources),
        "BLACKLIST": str(blacklist),
    }
    proc = run_hook(SCRIPT, bin_dir, env, isolated=True)
    listed = sources.read_text() if sources.exists() else ""
    return proc, calls.read_text().splitlines() if calls.exists() else [], listed


def test_script_is_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


def test_installs_the_branch_from_the_mirror(tmp_path):
    proc, calls, listed = run_script(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert listed.splitlines() == [
        f"deb {MIRROR} jammy restricted",
        f"deb {MIRROR} jammy-updates restricted",
        f"deb {MIRROR} jammy-security restricted",
    ]
    assert calls == [
        "apt-get update -q",
        "apt-get install -y -q --no-install-recommends linux-headers-5.15.0-100-generic "
        "nvidia-headless-580-server nvidia-utils-580-server",
        "modprobe nvidia",
    ]
    assert "blacklist nouveau" in (tmp_path / "blacklist.conf").read_text()
    assert "installed the NVIDIA driver 580.95.05" in proc.stderr


def test_a_node_whose_driver_answers_is_left_alone(tmp_path):
    proc, calls, listed = run_script(tmp_path, installed="580.95.05")
    assert proc.returncode == 0 and calls == [] and listed == ""


def test_another_branch_fails_the_unit(tmp_path):
    proc, _, _ = run_script(tmp_path, reports="570.195.03")
    assert proc.returncode == 1 and "expected the 580 branch" in proc.stderr


def test_an_image_that_is_not_ubuntu_is_refused_before_apt(tmp_path):
    proc, calls, _ = run_script(tmp_path, codename="")
    assert proc.returncode == 1 and calls == [] and "not an Ubuntu image" in proc.stderr
