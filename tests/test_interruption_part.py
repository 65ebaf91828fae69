"""The interruption part on the nodes: every GPU node with Slurm or no scheduler gets the drain and its cloud's watcher,
with the settings catalog/interruption.yaml gives; Kubernetes nodes, Slurm heads and login nodes do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components import bootstrap
from components.bootstrap import env_file
from components.bootstrap.interruption import (
    DRAIN_PATH,
    SHUTDOWN_UNIT,
    WATCHER_UNIT,
    interruption_part,
    shutdown_script,
    watcher_env,
)
from components.catalog.interruption import cloud_data
from components.catalog.update import cloud_update
from components.catalog.update import data as update_data

from .conformance import node
from .conftest import plan_stack, plan_stack_with

WATCHER = "/usr/local/sbin/gpu-cluster-interruption"
# stack -> (cloud, managed group, scheduler of its GPU nodes)
STACKS = {
    "aws-slurm-h100": ("aws", True, "slurm"),
    "aws-a100-instances": ("aws", False, "none"),
    "gcp-a3mega": ("gcp", True, "none"),
    "azure-h100": ("azure", True, "none"),
    "alicloud-a100-cmk": ("alicloud", True, "slurm"),
    "tencentcloud-dev": ("tencentcloud", False, "none"),
}


def node_files(plan: Any, stack: str) -> dict[str, dict[str, str]]:
    """resource name -> {path: content} of the files its boot documents write."""
    items, _ = node.delivered(plan.resources, stack)
    out: dict[str, dict[str, str]] = {}
    for item in items:
        for doc in node.unpack(item):
            out.setdefault(item.resource, {}).update({f.path: f.content for f in doc.files()})
    return out


def node_copy(name: str) -> str:
    return bootstrap.node_text(bootstrap.script(name))


def _flat(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _flat(v)]
    if isinstance(value, list):
        return [s for v in value for s in _flat(v)]
    return [str(value)]


@pytest.mark.parametrize("stack", STACKS)
def test_every_gpu_node_gets_the_drain_and_its_clouds_watcher_with_the_catalogs_settings(stack):
    cloud, managed, scheduler = STACKS[stack]
    files = node_files(plan_stack(stack), stack)
    gpu = [name for name, f in files.items() if WATCHER in f]
    assert gpu, f"no GPU node of {stack} watches for interruptions"
    for name in gpu:
        got = files[name]
        # as the node gets them: the watcher of this cloud, the drain, their settings and both units
        assert got[WATCHER].rstrip("\n") == node_copy(f"interruption_{cloud}.sh").rstrip("\n")
        assert got[DRAIN_PATH].rstrip("\n") == node_copy("drain.sh").rstrip("\n")
        assert node.env_file_values(got["/etc/gpu-cluster/interruption.env"]) == watcher_env(cloud, managed=managed)
        assert node.env_file_values(got["/etc/gpu-cluster/drain.env"])["SCHEDULER"] == scheduler
        assert {f"/etc/systemd/system/{WATCHER_UNIT}", f"/etc/systemd/system/{SHUTDOWN_UNIT}"} <= set(got)


def test_only_a_managed_aws_group_watches_its_lifecycle_state_and_names_the_drain_hook():
    # the hook the groups get (catalog/update.yaml, components/aws/nodes.py) is the one the node completes
    hook, drain = cloud_update("aws").hook, cloud_update("aws").drain
    assert hook is not None and drain is not None
    assert watcher_env("aws", managed=True)["LIFECYCLE_HOOK"] == hook.name == "gpu-cluster-drain"
    assert watcher_env("aws", managed=False)["LIFECYCLE_HOOK"] == ""
    # the node may wait as long as any hook can hold it (7200 s): the group's own heartbeat timeout ends it sooner,
    # so a new drain budget changes the hook, never the nodes' user data
    assert watcher_env("aws", managed=True)["LIFECYCLE_WAIT_SECONDS"] == str(drain.max) == "7200"


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure", "alicloud", "tencentcloud"])
def test_the_watchers_settings_are_the_catalogs_values_not_literals(cloud):
    data = set(_flat(cloud_data(cloud))) | set(_flat(update_data()["clouds"][cloud]))
    env = watcher_env(cloud, managed=True)
    for key, value in env.items():
        # space-separated lists are the catalog's lists
        assert value == "" or all(word in data for word in value.split()) or value in data, (key, value)


def test_kubernetes_nodes_get_no_watcher():
    assert interruption_part("aws", "kubernetes", managed=True).empty
    for stack in ("aws-eks-h100", "alicloud-ack-erdma"):
        files = node_files(plan_stack(stack), stack)
        assert files and not [name for name, f in files.items() if WATCHER in f or DRAIN_PATH in f], stack


def test_the_slurm_head_and_the_login_node_do_not_drain():
    plan = plan_stack_with("aws-slurm-h100", login={})
    files = node_files(plan, "aws-slurm-login")
    others = [name for name in files if name.endswith(("-head", "-login"))]
    assert len(others) == 2, sorted(files)
    assert not [name for name in others if WATCHER in files[name] or DRAIN_PATH in files[name]]


def test_gcp_nodes_drain_in_their_shutdown_script_and_the_head_and_login_do_not():
    plan = plan_stack_with("gcp-a3mega", scheduler="slurm", login={})
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in plan.resources:
        metadata = r.inputs.get("metadata")
        if isinstance(metadata, dict) and "startup-script" in metadata:
            by_type.setdefault(r.type.rsplit(":", 1)[-1], []).append(metadata)
    key = cloud_data("gcp")["shutdownScriptKey"]
    assert [m[key] for m in by_type["InstanceTemplate"]] == [shutdown_script()]
    assert len(by_type["Instance"]) == 2 and not [m for m in by_type["Instance"] if key in m]
    assert DRAIN_PATH in shutdown_script()


def test_the_part_enables_both_units_and_says_what_it_does():
    part = interruption_part("azure", "slurm", managed=True)
    assert ("systemctl", "enable", "--now", "--no-block", WATCHER_UNIT, SHUTDOWN_UNIT) in part.commands
    assert "requeues its jobs" in part.summary
    assert "no scheduler" in interruption_part("azure", "none", managed=True).summary
    drain_env = next(f for f in part.files if f.path == "/etc/gpu-cluster/drain.env")
    poll = str(cloud_data("azure")["pollSeconds"])
    assert drain_env.content == env_file({"SCHEDULER": "slurm", "STEP_SECONDS": poll})


def test_the_node_copy_keeps_the_code_and_drops_only_comments():
    text = (Path(bootstrap.__file__).parent / "interruption_gcp.sh").read_text()
    common = (Path(bootstrap.__file__).parent / "interruption_common.sh").read_text()
    copy = node_copy("interruption_gcp.sh")
    assert copy.startswith("#!/bin/bash\n") and "# shellcheck shell=bash\n" in copy
    code = [line for line in (text + common).splitlines() if line.strip() and not line.lstrip().startswith("#")]
    lines = copy.splitlines()
    assert [line for line in code if line not in lines] == ['. "${BASH_SOURCE[0]%/*}/interruption_common.sh"']
    assert [line for line in lines if line.lstrip().startswith("#")] == ["#!/bin/bash", "# shellcheck shell=bash"]


def test_here_documents_are_written_whole():
    text = "#!/bin/bash\n# a comment\ncat >f <<EOF\n# kept: the file's own comment\nx = 1\nEOF\n  # gone\necho done\n"
    kept = "#!/bin/bash\ncat >f <<EOF\n# kept: the file's own comment\nx = 1\nEOF\necho done\n"
    assert bootstrap.node_text(text) == kept


def test_only_the_nodes_that_drain_lose_their_scripts_comments():
    """GPU nodes with the drain get their scripts without comments (16 KB of user data); the Slurm head, the login
    node and Kubernetes nodes keep their user data byte for byte: a compute-side change restarts no controller."""
    plan = plan_stack_with("aws-slurm-h100", login={})
    files = node_files(plan, "aws-slurm-login")
    health = "/usr/local/sbin/gpu-cluster-health"
    gpu = next(f for f in files.values() if WATCHER in f)
    assert gpu[health] == node_copy("health.sh") != bootstrap.script("health.sh")
    for name in ("slurm-h100-aws-head", "slurm-h100-aws-login"):
        common = files[name]["/usr/local/lib/gpu-cluster/slurm_common.sh"]
        assert common == bootstrap.script("slurm_common.sh") and "\n# " in common, name
    eks = node_files(plan_stack("aws-eks-h100"), "aws-eks-h100")
    assert [f[health] for f in eks.values() if health in f] == [bootstrap.script("health.sh")]
