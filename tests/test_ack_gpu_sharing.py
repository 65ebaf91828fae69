"""kubernetes.gpuSharing on ACK (issue 32): ACK's own shared GPU scheduling, from the inputs registered with the
mocks: the ack-ai-installer add-on, the GPU pool's ack.node.gpu.schedule label (timeSlicing -> share, mps -> mps),
what each pod asks (aliyun.com/gpu-mem), and the refusals (mig; more than 20 pods per GPU under mps)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog import kubernetes as offers
from components.errors import ConfigErrors
from components.spec import build_spec

from .conftest import plan_values, resources_of
from .test_alicloud_resources import alicloud_values

K = "gpu-cluster:cluster.kubernetes.gpuSharing"
LABEL = "ack.node.gpu.schedule"


def ack(**sharing: Any) -> dict[str, Any]:
    values = alicloud_values()  # ecs.gn8is-8x.32xlarge: 8 x L20, 48 GB each
    cluster = values["gpu-cluster:cluster"]
    cluster["scheduler"] = "kubernetes"
    cluster.setdefault("kubernetes", {})["gpuSharing"] = sharing
    return values


def gpu_pool_labels(plan) -> dict[str, str]:
    pools = [r["inputs"] for r in resources_of(plan, "cs/nodePool:NodePool")]
    (pool,) = [p for p in pools if str(p["nodePoolName"]).endswith("-gpu")]
    return {label["key"]: label["value"] for label in pool["labels"]}


def addons(plan) -> dict[str, dict[str, Any]]:
    return {r["inputs"]["name"]: r["inputs"] for r in resources_of(plan, "cs/kubernetesAddon:KubernetesAddon")}


def kubernetes_output(plan) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(plan.as_json(), default=str))
    out: dict[str, Any] = doc["outputs"]["kubernetes"]
    return out


@pytest.mark.parametrize(
    ("mode", "label", "replicas", "pod_gib"), [("timeSlicing", "share", 4, 12), ("mps", "mps", 6, 8)]
)
def test_a_shared_mode_labels_the_gpu_pool_and_installs_ack_ai_installer(mode, label, replicas, pod_gib):
    plan = plan_values(ack(mode=mode, replicas=replicas))
    labels = gpu_pool_labels(plan)
    assert labels[LABEL] == label
    assert labels["gpu-cluster.dev/gpu-sharing"] == mode and labels["gpu-cluster.dev/pods-per-gpu"] == str(replicas)
    installer = addons(plan)["ack-ai-installer"]
    assert installer["clusterId"] == "<id of test-alicloud-ack>" and "config" not in installer
    share = kubernetes_output(plan)["gpuShare"]
    assert share["nodeLabel"] == f"{LABEL}={label}"
    assert share["podRequest"] == f"aliyun.com/gpu-mem: {pod_gib}"  # 48 GB over the pods per GPU, rounded down


def test_no_sharing_adds_no_label_and_no_add_on():
    plan = plan_values(ack(mode="none"))
    assert LABEL not in gpu_pool_labels(plan)
    assert "ack-ai-installer" not in addons(plan)
    assert kubernetes_output(plan)["gpuShare"] is None


def errors_of(values: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(values, "test")
    return [(e.key, e.message) for e in info.value.errors]


def test_mig_is_refused_with_acks_reason():
    assert errors_of(ack(mode="mig", migProfile="1g.10gb")) == [
        (
            f"{K}.mode",
            'mig is not built on alicloud: ACK\'s MIG label (ack.node.gpu.schedule: mig, "dynamic MIG partitioning") '
            "names no profile in the docs read, so a migProfile cannot be applied as asked; use timeSlicing (ACK "
            "share) or mps (ACK mps)",
        )
    ]


def test_more_than_20_pods_per_gpu_under_mps_is_refused():
    ((key, message),) = errors_of(ack(mode="mps", replicas=21))
    assert key == f"{K}.replicas" and message.startswith("21, but alicloud shares a GPU between at most 20")


def test_the_data_names_its_sources():
    data = offers.sharing("alicloud")
    assert "notBuilt" not in data
    assert (data["labelKey"], data["addon"], data["podResource"]) == (LABEL, "ack-ai-installer", "aliyun.com/gpu-mem")
    assert "use-labels-to-schedule-pods-to-gpu-accelerated-nodes" in data["source"]
