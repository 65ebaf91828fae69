"""The default node group of a type whose fabric a managed group would cut (issue 26, defect 8).

Alibaba's ESS scaling configuration takes no network card index and no deployment set (pulumi-alicloud 4.0.0
ess.ScalingConfigurationNetworkInterfaceArgs, ess.ScalingGroup; the ESS API model alibabacloud_ess20220222 has no
NetworkCardIndex either), so a managed ebmgn8v gets both ERIs on card 0, 100 of its 160 Gb/s, and no deployment set.
With nodeGroup unset, such a type gets `instances`: both cards, the LowLatency deployment set, all 160 Gb/s. A config
that needs a managed group (maxNodes, minNodes, scaling, spot's base or fallback, scheduler kubernetes) keeps it, and
`nodeGroup: managed` is still honoured. Asserted on the resources registered with the mocks.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.plan import load_stack

from .conftest import ROOT, plan_values, resources_of, spec_of


def erdma_values(**cluster: Any) -> dict[str, Any]:
    """The shipped alicloud-erdma stack (4 x ecs.ebmgn8v.48xlarge) without its nodeGroup, `cluster` set over it."""
    values = copy.deepcopy(load_stack(ROOT, "alicloud-erdma").values)
    values["gpu-cluster:cluster"].pop("nodeGroup")
    values["gpu-cluster:cluster"].update(cluster)
    return values


def erdma_cards(plan) -> list[int]:
    """The network card indices of the ERIs on every node: the primary ENI's and the one secondary ENI block's
    (ecs.Instance takes one), where both are HighPerformance."""
    cards = set()
    for node in (r["inputs"] for r in resources_of(plan, "ecs/instance:Instance")):
        if node.get("networkInterfaceTrafficMode") == "HighPerformance":
            cards.add(node["networkCardIndex"])
        secondary = node.get("networkInterfaces") or {}
        if secondary.get("networkInterfaceTrafficMode") == "HighPerformance":
            cards.add(secondary["networkCardIndex"])
    return sorted(cards)


@pytest.fixture(scope="module")
def default_plan():
    return plan_values(erdma_values(), "alicloud-erdma")


def test_ebmgn8v_without_node_group_gets_instances_on_both_cards_in_a_deployment_set(default_plan):
    assert not resources_of(default_plan, "ess/scalingGroup:ScalingGroup")
    nodes = resources_of(default_plan, "ecs/instance:Instance")
    assert len(nodes) == 4 and {n["inputs"]["instanceType"] for n in nodes} == {"ecs.ebmgn8v.48xlarge"}
    (deployment_set,) = resources_of(default_plan, "ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert deployment_set["inputs"]["strategy"] == "LowLatency"
    assert all(n["inputs"]["deploymentSetId"] for n in nodes)
    assert erdma_cards(default_plan) == [0, 1]
    summary = default_plan.summary()
    assert (summary["nodeGroup"], summary["fabricGbpsPerNode"], summary["placement"]) == ("instances", 160, "cluster")


def test_the_default_is_said_in_the_plan(default_plan):
    spec = spec_of(erdma_values())
    (info,) = [f for f in spec.findings if f.key == "gpu-cluster:cluster.nodeGroup"]
    assert info.level == "info"
    assert info.message.startswith("not set; instances, for all 160 Gb/s of ecs.ebmgn8v.48xlarge's erdma:")
    assert "fabric: not wired" in info.message and "placement: none" in info.message


def test_the_default_registers_what_the_shipped_stack_registers(default_plan):
    # the shipped alicloud-erdma stack says nodeGroup: instances: the default now plans the same resources
    from .conftest import plan_stack, resources_text

    assert resources_text(default_plan) == resources_text(plan_stack("alicloud-erdma"))


def test_managed_when_asked_still_builds_the_scaling_group_and_says_what_it_loses():
    plan = plan_values(erdma_values(nodeGroup="managed"), "alicloud-erdma")
    assert resources_of(plan, "ess/scalingGroup:ScalingGroup")
    # ESS takes no ERI beside the top-level security groups the provider requires (capabilities managedGroupLimits)
    assert plan.summary()["fabricGbpsPerNode"] == 0
    assert any("gets no eRDMA interface" in w for w in plan.warnings())


SCHEDULE = {"metric": "schedule", "schedule": [{"cron": "0 8 * * *", "nodes": 4}]}


@pytest.mark.parametrize(
    "cluster", [{"maxNodes": 8}, {"minNodes": 2}, {"nodes": 2, "maxNodes": 4, "scaling": SCHEDULE}]
)
def test_a_config_that_needs_a_managed_group_keeps_it(cluster):
    assert spec_of(erdma_values(**cluster)).node_group == "managed"


def test_without_a_fabric_the_default_stays_managed():
    assert spec_of(erdma_values(fabric="none")).node_group == "managed"
    dev = copy.deepcopy(load_stack(ROOT, "alicloud-dev").values)
    dev["gpu-cluster:cluster"].pop("nodeGroup")
    assert spec_of(dev).node_group == "managed"  # a T4 without fabric: nothing to cut


def test_one_eri_type_gets_instances_too():
    # gn8is-8x has one ERI: ESS would wire none of it (and drop the deployment set several nodes are placed in)
    cluster = {"instanceType": "ecs.gn8is-8x.32xlarge", "nodes": 2, "zone": "cn-hangzhou-k"}
    values = {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-hangzhou", "gpu-cluster:cluster": cluster}
    spec = spec_of(values)
    assert spec.node_group == "instances"
    single = copy.deepcopy(values)
    single["gpu-cluster:cluster"]["nodes"] = 1
    assert spec_of(single).node_group == "instances"  # even one node: a managed group wires no ERI


def test_kubernetes_keeps_its_node_pool():
    values = copy.deepcopy(load_stack(ROOT, "alicloud-ack-erdma").values)
    assert "nodeGroup" not in values["gpu-cluster:cluster"]
    assert spec_of(values).node_group == "managed"


def test_tencent_hcc_without_node_group_gets_its_hpc_cluster():
    # a managed group cannot join an HPC cluster (capabilities hccCluster): unset, an HCC type gets instances
    values = copy.deepcopy(load_stack(ROOT, "tencentcloud-hcc").values)
    values["gpu-cluster:cluster"].pop("nodeGroup")
    spec = spec_of(values)
    assert spec.node_group == "instances"
    (info,) = [f for f in spec.findings if f.key == "gpu-cluster:cluster.nodeGroup"]
    assert "hccCluster: refused" in info.message and "set nodeGroup: managed" not in info.message
