"""`scheduler: kubernetes` on Alibaba Cloud (ACK): the inputs registered with the mocks (camelCase), the fabric
counted from the registered resources, the GPU nodes' bootstrap, and what the spec refuses."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest

from components.errors import ConfigError
from components.layout import alicloud as ali_layout
from components.layout.alicloud.kubernetes import ACK_BOOTSTRAP, ack_bootstrap, ack_user_data
from components.layout.kubernetes import GPU_TAINT, gpu_labels

from .conftest import one, plan_stack, plan_values, resources_of, spec_of
from .test_alicloud_resources import alicloud_values

STACK = "alicloud-ack-erdma"
CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
SUB = "system:serviceaccount:ack-erdma-controller:ack-erdma-controller"
KPS = "kube-prometheus-stack"  # monitoring.prometheus auto installs it (tests/test_k8s_monitoring.py)


def ack_values(**cluster):
    return alicloud_values(**{"scheduler": "kubernetes", "tags": {"team": "ml", "environment": "dev"}, **cluster})


@pytest.fixture(scope="module")
def plan():
    return plan_stack(STACK)


def by_name(plan, suffix):
    found = [r.as_json() for r in plan.resources if r.name.endswith(suffix)]
    assert len(found) == 1, f"expected one resource named *{suffix}, found {len(found)}"
    return found[0]


def test_control_plane_is_ack_pro_private_pinned_and_encrypted(plan):
    cluster = one(plan, "managedKubernetes:ManagedKubernetes")["inputs"]
    key = one(plan, "kms/key:Key")
    nodes_vswitch = by_name(plan, "-alicloud-nodes")
    assert cluster["clusterSpec"] == "ack.pro.small"
    assert cluster["version"] == "1.36.1-aliyun.1"  # kubernetes.version 1.36, ACK's patch of it
    assert cluster["slbInternetEnabled"] is False  # no internet load balancer for the API server
    assert cluster["newNatGateway"] is False  # egress is the VPC's own NAT
    assert cluster["vswitchIds"] == [f"<id of {nodes_vswitch['name']}>"]
    assert cluster["securityGroupId"] == "<id of ack-train-alicloud-sg>"
    assert cluster["encryptionProviderKey"] == f"<id of {key['name']}>"
    assert cluster["disableEncryption"] is False
    assert cluster["addons"] == [{"name": "flannel"}]
    assert key["inputs"]["keySpec"] == "Aliyun_AES_256"
    assert key["inputs"]["keyUsage"] == "ENCRYPT/DECRYPT"
    assert "dkmsInstanceId" not in key["inputs"]  # a default (master) key, no KMS instance


def test_gpu_pool_takes_the_deployment_set_labels_taint_and_encrypted_disks(plan):
    pool = by_name(plan, "-alicloud-gpu")["inputs"]
    ds = one(plan, "EcsDeploymentSet")
    assert ds["inputs"]["strategy"] == "LowLatency"
    assert pool["deploymentSetId"] == f"<id of {ds['name']}>"
    assert pool["instanceTypes"] == ["ecs.ebmgn8v.48xlarge"]
    assert pool["desiredSize"] == "4"
    assert "scalingConfig" not in pool
    labels = {label["key"]: label["value"] for label in pool["labels"]}
    assert labels["ack.aliyun.com/nvidia-driver-version"] == "550.144.03"
    assert labels == {**gpu_labels(plan.spec), "ack.aliyun.com/nvidia-driver-version": "550.144.03"}
    assert labels["gpu-cluster.dev/fabric"] == "erdma"
    assert pool["taints"] == [GPU_TAINT]
    assert pool["systemDiskEncrypted"] is True
    assert pool["dataDisks"] == [
        {
            "category": "cloud_essd",
            "size": 4000,
            "performanceLevel": "PL3",
            "encrypted": "true",
            "name": "ack-train-scratch",
        }
    ]
    assert pool["imageType"] == "AliyunLinux3"
    assert pool["securityGroupIds"] == ["<id of ack-train-alicloud-sg>"]
    assert pool["spotStrategy"] == "NoSpot"
    assert "internetMaxBandwidthOut" not in pool  # private nodes


def test_system_pool_is_cpu_untainted(plan):
    pool = by_name(plan, "-alicloud-system")["inputs"]
    assert pool["instanceTypes"] == ["ecs.g7.xlarge"]
    assert pool["desiredSize"] == "2"
    assert "taints" not in pool and "deploymentSetId" not in pool
    assert pool["systemDiskEncrypted"] is True


def test_erdma_controller_addon_and_its_rrsa_role_scoped_to_its_service_account(plan):
    addon = one(plan, "kubernetesAddon:KubernetesAddon")["inputs"]
    cluster = one(plan, "managedKubernetes:ManagedKubernetes")
    assert addon["name"] == "ack-erdma-controller"
    assert addon["clusterId"] == f"<id of {cluster['name']}>"
    assert json.loads(addon["config"]) == {"agent": {"preferDriver": "ofed", "allocateAllDevices": True}}
    assert cluster["inputs"]["enableRrsa"] is True
    role = by_name(plan, "-erdma-role")["inputs"]
    trust = json.loads(role["assumeRolePolicyDocument"])["Statement"]
    assert trust == [
        {
            "Action": "sts:AssumeRole",
            "Condition": {
                "StringEquals": {
                    "oidc:aud": "sts.aliyuncs.com",
                    "oidc:iss": f"<RRSA OIDC issuer URL of {cluster['name']}>",
                    "oidc:sub": SUB,
                }
            },
            "Effect": "Allow",
            "Principal": {"Federated": [f"<RRSA OIDC provider ARN of {cluster['name']}>"]},
        }
    ]
    assert role["roleName"] == f"ack-erdma-controller-<id of {cluster['name']}>"
    policy = json.loads(by_name(plan, "-erdma-policy")["inputs"]["policyDocument"])["Statement"]
    assert policy == [
        {
            "Action": [
                "ecs:DescribeInstances",
                "ecs:DescribeInstanceTypes",
                "ecs:DescribeNetworkInterfaces",
                "ecs:ModifyNetworkInterfaceAttribute",
                "ecs:CreateNetworkInterface",
                "ecs:AttachNetworkInterface",
            ],
            "Effect": "Allow",
            "Resource": ["*"],
        }
    ]
    grant = by_name(plan, "-erdma-grant")
    assert grant["inputs"]["policyType"] == "Custom"
    assert grant["inputs"]["roleName"] == role["roleName"]


def test_releases_are_pinned_with_the_driver_toolkit_and_device_plugin_off(plan):
    releases = resources_of(plan, "helm.sh/v3:Release")
    # monitoring.prometheus auto: the in-cluster stack beside it (tests/test_k8s_monitoring.py)
    assert [(r["inputs"]["chart"], r["inputs"]["version"]) for r in releases] == [
        ("gpu-operator", "v26.7.0"),
        ("kube-prometheus-stack", "88.5.3"),
    ]
    values = releases[0]["inputs"]["values"]
    assert values["driver"] == {"enabled": False}  # ACK installs the driver
    assert values["toolkit"] == {"enabled": False}
    assert values["devicePlugin"] == {"enabled": False}  # ACK's ack-nvidia-device-plugin
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": False}}
    assert releases[0]["inputs"]["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    provider = one(plan, "providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"


def test_fabric_counted_wired_equals_rated_and_every_policy_passes(plan):
    summary = plan.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 160
    assert summary["placement"] == "cluster"
    assert summary["fabricUsable"] is True
    assert plan.violations() == []


def test_without_the_erdma_addon_the_pool_counts_no_fabric(plan):
    resources = [r.as_json() for r in plan.resources]
    rated = plan.spec.instance.gbps_per_fabric_device
    assert ali_layout.count_wired_gbps(resources, rated) == 160
    no_addon = [r for r in resources if not r["type"].endswith("KubernetesAddon")]
    assert ali_layout.count_wired_gbps(no_addon, rated) == 0
    # an add-on on another cluster does not wire this pool
    elsewhere = [
        {**r, "inputs": {**r["inputs"], "clusterId": "<id of another cluster>"}}
        if r["type"].endswith("KubernetesAddon")
        else r
        for r in resources
    ]
    assert ali_layout.count_wired_gbps(elsewhere, rated) == 0


def test_outputs_name_the_private_endpoint_pools_credentials_and_releases(plan):
    kube = plan.run.outputs["kubernetes"]
    assert kube["clusterName"] == "ack-train"
    assert kube["endpoint"] == "https://<private API endpoint of ack-train-alicloud-ack>:6443"
    assert kube["version"] == "1.36.1-aliyun.1"
    assert kube["nodePools"] == ["ack-train-system", "ack-train-gpu"]
    assert kube["credentials"].startswith("aliyun cs GET /k8s/<id of ack-train-alicloud-ack>/user_config")
    assert kube["releases"] == [
        {"name": "gpu-operator", "chart": "gpu-operator", "version": "v26.7.0", "namespace": "gpu-operator"},
        {"name": KPS, "chart": KPS, "version": "88.5.3", "namespace": "monitoring"},
    ]
    assert kube["erdma"]["erisPerNode"] == 2
    assert plan.run.outputs["kubeconfig"] == "[secret]"


def test_gpu_nodes_bootstrap_has_health_scratch_and_nccl_env_but_no_driver_erdma_or_docker(plan):
    pool = by_name(plan, "-alicloud-gpu")["inputs"]
    assert base64.b64decode(pool["preUserData"]).decode() == "#!/bin/bash\ntouch /var/.skip-auto-fdisk\n"
    wrapper = base64.b64decode(pool["userData"]).decode()
    assert len(wrapper) < 16 * 1024  # ECS user data, with room for ACK's own init script
    script = ack_bootstrap(pool["userData"])
    assert "/usr/local/sbin/gpu-cluster-health" in script
    assert "/usr/local/sbin/gpu-cluster-scratch" in script
    assert "/etc/gpu-cluster/nccl.env" in script
    assert "auto_install" not in script  # ACK installs the driver
    assert "gpu-cluster-erdma" not in script  # the eRDMA add-on wires the ERIs
    assert "dcgm-exporter" not in script  # the in-cluster DCGM exporter, not a Docker one
    assert "ess:SetInstanceHealth" not in script and "SetInstanceHealth" not in script


def test_bootstrap_wrapper_and_script_are_shellcheck_clean(plan, tmp_path):
    pool = by_name(plan, "-alicloud-gpu")["inputs"]
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(base64.b64decode(pool["userData"]).decode())
    inner = tmp_path / "bootstrap.sh"
    inner.write_text(ack_bootstrap(pool["userData"]))
    for path in (wrapper, inner):
        proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


def test_wrapper_unpacks_the_script_it_carries(tmp_path):
    script = '#!/bin/bash\necho unpacked > "$OUT"\n'
    wrapper = ack_user_data(script).replace(ACK_BOOTSTRAP, str(tmp_path / "b.sh"))
    (tmp_path / "w.sh").write_text(wrapper)
    proc = subprocess.run(
        ["bash", str(tmp_path / "w.sh")],
        capture_output=True,
        text=True,
        env={"OUT": str(tmp_path / "out"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "b.sh").read_text() == script
    assert (tmp_path / "out").read_text() == "unpacked\n"


def test_device_plugin_mode_installs_dcgm_exporter_tolerating_the_gpu_taint():
    plan = plan_values(ack_values(kubernetes={"gpuSoftware": "device-plugin", "serviceMonitor": True}))
    releases = resources_of(plan, "helm.sh/v3:Release")
    assert [(r["inputs"]["chart"], r["inputs"]["version"]) for r in releases] == [
        ("dcgm-exporter", "4.8.2"),
        ("kube-prometheus-stack", "88.5.3"),
    ]
    values = releases[0]["inputs"]["values"]
    assert values["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert values["serviceMonitor"] == {"enabled": True}
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "gpu-cluster.dev/gpus", "operator": "Exists"}]}]


def test_one_eri_type_counts_one_eri_and_1_35_pins_its_patch():
    plan = plan_values(ack_values(kubernetes={"version": "1.35"}))
    assert one(plan, "managedKubernetes:ManagedKubernetes")["inputs"]["version"] == "1.35.2-aliyun.1"
    summary = plan.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 100
    assert plan.violations() == []


def test_no_fabric_no_addon_no_rrsa():
    plan = plan_values(ack_values(instanceType="ecs.gn7i-c8g1.2xlarge", nodes=1))
    assert resources_of(plan, "KubernetesAddon") == []
    assert "enableRrsa" not in one(plan, "managedKubernetes:ManagedKubernetes")["inputs"]
    assert plan.summary()["fabricGbpsPerNode"] == 0


def test_spot_and_autoscaling_pool():
    plan = plan_values(ack_values(spot=True, maxNodes=4))
    pool = by_name(plan, "-alicloud-gpu")["inputs"]
    assert pool["spotStrategy"] == "SpotAsPriceGo"
    assert pool["spotInstanceRemedy"] is True
    assert "deploymentSetId" not in pool  # Alibaba: no spot instances in a deployment set
    assert pool["scalingConfig"] == {"enable": True, "minSize": 2, "maxSize": 4}
    assert "desiredSize" not in pool
    assert any("maxNodes" in w for w in plan.warnings())


def test_public_endpoint_is_refused_with_the_key_named():
    values = ack_values(kubernetes={"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]})
    with pytest.raises(ConfigError) as info:
        plan_values(values)
    assert str(info.value).startswith("gpu-cluster:cluster.kubernetes.publicEndpoint: true, but pulumi-alicloud")
    assert "\n" not in str(info.value)


def test_scheduler_none_builds_no_ack_resources(stack_plan):
    plan = stack_plan("alicloud-erdma")
    assert not [
        r for r in plan.resources if r.type.startswith(("alicloud:cs/", "kubernetes:", "pulumi:providers:kubernetes"))
    ]
    assert "kubernetes" not in plan.run.outputs


# --- node autoscaling of the GPU pool (cs.AutoscalingConfig + the pool's scaling_config) ---------------------------


def test_a_pool_that_may_grow_gets_acks_cluster_autoscaler():
    plan = plan_values(ack_values(nodes=1, minNodes=0, maxNodes=4))
    config = one(plan, "cs/autoscalingConfig:AutoscalingConfig")
    assert config["inputs"] == {
        "clusterId": "<id of test-alicloud-ack>",
        "scalerType": "cluster-autoscaler",
        "expander": "least-waste",
        "scaleDownEnabled": True,
        "scaleUpFromZero": True,
    }
    pool = by_name(plan, "-alicloud-gpu")["inputs"]
    # scale to zero: minNodes 0 is the pool's floor; a pending GPU pod brings a node back (scaleUpFromZero)
    assert pool["scalingConfig"] == {"enable": True, "minSize": 0, "maxSize": 4}
    assert "desiredSize" not in pool
    # only pods that tolerate the pool's taint are placed (and counted) on its nodes
    assert pool["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    kube = plan.run.outputs["kubernetes"]["autoscaling"]
    assert kube == {
        "scaler": "cluster-autoscaler",
        "minNodes": 0,
        "maxNodes": 4,
        "gpuTaint": "nvidia.com/gpu=present:NoSchedule",
    }
    warning = next(w for w in plan.warnings() if "cluster-autoscaler" in w)
    assert "AliyunCSManagedAutoScalerRole" in warning and "between 0 and 4" in warning


def test_a_pool_that_only_shrinks_autoscales_too():
    plan = plan_values(ack_values(nodes=2, minNodes=1))
    assert by_name(plan, "-alicloud-gpu")["inputs"]["scalingConfig"] == {"enable": True, "minSize": 1, "maxSize": 2}
    assert len(resources_of(plan, "cs/autoscalingConfig:AutoscalingConfig")) == 1


def test_a_fixed_pool_gets_no_autoscaler(plan):
    assert resources_of(plan, "cs/autoscalingConfig:AutoscalingConfig") == []
    assert "autoscaling" not in plan.run.outputs["kubernetes"]
    assert not any("cluster-autoscaler" in w for w in plan.warnings())


def test_the_in_cluster_releases_wait_for_the_autoscaler():
    plan = plan_values(ack_values(nodes=1, minNodes=0, maxNodes=4))
    config = one(plan, "cs/autoscalingConfig:AutoscalingConfig")["urn"]
    releases = [r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release"]
    assert releases and all(config in r.dependencies for r in releases)


def test_a_spot_mix_on_the_ack_pool_is_refused_by_its_key():
    spec = spec_of(ack_values(nodes=1, minNodes=0, maxNodes=4, spot={"enabled": True, "onDemandBase": 1}))
    with pytest.raises(ConfigError) as info:
        ali_layout.plan(spec)
    assert info.value.key == "gpu-cluster:cluster.spot" and "scheduler kubernetes" in info.value.message
