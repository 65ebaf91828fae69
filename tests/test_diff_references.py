"""The diff follows every placeholder form the mocks write, so a replaced node template warns for its nodes.

Before the placeholder syntax lived in one place, GCP nodes referenced their template as
`<self link (unique id) of NAME>`, which the diff did not parse: a root-disk change replaced the
template while the nodes showed as untouched.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components import placeholders
from components.diff import diff_plans
from components.plan import load_stack
from components.plan.runner import _check_references, _mock_answers

from .conftest import ROOT, plan_values

ROOT_DISK = {"storage": {"rootGb": 321}}
# Alibaba instances take no template and resize a system disk in place; a new image is what
# re-initialises them (a stop/start), so that is the change that must warn there.
NEW_IMAGE = {"image": "m-0123456789abcdef"}
# (stack, nodeGroup, change): every cloud in both modes
CASES = [
    ("aws-h100", "managed", ROOT_DISK),
    ("aws-a100-instances", "instances", ROOT_DISK),
    ("azure-h100", "managed", ROOT_DISK),
    ("azure-h100", "instances", ROOT_DISK),
    ("gcp-a3mega", "managed", ROOT_DISK),
    ("gcp-h100", "instances", ROOT_DISK),
    ("alicloud-dev", "managed", ROOT_DISK),
    ("alicloud-erdma", "instances", NEW_IMAGE),
]
NODE_TYPES = (
    "aws:autoscaling/group:Group",
    "aws:ec2/instance:Instance",
    "azure-native:compute:VirtualMachineScaleSet",
    "azure-native:compute:VirtualMachine",
    "gcp:compute/instanceGroupManager:InstanceGroupManager",
    "gcp:compute/instanceFromTemplate:InstanceFromTemplate",
    # an ESS group does not reference its configuration (the configuration names the group), so
    # the configuration is where the warning lands
    "alicloud:ess/scalingConfiguration:ScalingConfiguration",
    "alicloud:ecs/instance:Instance",
)


def _plan(stack: str, **cluster: Any) -> dict[str, Any]:
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    values["gpu-cluster:cluster"].update(cluster)
    return json.loads(json.dumps(plan_values(values, stack).as_json(), default=str))


@pytest.mark.parametrize(("stack", "group", "change"), CASES)
def test_a_node_template_change_warns_for_every_node(stack: str, group: str, change: dict[str, Any]) -> None:
    old = _plan(stack, nodeGroup=group)
    if "storage" in change:
        change = {"storage": {**old_storage(stack), **change["storage"]}}
    new = _plan(stack, nodeGroup=group, **change)
    diff = diff_plans(old, new)
    nodes = [r for r in new["resources"] if r["type"] in NODE_TYPES]
    assert nodes, f"{stack}: no node resources found"
    warned = "\n".join(w for w in diff.warnings if w.startswith(("DATA LOSS", "DISRUPTION")))
    for node in nodes:
        assert f"`{node['name']}`" in warned, f"{stack}/{group}: no warning for {node['name']}:\n{warned}"


def old_storage(stack: str) -> dict[str, Any]:
    return dict(load_stack(ROOT, stack).values["gpu-cluster:cluster"].get("storage") or {})


def test_every_mock_placeholder_that_names_its_resource_is_a_reference() -> None:
    answers = _mock_answers()["resources"]  # loading runs the check on every template, nested or not
    named = [(t, k) for t, outputs in answers.items() for k, v in outputs.items() if "{name}" in str(v)]
    assert len(named) >= 10
    for token, outputs in answers.items():
        _check_references(token, outputs)


def test_a_mock_answer_the_diff_could_not_follow_is_refused() -> None:
    with pytest.raises(ValueError, match="not a reference placeholder"):
        _check_references("t:index:T", {"selfLink": "<self-link:{name}>"})


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("<id of a-b>", ["a-b"]),
        ("<self link (unique id) of tpl-1>", ["tpl-1"]),
        ("<autoname:x>", ["x"]),
        ("projects/p/<id of n> and <arn of m>", ["n", "m"]),
        ("<resolved at deploy: ssm:/aws/service/x>", []),
        ("[secret]", []),
    ],
)
def test_references_parse(text: str, names: list[str]) -> None:
    assert placeholders.referenced(text) == names


def test_of_builds_what_referenced_reads() -> None:
    assert placeholders.referenced(placeholders.of("self link (unique id)", "tpl")) == ["tpl"]
    with pytest.raises(ValueError):
        placeholders.of("id", "a <b")
