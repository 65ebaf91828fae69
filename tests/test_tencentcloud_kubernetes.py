"""`scheduler: kubernetes` on Tencent Cloud (TKE): the inputs registered with the mocks (camelCase), the policy's
reading of them, and what the layout refuses (keyed, before any resource)."""

from __future__ import annotations

import pytest

from components.errors import ConfigError
from components.layout.kubernetes import GPU_TAINT, gpu_labels
from components.layout.tencentcloud.kubernetes import tke_problems
from components.policy import evaluate
from components.policy.model import Resource

from .conftest import one, plan_stack, plan_values, resources_of, spec_of

STACK = "tencentcloud-tke"
POOL = "Kubernetes/nodePool:NodePool"
INSTANCE = "tencentcloud:Instance/instance:Instance"


def tke_values(**cluster):
    base = {
        "name": "tc-k8s",
        "instanceType": "GN7.2XLARGE32",
        "fabric": "none",
        "nodes": 1,
        "scheduler": "kubernetes",
        "storage": {"scratch": "disk", "scratchGb": 100},
        "network": {"cidr": "10.70.0.0/16"},
        "tags": {"environment": "test"},
    }
    base.update(cluster)
    return {"gpu-cluster:cloud": "tencentcloud", "tencentcloud:region": "ap-guangzhou", "gpu-cluster:cluster": base}


@pytest.fixture(scope="module")
def plan():
    return plan_stack(STACK)


def by_name(plan, suffix):
    found = [r.as_json() for r in plan.resources if r.name.endswith(suffix)]
    assert len(found) == 1, f"expected one resource named *{suffix}, found {len(found)}"
    return found[0]


def test_control_plane_is_managed_pinned_and_networked_beside_the_vpc(plan):
    cluster = one(plan, "Kubernetes/cluster:Cluster")["inputs"]
    assert cluster["clusterDeployType"] == "MANAGED_CLUSTER"
    assert cluster["clusterVersion"] == "1.34.1"  # kubernetes.version 1.34, the patch of catalog/kubernetes
    assert cluster["vpcId"] == "<id of tc-tke-tencentcloud-vpc>"
    assert cluster["networkType"] == "GR" and cluster["containerRuntime"] == "containerd"
    # the VPC is 10.64.0.0/16: the first pod and service ranges of the data overlap neither it nor each other
    assert cluster["clusterCidr"] == "172.20.0.0/16" and cluster["serviceCidr"] == "172.21.0.0/20"
    assert cluster["clusterOs"] == "ubuntu22.04x86_64"
    assert "clusterInternet" not in cluster and "workerConfigs" not in cluster  # endpoints: ClusterEndpoint
    assert cluster["tags"]["gpu-cluster:cluster"] == "tc-tke"


def test_api_endpoint_is_private_in_the_nodes_subnet_after_the_system_pool(plan):
    endpoint = one(plan, "Kubernetes/clusterEndpoint:ClusterEndpoint")
    inputs = endpoint["inputs"]
    depends = next(r for r in plan.resources if r.urn == endpoint["urn"]).dependencies
    assert inputs["clusterIntranet"] is True
    assert inputs["clusterIntranetSubnetId"] == "<id of tc-tke-tencentcloud-nodes>"
    assert inputs["clusterInternet"] is False and "clusterInternetSecurityGroup" not in inputs
    # TKE opens an endpoint only on a cluster with a node (cluster.py cluster_intranet)
    assert by_name(plan, "-tencentcloud-system")["urn"] in depends
    assert all("tke-api" not in r["name"] for r in resources_of(plan, "Security/group:Group"))
    assert plan.as_json()["summary"]["kubernetes"]["endpoint"] == "private"


def test_gpu_pool_autoscales_from_zero_with_labels_taint_role_key_and_a_tke_mounted_scratch(plan):
    pool = by_name(plan, "-tencentcloud-gpu")["inputs"]
    assert (pool["minSize"], pool["maxSize"]) == (0, 2)
    assert pool["enableAutoScale"] is True and "desiredCapacity" not in pool  # computed by the autoscaler
    assert pool["deleteKeepInstance"] is False
    assert pool["labels"] == gpu_labels(plan.spec) and pool["labels"]["gpu-cluster.dev/gpu"] == "t4"
    assert pool["taints"] == [GPU_TAINT]
    assert pool["nodeOs"] == "ubuntu22.04x86_64"
    config = pool["autoScalingConfig"]
    assert config["instanceType"] == "GN7.2XLARGE32"
    assert config["camRoleName"] == "tc-tke-tencentcloud-tke-nodes"
    assert config["keyIds"] == ["<id of tc-tke-tencentcloud-key>"]
    assert config["orderlySecurityGroupIds"] == ["<id of tc-tke-tencentcloud-sg>"]
    assert config["publicIpAssigned"] is False
    assert config["instanceChargeType"] == "POSTPAID_BY_HOUR"
    assert config["systemDiskType"] == "CLOUD_SSD"
    assert config["dataDisks"] == [
        {"diskType": "CLOUD_SSD", "diskSize": 200, "encrypt": True, "deleteWithInstance": True}
    ]
    assert pool["nodeConfig"]["dataDisks"] == [
        {
            "diskType": "CLOUD_SSD",
            "diskSize": 200,
            "fileSystem": "xfs",
            "autoFormatAndMount": True,
            "mountTarget": plan.spec.storage.scratch_path,
        }
    ]
    assert pool["tags"]["Name"] == "tc-tke-gpu"


def test_system_pool_is_two_cpu_nodes_without_taint_or_scratch(plan):
    pool = by_name(plan, "-tencentcloud-system")["inputs"]
    assert (pool["minSize"], pool["desiredCapacity"], pool["maxSize"]) == (2, 2, 2)
    assert pool["enableAutoScale"] is False
    assert pool["autoScalingConfig"]["instanceType"] == "S5.LARGE8"
    assert "taints" not in pool and "labels" not in pool
    assert "dataDisks" not in pool["autoScalingConfig"]


def test_no_cvm_gpu_instances_only_the_login_node(plan):
    instances = resources_of(plan, "Instance/instance:Instance")
    assert [r["name"] for r in instances] == ["tc-tke-tencentcloud-login"]


def test_secrets_are_encrypted_with_a_key_of_their_own(plan):
    key = one(plan, "Kms/key:Key")
    protection = one(plan, "Kubernetes/encryptionProtection:EncryptionProtection")["inputs"]
    assert key["inputs"]["keyUsage"] == "ENCRYPT_DECRYPT" and key["inputs"]["isEnabled"] is True
    assert key["inputs"]["pendingDeleteWindowInDays"] == 30
    assert protection["clusterId"] == "<id of tc-tke-tencentcloud-tke>"
    assert protection["kmsConfiguration"] == {"keyId": f"<id of {key['name']}>", "kmsRegion": "ap-shanghai"}


def test_pods_of_other_nodes_reach_the_nodes(plan):
    rules = by_name(plan, "-tencentcloud-sg-rules")["inputs"]["ingresses"]
    assert {"action": "ACCEPT", "cidrBlock": "172.20.0.0/16", "protocol": "ALL", "port": "all"}.items() <= next(
        r for r in rules if r.get("cidrBlock") == "172.20.0.0/16"
    ).items()


def test_gpu_operator_installs_the_driver_and_waits_for_the_pools(plan):
    release = by_name(plan, "-tencentcloud-gpu-operator")
    assert release["inputs"]["values"]["driver"] == {"enabled": True}
    assert release["inputs"]["chart"] == "gpu-operator" and release["inputs"]["version"] == "v26.7.0"
    depends = next(r for r in plan.resources if r.urn == release["urn"]).dependencies
    waits = {r["urn"] for r in (*resources_of(plan, POOL), one(plan, "Kubernetes/clusterEndpoint:ClusterEndpoint"))}
    assert waits <= set(depends)
    outputs = plan.run.outputs["kubernetes"]
    assert outputs["service"] == "TKE" and outputs["version"] == "1.34.1"
    assert outputs["autoscaling"]["minNodes"] == 0 and outputs["autoscaling"]["maxNodes"] == 2


def test_the_shipped_stack_passes_every_policy(plan):
    assert plan.violations() == []


def test_without_the_encryption_the_secrets_rule_flags_the_cluster(plan):
    resources = [
        Resource(r.type, r.inputs, r.urn, r.name)
        for r in plan.resources
        if r.type != "tencentcloud:Kubernetes/encryptionProtection:EncryptionProtection"
    ]
    found = [v for v in evaluate(resources) if v.rule == "kubernetes-secrets-encryption"]
    assert [v.urn for v in found] == [one(plan, "Kubernetes/cluster:Cluster")["urn"]]
    assert "EncryptionProtection" in found[0].fix


def test_a_pool_data_disk_without_the_clusters_key_fails_customer_managed_keys_naming_the_scratch(plan):
    resources = [Resource(r.type, r.inputs, r.urn, r.name) for r in plan.resources]
    found = [
        v
        for v in evaluate(resources, {"customer-managed-keys": "mandatory"})
        if v.rule == "customer-managed-keys" and "nodePool" in v.urn
    ]
    gpu_pool = by_name(plan, "-tencentcloud-gpu")
    assert [v.urn for v in found] == [gpu_pool["urn"]]  # the system pool has no data disk
    assert "a data disk has no kmsKeyId" in found[0].message and "storage.scratch none" in found[0].fix


def test_public_endpoint_behind_a_group_admitting_the_public_cidrs_only():
    plan = plan_values(tke_values(kubernetes={"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]}))
    endpoint = one(plan, "Kubernetes/clusterEndpoint:ClusterEndpoint")["inputs"]
    group = by_name(plan, "-tke-api-sg")
    rules = by_name(plan, "-tke-api-rules")["inputs"]
    assert endpoint["clusterInternet"] is True and endpoint["clusterIntranet"] is True
    assert endpoint["clusterInternetSecurityGroup"] == f"<id of {group['name']}>"
    assert rules["ingresses"] == [
        {"action": "ACCEPT", "cidrBlock": "203.0.113.0/24", "protocol": "TCP", "port": "443", "description": "TKE API"}
    ]
    assert plan.as_json()["summary"]["kubernetes"]["endpoint"] == "public"
    assert not [v for v in plan.violations() if v.rule == "kubernetes-private-endpoint"]


def test_a_public_clusterendpoint_the_stack_did_not_ask_for_is_flagged(plan):
    resources = []
    for r in plan.resources:
        inputs = dict(r.inputs)
        if r.type == "tencentcloud:Kubernetes/clusterEndpoint:ClusterEndpoint":
            inputs["clusterInternet"] = True
        resources.append(Resource(r.type, inputs, r.urn, r.name))
    found = [v for v in evaluate(resources) if v.rule == "kubernetes-private-endpoint"]
    assert len(found) == 1 and "exposes the Kubernetes API server" in found[0].message


def test_a_fixed_spot_pool_takes_spotpaid_with_its_cap():
    values = tke_values(nodes=2, spot=True)
    values["gpu-cluster:maxHourlyUsd"] = 4.0
    pool = by_name(plan_values(values), "-tencentcloud-gpu")["inputs"]
    assert (pool["minSize"], pool["desiredCapacity"], pool["maxSize"]) == (2, 2, 2)
    assert pool["enableAutoScale"] is False
    config = pool["autoScalingConfig"]
    assert config["instanceChargeType"] == "SPOTPAID"
    assert (config["spotInstanceType"], config["spotMaxPrice"]) == ("one-time", "2.00")


def test_retained_scratch_stays_when_its_node_goes():
    values = tke_values(storage={"scratch": "disk", "scratchGb": 100, "retainScratch": True})
    pool = by_name(plan_values(values), "-tencentcloud-gpu")["inputs"]
    assert pool["autoScalingConfig"]["dataDisks"][0]["deleteWithInstance"] is False


def test_pod_range_moves_off_a_vpc_that_takes_the_first_one():
    cluster = one(plan_values(tke_values(network={"cidr": "172.20.0.0/16"})), "Kubernetes/cluster:Cluster")
    assert cluster["inputs"]["clusterCidr"] == "192.168.0.0/17"
    assert cluster["inputs"]["serviceCidr"] == "172.21.0.0/20"


@pytest.mark.parametrize(
    ("cluster", "key", "words"),
    [
        ({"kubernetes": {"gpuSoftware": "device-plugin"}}, "kubernetes.gpuSoftware", "TKE installs no NVIDIA driver"),
        ({"image": "img-9qrfy1xt"}, "image", "leave image at auto"),
        ({"name": "a-very-long-cluster-name"}, "name", "25 characters"),
        ({"encryption": {"key": "auto"}}, "storage.scratch", "takes encrypt but no KMS key"),
    ],
)
def test_what_tke_cannot_build_is_refused_with_its_key(cluster, key, words):
    with pytest.raises(ConfigError) as info:
        plan_values(tke_values(**cluster))
    assert f"gpu-cluster:cluster.{key}:" in str(info.value) and words in str(info.value)


def test_local_nvme_is_refused_on_tke_as_no_bootstrap_stripes_it():
    # only HCC types have local NVMe on Tencent, and they are refused in a node pool too (below): both are said
    values = tke_values(instanceType="HCCG5v.24XLARGE384", fabric="none", zone="ap-guangzhou-3")
    values["gpu-cluster:cluster"]["storage"] = {"scratch": "nvme"}
    problems = tke_problems(spec_of(values))
    assert [p.key for p in problems] == ["gpu-cluster:cluster.instanceType", "gpu-cluster:cluster.storage.scratch"]
    assert "nvme on TKE" in problems[1].message


def test_gpu_sharing_is_refused_on_tke_with_the_reason():
    sharing = {"gpuSharing": {"mode": "timeSlicing", "replicas": 4}}
    with pytest.raises(ConfigError) as info:
        plan_values(tke_values(kubernetes=sharing))
    assert "gpu-cluster:cluster.kubernetes.gpuSharing.mode: timeSlicing on tencentcloud" in str(info.value)
    assert "qGPU" in str(info.value)


def test_hcc_types_are_refused_in_a_node_pool():
    values = tke_values(instanceType="HCCG5v.24XLARGE384", fabric="auto", zone="ap-guangzhou-3")
    with pytest.raises(ConfigError) as info:
        plan_values(values)
    assert str(info.value).startswith("gpu-cluster:cluster.instanceType: HCCG5v.24XLARGE384 is an HCC type")
    assert "hpc_cluster_id" in str(info.value) and "nodeGroup: managed" not in str(info.value)


def test_without_kubernetes_a_managed_group_is_an_auto_scaling_group_not_a_pool():
    values = tke_values(
        nodes=1, storage={"scratch": "none"}, network={"cidr": "10.70.0.0/16", "sshCidrs": ["203.0.113.0/24"]}
    )
    values["gpu-cluster:cluster"].pop("scheduler")
    values["gpu-cluster:cluster"]["login"] = {"publicIp": True}
    kinds = {r.type for r in plan_values(values).resources}
    assert "tencentcloud:As/scalingGroup:ScalingGroup" in kinds
    assert not {k for k in kinds if k.startswith("tencentcloud:Kubernetes/")}


def test_slurm_takes_instances_not_a_managed_group_on_tencent():
    values = tke_values(scheduler="slurm", nodes=2, storage={"scratch": "none"})
    with pytest.raises(ConfigError) as info:
        plan_values(values)
    assert "gpu-cluster:cluster.nodeGroup: managed with scheduler slurm on tencentcloud" in str(info.value)
