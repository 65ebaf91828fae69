"""kubernetes.gpuSharing (time-slicing, MPS, MIG) per cloud, from the inputs registered with the mocks: GKE's node pool
gpuSharingConfig / gpuPartitionSize, AKS's agent pool gpuInstanceProfile, and the NVIDIA device plugin config in the
GPU operator's or device plugin's Helm values (EKS, AKS); the refusals, one keyed line each; the plan's count of
workloads per GPU."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components.catalog import kubernetes as offers
from components.catalog import mig_profiles
from components.diff import diff_plans
from components.errors import ConfigErrors
from components.layout.kubernetes import MIG_CONFIG_LABEL, PLUGIN_CONFIG, PLUGIN_CONFIG_MAP
from components.plan.render import kubernetes_rows
from components.spec import build_spec

from .conftest import aws_values, plan_values, resources_of, spec_of
from .test_alicloud_resources import alicloud_values
from .test_azure_resources import azure_values
from .test_layout_gcp import gcp_values

K = "gpu-cluster:cluster.kubernetes.gpuSharing"


def kube(values: dict[str, Any], **sharing: Any) -> dict[str, Any]:
    cluster = values["gpu-cluster:cluster"]
    cluster["scheduler"] = "kubernetes"
    cluster.setdefault("kubernetes", {})["gpuSharing"] = sharing
    return values


def errors_of(values: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(values, "test")
    return [(e.key, e.message) for e in info.value.errors]


def releases(plan) -> dict[str, dict[str, Any]]:
    return {r["inputs"]["name"]: r["inputs"]["values"] for r in resources_of(plan, "helm.sh/v3:Release")}


def as_json(plan) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(plan.as_json(), default=str))
    return loaded


def plugin_config(text: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


# --- GKE: the node pool's own sharing ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gke_time_sharing():
    return plan_values(kube(gcp_values(instanceType="a3-highgpu-8g"), mode="timeSlicing", replicas=4))


@pytest.fixture(scope="module")
def gke_mig():
    return plan_values(kube(gcp_values(instanceType="a3-highgpu-8g"), mode="mig", migProfile="1g.10gb"))


def gpu_pool(plan) -> dict[str, Any]:
    (pool,) = [r["inputs"] for r in resources_of(plan, "container/nodePool:NodePool") if r["inputs"]["name"] == "gpu"]
    return pool


def test_gke_time_sharing_is_the_pool_gpu_sharing_config(gke_time_sharing):
    (accelerator,) = gpu_pool(gke_time_sharing)["nodeConfig"]["guestAccelerators"]
    assert accelerator["gpuSharingConfig"] == {"gpuSharingStrategy": "TIME_SHARING", "maxSharedClientsPerGpu": 4}
    assert "gpuPartitionSize" not in accelerator
    labels = gpu_pool(gke_time_sharing)["nodeConfig"]["labels"]
    assert labels["gpu-cluster.dev/gpu-sharing"] == "timeSlicing" and labels["gpu-cluster.dev/pods-per-gpu"] == "4"
    # GKE runs its own device plugin: no NVIDIA chart, so no device plugin config
    assert releases(gke_time_sharing) == {}


def test_gke_mig_is_the_pool_gpu_partition_size(gke_mig):
    (accelerator,) = gpu_pool(gke_mig)["nodeConfig"]["guestAccelerators"]
    assert accelerator["gpuPartitionSize"] == "1g.10gb" and "gpuSharingConfig" not in accelerator
    assert gpu_pool(gke_mig)["nodeConfig"]["labels"]["gpu-cluster.dev/pods-per-gpu"] == "7"


def test_changing_gke_sharing_replaces_the_gpu_pool(gke_time_sharing, gke_mig):
    """As the update table says (cluster.kubernetes.gpuSharing on gcp: replace): the guest accelerator is ForceNew."""
    diff = diff_plans(as_json(gke_time_sharing), as_json(gke_mig))
    (pool,) = [c for c in diff.changed if c.name.endswith("-pool-gpu")]
    assert pool.verdict == "replace" and any("guestAccelerators" in r for r in pool.reasons), pool.reasons
    assert [c.policy for c in diff.spec_changes if c.key == "cluster.kubernetes.gpuSharing.mode"] == ["replace"]


def test_the_plan_says_how_many_workloads_share_a_gpu(gke_time_sharing, gke_mig):
    shared = gke_time_sharing.summary()["kubernetes"]["gpuSharing"]
    assert shared == {
        "mode": "timeSlicing",
        "mechanism": "nodePool",
        "migProfile": None,
        "workloadsPerGpu": 4,
        "gpusPerNode": 8,
        "workloadsPerNode": 32,
        "workloadsAtMaxNodes": 32 * gke_time_sharing.spec.max_nodes,
        "hourlyUsdPerWorkload": round(gke_time_sharing.spec.instance.hourlyUsd / 32, 4),
    }
    rows = dict(kubernetes_rows(gke_mig.summary()["kubernetes"]))
    per_gpu = mig_profiles(gke_mig.spec.instance)["1g.10gb"]  # type: ignore[index]
    assert rows["GPU sharing"] == (
        f"mig 1g.10gb (nodePool): {per_gpu} workloads per GPU x 8 GPUs = {per_gpu * 8} per node, "
        f"{per_gpu * 8 * gke_mig.spec.max_nodes} at maxNodes; "
        f"${gke_mig.spec.instance.hourlyUsd / (per_gpu * 8):.4f}/h a workload"
    )


# --- AKS: gpuInstanceProfile for MIG, the device plugin config for time-slicing and MPS ----------------------------


@pytest.fixture(scope="module")
def aks_mig():
    return plan_values(kube(azure_values(), mode="mig", migProfile="1g.10gb"))


def test_aks_mig_is_the_agent_pool_gpu_instance_profile(aks_mig):
    (pool,) = [r["inputs"] for r in resources_of(aks_mig, "containerservice:AgentPool")]
    assert pool["gpuInstanceProfile"] == "MIG1g"
    operator = releases(aks_mig)["gpu-operator"]
    # AKS splits the GPUs; the operator advertises each instance as nvidia.com/gpu and its MIG manager stays off
    assert operator["mig"] == {"strategy": "single"} and operator["migManager"] == {"enabled": False}
    assert "config" not in operator.get("devicePlugin", {})


def test_aks_time_slicing_is_the_device_plugin_chart_config_map():
    plan = plan_values(kube(azure_values(kubernetes={"gpuSoftware": "device-plugin"}), mode="timeSlicing", replicas=3))
    values = releases(plan)["nvidia-device-plugin"]
    assert values["config"]["default"] == PLUGIN_CONFIG
    assert plugin_config(values["config"]["map"][PLUGIN_CONFIG]) == {
        "version": "v1",
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}},
    }
    (pool,) = [r["inputs"] for r in resources_of(plan, "containerservice:AgentPool")]
    assert "gpuInstanceProfile" not in pool and pool["nodeLabels"]["gpu-cluster.dev/gpu-sharing"] == "timeSlicing"


# --- EKS: the GPU operator's device plugin config and MIG manager ----------------------------------------------------


def test_eks_mps_is_the_operator_device_plugin_config_map():
    plan = plan_values(kube(aws_values(), mode="mps", replicas=4))
    config = releases(plan)["gpu-operator"]["devicePlugin"]["config"]
    assert {k: config[k] for k in ("create", "name", "default")} == {
        "create": True,
        "name": PLUGIN_CONFIG_MAP,
        "default": PLUGIN_CONFIG,
    }
    assert plugin_config(config["data"][PLUGIN_CONFIG]) == {
        "version": "v1",
        "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    }
    (group,) = [r["inputs"] for r in resources_of(plan, "eks/nodeGroup:NodeGroup") if "gpu" in r["name"]]
    assert group["labels"]["gpu-cluster.dev/gpu-sharing"] == "mps" and MIG_CONFIG_LABEL not in group["labels"]


def test_eks_mig_labels_the_group_for_the_operator_mig_manager():
    plan = plan_values(kube(aws_values(), mode="mig", migProfile="3g.40gb"))
    (group,) = [r["inputs"] for r in resources_of(plan, "eks/nodeGroup:NodeGroup") if "gpu" in r["name"]]
    assert group["labels"][MIG_CONFIG_LABEL] == "all-3g.40gb"
    assert group["labels"]["gpu-cluster.dev/pods-per-gpu"] == "2"
    operator = releases(plan)["gpu-operator"]
    assert operator["mig"] == {"strategy": "single"} and operator["migManager"] == {"enabled": True}


# --- refusals: one keyed line each ------------------------------------------------------------------------------


def test_keys_that_do_not_fit_the_mode_are_refused():
    assert errors_of(kube(aws_values(), mode="none", replicas=4, migProfile="1g.10gb")) == [
        (f"{K}.replicas", "set, but mode is none: replicas are for timeSlicing and mps"),
        (f"{K}.migProfile", "set, but mode is none: a MIG profile is for mode mig"),
    ]
    assert errors_of(kube(aws_values(), mode="timeSlicing")) == [
        (f"{K}.replicas", "missing: mode timeSlicing needs the pods that share one GPU (2+)")
    ]
    assert errors_of(kube(aws_values(gpuPartition="1g.10gb"), mode="mig")) == [
        (
            "gpu-cluster:cluster.gpuPartition",
            "set with kubernetes.gpuSharing mode mig: the pool's MIG profile is gpuSharing.migProfile alone; drop it",
        ),
        (f"{K}.migProfile", "missing: mode mig needs the profile every GPU is split into, e.g. 1g.10gb"),
    ]


def test_mig_on_a_gpu_without_mig_is_refused():
    got = errors_of(kube(gcp_values(gpu="L4:1", instanceType="g2-standard-4"), mode="mig", migProfile="1g.10gb"))
    assert got == [
        (
            f"{K}.mode",
            "mig, but the L4 GPUs of g2-standard-4 have no MIG (catalog/mig.yaml); use timeSlicing or mps",
        )
    ]


def test_a_profile_the_gpu_does_not_have_is_refused():
    got = errors_of(kube(aws_values(), mode="mig", migProfile="1g.5gb"))
    assert got == [
        (
            f"{K}.migProfile",
            "got '1g.5gb'; H100 takes 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb (NVIDIA MIG User Guide)",
        )
    ]


def test_more_clients_than_gke_allows_are_refused():
    (got,) = errors_of(kube(gcp_values(instanceType="a3-highgpu-8g"), mode="mps", replicas=49))
    assert got[0] == f"{K}.replicas" and got[1].startswith("49, but gcp shares a GPU between at most 48 (")
    assert offers.sharing("gcp")["mps"]["maxReplicas"] == 48


def test_eks_mig_needs_the_operator():
    got = errors_of(kube(aws_values(kubernetes={"gpuSoftware": "device-plugin"}), mode="mig", migProfile="1g.10gb"))
    assert got == [
        (
            "gpu-cluster:cluster.kubernetes.gpuSoftware",
            "device-plugin with gpuSharing mode mig: "
            + " ".join(offers.sharing("aws")["mig"]["refusedWithout"].split()),
        )
    ]


def test_aks_takes_one_profile_per_slice_size():
    (got,) = errors_of(kube(azure_values(), mode="mig", migProfile="1g.20gb"))
    assert got == (
        f"{K}.migProfile",
        "1g.20gb on azure: the pool's gpuInstanceProfile (MIG1g, MIG2g, MIG3g, MIG4g, MIG7g) takes one profile per "
        "slice size, its smallest; H100 takes 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb",
    )


def test_ack_mig_is_refused_with_the_reason():
    # ACK's own sharing (timeSlicing, mps) is built: tests/test_ack_gpu_sharing.py
    (got,) = errors_of(kube(alicloud_values(), mode="mig", migProfile="1g.10gb"))
    assert got[0] == f"{K}.mode" and got[1].startswith("mig is not built on alicloud: ACK's MIG label")


# --- Slurm: MIG instances and MPS as GRES ---------------------------------------------------------------------------


def test_slurm_mps_with_mig_and_mig_on_elastic_partitions_are_refused():
    assert errors_of(aws_values(scheduler="slurm", gpuPartition="1g.10gb", slurm={"mps": True})) == [
        (
            "gpu-cluster:cluster.slurm.mps",
            "true with gpuPartition 1g.10gb: the MPS GRES is built over whole GPUs (Gres=mps:<100 per GPU>), not over "
            "MIG instances; drop one of them",
        )
    ]
    partitions = [{"name": "h100", "maxNodes": 2}]
    spec_of(aws_values(scheduler="slurm", nodes=0, slurm={"mps": True, "partitions": partitions}))  # MPS is built there
    got = errors_of(aws_values(scheduler="slurm", nodes=0, gpuPartition="1g.10gb", slurm={"partitions": partitions}))
    assert [key for key, _ in got] == ["gpu-cluster:cluster.gpuPartition"]
    assert got[0][1].startswith("1g.10gb with slurm.partitions: an elastic partition's CLOUD nodes take no AutoDetect")
