"""The offline plan says which scheduler: with kubernetes the control plane (service, version, endpoint read from
its registered inputs), the node pools, the releases (chart, pinned version) and the credentials command; with
slurm the head node, the partition and the login command. Table, markdown and JSON (stable camelCase keys)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from components.errors import CLUSTER_KEY
from components.layout.kubernetes import charts
from components.plan import Plan, load_stack
from components.plan.render import render_json, render_markdown, summary_rows

from .conftest import ROOT, plan_stack, plan_values

KUBERNETES = {
    "aws-eks-h100": ("EKS", "aws:eks/nodeGroup:NodeGroup", "aws eks update-kubeconfig"),
    "gcp-gke-a3mega": ("GKE", "gcp:container/nodePool:NodePool", "gcloud container clusters get-credentials"),
    "azure-aks-h100": ("AKS", "azure-native:containerservice:AgentPool", "az aks get-credentials"),
    "alicloud-ack-erdma": ("ACK", "alicloud:cs/nodePool:NodePool", "aliyun cs GET /k8s/"),
}
SHIPPED = [s for s in KUBERNETES if (ROOT / "stacks" / f"Pulumi.{s}.yaml").exists()]
KUBERNETES_KEYS = [
    "service", "controlPlane", "clusterName", "version", "versionBuilt", "endpoint", "publicCidrs",
    "endpointAddress", "systemPool", "gpuPool", "nodePools", "releases", "gpuSoftware", "credentials",
]  # fmt: skip
SLURM_KEYS = [
    "headNode", "headNodeAddress", "loginNode", "partition", "accounting", "slurmVersion", "login", "check", "firstJob",
    "users",
]  # fmt: skip
PINNED = {(c["chart"], str(c["version"])) for c in charts().values()}


def _camel_keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [k for k in value] + [k for v in value.values() for k in _camel_keys(v)]
    if isinstance(value, list):
        return [k for v in value for k in _camel_keys(v)]
    return []


@pytest.mark.parametrize("stack", SHIPPED)
def test_a_kubernetes_plan_shows_control_plane_pools_releases_and_credentials(stack: str) -> None:
    service, pool_type, command = KUBERNETES[stack]
    plan = plan_stack(stack)
    summary = plan.summary()
    kube = summary["kubernetes"]
    assert summary["scheduler"] == "kubernetes" and summary["slurm"] is None
    assert list(kube) == KUBERNETES_KEYS
    assert all(re.fullmatch(r"[a-z][A-Za-z0-9]*", k) for k in _camel_keys(kube))
    assert kube["service"] == service and kube["version"] == plan.spec.kubernetes.version  # type: ignore[union-attr]
    assert kube["endpoint"] == "private"  # the shipped stacks keep the API private
    plane = next(r for r in plan.resources if r.name == kube["controlPlane"])
    inline = [f"{plane.name}/{p['name']}" for p in plane.inputs.get("agentPoolProfiles") or []]  # AKS's system pool
    assert kube["nodePools"] == inline + [r.name for r in plan.resources if r.type == pool_type]
    assert len(kube["nodePools"]) == 2  # the system pool and the GPU pool
    registered = [r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release"]
    assert [(r["chart"], r["version"]) for r in kube["releases"]] == [
        (r.inputs["chart"], r.inputs["version"]) for r in registered
    ]
    assert {(r["chart"], r["version"]) for r in kube["releases"]} <= PINNED
    assert kube["credentials"].startswith(command)
    rows = dict(summary_rows(plan))
    assert rows["scheduler"].startswith(f"kubernetes: {service} {kube['version']}")
    assert "private API endpoint" in rows["scheduler"]
    assert rows["credentials"] == kube["credentials"]
    gpu = kube["gpuPool"]
    assert (gpu["minNodes"], gpu["nodes"], gpu["maxNodes"]) == (
        plan.spec.min_nodes,
        plan.spec.nodes,
        plan.spec.max_nodes,
    )
    moves = (gpu["minNodes"], gpu["maxNodes"]) != (gpu["nodes"], gpu["nodes"])
    assert (f"(autoscaled {gpu['minNodes']} to {gpu['maxNodes']})" in rows["node pools"]) is moves
    for release in kube["releases"]:
        assert f"{release['chart']} {release['version']}" in rows["releases"]
    if not kube["releases"]:
        assert rows["releases"] == "none"  # GKE: the driver and device plugin are GKE's own


def test_the_endpoint_is_read_from_the_registered_control_plane() -> None:
    """Asked public: the plan says public, with the CIDRs, because the control plane's inputs are public."""
    stack = next((s for s in ("azure-aks-h100", "aws-eks-h100", "gcp-gke-a3mega") if s in SHIPPED), None)
    if stack is None:
        pytest.skip("no Kubernetes stack with a public endpoint option is shipped yet")
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    values[CLUSTER_KEY].setdefault("kubernetes", {}).update(publicEndpoint=True, publicCidrs=["203.0.113.0/24"])
    plan = plan_values(values, stack)
    kube = plan.summary()["kubernetes"]
    assert kube["endpoint"] == "public" and kube["publicCidrs"] == ["203.0.113.0/24"]
    assert "public API endpoint from 203.0.113.0/24" in dict(summary_rows(plan))["scheduler"]
    assert [v for v in plan.violations() if v.rule == "kubernetes-private-endpoint"] == []


def test_a_slurm_plan_shows_head_node_partition_and_login() -> None:
    if not (ROOT / "stacks" / "Pulumi.aws-slurm-h100.yaml").exists():
        pytest.skip("the Slurm stack is not shipped yet")
    plan = plan_stack("aws-slurm-h100")
    summary = plan.summary()
    slurm = summary["slurm"]
    assert summary["scheduler"] == "slurm" and summary["kubernetes"] is None
    assert list(slurm) == SLURM_KEYS
    assert slurm["headNode"] == plan.spec.slurm.head_instance_type  # type: ignore[union-attr]
    assert slurm["partition"] == plan.spec.slurm.partition  # type: ignore[union-attr]
    assert slurm["login"] == plan.run.outputs["slurm"]["login"]
    rows = dict(summary_rows(plan))
    assert rows["scheduler"].startswith("slurm") and f"head node {slurm['headNode']}" in rows["scheduler"]
    assert rows["slurm login"].startswith(slurm["login"])


@pytest.mark.parametrize("stack", ["aws-h100", "gcp-a3mega", "azure-h100", "alicloud-erdma", "tencentcloud-hcc"])
def test_without_a_scheduler_the_plan_says_none(stack: str) -> None:
    plan = plan_stack(stack)
    summary = plan.summary()
    assert (summary["scheduler"], summary["kubernetes"], summary["slurm"]) == ("none", None, None)
    rows = dict(summary_rows(plan))
    assert rows["scheduler"] == "none"
    assert not {"node pools", "releases", "credentials", "slurm login"} & set(rows)


def _any_scheduled() -> Plan:
    stack = next(iter(SHIPPED), "aws-h100")
    return plan_stack(stack)


def test_markdown_and_json_carry_the_same_scheduler() -> None:
    plan = _any_scheduled()
    rows = dict(summary_rows(plan))
    markdown = render_markdown(plan)
    assert f"| scheduler | {rows['scheduler']} |" in markdown
    doc = json.loads(render_json(plan))
    assert doc["summary"]["scheduler"] == plan.spec.scheduler
    assert doc["summary"]["kubernetes"] == json.loads(json.dumps(plan.summary()["kubernetes"], default=str))
