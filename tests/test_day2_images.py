"""Day 2: an image looked up at deploy (the newest public image behind an SSM parameter, a name pattern, an OS name)
never replaces or reinstalls what runs on an unrelated `pulumi up`: the Slurm head, the login node, Tencent's GPU
nodes and Alibaba's where no release is pinned keep the image they were created with (ignoreChanges on the image
input), as registered with the mocks."""

from __future__ import annotations

import pytest

from components.diff import diff_plans

from .conftest import plan_json, plan_stack
from .test_day2_matrix import _plan  # the matrix's plans of a shipped stack with one day-2 change

HELD = [
    ("aws-slurm-h100", "slurm-h100-aws-head", "ami"),
    ("aws-slurm-h100", "slurm-h100-aws-login", "ami"),
    ("alicloud-a100-cmk", "a100-cmk-alicloud-head", "imageId"),
    ("alicloud-a100-cmk", "a100-cmk-alicloud-login", "imageId"),
    ("alicloud-erdma", "erdma-train-alicloud-node-0", "imageId"),  # UEFI bare metal: no release pinned
    ("tencentcloud-hcc", "hcc-train-tencentcloud-login", "imageId"),
    ("tencentcloud-hcc", "hcc-train-tencentcloud-node-0", "imageId"),
    ("tencentcloud-hcc", "hcc-train-tencentcloud-node-1", "imageId"),
]


@pytest.mark.parametrize(("stack", "name", "image"), HELD)
def test_a_looked_up_image_is_held_by_the_vm_created_with_it(stack, name, image):
    vm = next(r for r in plan_json(plan_stack(stack))["resources"] if r["name"] == name)
    assert image in vm["ignoreChanges"]
    assert str(vm["inputs"][image]).startswith("<resolved at deploy")


@pytest.mark.parametrize(("stack", "name", "image"), HELD)
def test_a_newer_published_image_changes_nothing_the_diff_would_show(stack, name, image):
    old = plan_json(plan_stack(stack))
    new = plan_json(plan_stack(stack))
    vm = next(r for r in new["resources"] if r["name"] == name)
    vm["inputs"][image] = "<a newer image>"  # what the lookup answers after the cloud publishes one
    assert diff_plans(old, new).changed == []


def test_a_pinned_release_is_not_held_so_its_bump_is_a_change_the_diff_shows():
    resources = plan_json(plan_stack("alicloud-a100"))["resources"]
    nodes = [r for r in resources if r["type"] == "alicloud:ecs/instance:Instance"]
    assert nodes and all(not r.get("ignoreChanges") for r in nodes)


def test_a_named_image_is_not_held_so_pinning_one_is_a_change_the_diff_shows():
    pinned = _plan("tencentcloud-hcc", "image-pin")
    nodes = [r for r in pinned["resources"] if r["name"].startswith("hcc-train-tencentcloud-node-")]
    assert nodes and all("imageId" not in (r.get("ignoreChanges") or []) for r in nodes)
    d = diff_plans(_plan("tencentcloud-hcc", ""), pinned)
    assert {c.name for c in d.changed} >= {r["name"] for r in nodes}
