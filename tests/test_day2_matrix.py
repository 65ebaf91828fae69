"""The day-2 lifecycle matrix (issue 28): every shipped stack x the common day-2 changes that apply to it.

Each cell plans the changed config in-process, diffs it against the stack's plan and checks the diff's verdict per
resource against the update-policy table (components/spec/updates.yaml), in the new plan's mode:

- in-place: no resource that holds nodes or data (the diff rules' `holds`) is replaced, may be replaced or restarted;
  with Slurm, a compute-side key leaves the head node's inputs unchanged;
- rolling: no resource holding nodes is replaced (the node group rolls; a Slurm head is neither replaced nor
  restarted) and no data resource is replaced, restarted or deleted;
- replace: the diff warns DATA LOSS;
- refused: the diff refuses the key (`gpu-cluster diff` exits 4).

The expectations come from the table, not from today's output. A cell that fails today because another part of
issue 28 is fixing it is `xfail(strict=True)` naming the fix. Plans are cached per module (the stack's own plan from
the session cache), so each cell costs one plan of about a second.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from components.diff import PlanDiff, default_rules, diff_plans
from components.diff.spec_changes import mode_of
from components.errors import ConfigError
from components.plan import load_stack, make_plan
from components.plan.stackfile import StackFile
from components.spec.updates import update_policies

from .conftest import ROOT, SHIPPED_STACKS, plan_json, plan_stack

Cluster = dict[str, Any]
# An explicit image of each cloud's form (catalog/<cloud>.yaml `imagePattern`), and a second one to bump to.
IMAGES = {
    "aws": ("ami-0123456789abcdef0", "ami-0fedcba9876543210"),
    "azure": ("microsoft-dsvm:ubuntu-hpc:2204:22.04.2024010101", "microsoft-dsvm:ubuntu-hpc:2204:22.04.2024020201"),
    "gcp": ("projects/my-images/global/images/gpu-node-v1", "projects/my-images/global/images/gpu-node-v2"),
    "alicloud": ("ubuntu_22_04_x64_20G_alibase_20240101.vhd", "ubuntu_22_04_x64_20G_alibase_20240201.vhd"),
    "tencentcloud": ("img-0abc1234", "img-0abc5678"),
    "huaweicloud": ("0b30658a-ed1a-4922-b8f7-a673ca9c1234", "0b30658a-ed1a-4922-b8f7-a673ca9c5678"),
}
# The next size each shipped filesystem may grow to (the sizes the catalog allows: components/catalog/storage/):
# FSx EFA-enabled at 1000 MB/s/TiB in 4800 GiB steps, Azure Managed Lustre at 500 in 4096, GCP Managed Lustre at
# 1000 in 9000, Filestore Zonal in 256 GiB steps.
GROWN_GB = {4800: 9600, 8192: 12288, 18000: 27000, 2560: 2816, 500: 1000}
HEAD = re.compile(r"-head$")  # the Slurm head node (components/<cloud>/slurm.py)
LOGIN = re.compile(r"-login$")  # a login VM (components/<cloud>/access.py): it runs no jobs
COMPUTE_SIDE = (
    "cluster.nodes",
    "cluster.maxNodes",
    "cluster.minNodes",
    "cluster.scaling",
    "cluster.login",
    "cluster.slurm.partitions",
    "cluster.slurm.suspendAfterSeconds",
)

_PLANS: dict[tuple[str, str], dict[str, Any]] = {}


def _cluster(stack: str) -> Cluster:
    cluster: Cluster = load_stack(ROOT, stack).values["gpu-cluster:cluster"]
    return cluster


def _previous_k8s(cloud: str, version: str) -> str:
    """An older minor than the shipped one that the cloud offers (the upgrade is old -> shipped)."""
    import yaml

    offered = yaml.safe_load((ROOT / "components" / "catalog" / "kubernetes" / f"{cloud}.yaml").read_text())

    def minor(v: str) -> tuple[int, ...]:
        return tuple(map(int, v.split(".")))

    return max((v for v in offered["versions"] if minor(v) < minor(version)), key=minor)


# A change: (name, the key it changes, whether it applies to a stack's cluster config, edit of the config).
# `base` edits give the old side instead of the shipped stack (an upgrade from an older version to the shipped one).
Edit = Callable[[Cluster, str], Cluster]


def _set(**keys: Any) -> Edit:
    def edit(c: Cluster, cloud: str) -> Cluster:
        return {**c, **keys}

    return edit


def _nodes(delta: int) -> Edit:
    return lambda c, cloud: {**c, "nodes": c.get("nodes", 1) + delta}


def _storage(**keys: Any) -> Edit:
    return lambda c, cloud: {**c, "storage": {**c.get("storage", {}), **keys}}


def _root_up(c: Cluster, cloud: str) -> Cluster:
    return {**c, "storage": {**c.get("storage", {}), "rootGb": c.get("storage", {}).get("rootGb", 200) + 100}}


def _scratch_up(c: Cluster, cloud: str) -> Cluster:
    return {**c, "storage": {**c["storage"], "scratchGb": c["storage"].get("scratchGb", 1000) * 2}}


def _shared_up(c: Cluster, cloud: str) -> Cluster:
    shared = c["storage"]["shared"]
    return {**c, "storage": {**c["storage"], "shared": {**shared, "sizeGb": GROWN_GB[shared["sizeGb"]]}}}


def _login(c: Cluster, cloud: str) -> Cluster:
    if "login" in c:
        return {k: v for k, v in c.items() if k != "login"}
    return {**c, "login": {}}


def _target(c: Cluster, cloud: str) -> Cluster:
    return {**c, "scaling": {**c["scaling"], "target": c["scaling"]["target"] + 10}}


def _serve_port(c: Cluster, cloud: str) -> Cluster:
    return {**c, "serve": {**c["serve"], "port": c["serve"].get("port", 8000) + 1}}


def _requests(per_node: int) -> Callable[[Cluster, str], Cluster]:
    def change(c: Cluster, cloud: str) -> Cluster:
        return {**c, "serve": {**c["serve"], "requestsPerNode": c["serve"].get("requestsPerNode", 0) + per_node}}

    return change


def _max_up(c: Cluster, cloud: str) -> Cluster:
    return {**c, "maxNodes": (c.get("maxNodes") or c.get("nodes", 1)) + 2}


def _kubernetes(c: Cluster) -> bool:
    return c.get("scheduler") == "kubernetes"


def _prometheus_off(c: Cluster, cloud: str) -> Cluster:
    # notify goes with it where the managed Prometheus sends the alerts (Alibaba: refused without managed)
    monitoring = {k: v for k, v in c.get("monitoring", {}).items() if k != "notify"}
    return {**c, "monitoring": {**monitoring, "prometheus": "none"}}


def _retention_up(c: Cluster, cloud: str) -> Cluster:
    monitoring = c.get("monitoring", {})
    return {**c, "monitoring": {**monitoring, "retentionDays": monitoring.get("retentionDays", 15) * 2}}


def _k8s_old(c: Cluster, cloud: str) -> Cluster:
    kube = c["kubernetes"]
    return {**c, "kubernetes": {**kube, "version": _previous_k8s(cloud, kube["version"])}}


def _image(which: int) -> Edit:
    return lambda c, cloud: {**c, "image": IMAGES[cloud][which]}


def _partition(index: int, **keys: Any) -> Edit:
    def edit(c: Cluster, cloud: str) -> Cluster:
        parts = [dict(p) for p in c["slurm"]["partitions"]]
        # a value: as it is, computed from the partition (callable), or per cloud (dict)
        picked = {
            k: v(parts[index]) if callable(v) else v[cloud] if isinstance(v, dict) else v for k, v in keys.items()
        }
        parts[index] = {**parts[index], **picked}
        return {**c, "slurm": {**c["slurm"], "partitions": parts}}

    return edit


# another type of the same fabric for the last partition (GCP: g2 of 8 L4, on the host VPC as the shipped g2)
NEW_TYPE = {
    "aws": "g6e.24xlarge",
    "gcp": "g2-standard-96",
    "azure": "Standard_NC48ads_A100_v4",
    "alicloud": "ecs.gn7i-c32g1.8xlarge",  # 1 x A10 as the shipped gn7i, more vCPUs
}


def _plus_two(partition: dict[str, Any]) -> int:
    return int(partition["maxNodes"]) + 2


def _suspend_later(c: Cluster, cloud: str) -> Cluster:
    return {**c, "slurm": {**c["slurm"], "suspendAfterSeconds": 1200}}


def _accounting(on: bool) -> Edit:
    return lambda c, cloud: {**c, "slurm": {**(c.get("slurm") or {}), "accounting": on}}


def _monitoring(**keys: Any) -> Edit:
    def edit(c: Cluster, cloud: str) -> Cluster:
        monitoring = copy.deepcopy(c.get("monitoring", {}))
        for key, value in keys.items():
            monitoring[key] = value(monitoring) if callable(value) else value
        return {**c, "monitoring": monitoring}

    return edit


def _has_accounting(c: Cluster) -> bool:
    return bool((c.get("slurm") or {}).get("accounting"))


def _elastic(c: Cluster) -> bool:
    return bool((c.get("slurm") or {}).get("partitions"))


def _managed(c: Cluster) -> bool:
    return c.get("nodeGroup", "managed") == "managed"


def _logs_on(c: Cluster) -> bool:
    return bool(((c.get("monitoring") or {}).get("logs") or {}).get("enabled"))


CHANGES: dict[str, tuple[str, Callable[[Cluster], bool], Edit]] = {
    "nodes+1": ("cluster.nodes", lambda c: True, _nodes(+1)),
    "nodes-1": ("cluster.nodes", lambda c: c.get("nodes", 1) >= 2, _nodes(-1)),
    "maxNodes-up": ("cluster.maxNodes", _managed, _max_up),
    "image-pin": ("cluster.image", lambda c: c.get("image", "auto") == "auto", _image(0)),
    "image-bump": ("cluster.image", lambda c: c.get("image", "auto") == "auto", _image(1)),
    "rootGb-up": ("cluster.storage.rootGb", lambda c: True, _root_up),
    "scratchGb-up": ("cluster.storage.scratchGb", lambda c: "scratchGb" in c.get("storage", {}), _scratch_up),
    "shared-grow": (
        "cluster.storage.shared.sizeGb",
        lambda c: c.get("storage", {}).get("shared", {}).get("sizeGb") in GROWN_GB,
        _shared_up,
    ),
    "tags": ("cluster.tags", lambda c: True, lambda c, cloud: {**c, "tags": {**c.get("tags", {}), "team": "day2"}}),
    "login-on-off": ("cluster.login", lambda c: c.get("scheduler") == "slurm", _login),
    "scaling-target": ("cluster.scaling.target", lambda c: (c.get("scaling") or {}).get("target") is not None, _target),
    "k8s-version": ("cluster.kubernetes.version", lambda c: c.get("scheduler") == "kubernetes", _k8s_old),
    # the in-cluster kube-prometheus-stack (auto on EKS, AKS, ACK; none on GKE) removed, and its retention changed
    "k8s-prometheus-off": ("cluster.monitoring.prometheus", _kubernetes, _prometheus_off),
    "k8s-retention": ("cluster.monitoring.retentionDays", _kubernetes, _retention_up),
    "partition-maxNodes-up": ("cluster.slurm.partitions.maxNodes", _elastic, _partition(0, maxNodes=_plus_two)),
    "partition-type": ("cluster.slurm.partitions.instanceType", _elastic, _partition(-1, instanceType=NEW_TYPE)),
    "partition-spot": ("cluster.slurm.partitions.spot", _elastic, _partition(0, spot=True)),
    "suspend-time": ("cluster.slurm.suspendAfterSeconds", _elastic, _suspend_later),
    "serve-port": ("cluster.serve.port", lambda c: "serve" in c, _serve_port),
    "serve-requests-on": (
        "cluster.serve.requestsPerNode",
        lambda c: "serve" in c and "requestsPerNode" not in c["serve"],
        _requests(4),
    ),
    "serve-requests-up": (
        "cluster.serve.requestsPerNode",
        lambda c: "requestsPerNode" in c.get("serve", {}),
        _requests(2),
    ),
    "accounting-on": (
        "cluster.slurm.accounting",
        lambda c: c.get("scheduler") == "slurm" and not _has_accounting(c),
        _accounting(True),
    ),
    "accounting-off": ("cluster.slurm.accounting", _has_accounting, _accounting(False)),
    "logs-retention": (
        "cluster.monitoring.logs.retentionDays",
        _logs_on,
        # twice the retention (60 days from the default 30; an mlps3 stack's 180 becomes 360: it refuses under 180)
        _monitoring(logs=lambda m: {**m["logs"], "retentionDays": m["logs"].get("retentionDays", 30) * 2}),
    ),
    "logs-off": ("cluster.monitoring.logs.enabled", _logs_on, _monitoring(logs={"enabled": False})),
    # the DCGM exporter off on a Slurm cluster: its GPU nodes lose it and the job map (bootstrap/slurm_jobmap.py)
    "dcgm-off": (
        "cluster.monitoring.dcgmExporter",
        lambda c: c.get("scheduler") == "slurm" and c.get("monitoring", {}).get("dcgmExporter", True)
        and not c.get("monitoring", {}).get("notify"),  # notify reads the exporter's metrics: refused without it
        _monitoring(dcgmExporter=False),
    ),
    "notify-add": (
        "cluster.monitoring.notify",
        lambda c: bool(c.get("monitoring", {}).get("notify")),
        _monitoring(notify=lambda m: [*m["notify"], "oncall@example.com"]),
    ),
    # prometheus managed (AWS, Azure, Alibaba): a threshold lives in the workspace's rules (AMP's rule groups
    # namespace, Azure's rule group, ARMS' alert rules), not on the login node
    "managed-threshold": (
        "cluster.monitoring.alerts.gpuIdlePercent",
        lambda c: c.get("monitoring", {}).get("prometheus") == "managed",
        _monitoring(alerts={"gpuIdlePercent": 10}),
    ),
}  # fmt: skip
# the old side of a cell, when it is not the shipped stack: image-bump goes from one pinned image to another; a
# Kubernetes upgrade goes from the cloud's previous minor to the shipped one
OLD_SIDE = {"image-bump": "image-pin"}
NEW_IS_SHIPPED = {"k8s-version"}

# Every cell passes: no expected failure is kept here. (A tag change keeps templates as they are where the cloud tags
# nodes elsewhere: docs/day2.md "Tags and images"; a cluster shrunk to one node keeps its placement: "Placement at one
# node".)
# Changes that move a choice the spec makes from the count (the GPU pick: `gpu: T4:1` on two nodes needs a fabric,
# which g4dn.xlarge lacks; `placement: auto`): not the key's own effect, so the cell checks that the diff says it
# first, as a DISRUPTION naming the choice, with the key's own policy line beside it.
DERIVED: dict[tuple[str, str], str] = {
    ("aws-dev", "nodes+1"): "DISRUPTION: instance type g4dn.xlarge -> g4dn.8xlarge",
    ("aws-dev", "maxNodes-up"): "DISRUPTION: instance type g4dn.xlarge -> g4dn.8xlarge",
    ("aws-managed-grafana", "nodes+1"): "DISRUPTION: instance type g4dn.xlarge -> g4dn.8xlarge",
    ("aws-managed-grafana", "maxNodes-up"): "DISRUPTION: instance type g4dn.xlarge -> g4dn.8xlarge",
    ("gcp-dev", "nodes+1"): "DISRUPTION: placement none -> cluster",
    # a Slurm stack's login node is there without `login:`; dropping the block drops publicIp: true, and CVM gives an
    # instance its public IP only at creation (tencentcloud.yaml Instance: replace allocatePublicIp)
    ("tencentcloud-slurm", "login-on-off"): (
        "DATA LOSS: replaces tencentcloud:Instance/instance:Instance `tc-slurm-tencentcloud-login` (`allocatePublicIp`)"
    ),
    # as on Huawei: an ECS gets its EIP only at creation (huaweicloud.yaml Instance: replace eipType, bandwidth)
    ("huaweicloud-slurm", "login-on-off"): (
        "DATA LOSS: replaces huaweicloud:Ecs/instance:Instance `hw-slurm-huaweicloud-login` (`bandwidth`, `eipType`)"
    ),
}
# Changes the spec refuses for a stack (they are not day-2 changes it can make); each cell checks that it is refused.
TWO_NODES_NEED_FABRIC = "two single-T4 nodes have no fabric NCCL can use (spec rule since issue 26)"
NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("alicloud-dev", "nodes+1"): TWO_NODES_NEED_FABRIC,
    ("alicloud-arms", "nodes+1"): TWO_NODES_NEED_FABRIC,
    ("azure-dev", "nodes+1"): TWO_NODES_NEED_FABRIC,
    ("tencentcloud-dev", "nodes+1"): TWO_NODES_NEED_FABRIC,
    ("huaweicloud-dev", "nodes+1"): TWO_NODES_NEED_FABRIC,
    ("huaweicloud-cce", "image-pin"): "the CCE pools boot CCE's own OS (cce.NodePool os): image must stay auto",
    ("huaweicloud-cce", "image-bump"): "the CCE pools boot CCE's own OS (cce.NodePool os): image must stay auto",
    ("aws-eks-h100", "image-pin"): "EKS picks the GPU pool's AMI (amiType): image must stay auto",
    ("aws-eks-h100", "image-bump"): "EKS picks the GPU pool's AMI (amiType): image must stay auto",
    ("aws-eks-managed-prom", "image-pin"): "EKS picks the GPU pool's AMI (amiType): image must stay auto",
    ("aws-eks-managed-prom", "image-bump"): "EKS picks the GPU pool's AMI (amiType): image must stay auto",
    ("tencentcloud-tke", "image-pin"): "TKE's pools boot its node OS (the GPU operator's driver): image must stay auto",
    (
        "tencentcloud-tke",
        "image-bump",
    ): "TKE's pools boot its node OS (the GPU operator's driver): image must stay auto",
    ("azure-aks-h100", "nodes-1"): "InfiniBand under AKS needs at least 2 nodes",
    # its notify and grafanaAdmins need prometheus managed on AKS (the rule group and Managed Grafana are managed's)
    ("azure-aks-managed-prom", "k8s-prometheus-off"): "notify and grafanaAdmins need monitoring.prometheus managed",
    ("gcp-dev", "maxNodes-up"): "a COLLOCATED placement policy fixes its VM count: maxNodes must equal nodes",
    ("alicloud-dev", "maxNodes-up"): TWO_NODES_NEED_FABRIC,
    ("alicloud-arms", "maxNodes-up"): TWO_NODES_NEED_FABRIC,
    ("azure-dev", "maxNodes-up"): TWO_NODES_NEED_FABRIC,
    ("azure-a10-slice", "nodes+1"): "two vGPU slices (1/6 of an A10 each) have no fabric NCCL can use",
    ("azure-a10-slice", "maxNodes-up"): "two vGPU slices (1/6 of an A10 each) have no fabric NCCL can use",
    ("aws-l4-slice", "nodes+1"): "two vGPU slices (1/4 of an L4 each) have no fabric NCCL can use",
    ("aws-l4-slice", "maxNodes-up"): "two vGPU slices (1/4 of an L4 each) have no fabric NCCL can use",
    ("alicloud-a10-slice", "nodes+1"): "two vGPU slices (1/6 of an A10 each) have no fabric NCCL can use",
    ("alicloud-a10-slice", "maxNodes-up"): "two vGPU slices (1/6 of an A10 each) have no fabric NCCL can use",
    ("aws-slurm-elastic", "nodes+1"): "elastic partitions size the cluster: nodes must be 0",
    ("aws-slurm-elastic", "maxNodes-up"): "elastic partitions size the cluster: maxNodes is per partition",
    ("gcp-slurm-elastic", "nodes+1"): "elastic partitions size the cluster: nodes must be 0",
    ("gcp-slurm-elastic", "maxNodes-up"): "elastic partitions size the cluster: maxNodes is per partition",
    ("azure-slurm-elastic", "nodes+1"): "elastic partitions size the cluster: nodes must be 0",
    ("azure-slurm-elastic", "maxNodes-up"): "elastic partitions size the cluster: maxNodes is per partition",
    ("alicloud-slurm-elastic", "nodes+1"): "elastic partitions size the cluster: nodes must be 0",
    ("alicloud-slurm-elastic", "maxNodes-up"): "elastic partitions size the cluster: maxNodes is per partition",
    # catalog/accounting.yaml clouds.<cloud>.notBuilt
    ("tencentcloud-slurm", "accounting-on"): "no database for slurmdbd is built on Tencent Cloud",
    ("huaweicloud-slurm", "accounting-on"): "no database for slurmdbd is built on Huawei Cloud",
    ("alicloud-inference-fleet", "serve-requests-on"): "ESS target tracking on CLB metrics is not built",
}


# Cells whose change is milder than the key's stated policy, the worst case of another change of the same key: on
# Azure turning notify on or off creates the login node again (its prometheus.yml remote-writes), while a changed
# address list only updates the action group in place; with prometheus managed on Azure a threshold lives in the
# workspace's rule group (updated in place), not in the login node's custom data
MILDER: dict[tuple[str, str], str] = {
    ("azure-slurm-elastic", "notify-add"): "in-place",
    ("azure-managed-prom", "notify-add"): "in-place",
    ("azure-managed-prom", "managed-threshold"): "in-place",
}
# Cells that delete a data store whatever the key's policy for the nodes: the diff must say so first
DELETES_DATA = {"logs-off"}
# ... and the stacks whose change does so: managed monitoring off on ACK deletes the ARMS environment's samples
# and on EKS the AMP workspace's (notify goes with it: _prometheus_off)
DELETES_DATA_CELLS = {("alicloud-ack-arms", "k8s-prometheus-off"), ("aws-eks-managed-prom", "k8s-prometheus-off")}


def _plan(stack: str, change: str) -> dict[str, Any]:
    """The plan of the stack with one change (`""`: as shipped), cached for the module."""
    if change == "":
        return plan_json(plan_stack(stack))
    if (stack, change) not in _PLANS:
        shipped = load_stack(ROOT, stack)
        values = copy.deepcopy(shipped.values)
        values["gpu-cluster:cluster"] = CHANGES[change][2](values["gpu-cluster:cluster"], SHIPPED_STACKS[stack])
        stack_file = StackFile(shipped.project, shipped.stack, shipped.path, values, shipped.secret_keys)
        _PLANS[(stack, change)] = json.loads(json.dumps(make_plan(ROOT, stack_file).as_json(), default=str))
    return _PLANS[(stack, change)]


def _cells() -> list[Any]:
    cells = []
    for stack in SHIPPED_STACKS:
        cluster = _cluster(stack)
        for change, (_, applies, _) in CHANGES.items():
            if not applies(cluster):
                continue
            if (stack, change) in NOT_APPLICABLE:
                cells.append(pytest.param(stack, change, id=f"{stack}-{change}-refused-by-the-spec"))
                continue
            cells.append(pytest.param(stack, change, id=f"{stack}-{change}"))
    return cells


def _sides(stack: str, change: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if change in NEW_IS_SHIPPED:
        return _plan(stack, change), _plan(stack, "")
    return _plan(stack, OLD_SIDE.get(change, "")), _plan(stack, change)


def _verdicts(d: PlanDiff, holds: set[str], verdicts: set[str]) -> list[str]:
    rules = default_rules()
    return [f"{c.name} ({c.type}): {c.verdict} {c.reasons}" for c in d.changed
            if rules.rule(c.type).holds in holds and c.verdict in verdicts]  # fmt: skip


def _deleted_data(d: PlanDiff) -> list[str]:
    rules = default_rules()
    return [urn for urn in d.deleted if rules.rule(d.types[urn]).holds == "data"]


@pytest.mark.parametrize(("stack", "change"), _cells())
def test_day2_change_has_the_effect_its_update_policy_states(stack: str, change: str) -> None:
    key = CHANGES[change][0]
    if (stack, change) in NOT_APPLICABLE:
        with pytest.raises(ConfigError):
            _sides(stack, change)
        return
    old, new = _sides(stack, change)
    d = diff_plans(old, new)
    effect = update_policies()[key].effect(mode_of(new))
    said = {c.key: c for c in d.spec_changes}
    assert key in said, f"the diff does not name {key}: {sorted(said)}"
    assert said[key].policy == effect.policy
    policy = MILDER.get((stack, change), effect.policy)
    if change in DELETES_DATA or (stack, change) in DELETES_DATA_CELLS:
        assert _deleted_data(d) != [] and any(w.startswith("DATA LOSS: deletes") for w in d.warnings), d.warnings
    if (stack, change) in DERIVED:
        assert any(w.startswith(DERIVED[(stack, change)]) for w in d.warnings), d.warnings
    elif policy == "in-place":
        # nothing replaced, restarted, nor rolled: a `refresh` of a group is a new template its nodes are replaced for
        assert _verdicts(d, {"nodes", "data"}, {"replace", "may-replace", "restart", "refresh"}) == [], d.warnings
        assert change in DELETES_DATA or (stack, change) in DELETES_DATA_CELLS or _deleted_data(d) == []
        if new["summary"].get("scheduler") == "slurm" and key.startswith(COMPUTE_SIDE):
            # Azure's channel is the head VM's own userData, updated in place (catalog/slurm.yaml
            # clouds.azure.computeConfig): that one input may change, nothing else of the head
            touched = [
                c.name
                for c in d.changed
                if HEAD.search(c.name) and not (c.verdict == "update" and {x.path for x in c.changes} == {"userData"})
            ]
            assert touched == [], f"the Slurm head changes for a compute-side key: {touched}"
    elif policy == "rolling":
        # the node group rolls; it is not replaced, nor is the Slurm head (a login VM runs no jobs)
        groups = [c for c in _verdicts(d, {"nodes"}, {"replace", "may-replace"}) if not LOGIN.search(c.split(" ")[0])]
        assert groups == [], d.warnings
        heads = [
            c.name for c in d.changed if HEAD.search(c.name) and c.verdict in {"replace", "may-replace", "restart"}
        ]
        assert heads == [], f"the Slurm head is replaced or restarts: {heads}"
        assert _verdicts(d, {"data"}, {"replace", "may-replace", "restart"}) == []
        assert change in DELETES_DATA or _deleted_data(d) == []
    elif policy == "replace":
        # the diff says the nodes' work is lost: DATA LOSS, or a stop/start of every changed node (running jobs die)
        stops = _verdicts(d, {"nodes"}, {"restart"})
        assert any(w.startswith("DATA LOSS") for w in d.warnings) or stops, d.warnings
    else:
        assert key in [c.key for c in d.refused]
