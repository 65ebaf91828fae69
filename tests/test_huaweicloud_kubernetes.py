"""`scheduler: kubernetes` on Huawei Cloud (CCE): the inputs registered with the mocks (camelCase), the GPU nodes'
bootstrap, the kubeconfig output, and what the spec and the layout refuse."""

from __future__ import annotations

import base64
import json

import pytest

from components.catalog import kubernetes as kubernetes_offers
from components.errors import ConfigError, ConfigErrors
from components.layout.huaweicloud.kubernetes import CCE_BOOTSTRAP, cce_bootstrap, cce_offer
from components.layout.kubernetes import GPU_TAINT

from .conftest import ROOT, load_stack, one, plan_values, resources_of
from .test_huaweicloud_resources import huawei_values

STACK = "huaweicloud-cce"
POOL = "Cce/nodePool:NodePool"


def cce_values(**cluster):
    base = {"scheduler": "kubernetes", "nodeGroup": "managed", "storage": {"scratch": "none"}, "fabric": "none"}
    return huawei_values(**{**base, "tags": {"environment": "dev"}, **cluster})


@pytest.fixture(scope="module")
def plan(stack_plan):
    return stack_plan(STACK)


def pool(plan, suffix):
    found = [r for r in resources_of(plan, POOL) if r["name"].endswith(suffix)]
    assert len(found) == 1, found
    return found[0]["inputs"]


def test_shipped_stack_plans_with_every_policy_passing(plan):
    doc = plan.as_json()
    assert doc["policy"] == []
    assert not [w for w in doc["warnings"] if w.startswith("offline plan:")]  # every invoke answered
    kube = doc["summary"]["kubernetes"]
    assert kube["service"] == "CCE" and kube["endpoint"] == "private"
    assert kube["nodePools"] == ["hw-cce-huaweicloud-gpu", "hw-cce-huaweicloud-system"]
    # the ECS node path is not taken: no GPU instance, only the login node
    assert [r["name"] for r in resources_of(plan, "Ecs/instance:Instance")] == ["hw-cce-huaweicloud-login"]


def test_cluster_is_private_pinned_and_in_the_stacks_vpc(plan):
    cluster = one(plan, "Cce/cluster:Cluster")["inputs"]
    assert cluster["clusterVersion"] == "v1.36"
    assert cluster["flavorId"] == "cce.s1.small"
    assert "eip" not in cluster  # no public API endpoint
    assert cluster["vpcId"] == "<id of hw-cce-huaweicloud-vpc>"
    assert cluster["subnetId"] == "<id of hw-cce-huaweicloud-nodes>"
    assert cluster["containerNetworkType"] == "vpc-router"
    assert cluster["containerNetworkCidr"] == "172.16.0.0/16" and cluster["serviceNetworkCidr"] == "10.247.0.0/16"
    assert cluster["chargingMode"] == "postPaid"
    assert cluster["tags"]["gpu-cluster:cluster"] == "hw-cce" and cluster["tags"]["environment"] == "dev"


def test_gpu_pool_has_the_flavor_taint_labels_agency_and_disks_on_the_dew_key(plan):
    gpu = pool(plan, "-gpu")
    key = f"<id of {one(plan, 'Dew/key:Key')['name']}>"
    assert gpu["clusterId"] == "<id of hw-cce-huaweicloud-cce>"
    assert gpu["flavorId"] == "pi2.2xlarge.4" and gpu["initialNodeCount"] == 2
    assert "scallEnable" not in gpu and "minNodeCount" not in gpu  # a fixed pool
    assert gpu["os"] == "Huawei Cloud EulerOS 2.0" and gpu["runtime"] == "containerd"
    assert gpu["taints"] == [GPU_TAINT]
    assert gpu["labels"]["gpu-cluster.dev/gpu"] == "t4" and gpu["labels"]["gpu-cluster.dev/gpus"] == "1"
    assert gpu["rootVolume"] == {"size": 200, "volumetype": "GPSSD", "kmsKeyId": key}
    assert gpu["dataVolumes"] == [{"size": 100, "volumetype": "GPSSD", "kmsKeyId": key}]
    assert gpu["extendParams"]["agencyName"] == "hw-cce-huaweicloud-cce-nodes"
    # the script beside the agency: a top-level postinstall makes the provider drop extend_params (agency and all)
    assert "postinstall" not in gpu and gpu["extendParams"]["postinstall"].startswith("#!/bin/bash")
    assert gpu["keyPair"] == "hw-cce-huaweicloud-cce"
    assert gpu["tags"]["Name"] == "hw-cce-gpu" and gpu["tags"]["environment"] == "dev"


def test_system_pool_is_cpu_untainted_and_unlabelled(plan):
    system = pool(plan, "-system")
    assert system["flavorId"] == "s6.xlarge.2" and system["initialNodeCount"] == 2
    assert "taints" not in system and "labels" not in system and "postinstall" not in system
    assert system["extendParams"] == {"agencyName": "hw-cce-huaweicloud-cce-nodes"}


def test_gpu_addon_installs_ccess_recommended_driver(plan):
    addon = one(plan, "Cce/addon:Addon")["inputs"]
    assert addon["templateName"] == "gpu-beta" and addon["clusterId"] == "<id of hw-cce-huaweicloud-cce>"
    custom = json.loads(addon["values"]["customJson"])
    assert custom == {
        "nvidia_driver_download_url": "https://us.download.nvidia.com/tesla/535.216.03/NVIDIA-Linux-x86_64-535.216.03.run"
    }
    assert plan.as_json()["summary"]["gpuDriver"] == "NVIDIA 535.216.03 (installed by CCE's gpu-beta add-on)"


def test_gpu_nodes_bootstrap_fits_cces_script_limit_without_driver_or_docker_exporter(plan):
    script = pool(plan, "-gpu")["extendParams"]["postinstall"]
    assert len(base64.b64encode(script.encode())) <= int(cce_offer()["scriptMaxChars"])
    assert f"exec bash {CCE_BOOTSTRAP}" in script
    inner = cce_bootstrap(script)
    assert "gpu-cluster-health.service" in inner
    assert "gpu-cluster-dcgm-exporter.service" not in inner  # the in-cluster release runs it
    assert "NVIDIA-Linux" not in inner  # the add-on installs the driver


def test_releases_go_through_the_clusters_kubeconfig(plan):
    releases = {r["inputs"]["chart"] for r in resources_of(plan, "helm.sh/v3:Release")}
    assert releases == {"dcgm-exporter", "kube-prometheus-stack"}  # gpuSoftware device-plugin, prometheus auto
    provider = one(plan, "providers:kubernetes")["inputs"]
    assert provider["kubeconfig"] == "[secret]"  # cce.Cluster kube_config_raw, kept secret


def test_kubeconfig_is_a_secret_output(plan):
    outputs = plan.run.outputs
    assert outputs["kubeconfig"] == "[secret]"
    assert outputs["kubernetes"]["credentials"].startswith("pulumi stack output kubeconfig --show-secrets")


def test_placement_spread_puts_the_gpu_pool_in_a_server_group():
    plan = plan_values(cce_values(gpu="T4:1", nodes=2, placement="spread"))
    group = one(plan, "Ecs/servergroup:Servergroup")
    assert group["inputs"]["policies"] == ["anti-affinity"]
    gpu = pool(plan, "-gpu")
    assert gpu["ecsGroupId"] == f"<id of {group['name']}>"
    assert "ecsGroupId" not in pool(plan, "-system")


def addons(plan):
    return {r["inputs"]["templateName"]: r for r in resources_of(plan, "Cce/addon:Addon")}


def test_the_shipped_fixed_pool_gets_no_autoscaler(plan):
    assert set(addons(plan)) == {"gpu-beta"}
    assert plan.run.outputs["kubernetes"]["autoscaling"] is None


@pytest.mark.parametrize(("kube", "addon_version"), [("1.36", "1.36.2"), ("1.35", "1.35.29")])
def test_a_scaling_pool_gets_its_range_and_cces_autoscaler_for_its_version(kube, addon_version):
    plan = plan_values(cce_values(nodes=2, minNodes=1, maxNodes=4, kubernetes={"version": kube}))
    gpu = pool(plan, "-gpu")
    assert (gpu["scallEnable"], gpu["minNodeCount"], gpu["maxNodeCount"]) == (True, 1, 4)
    autoscaler = addons(plan)["autoscaler"]
    inputs = autoscaler["inputs"]
    assert inputs["clusterId"] == "<id of test-huaweicloud-cce>" and inputs["version"] == addon_version
    custom = json.loads(inputs["values"]["customJson"])
    # the mandatory ids, and scale-in off: a GPU node running a pod is never drained
    assert custom == {
        "cluster_id": "<id of test-huaweicloud-cce>",
        "tenant_id": "<id of project cn-north-4>",
        "scaleDownEnabled": False,
        "scaleUpUnscheduledPodEnabled": True,
    }
    # the flavor is the template's own (CCE's answer at deploy), not a number made up here
    assert json.loads(inputs["values"]["flavorJson"]).startswith("<resolved at deploy: flavor1 of CCE add-on")
    doc = plan.as_json()
    assert plan.run.outputs["kubernetes"]["autoscaling"] == {
        "minNodes": 1,
        "maxNodes": 4,
        "addon": f"autoscaler {addon_version}",
    }
    warning = [w for w in doc["warnings"] if w.startswith("gpu-cluster:cluster.maxNodes: CCE's autoscaler add-on")]
    assert warning and "scale-in off" in warning[0] and "is not built" not in warning[0]
    assert not any("not built here" in w for w in doc["warnings"])
    assert not [w for w in doc["warnings"] if w.startswith("offline plan:")]  # both invokes answered


def test_every_version_cce_creates_has_its_autoscaler_version():
    # the spec admits the catalog's versions; the layout looks each up in autoscalerAddon.versions
    data = kubernetes_offers.offer("huaweicloud")
    assert data is not None
    versions = cce_offer()["autoscalerAddon"]["versions"]
    assert set(versions) == set(data.versions)
    # CCE numbers the add-on by the cluster's minor version (cce_bulletin_0042)
    assert all(v.startswith(f"{k}.") for k, v in versions.items())


def test_the_plan_warns_that_secrets_are_not_envelope_encrypted(plan):
    assert any("not envelope-encrypted with a DEW key" in w for w in plan.as_json()["warnings"])
    assert not any("CCE API server is private" in w for w in plan.as_json()["warnings"])  # the stack has a login node


def test_without_a_login_node_the_plan_says_where_the_private_api_is_reached_from():
    warnings = plan_values(cce_values()).as_json()["warnings"]
    assert any(w.startswith("gpu-cluster:cluster.login: not set, and the CCE API server is private") for w in warnings)


@pytest.mark.parametrize(
    ("cluster", "key"),
    [
        ({"storage": {"scratch": "disk", "scratchGb": 200}}, "gpu-cluster:cluster.storage.scratch"),
        ({"image": "0b30658a-ed1a-4922-b8f7-a673ca9c1234"}, "gpu-cluster:cluster.image"),
        ({"nodes": 1, "minNodes": 0, "maxNodes": 2}, "gpu-cluster:cluster.minNodes"),
        ({"nodes": 40, "maxNodes": 49}, "gpu-cluster:cluster.maxNodes"),  # 49 GPU + 2 system nodes > 50
        ({"kubernetes": {"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]}}, "kubernetes.publicEndpoint"),
        ({"kubernetes": {"gpuSharing": {"mode": "mps", "replicas": 2}}}, "kubernetes.gpuSharing.mode"),
    ],
)
def test_what_cce_cannot_take_is_refused_before_any_resource(cluster, key):
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(cce_values(**cluster))
    assert key in str(info.value)


def test_managed_without_kubernetes_is_an_as_group_not_a_cce_pool():
    # nodeGroup managed is the CCE pool with scheduler kubernetes only; without it, an AS group (test_huaweicloud_as.py)
    key = load_stack(ROOT, "huaweicloud-as").values["gpu-cluster:cluster"]["sshPublicKey"]  # AS needs a key pair
    plan = plan_values(huawei_values(nodeGroup="managed", sshPublicKey=key))
    assert not resources_of(plan, "Cce/nodePool:NodePool") and len(resources_of(plan, "As/group:Group")) == 1
