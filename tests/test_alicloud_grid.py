"""Alibaba vGPU slices on `image: auto` (issue 32): the public Ubuntu 22.04 image, and the GRID driver installed at
boot by Alibaba's Cloud Assistant plugin (catalog/alicloud.yaml images.families gridPlugin), before the health check
and the metrics; on ESS groups and on instances; never the Tesla auto-install user data; refused on ACK. The boot
script against stubbed commands."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import catalog
from components.bootstrap.alicloud_grid import alicloud_grid_driver_part
from components.errors import ConfigError
from components.layout import alicloud as ali_layout

from .conftest import plan_json, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "alicloud_grid_driver.sh"
RELEASE = "ubuntu_22_04_x64_20G_alibase_20260916.vhd"
UNIT = "/etc/systemd/system/gpu-cluster-alicloud-grid-driver.service"
SLICES = [r for r in catalog.all_types("alicloud") if r.gpuFraction]


def ali(gpu: str = "A10:1/6", **cluster: Any) -> dict[str, Any]:
    return {
        "gpu-cluster:cloud": "alicloud",
        "alicloud:region": "cn-beijing",
        "gpu-cluster:cluster": {"gpu": gpu, "nodes": 1, "zone": "cn-beijing-h", **cluster},
    }


def cloud_config(user_data_b64: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(gzip.decompress(base64.b64decode(user_data_b64)).decode())
    return doc


def files(doc: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def commands(doc: dict[str, Any]) -> list[str]:
    return [" ".join(c) if isinstance(c, list) else str(c) for c in doc.get("runcmd", [])]


# --- the catalog ------------------------------------------------------------------------------------------------------


def test_every_alibaba_slice_boots_the_pinned_ubuntu_with_the_grid_plugin():
    assert {r.instanceType.split("-")[0] for r in SLICES} >= {"ecs.vgn7i", "ecs.vgn6i", "ecs.sgn7i"}
    for row in SLICES:
        entry = catalog.gpu_image("alicloud", row)
        assert entry["release"] == RELEASE and entry["nameRegex"] == "^ubuntu_22_04_x64_20G_alibase_"
        assert "gpuDriver" not in entry  # never the Tesla auto-install
        plugin = entry["gridPlugin"]
        assert (plugin["plugin"], plugin["driver"], plugin["cuda"]) == ("grid_driver_install", "470.256.03", "11.4")
        assert "ALI-GRID" in plugin["source"] and "ALI-CA" in entry["source"]


# --- the plan: ESS group and instances --------------------------------------------------------------------------------


def assert_grid_boot(doc: dict[str, Any]) -> None:
    written = files(doc)
    env = written["/etc/gpu-cluster/alicloud-grid-driver.env"]
    assert 'PLUGIN="grid_driver_install"' in env and 'DRIVER_VERSION="470.256.03"' in env
    assert 'TIMEOUT_SECONDS="600"' in env
    unit = written[UNIT]
    assert "After=network-online.target aliyun.service" in unit
    assert "Before=gpu-cluster-mig.service gpu-cluster-health.service" in unit
    assert "gpu-cluster-dcgm-exporter.service" in unit
    assert "acs-plugin-manager --exec --plugin" in written["/usr/local/sbin/gpu-cluster-alicloud-grid-driver"]
    runs = commands(doc)
    start = runs.index("systemctl enable --now gpu-cluster-alicloud-grid-driver.service")
    health = next(i for i, c in enumerate(runs) if "gpu-cluster-health" in c)
    assert start < health
    # no Tesla auto-install (and so no reboot mark for it)
    assert "auto_install_v4.0.sh" not in yaml.safe_dump(doc)
    assert not [c for c in runs if "gpu-driver-install-boot" in c]


def test_the_ess_group_boots_ubuntu_and_runs_the_grid_plugin_before_the_health_check():
    plan = plan_values(ali())
    (config,) = resources_of(plan, "ess/scalingConfiguration:ScalingConfiguration")
    inputs = config["inputs"]
    assert (inputs["instanceType"], inputs["imageId"]) == ("ecs.vgn7i-vws-m4.xlarge", RELEASE)
    assert_grid_boot(cloud_config(inputs["userData"]))
    doc = plan_json(plan)
    assert doc["outputs"]["gpuDriver"] == (
        "NVIDIA GRID 470.256.03, CUDA 11.4 (Alibaba's Cloud Assistant plugin grid_driver_install, at boot)"
    )
    assert doc["summary"]["gpuSlice"] == "1/6 of an A10, 4 GB"


def test_instances_get_the_same_boot_part():
    plan = plan_values(ali(nodeGroup="instances", nodes=2, fabric="none"))
    nodes = resources_of(plan, "ecs/instance:Instance")
    assert len(nodes) == 2
    for node in nodes:
        assert node["inputs"]["imageId"] == RELEASE
        assert_grid_boot(cloud_config(node["inputs"]["userData"]))


def test_a_slurm_compute_node_on_a_slice_gets_it_too_within_alibabas_16_kb():
    plan = plan_values(ali(nodeGroup="instances", scheduler="slurm"))
    (node,) = [
        n for n in resources_of(plan, "ecs/instance:Instance") if n["inputs"]["instanceType"].startswith("ecs.vgn")
    ]
    assert len(base64.b64decode(node["inputs"]["userData"])) < 16 * 1024
    assert_grid_boot(cloud_config(node["inputs"]["userData"]))


def test_a_whole_gpu_keeps_the_tesla_driver_and_an_image_of_your_own_gets_no_driver():
    whole = plan_values(ali(gpu="A10:1", nodeGroup="instances"))
    (node,) = resources_of(whole, "ecs/instance:Instance")
    text = yaml.safe_dump(cloud_config(node["inputs"]["userData"]))
    assert "alicloud-grid-driver" not in text and "auto_install_v4.0.sh" in text
    own = plan_values(ali(image="m-0123456789abcdef", nodeGroup="instances"))
    (node,) = resources_of(own, "ecs/instance:Instance")
    text = yaml.safe_dump(cloud_config(node["inputs"]["userData"]))
    assert "alicloud-grid-driver" not in text and "auto_install" not in text
    assert plan_json(own)["outputs"]["gpuDriver"] is None


def test_a_slice_on_ack_is_refused_keyed():
    spec = spec_of({**ali(), "gpu-cluster:cluster": {**ali()["gpu-cluster:cluster"], "scheduler": "kubernetes"}})
    with pytest.raises(ConfigError) as err:
        ali_layout.plan(spec)
    assert err.value.key == "gpu-cluster:cluster.gpu"
    assert "vGPU slice" in err.value.message and "ACK" in err.value.message


def test_the_part_is_empty_without_a_plugin():
    assert alicloud_grid_driver_part(None).empty


# --- alicloud_grid_driver.sh against stubs ----------------------------------------------------------------------------


def run_script(
    tmp_path: Path,
    *,
    installed: str = "",
    reports: str = "470.256.03",
    agent: bool = True,
    local: str = "",
    plugin_fails: bool = False,
):
    """The script with nvidia-smi, acs-plugin-manager and sleep stubbed: the plugin's --exec makes nvidia-smi report
    `reports`; `local` is what `--list --local` prints. Returns the run and the plugin manager's calls."""
    calls, state = tmp_path / "calls", tmp_path / "driver"
    if installed:
        state.write_text(installed)
    exec_body = "exit 3" if plugin_fails else f'echo {reports} >"{state}"'
    stubs = {
        "nvidia-smi": f'[ -s "{state}" ] && cat "{state}"\n',
        "sleep": f'echo "sleep $*" >>"{calls}"\n',
    }
    if agent:
        stubs["acs-plugin-manager"] = (
            f'echo "acs-plugin-manager $*" >>"{calls}"\n'
            f'case "$*" in "--list --local") printf "%s\\n" "{local}" ;; --exec*) {exec_body} ;; esac\n'
        )
    bin_dir = stub_bin(tmp_path, stubs, tools=("bash", "cat", "head", "grep", "timeout"))
    env = {
        "PLUGIN": "grid_driver_install",
        "DRIVER_VERSION": "470.256.03",
        "TIMEOUT_SECONDS": "600",
        "AGENT_WAIT_SECONDS": "10",
    }
    proc = run_hook(SCRIPT, bin_dir, env, isolated=True)
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_script_is_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


def test_runs_the_plugin_as_alibaba_documents(tmp_path):
    proc, calls = run_script(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls == ["acs-plugin-manager --list --local", "acs-plugin-manager --exec --plugin grid_driver_install"]
    assert "GRID driver 470.256.03 installed" in proc.stderr


def test_a_plugin_left_from_an_earlier_run_is_removed_first(tmp_path):
    proc, calls = run_script(tmp_path, local="grid_driver_install  1.3  aliyun  LINUX  X64  Once")
    assert proc.returncode == 0, proc.stderr
    assert calls[1:] == [
        "acs-plugin-manager --remove --plugin grid_driver_install",
        "acs-plugin-manager --exec --plugin grid_driver_install",
    ]


def test_sgn8ias_plugin_is_another_plugin(tmp_path):
    proc, calls = run_script(tmp_path, local="gpu_grid_driver_install  1.0  aliyun  LINUX  X64  Once")
    assert proc.returncode == 0 and not [c for c in calls if "--remove" in c]


def test_a_node_whose_driver_answers_is_left_alone(tmp_path):
    proc, calls = run_script(tmp_path, installed="470.256.03")
    assert proc.returncode == 0 and calls == []


def test_another_version_from_the_plugin_is_reported_not_refused(tmp_path):
    proc, _ = run_script(tmp_path, reports="470.239.06")
    assert proc.returncode == 0
    assert "installed GRID driver 470.239.06; Alibaba's doc names 470.256.03" in proc.stderr


def test_a_failing_plugin_fails_the_unit(tmp_path):
    proc, _ = run_script(tmp_path, plugin_fails=True)
    assert proc.returncode == 1 and "plugin grid_driver_install failed" in proc.stderr


def test_no_agent_fails_after_the_wait(tmp_path):
    proc, calls = run_script(tmp_path, agent=False)
    assert proc.returncode == 1 and "acs-plugin-manager (Cloud Assistant Agent >= 1.0.2.510) not found" in proc.stderr
    assert calls == ["sleep 5", "sleep 5"]
