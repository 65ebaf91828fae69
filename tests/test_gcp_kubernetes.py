"""scheduler: kubernetes on GCP (GKE): the inputs registered with the mocks (camelCase), the plan and the diff."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from components.catalog import kubernetes as offers
from components.diff import diff_plans
from components.errors import ConfigError
from components.layout import gcp as gcp_layout
from components.layout.kubernetes import GPU_TAINT, gpu_labels
from components.plan import load_stack

from .conftest import ROOT, one, plan_values, resources_of, spec_of
from .test_layout_gcp import gcp_values

STACK = "gcp-gke-a3mega"
DATA = offers.offer("gcp")


def k8s_values(**cluster: Any) -> dict[str, Any]:
    return gcp_values(scheduler="kubernetes", **cluster)


def by_name(plan, type_suffix: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, type_suffix)}


def pools(plan) -> dict[str, dict[str, Any]]:
    return {r["inputs"]["name"]: r["inputs"] for r in resources_of(plan, "container/nodePool:NodePool")}


def objects(plan, kind: str) -> dict[str, dict[str, Any]]:
    found = [r for r in resources_of(plan, f":{kind}") if r["type"].startswith("kubernetes:")]
    return {r["inputs"]["metadata"]["name"]: r["inputs"] for r in found}


@pytest.fixture(scope="module")
def gke(stack_plan):
    return stack_plan(STACK)


@pytest.fixture(scope="module")
def a3high():
    return plan_values(k8s_values(instanceType="a3-highgpu-8g"))


@pytest.fixture(scope="module")
def a3ultra():
    return plan_values(k8s_values(instanceType="a3-ultragpu-8g", gpu="H200:8", spot=True))


# --- the control plane --------------------------------------------------------------------------


def test_control_plane_is_private_pinned_encrypted_and_multi_networked(gke):
    cluster = one(gke, "container/cluster:Cluster")["inputs"]
    assert cluster["name"] == "gke-a3mega"
    assert cluster["location"] == "us-central1" and cluster["nodeLocations"] == ["us-central1-a"]
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    # a private endpoint: only the host VPC is authorized, Google's public ranges are not
    assert cluster["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [{"cidrBlock": "10.42.0.0/16", "displayName": "host VPC"}],
        "gcpPublicCidrsAccessEnabled": False,
    }
    assert cluster["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": False}}
    assert cluster["minMasterVersion"] == "1.35"
    assert cluster["releaseChannel"] == {"channel": "REGULAR"}
    (exclusion,) = cluster["maintenancePolicy"]["maintenanceExclusions"]
    assert exclusion == {
        "exclusionName": "no-minor-or-node-upgrades-indefinite",
        "startTime": "2025-12-01T00:00:00Z",
        "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES", "endTimeBehavior": "UNTIL_END_OF_SUPPORT"},
    }
    assert cluster["databaseEncryption"] == {"state": "ENCRYPTED", "keyName": "<id of gke-a3mega-gcp-gke-key>"}
    # A3 Mega's 8 GPU VPCs are extra node networks: multi-networking on Dataplane V2
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH" and cluster["enableMultiNetworking"] is True
    assert cluster["networkingMode"] == "VPC_NATIVE"
    assert cluster["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "pods",
        "servicesSecondaryRangeName": "services",
    }
    assert cluster["removeDefaultNodePool"] is True and cluster["initialNodeCount"] == 1
    assert cluster["masterAuth"] == {"clientCertificateConfig": {"issueClientCertificate": False}}
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "my-gpu-project.svc.id.goog"}
    assert cluster["monitoringConfig"] == {
        "enableComponents": ["SYSTEM_COMPONENTS", "DCGM"],
        "managedPrometheus": {"enabled": True},
    }
    assert cluster["deletionProtection"] is True
    assert "description" not in cluster  # ForceNew: a changed description would replace the control plane
    assert {"gpu-cluster_cluster", "environment"} <= set(cluster["resourceLabels"])


def test_pods_and_services_ranges_sit_in_the_buddy_block_beside_the_gpu_subnets(gke):
    subnet = by_name(gke, "compute/subnetwork:Subnetwork")["gke-a3mega-gcp-nodes"]
    assert subnet["ipCidrRange"] == "10.42.0.0/16"
    # slots 12-15 and 11 of 10.43.0.0/16 split in /20s; the GPU subnets hold slots 0-7
    assert subnet["secondaryIpRanges"] == [
        {"rangeName": "pods", "ipCidrRange": "10.43.192.0/18"},
        {"rangeName": "services", "ipCidrRange": "10.43.176.0/20"},
    ]
    gpu = [s["ipCidrRange"] for n, s in by_name(gke, "compute/subnetwork:Subnetwork").items() if "gpu-" in n]
    assert gpu == [f"10.43.{16 * i}.0/20" for i in range(8)]


def test_the_cluster_key_is_used_by_the_two_service_agents_only(gke):
    key = one(gke, "kms/cryptoKey:CryptoKey")["inputs"]
    assert key["keyRing"] == "<id of gke-a3mega-gcp-gke-keyring>" and key["purpose"] == "ENCRYPT_DECRYPT"
    assert "name" not in key and "name" not in one(gke, "kms/keyRing:KeyRing")["inputs"]  # autonamed
    grants = by_name(gke, "kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
    assert {g["role"] for g in grants.values()} == {"roles/cloudkms.cryptoKeyEncrypterDecrypter"}
    assert {g["cryptoKeyId"] for g in grants.values()} == {"<id of gke-a3mega-gcp-gke-key>"}
    assert sorted(g["member"].split("@")[1] for g in grants.values()) == [
        "compute-system.iam.gserviceaccount.com",
        "container-engine-robot.iam.gserviceaccount.com",
    ]
    assert all(g["member"].startswith("serviceAccount:service-<project number") for g in grants.values())


# --- the node pools ---------------------------------------------------------------------------------


def test_gpu_pool_wires_8_gpu_vpcs_as_extra_node_networks_with_compact_placement(gke):
    gpu = pools(gke)["gpu"]
    extra = gpu["networkConfig"]["additionalNodeNetworkConfigs"]
    assert extra == [
        {"network": f"<autoname:gke-a3mega-gcp-gpu-{i}>", "subnetwork": f"<autoname:gke-a3mega-gcp-gpu-{i}-subnet>"}
        for i in range(8)
    ]
    assert gpu["networkConfig"]["enablePrivateNodes"] is True
    assert gpu["placementPolicy"] == {"type": "COMPACT"}
    assert gpu["nodeCount"] == 2 and gpu["nodeLocations"] == ["us-central1-a"]
    assert gpu["cluster"] == "<id of gke-a3mega-gcp-gke>" and gpu["location"] == "us-central1"
    assert gpu["management"] == {"autoRepair": True, "autoUpgrade": True}
    # counted from the pool's own networks, not the layout: wired equals rated
    summary = gke.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 1600
    assert summary["placement"] == "cluster" and summary["fabricUsable"] is True


def test_gpu_pool_node_config(gke):
    config = pools(gke)["gpu"]["nodeConfig"]
    assert config["machineType"] == "a3-megagpu-8g" and config["imageType"] == "COS_CONTAINERD"
    assert config["guestAccelerators"] == [
        {
            "type": "nvidia-h100-mega-80gb",
            "count": 8,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"},
        }
    ]
    assert config["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert GPU_TAINT["key"] == "nvidia.com/gpu" and GPU_TAINT["effect"] == "NoSchedule"
    assert config["labels"] == gpu_labels(spec_of(load_stack(ROOT, STACK).values, STACK))
    assert config["labels"]["gpu-cluster.dev/fabric"] == "gpudirect-tcpxo"
    assert config["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 16}
    assert config["gvnic"] == {"enabled": True}
    assert config["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
    assert config["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    # GKE reserves startup-script: no node bootstrap in the metadata
    assert config["metadata"] == {"disable-legacy-endpoints": "true"}
    assert config["bootDiskKmsKey"] == "<id of gke-a3mega-gcp-gke-key>"
    assert config["diskSizeGb"] == 200 and config["diskType"] == "pd-ssd"
    assert config["serviceAccount"] == "<email of gke-a3mega-gcp-sa>"
    assert config["oauthScopes"] == ["https://www.googleapis.com/auth/cloud-platform"]
    assert "spot" not in config and "reservationAffinity" not in config


def test_system_pool_is_small_cpu_untainted_and_private(gke):
    system = pools(gke)["system"]
    assert system["nodeConfig"]["machineType"] == DATA.systemInstanceType == "e2-standard-4"
    assert system["nodeCount"] == 2
    assert "taints" not in system["nodeConfig"] and "guestAccelerators" not in system["nodeConfig"]
    assert "additionalNodeNetworkConfigs" not in system["networkConfig"]
    assert system["networkConfig"]["enablePrivateNodes"] is True


def test_no_vm_nodes_with_kubernetes(gke):
    types = {r.type for r in gke.resources}
    assert not types & {
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "gcp:compute/instanceGroupManager:InstanceGroupManager",
        "gcp:compute/resourcePolicy:ResourcePolicy",
        "gcp:compute/healthCheck:HealthCheck",
    }


def test_a3_high_has_4_extra_networks_and_the_tcpx_installer(a3high):
    gpu = pools(a3high)["gpu"]
    assert len(gpu["networkConfig"]["additionalNodeNetworkConfigs"]) == 4
    assert a3high.summary()["fabricGbpsPerNode"] == a3high.summary()["fabricGbpsRated"]
    assert sorted(objects(a3high, "GKENetworkParamSet")) == ["vpc1", "vpc2", "vpc3", "vpc4"]
    daemonsets = objects(a3high, "DaemonSet")
    assert sorted(daemonsets) == ["device-injector", "nccl-tcpx-installer"]
    installer = daemonsets["nccl-tcpx-installer"]["spec"]["template"]["spec"]["initContainers"][0]
    assert installer["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9"


def test_a3_ultra_has_the_rdma_network_with_8_mrdma_subnets(a3ultra):
    gpu = pools(a3ultra)["gpu"]
    extra = gpu["networkConfig"]["additionalNodeNetworkConfigs"]
    assert extra[0]["network"] == "<autoname:test-gcp-gvnic-1>"
    assert [e["network"] for e in extra[1:]] == ["<autoname:test-gcp-roce>"] * 8
    assert [e["subnetwork"] for e in extra[1:]] == [f"<autoname:test-gcp-roce-{i}>" for i in range(8)]
    roce = by_name(a3ultra, "compute/network:Network")["test-gcp-roce"]
    assert roce["networkProfile"] == "projects/my-project/global/networkProfiles/us-central1-a-vpc-roce"
    # only the 8 RDMA networks count: 8 x 400 Gb/s
    summary = a3ultra.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 3200
    params = objects(a3ultra, "GKENetworkParamSet")
    assert params["gvnic-1"]["spec"]["deviceMode"] == "NetDevice"
    assert [params[f"rdma-{i}"]["spec"]["deviceMode"] for i in range(8)] == ["RDMA"] * 8
    assert params["rdma-3"]["spec"]["vpc"] == "<autoname:test-gcp-roce>"
    assert params["rdma-3"]["spec"]["vpcSubnet"] == "<autoname:test-gcp-roce-3>"
    assert gpu["nodeConfig"]["spot"] is True
    assert gpu["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32}
    (installer,) = objects(a3ultra, "DaemonSet").values()
    init = installer["spec"]["template"]["spec"]["initContainers"]
    assert [c["image"] for c in init] == ["us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1"]


def test_reservation_affinity_and_autoscaling():
    plan = plan_values(k8s_values(reservation="my-block", nodes=2, maxNodes=4, placement="none"))
    gpu = pools(plan)["gpu"]
    assert gpu["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["my-block"],
    }
    assert gpu["autoscaling"] == {"totalMinNodeCount": 2, "totalMaxNodeCount": 4}
    assert gpu["initialNodeCount"] == 2 and "nodeCount" not in gpu
    assert "placementPolicy" not in gpu


@pytest.mark.parametrize(("sizes", "bounds"), [({"minNodes": 0, "maxNodes": 4}, (0, 4)), ({"minNodes": 1}, (1, 2))])
def test_the_gpu_pool_scales_down_to_min_nodes_as_the_cost_row_says(sizes, bounds):
    """minNodes is the autoscaler's floor (it was ignored: the pool only grew from nodes), also without maxNodes."""
    plan = plan_values(k8s_values(nodes=2, placement="none", **sizes))
    gpu = pools(plan)["gpu"]
    assert gpu["autoscaling"] == {"totalMinNodeCount": bounds[0], "totalMaxNodeCount": bounds[1]}
    assert gpu["initialNodeCount"] == 2 and "nodeCount" not in gpu


def test_no_fabric_no_multi_networking():
    plan = plan_values(k8s_values(instanceType="g2-standard-8", gpu="L4:1", nodes=1))
    cluster = one(plan, "container/cluster:Cluster")["inputs"]
    assert "datapathProvider" not in cluster and "enableMultiNetworking" not in cluster
    assert "additionalNodeNetworkConfigs" not in pools(plan)["gpu"]["networkConfig"]
    assert not resources_of(plan, ":DaemonSet") and not resources_of(plan, ":GKENetworkParamSet")
    assert plan.summary()["fabricGbpsPerNode"] == 0


# --- in-cluster -----------------------------------------------------------------------------------


def test_network_objects_per_gpu_nic(gke):
    params, networks = objects(gke, "GKENetworkParamSet"), objects(gke, "Network")
    assert sorted(params) == sorted(networks) == sorted(f"vpc{i}" for i in range(1, 9))
    assert params["vpc1"]["spec"] == {
        "vpc": "<autoname:gke-a3mega-gcp-gpu-0>",
        "vpcSubnet": "<autoname:gke-a3mega-gcp-gpu-0-subnet>",
        "deviceMode": "NetDevice",
    }
    assert params["vpc1"]["apiVersion"] == "networking.gke.io/v1"
    assert networks["vpc8"]["spec"] == {
        "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": "vpc8"},
        "type": "Device",
    }


def test_tcpxo_daemonsets_pin_images_and_select_this_gpu(gke):
    daemonsets = objects(gke, "DaemonSet")
    assert sorted(daemonsets) == ["device-injector", "nccl-tcpxo-installer"]
    pod = daemonsets["nccl-tcpxo-installer"]["spec"]["template"]["spec"]
    assert daemonsets["nccl-tcpxo-installer"]["metadata"] == {
        "name": "nccl-tcpxo-installer",
        "namespace": "kube-system",
    }
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term == {
        "matchExpressions": [
            {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-h100-mega-80gb"]}
        ]
    }
    assert pod["tolerations"] == [{"operator": "Exists"}]
    images = [c["image"] for c in pod["initContainers"]]
    assert images == ["ubuntu", "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15"]
    assert pod["initContainers"][1]["args"][0].splitlines()[2] == "/scripts/container_entry.sh install --install-nccl"
    assert pod["containers"] == [{"name": "pause", "image": DATA.extra["fabricWorkloads"]["pause"]}]
    injector = daemonsets["device-injector"]["spec"]["template"]["spec"]["containers"][0]
    assert injector["image"].startswith("gcr.io/gke-release/nri-device-injector@sha256:")


def test_no_helm_release_on_gke(gke):
    # GKE installs the driver and runs the device plugin; DCGM metrics are GKE's own
    assert not resources_of(gke, "helm.sh/v3:Release")
    assert DATA.extra["releases"] == []
    provider = one(gke, "providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"


def test_outputs(gke):
    out = gke.run.outputs
    kube = out["kubernetes"]
    assert kube["clusterName"] == "gke-a3mega" and kube["endpoint"] == "<endpoint of gke-a3mega-gcp-gke>"
    assert kube["version"] == "1.35" and kube["nodePools"] == ["system", "gpu"]
    assert kube["credentials"] == (
        "gcloud container clusters get-credentials gke-a3mega --location us-central1 --project my-gpu-project"
        " --internal-ip"
    )
    assert kube["releases"] == []
    assert [w["name"] for w in kube["fabricWorkloads"]] == ["nccl-tcpxo-installer", "device-injector"]
    assert out["kubeconfig"] == "[secret]"
    assert out["nodeGroup"] == "gpu" and out["imageId"] == "COS_CONTAINERD"


def test_kubeconfig_uses_the_gke_auth_plugin():
    from components.gcp.kubernetes import KUBECONFIG

    doc = yaml.safe_load(KUBECONFIG.format(name="c", endpoint="10.0.0.2", ca="Q0E="))
    assert doc["clusters"][0]["cluster"] == {"server": "https://10.0.0.2", "certificate-authority-data": "Q0E="}
    assert doc["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


def test_public_endpoint_only_from_public_cidrs():
    plan = plan_values(k8s_values(kubernetes={"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]}))
    cluster = one(plan, "container/cluster:Cluster")["inputs"]
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": False}
    assert cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [
        {"cidrBlock": "203.0.113.0/24", "displayName": "kubernetes.publicCidrs"}
    ]
    assert not plan.run.outputs["kubernetes"]["credentials"].endswith("--internal-ip")
    assert not [v for v in plan.violations() if v.rule == "kubernetes-private-endpoint"]


# --- the policy pack and the diff ----------------------------------------------------------------


def test_policies_pass(gke):
    """Every mandatory rule passes, Google's privileged NCCL DaemonSets included: the kubernetes-workloads rule
    admits them as the pinned fabric workloads of catalog/kubernetes/gcp.yaml (name, namespace and images)."""
    assert not [v for v in gke.violations() if v.level == "mandatory"]
    assert {r.inputs["metadata"]["name"] for r in gke.resources if r.type == "kubernetes:apps/v1:DaemonSet"} <= set(
        DATA.extra["fabricWorkloads"]["daemonSets"]
    )


def _json(plan) -> dict[str, Any]:
    return json.loads(json.dumps(plan.as_json(), default=str))


def test_a_control_plane_replacement_is_data_loss():
    old = _json(plan_values(k8s_values()))
    # an n1 pool has no extra networks: no multi-networking, a datapath change, which is ForceNew
    new = _json(plan_values(k8s_values(instanceType="n1-standard-4", gpu="T4:1", nodes=2)))
    diff = diff_plans(old, new)
    loss = [w for w in diff.warnings if w.startswith("DATA LOSS") and "container/cluster:Cluster" in w]
    assert loss and "datapathProvider" in loss[0] and "`test-gcp-gke`" in loss[0]


def test_opening_the_endpoint_is_an_update_of_the_control_plane():
    old = _json(plan_values(k8s_values()))
    new = _json(plan_values(k8s_values(kubernetes={"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]})))
    diff = diff_plans(old, new)
    assert not [w for w in diff.warnings if "container/cluster:Cluster" in w]


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "key", "words"),
    [
        ({"kubernetes": {"serviceMonitor": True}}, "kubernetes.serviceMonitor", "managed DCGM"),
        (
            {"storage": {"shared": {"kind": "lustre", "sizeGb": 18000, "throughput": 1000, "path": "/shared"}}},
            "storage.shared",
            "GKE nodes",
        ),
        ({"network": {"cidr": "10.42.0.0/24"}, "nodes": 2}, "network.cidr", "pods the range"),
        ({"gcp": {"flexStart": True}}, "gcp.flexStart", "flex-start node pools are not built"),
    ],
)
def test_bad_input_names_the_key(cluster, key, words):
    with pytest.raises(ConfigError) as info:
        gcp_layout.plan(spec_of(k8s_values(**copy.deepcopy(cluster))))
    assert info.value.key == f"gpu-cluster:cluster.{key}" and words in str(info.value)


def test_placement_max_distance_is_said_to_be_ignored():
    layout = gcp_layout.plan(spec_of(k8s_values(gcp={"placementMaxDistance": 2})))
    assert any(w.startswith("gpu-cluster:cluster.gcp.placementMaxDistance:") for w in layout.warnings)
    assert layout.kubernetes is not None and layout.kubernetes.gpu.compact


def test_the_data_lists_the_versions_with_a_source():
    assert DATA.service == "GKE" and DATA.default in DATA.versions and DATA.read == "2026-12-01"
    assert "release-notes" in DATA.source


def test_the_gpu_pool_size_changes_in_place_its_initial_count_given_once_and_ignored(gke):
    """Issue 28: growing a GKE pool (nodes, maxNodes) is in place; initialNodeCount, which replaces the pool when it
    changes, is set once and ignored after (nodeCount or the autoscaler's bounds carry the size)."""
    for r in resources_of(gke, "container/nodePool:NodePool"):
        assert r["inputs"]["initialNodeCount"] == r["inputs"]["nodeCount"]
        assert r["ignoreChanges"] == ["initialNodeCount"]
