"""Alibaba instance metadata in security-hardening mode (token required) on every node the stack builds: the
registered inputs of each shipped stack, the bootstrap's token-first calls against a stub that refuses a token-less
GET, and what the change does to a deployed stack (diff engine)."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.catalog.capabilities import capability_data
from components.diff import diff_plans
from components.layout.alicloud.nodes import GpuDriver, driver_script

from .conftest import ROOT, plan_json, resources_of, shipped_stacks
from .hook_helpers import ALICLOUD_HARDENED_METADATA, stub_bin

STACKS = shipped_stacks("alicloud")
INSTANCE, TEMPLATE, POOL = "ecs/instance:Instance", "ecs/ecsLaunchTemplate:EcsLaunchTemplate", "cs/nodePool:NodePool"
CONFIG = "ess/scalingConfiguration:ScalingConfiguration"
INTERRUPTION = yaml.safe_load((ROOT / "components" / "catalog" / "interruption.yaml").read_text())["clouds"]["alicloud"]


def test_the_mode_is_the_catalogs() -> None:
    assert capability_data("alicloud")["metadata"]["httpTokens"] == "required"


@pytest.mark.parametrize("stack", STACKS)
def test_every_instance_template_and_pool_of_a_shipped_stack_is_token_only(stack: str, stack_plan: Any) -> None:
    plan = stack_plan(stack)
    instances, templates, pools = (resources_of(plan, t) for t in (INSTANCE, TEMPLATE, POOL))
    assert instances or templates or pools or resources_of(plan, CONFIG)
    for res in (*instances, *templates):
        assert res["inputs"]["httpTokens"] == "required", res["urn"]
    for pool in pools:
        assert pool["inputs"]["instanceMetadataOptions"] == {"httpTokens": "required"}, pool["urn"]
        assert "instanceMetadataOptions" in pool["ignoreChanges"]


def _before_hardening(doc: dict[str, Any]) -> dict[str, Any]:
    """The same plan as a stack deployed before the default: no metadata option on any resource."""
    old = copy.deepcopy(doc)
    for res in old["resources"]:
        res["inputs"].pop("httpTokens", None)
        res["inputs"].pop("instanceMetadataOptions", None)
    return old


@pytest.mark.parametrize("stack", ["alicloud-dev", "alicloud-ack-erdma", "alicloud-slurm-elastic"])
def test_hardening_a_deployed_stack_replaces_nothing(stack: str, stack_plan: Any) -> None:
    new = plan_json(stack_plan(stack))
    d = diff_plans(_before_hardening(new), new)
    assert d.may_replace == [] and d.created == [] and d.deleted == []
    changed = {c.type: {ch.path for ch in c.changes} for c in d.changed}
    for kind, paths in changed.items():
        # a launch template's new version reaches what holds its version (the partition's OOS parameter)
        assert paths == ({"httpTokens"} if kind.endswith((INSTANCE, TEMPLATE)) else {"version"}), kind
    assert all(c.verdict in ("update", "none") for c in d.changed), [(c.name, c.verdict) for c in d.changed]
    # the ACK pools keep their mode (ignoreChanges): no change at all
    assert not [c for c in d.changed if c.type.endswith(POOL)]


# --- the bootstrap's metadata calls, against a metadata service that refuses a GET without the token ---------------

BOOT = ROOT / "components" / "bootstrap"
CURL = (
    ALICLOUD_HARDENED_METADATA
    + r"""
case "$url" in
  */meta-data/instance/instance-name) echo slm-a10-2 ;;
  */meta-data/source-address) echo http://mirrors.cloud.aliyuncs.com ;;
  *) exit 22 ;;
esac
"""
)


def _run(tmp_path: Path, script: str, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = stub_bin(tmp_path, {"curl": CURL}, ("bash", "cat", "head"))
    return subprocess.run(
        [str(bin_dir / "bash"), "-c", script],
        env={"PATH": str(bin_dir), **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_stub_refuses_a_get_without_the_token(tmp_path: Path) -> None:
    plain = _run(tmp_path, "curl -fsS http://100.100.100.200/latest/meta-data/instance/instance-name")
    assert plain.returncode == 22 and plain.stdout == ""
    token = _run(tmp_path, "curl -fsS -X PUT http://100.100.100.200/latest/api/token")
    assert token.returncode == 22  # no TTL header: refused as well


def test_the_node_name_hook_asks_for_a_token_first(tmp_path: Path) -> None:
    proc = _run(tmp_path, f'bash "{BOOT / "alicloud_slurm_node_name.sh"}"', CLUSTER="slm")
    assert (proc.returncode, proc.stdout) == (0, "a10-2\n"), proc.stderr


def test_the_signer_reads_metadata_with_a_token(tmp_path: Path) -> None:
    proc = _run(tmp_path, f'source "{BOOT / "alicloud_rpc.sh"}"; metadata instance/instance-name')
    assert (proc.returncode, proc.stdout) == (0, "slm-a10-2\n"), proc.stderr


def test_the_driver_installers_download_address_is_read_with_a_token(tmp_path: Path) -> None:
    driver = GpuDriver(
        driver="550.127.08",
        cuda="12.4.1",
        cudnn="9.2.0.82",
        script_url_path="/opsx/ecs/linux/binary/script",
        source="test",
    )
    lines = driver_script(driver).splitlines()
    upto = next(i for i, line in enumerate(lines) if line.startswith("script_download_url="))
    proc = _run(tmp_path, "\n".join([*lines[: upto + 1], 'printf "%s\\n" "$script_download_url"']))
    assert proc.stdout == "http://mirrors.cloud.aliyuncs.com/opsx/ecs/linux/binary/script/auto_install_v4.0.sh\n"


def test_the_scripts_use_the_catalogs_token_endpoint_and_headers() -> None:
    base = INTERRUPTION["metadata"]
    for name in ("alicloud_rpc.sh", "alicloud_slurm_node_name.sh"):
        text = (BOOT / name).read_text()
        assert f"{base}{INTERRUPTION['tokenPath']}" in text, name
        assert f"{INTERRUPTION['tokenTtlHeader']}: " in text and f"{INTERRUPTION['tokenHeader']}: " in text, name
