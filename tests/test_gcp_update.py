"""Drain-first replacements on GCP (`update:`): the managed instance groups' update policy (PROACTIVE, REPLACE, fixed
surge and unavailability, RECREATE without a surge), the compact placement's refusal of a surge, the GKE GPU pool's
surge upgrade settings, as registered with the mocks; and the diff of an image bump on a MIG."""

import pytest

from components.diff import diff_plans
from components.errors import ConfigError
from components.layout import gcp as gcp_layout

from .conftest import gcp_values, one, plan_json, plan_stack_with, plan_values, resources_of, spec_of

MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"


@pytest.mark.parametrize("stack", ["gcp-a3mega", "gcp-dev", "gcp-h100-cmk"])
def test_every_shipped_mig_rolls_a_new_template_one_node_at_a_time_under_its_name(stack_plan, stack):
    policy = one(stack_plan(stack), "instanceGroupManager:InstanceGroupManager")["inputs"]["updatePolicy"]
    assert policy == {
        "type": "PROACTIVE",
        "minimalAction": "REPLACE",
        "maxSurgeFixed": 0,  # GPU capacity is the count (a reservation, a compact policy's vmCount)
        "maxUnavailableFixed": 1,
        "replacementMethod": "RECREATE",  # names kept: Slurm's node names, the hostfile
    }


def test_a_surge_substitutes_new_vms_and_keeps_every_node_in_service():
    values = gcp_values(nodes=2, fabric="none", placement="none", update={"maxSurge": 1, "minHealthyPercent": 100})
    plan = plan_values(values)
    policy = one(plan, "instanceGroupManager:InstanceGroupManager")["inputs"]["updatePolicy"]
    assert (policy["maxSurgeFixed"], policy["maxUnavailableFixed"], policy["replacementMethod"]) == (
        1,
        0,
        "SUBSTITUTE",
    )


def test_a_compact_placement_policy_refuses_a_surge():
    # a2-highgpu-8g takes a COLLOCATED policy with vmCount (a3 types take a workload policy, which has none)
    cluster = {"instanceType": "a2-highgpu-8g", "gpu": None, "nodes": 2, "fabric": "none", "placement": "cluster"}
    spec = spec_of(gcp_values(**cluster, update={"maxSurge": 1}))
    assert gcp_layout.plan(spec_of(gcp_values(**cluster))).placement_vm_count == 2
    with pytest.raises(ConfigError) as info:
        gcp_layout.plan(spec)
    assert info.value.key == "gpu-cluster:cluster.update.maxSurge"
    assert "vmCount" in info.value.message and "allowed: 0" in info.value.message


def test_manual_sets_no_update_policy_and_instances_get_none(stack_plan):
    plan = plan_values(gcp_values(update={"strategy": "manual"}))
    assert "updatePolicy" not in one(plan, "instanceGroupManager:InstanceGroupManager")["inputs"]
    assert resources_of(stack_plan("gcp-h100"), "instanceGroupManager:InstanceGroupManager") == []


def test_the_gke_gpu_pool_surges_as_the_update_block_says(stack_plan):
    pools = {r["inputs"]["name"]: r["inputs"] for r in resources_of(stack_plan("gcp-gke-a3mega"), "nodePool:NodePool")}
    assert pools["gpu"]["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    assert "upgradeSettings" not in pools["system"]


def test_a_drain_budget_is_refused_where_the_group_has_none():
    with pytest.raises(ConfigError) as info:
        spec_of(gcp_values(update={"drainTimeoutSeconds": 120}))
    assert info.value.key == "gpu-cluster:cluster.update.drainTimeoutSeconds"
    assert "no drain budget" in info.value.message


def test_an_image_bump_on_a_mig_is_an_in_place_update_that_rolls():
    before = plan_json(plan_stack_with("gcp-dev", image="projects/p/global/images/gpu-1"))
    after = plan_json(plan_stack_with("gcp-dev", image="projects/p/global/images/gpu-2"))
    d = diff_plans(before, after)
    mig = next(c for c in d.changed if c.type == MIG)
    assert mig.verdict == "refresh"  # the group is patched, not replaced
    assert any("rolled out by the group itself" in w for w in d.warnings)


# --- tags (labels): relabelled in place where GCP can, rolled where only the template labels the VMs ---------------


def test_vms_made_one_by_one_take_new_labels_in_place_and_their_template_keeps_its_first(stack_plan):
    plan = stack_plan("gcp-h100")  # nodeGroup: instances
    template = one(plan, "compute/instanceTemplate:InstanceTemplate")
    assert template["ignoreChanges"] == ["labels", "disks[*].labels"]
    nodes = resources_of(plan, "compute/instanceFromTemplate:InstanceFromTemplate")
    assert nodes and all(n["inputs"]["labels"]["team"] == "research" for n in nodes)
    assert all(not n.get("ignoreChanges") for n in nodes)


def test_a_mig_template_follows_the_labels_because_nothing_else_labels_its_vms(stack_plan):
    template = one(stack_plan("gcp-h100-cmk"), "compute/instanceTemplate:InstanceTemplate")
    assert not template.get("ignoreChanges")
    assert "gpu-cluster_cluster" in template["inputs"]["labels"]


@pytest.mark.parametrize(("stack", "name"), [("gcp-h100-cmk", "h100cmk-gcp-login")])
def test_a_login_or_head_vm_boot_disk_labels_are_create_time_and_the_vm_labels_follow(stack_plan, stack, name):
    vm = next(r for r in resources_of(stack_plan(stack), "compute/instance:Instance") if r["name"] == name)
    assert vm["ignoreChanges"] == ["bootDisk.initializeParams.labels"]
    assert vm["inputs"]["labels"]["gpu-cluster_role"] == "login"
