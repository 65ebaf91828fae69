"""Plan diffs of Kubernetes clusters: a control-plane replacement is the leading DATA LOSS warning (everything in
the cluster goes), a release is uninstalled (DISRUPTION), installed or upgraded in place (chart version, values)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.diff import diff_plans
from components.errors import CLUSTER_KEY
from components.plan import load_stack

from .conftest import ROOT, plan_stack, plan_values

STACKS = [
    s
    for s in ("aws-eks-h100", "azure-aks-h100", "alicloud-ack-erdma")
    if (ROOT / "stacks" / f"Pulumi.{s}.yaml").exists()
]
RELEASE = "kubernetes:helm.sh/v3:Release"


def doc(plan: Any) -> dict[str, Any]:
    return json.loads(json.dumps(plan.as_json(), default=str))


def variant(stack: str, **cluster: Any) -> dict[str, Any]:
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    values[CLUSTER_KEY].update(cluster)
    return doc(plan_values(values, stack))


def _with(plan: dict[str, Any], name: str, **inputs: Any) -> dict[str, Any]:
    """The same plan with one resource's inputs changed (deep keys as dotted paths)."""
    out = copy.deepcopy(plan)
    res = next(r for r in out["resources"] if r["name"] == name)
    for path, value in inputs.items():
        target = res["inputs"]
        *parents, last = path.split("__")
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_a_control_plane_replacement_is_the_leading_data_loss(stack: str) -> None:
    base = doc(plan_stack(stack))
    kube = base["summary"]["kubernetes"]
    renamed = variant(stack, name="renamed-k8s")  # a new name: every resource is new, the old cluster deleted
    diff = diff_plans(base, renamed)
    first = diff.warnings[0]
    assert first.startswith("DATA LOSS: deletes") and f"`{kube['controlPlane']}`" in first
    assert f"the {kube['service']} control plane: every Kubernetes object in it is lost" in first
    # the releases go with the cluster: not one uninstall line each
    assert not [w for w in diff.warnings if "uninstalls Helm release" in w]


def test_a_control_plane_replaced_in_place_names_why() -> None:
    stack = STACKS[0] if STACKS else pytest.skip("no Kubernetes stack shipped")
    base = doc(plan_stack(stack))
    kube = base["summary"]["kubernetes"]
    plane = next(r for r in base["resources"] if r["name"] == kube["controlPlane"])
    if plane["type"] != "aws:eks/cluster:Cluster":
        pytest.skip("the replace path below is EKS's")
    diff = diff_plans(base, _with(base, plane["name"], roleArn="arn:aws:iam::123456789012:role/other"))
    assert diff.warnings[0].startswith(f"DATA LOSS: replaces aws:eks/cluster:Cluster `{plane['name']}`")
    assert "`roleArn`" in diff.warnings[0]
    assert "the EKS control plane" in diff.warnings[0]


def test_a_changed_gpu_software_uninstalls_and_installs_releases() -> None:
    stack = STACKS[0] if STACKS else pytest.skip("no Kubernetes stack shipped")
    base = doc(plan_stack(stack))
    values = load_stack(ROOT, stack).values[CLUSTER_KEY]
    kubernetes = {**values.get("kubernetes", {}), "gpuSoftware": "device-plugin"}
    diff = diff_plans(base, variant(stack, kubernetes=kubernetes))
    gone = [r for r in base["summary"]["kubernetes"]["releases"] if r["chart"] == "gpu-operator"]
    assert gone, "the stack runs the GPU operator"
    assert any(w.startswith("DISRUPTION: uninstalls Helm release `gpu-operator`") for w in diff.warnings)
    assert any(w.startswith("installs Helm release `nvidia-device-plugin`") for w in diff.warnings)
    assert not [w for w in diff.warnings if w.startswith("DATA LOSS")]


def test_a_release_upgrade_is_in_place_with_version_and_values() -> None:
    stack = STACKS[0] if STACKS else pytest.skip("no Kubernetes stack shipped")
    base = doc(plan_stack(stack))
    release = next(r for r in base["resources"] if r["type"] == RELEASE)
    name, version = release["name"], release["inputs"]["version"]
    upgraded = _with(base, name, version="v99.0.0", values__extra="on")
    diff = diff_plans(base, upgraded)
    item = next(c for c in diff.changed if c.name == name)
    assert item.verdict == "update"
    note = next(w for w in diff.warnings if w.startswith("upgrades Helm release"))
    assert f"chart {release['inputs']['chart']} {version} -> v99.0.0" in note and "`values.extra`" in note
    assert not [w for w in diff.warnings if w.startswith(("DATA LOSS", "DISRUPTION"))]


def test_a_release_moved_to_another_namespace_is_reinstalled() -> None:
    stack = STACKS[0] if STACKS else pytest.skip("no Kubernetes stack shipped")
    base = doc(plan_stack(stack))
    release = next(r for r in base["resources"] if r["type"] == RELEASE)
    diff = diff_plans(base, _with(base, release["name"], namespace="elsewhere"))
    assert [w for w in diff.warnings if "Helm release" in w] == [
        next(w for w in diff.warnings if w.startswith("DISRUPTION: may replace Helm release"))
    ]
    assert "uninstalled, then installed again" in diff.warnings[0]


def _eks(**inputs: Any) -> dict[str, Any]:
    res = {"urn": "urn:pulumi:s::p::aws:eks/cluster:Cluster::k", "type": "aws:eks/cluster:Cluster", "name": "k"}
    return {"stack": "s", "cloud": "aws", "resources": [{**res, "custom": True, "inputs": inputs}], "summary": {}}


def test_a_block_added_whole_is_judged_by_the_paths_inside_it() -> None:
    """The rule names `kubernetesNetworkConfig.serviceIpv4Cidr`; the diff sees `kubernetesNetworkConfig` appear."""
    base = _eks(version="1.36")
    replaced = diff_plans(base, _eks(version="1.36", kubernetesNetworkConfig={"serviceIpv4Cidr": "172.21.0.0/16"}))
    assert [c.verdict for c in replaced.changed] == ["replace"]
    assert replaced.warnings == [  # no plan summary names it a control plane: the data rule's words
        "DATA LOSS: replaces aws:eks/cluster:Cluster `k` (`kubernetesNetworkConfig`): the data on it is lost"
    ]
    in_place = diff_plans(base, _eks(version="1.36", accessConfig={"authenticationMode": "API"}))
    assert [c.verdict for c in in_place.changed] == ["update"]
