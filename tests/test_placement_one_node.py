"""A cluster shrunk to one node and grown back keeps its placement group and its nodes (issue 28, docs/day2.md
"Placement at one node"): for every shipped stack with a placement that takes no member count, the one-node plan
holds the same group (URN and inputs) as the shipped one, and the diff either way replaces no node."""

from __future__ import annotations

from typing import Any

import pytest

from components.diff import default_rules, diff_plans

from .conftest import SHIPPED_STACKS, plan_json, plan_stack, plan_stack_with

# The shipped multi-node stacks whose placement is kept at one node: every one with an applied placement but these.
NOT_KEPT = {
    "gcp-h100": "standalone instances: a compact policy's vmCount is the node count, so a count change replaces it "
    "anyway (updates.yaml cluster.nodes, nodeGroup instances on gcp)",
    "azure-aks-h100": "InfiniBand under AKS needs at least 2 nodes: one node is refused",
}
KEPT = sorted(
    stack
    for stack in SHIPPED_STACKS
    if stack not in NOT_KEPT
    and (summary := plan_json(plan_stack(stack))["summary"])["nodes"] >= 2
    and summary["placement"] == "cluster"
)


def _placement(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan's resources that hold placement (diff rules), by URN, with their inputs."""
    rules = default_rules()
    return {r["urn"]: r["inputs"] for r in plan["resources"] if rules.rule(r["type"]).holds == "placement"}


def _placement_reference(plan: dict[str, Any]) -> set[str]:
    """Where the nodes name their group: an `<id of ...>` / `<autoname:...>` of a placement resource in a node input."""
    rules = default_rules()
    names = {r["name"] for r in plan["resources"] if rules.rule(r["type"]).holds == "placement"}
    gke = {
        f"{r['urn']}: placementPolicy {r['inputs']['placementPolicy']}"
        for r in plan["resources"]
        if "placementPolicy" in r["inputs"]
    }
    text = {f"{r['urn']}: {name}" for r in plan["resources"] for name in names if name in str(r["inputs"])}
    return text | gke


@pytest.mark.parametrize("stack", KEPT)
def test_one_node_keeps_the_placement_and_growing_back_replaces_no_node(stack: str) -> None:
    shipped = plan_json(plan_stack(stack))
    assert shipped["summary"]["nodes"] >= 2 and shipped["summary"]["placement"] == "cluster"
    one = plan_json(plan_stack_with(stack, nodes=1))
    assert one["summary"]["placement"] == "cluster"
    assert _placement(one) == _placement(shipped)
    # the remaining node names the same group (instances: the removed ones' references go with them)
    assert set() != _placement_reference(one) <= _placement_reference(shipped)
    rules = default_rules()
    for old, new in ((shipped, one), (one, shipped)):
        d = diff_plans(old, new)
        nodes = [f"{c.name}: {c.verdict} {c.reasons}" for c in d.changed if rules.rule(c.type).holds == "nodes"]
        assert [n for n in nodes if n.split(": ")[1].split(" ")[0] in {"replace", "may-replace"}] == [], nodes
        assert [urn for urn in d.deleted if rules.rule(d.types[urn]).holds == "placement"] == []


def test_the_stacks_kept_out_are_multi_node_stacks_with_a_placement() -> None:
    """NOT_KEPT names only what would otherwise be checked (no stale entry), and the check covers every cloud."""
    for stack in NOT_KEPT:
        summary = plan_json(plan_stack(stack))["summary"]
        assert summary["nodes"] >= 2 and summary["placement"] == "cluster", stack
    assert {SHIPPED_STACKS[stack] for stack in KEPT} == {"aws", "azure", "gcp", "alicloud", "tencentcloud"}
