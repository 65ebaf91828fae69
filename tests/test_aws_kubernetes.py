"""scheduler: kubernetes on AWS (EKS): the control plane, node groups, launch templates and releases as registered
with Pulumi's mocks (camelCase inputs), planned through the offline plan runner."""

from __future__ import annotations

import base64
import email
import gzip
import json

import pytest
import yaml
from typer.testing import CliRunner

from components.cli import app
from components.errors import ConfigError
from components.layout import aws as aws_layout
from components.layout.kubernetes import GPU_TAINT, charts

from .conftest import ROOT, aws_values, one, plan_values, resources_of, spec_of

GPU_LT = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"


def eks_values(**cluster):
    values = aws_values(scheduler="kubernetes", tags={"environment": "test"}, **cluster)
    values["gpu-cluster:cluster"].setdefault("network", {"egress": "nat"})
    return values


def by_name(plan, suffix):
    found = [r.as_json() for r in plan.resources if r.name.endswith(suffix)]
    assert len(found) == 1, f"expected one resource named *{suffix}, found {len(found)}"
    return found[0]


def releases(plan):
    return {r["inputs"]["name"]: r["inputs"] for r in resources_of(plan, "helm.sh/v3:Release")}


@pytest.fixture  # per test: plan_stack caches it, except under mutmut
def eks(stack_plan):
    return stack_plan("aws-eks-h100")


def test_control_plane_private_pinned_encrypted_api_auth(eks):
    cluster = one(eks, "eks/cluster:Cluster")["inputs"]
    assert cluster["version"] == "1.36"
    vpc = cluster["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in vpc  # EKS would default it to 0.0.0.0/0
    key = one(eks, "kms/key:Key")
    assert key["inputs"]["enableKeyRotation"] is True
    assert cluster["encryptionConfig"] == {"resources": ["secrets"], "provider": {"keyArn": f"<arn of {key['name']}>"}}
    assert cluster["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}
    role = json.loads(by_name(eks, "-eks-role")["inputs"]["assumeRolePolicy"])
    assert role["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com"}
    attached = {
        r["inputs"]["policyArn"] for r in resources_of(eks, "RolePolicyAttachment") if "-eks-role-" in r["name"]
    }
    assert attached == {"arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"}


def test_control_plane_spans_two_zones_nodes_one(eks):
    cluster = one(eks, "eks/cluster:Cluster")["inputs"]
    nodes, control = by_name(eks, "-nodes"), by_name(eks, "-control-plane")
    assert cluster["vpcConfig"]["subnetIds"] == [f"<id of {nodes['name']}>", f"<id of {control['name']}>"]
    assert nodes["inputs"]["availabilityZone"] == "us-east-1a"
    # "another available zone" than the nodes' (the mock lists a first zone other than us-east-1a)
    assert control["inputs"]["availabilityZone"] == "<first available zone in us-east-1>"
    assert control["inputs"]["mapPublicIpOnLaunch"] is False
    assert "availabilityZone" in control["ignoreChanges"]
    for group in resources_of(eks, NODE_GROUP):
        assert group["inputs"]["subnetIds"] == [f"<id of {nodes['name']}>"]  # one zone for every pool


def test_caller_is_cluster_admin_as_its_iam_role(eks):
    entry = one(eks, "eks/accessEntry:AccessEntry")["inputs"]
    # the session's issuer (mock of iam.getSessionContext), not the sts assumed-role ARN
    assert entry["principalArn"] == "<iam role arn the caller session was issued by>"
    assert entry["type"] == "STANDARD"
    assoc = one(eks, "eks/accessPolicyAssociation:AccessPolicyAssociation")["inputs"]
    assert assoc["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert assoc["accessScope"] == {"type": "cluster"}
    assert assoc["principalArn"] == entry["principalArn"]


def test_gpu_pool_launch_template_carries_the_vm_efa_layout(eks):
    lt = by_name(eks, "-gpu-lt")["inputs"]
    nics = lt["networkInterfaces"]
    efa = [n for n in nics if n["interfaceType"] == "efa-only"]
    assert len(efa) == 32 and sorted(n["networkCardIndex"] for n in efa) == list(range(32))
    assert nics[0]["interfaceType"] == "interface" and nics[0]["deviceIndex"] == 0
    # the cluster security group first (EKS adds none when the template names groups), then the node group
    assert all(n["securityGroups"][0] == "<cluster security group of llm-eks-aws-eks>" for n in nics)
    assert all("<id of llm-eks-aws-sg>" in n["securityGroups"] for n in nics)
    # prohibited in a managed node group's template: subnet, instance profile; the AMI comes from amiType
    for key in ("iamInstanceProfile", "imageId", "instanceType", "vpcSecurityGroupIds"):
        assert key not in lt
    assert not any("subnetId" in n or "associatePublicIpAddress" in n for n in nics)
    assert lt["placement"] == {"groupName": "<autoname:llm-eks-aws-pg>"}
    assert one(eks, "placementGroup:PlacementGroup")["inputs"]["strategy"] == "cluster"
    root = lt["blockDeviceMappings"][0]
    assert root["deviceName"] == "/dev/xvda"
    assert root["ebs"] == {"volumeType": "gp3", "volumeSize": 200, "encrypted": "true", "deleteOnTermination": "true"}
    assert lt["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 2}


def test_gpu_pool_user_data_is_mime_with_the_node_bootstrap(eks):
    raw = base64.b64decode(by_name(eks, "-gpu-lt")["inputs"]["userData"])
    # EC2's limit on raw user data is 16 KB, and EKS adds its part (endpoint, CA, service CIDR): leave it 8 KB
    assert len(raw) < 8 * 1024
    message = email.message_from_bytes(raw)
    assert message.is_multipart()
    (part,) = message.get_payload()
    # a gzip part, which cloud-init decompresses and reads as what it starts with
    assert part.get_content_type() == "application/gzip"
    text = gzip.decompress(part.get_payload(decode=True)).decode()
    assert text.startswith("#cloud-config\n")
    config = yaml.safe_load(text)
    paths = {f["path"] for f in config["write_files"]}
    assert "/usr/local/sbin/gpu-cluster-scratch" in paths and "/etc/gpu-cluster/health.env" in paths
    # the operator's DCGM exporter replaces the host one; libfabric is the container's: no host EFA check
    assert not any("dcgm-exporter" in p or "efa" in p for p in paths)
    health = next(f["content"] for f in config["write_files"] if f["path"] == "/etc/gpu-cluster/health.env")
    assert 'ACTION="report"' in health and 'EXPECTED_FABRIC_DEVICES="32"' in health
    assert "/usr/local/sbin/gpu-cluster-unhealthy" not in paths  # EKS owns the Auto Scaling group


def test_node_groups_taints_labels_ami_and_sizes(eks):
    gpu, system = by_name(eks, "-aws-gpu")["inputs"], by_name(eks, "-aws-system")["inputs"]
    assert gpu["amiType"] == "AL2023_x86_64_NVIDIA" and gpu["instanceTypes"] == ["p5.48xlarge"]
    assert gpu["taints"] == [{"key": GPU_TAINT["key"], "value": GPU_TAINT["value"], "effect": "NO_SCHEDULE"}]
    assert gpu["labels"] == {
        "gpu-cluster.dev/gpu": "h100",
        "gpu-cluster.dev/gpus": "8",
        "gpu-cluster.dev/fabric": "efa",
        "k8s.amazonaws.com/accelerator": "h100",  # the Cluster Autoscaler's GPU label (minNodes 0: it runs)
    }
    assert gpu["scalingConfig"] == {"desiredSize": 4, "minSize": 0, "maxSize": 4}
    assert gpu["capacityType"] == "ON_DEMAND" and gpu["launchTemplate"]["id"] == "<id of llm-eks-aws-gpu-lt>"
    assert "remoteAccess" not in gpu  # conflicts with a launch template
    assert system["amiType"] == "AL2023_x86_64_STANDARD" and system["instanceTypes"] == ["m7i.large"]
    assert "taints" not in system and system["scalingConfig"]["desiredSize"] == 2
    sys_lt = by_name(eks, "-system-lt")["inputs"]
    assert sys_lt["blockDeviceMappings"][0]["ebs"]["encrypted"] == "true" and "networkInterfaces" not in sys_lt
    assert "userData" not in sys_lt
    role_policies = {r["inputs"]["policyArn"].rsplit("/", 1)[-1] for r in resources_of(eks, "RolePolicyAttachment")}
    assert {"AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly"} <= role_policies
    assert "AmazonSSMManagedInstanceCore" in role_policies


def test_releases_pinned_with_driver_and_toolkit_off_and_efa_plugin_tolerating(eks):
    rel = releases(eks)
    assert set(rel) == {
        "gpu-operator",
        "aws-efa-k8s-device-plugin",
        "aws-node-termination-handler",
        "cluster-autoscaler",
        "kube-prometheus-stack",  # monitoring.prometheus auto (tests/test_k8s_monitoring.py)
    }
    pinned = charts()
    for name, inputs in rel.items():
        if name == "aws-node-termination-handler":
            continue  # an OCI chart: test_the_termination_handler_drains_every_node_in_imds_mode
        assert inputs["version"] == pinned[name]["version"] and inputs["repositoryOpts"]["repo"] == pinned[name]["repo"]
    op = rel["gpu-operator"]["values"]
    assert op["driver"] == {"enabled": False} and op["toolkit"] == {"enabled": False}
    assert op["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": False}}
    efa = rel["aws-efa-k8s-device-plugin"]["values"]
    assert efa["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert efa["nodeSelector"] == {"gpu-cluster.dev/fabric": "efa"}
    provider = one(eks, "providers:kubernetes")
    assert all(r.provider.startswith(provider["urn"]) for r in eks.resources if r.type == RELEASE)


NTH = "aws-node-termination-handler"


def test_the_termination_handler_drains_every_node_in_imds_mode(eks):
    """EKS nodes do not drain themselves (their identity may not evict pods): aws-node-termination-handler, the OCI
    chart pinned in charts.yaml, cordons and drains on Spot notices, scheduled events and Auto Scaling termination."""
    nth = releases(eks)[NTH]
    pinned = charts()[NTH]
    assert nth["chart"] == "oci://public.ecr.aws/aws-ec2/helm/aws-node-termination-handler" == pinned["chart"]
    assert nth["version"] == pinned["version"] == "0.27.6" and "repositoryOpts" not in nth
    assert nth["namespace"] == "kube-system"
    assert nth["values"] == {
        "enableSpotInterruptionDraining": True,
        "enableScheduledEventDraining": True,
        "enableASGLifecycleDraining": True,
    }
    # no GPU-taint toleration of ours: the chart's DaemonSet tolerates every taint (daemonsetTolerations: Exists)
    assert "tolerations" not in nth["values"] and "nodeSelector" not in nth["values"]


def test_device_plugin_alone_with_a_service_monitor():
    plan = plan_values(eks_values(kubernetes={"gpuSoftware": "device-plugin", "serviceMonitor": True}))
    rel = releases(plan)
    assert set(rel) == {
        "nvidia-device-plugin",
        "dcgm-exporter",
        "aws-efa-k8s-device-plugin",
        NTH,
        "kube-prometheus-stack",
    }
    assert rel["nvidia-device-plugin"]["values"] == {"gfd": {"enabled": True}}
    dcgm = rel["dcgm-exporter"]["values"]
    assert dcgm["serviceMonitor"] == {"enabled": True}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in dcgm["tolerations"]


def test_no_fabric_no_efa_plugin_and_no_efa_interfaces():
    plan = plan_values(eks_values(fabric="none"))
    assert "aws-efa-k8s-device-plugin" not in releases(plan)
    nics = by_name(plan, "-gpu-lt")["inputs"]["networkInterfaces"]
    assert [n["interfaceType"] for n in nics] == ["interface"]
    assert by_name(plan, "-aws-gpu")["inputs"]["labels"]["gpu-cluster.dev/fabric"] == "none"


@pytest.mark.parametrize(("gpu", "itype", "efa"), [("H200:8", "p5en.48xlarge", 16), ("A100:8", "p4d.24xlarge", 4)])
def test_efa_count_on_the_gpu_pool_template(gpu, itype, efa):
    plan = plan_values(eks_values(gpu=gpu, instanceType=itype))
    nics = by_name(plan, "-gpu-lt")["inputs"]["networkInterfaces"]
    assert sum(n["interfaceType"] == "efa-only" for n in nics) == efa
    assert by_name(plan, "-aws-gpu")["inputs"]["instanceTypes"] == [itype]
    assert plan.fabric_gbps_wired() == plan.spec.instance.fabricGbps


def test_fabric_counted_wired_equals_rated(eks):
    assert eks.fabric_gbps_wired() == eks.spec.instance.fabricGbps == 3200
    summary = eks.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"]


def test_counter_reads_the_gpu_pools_own_template_only():
    efa = {"interfaceType": "efa-only"}
    resources = [
        {"type": GPU_LT, "name": "a-gpu-lt", "inputs": {"networkInterfaces": [efa] * 4}},
        {"type": GPU_LT, "name": "a-other-lt", "inputs": {"networkInterfaces": [efa] * 32}},
        {
            "type": NODE_GROUP,
            "name": "a-gpu",
            "inputs": {"taints": [{"key": "nvidia.com/gpu"}], "launchTemplate": {"id": "<id of a-gpu-lt>"}},
        },
        {"type": NODE_GROUP, "name": "a-system", "inputs": {"launchTemplate": {"id": "<id of a-other-lt>"}}},
    ]
    assert aws_layout.count_wired_gbps(resources, 100.0) == 400.0
    # without node groups (VM mode) every template counts, as before
    assert aws_layout.count_wired_gbps(resources[:2], 100.0) == 3200.0


def test_spot_is_the_node_groups_capacity_type():
    plan = plan_values(eks_values(spot=True))
    assert by_name(plan, "-aws-gpu")["inputs"]["capacityType"] == "SPOT"
    assert "instanceMarketOptions" not in by_name(plan, "-gpu-lt")["inputs"]


def test_capacity_block_in_the_template_and_the_group():
    plan = plan_values(eks_values(reservation="cr-0123456789abcdef0", reservationType="capacity-block"))
    lt = by_name(plan, "-gpu-lt")["inputs"]
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    target = lt["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0123456789abcdef0"}
    assert by_name(plan, "-aws-gpu")["inputs"]["capacityType"] == "CAPACITY_BLOCK"


def test_public_endpoint_only_from_its_cidrs():
    plan = plan_values(eks_values(kubernetes={"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]}))
    vpc = one(plan, "eks/cluster:Cluster")["inputs"]["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert vpc["endpointPrivateAccess"] is True
    assert not [v for v in plan.violations() if v.level == "mandatory"]


def test_outputs_name_the_cluster_pools_credentials_and_releases(eks):
    out = eks.run.outputs
    kube = out["kubernetes"]
    assert kube["clusterName"] == "<autoname:llm-eks-aws-eks>" and kube["version"] == "1.36"
    assert kube["endpoint"] == "<endpoint of llm-eks-aws-eks>"
    assert kube["nodePools"] == ["<autoname:llm-eks-aws-system>", "<autoname:llm-eks-aws-gpu>"]
    assert kube["credentials"] == "aws eks update-kubeconfig --region us-east-1 --name <autoname:llm-eks-aws-eks>"
    assert [r["chart"] for r in kube["releases"]] == [
        "gpu-operator",
        "aws-efa-k8s-device-plugin",
        "cluster-autoscaler",
        f"oci://public.ecr.aws/aws-ec2/helm/{NTH}",
        "kube-prometheus-stack",
    ]
    assert out["kubeconfig"] == "[secret]"  # a secret output, never shown in the plan
    assert out["nodeGroup"] == "<autoname:llm-eks-aws-gpu>"
    assert out["access"]["nodes"] == "kubectl get nodes -l gpu-cluster.dev/gpus -o wide"


def test_kubeconfig_uses_aws_eks_get_token():
    from components.aws.kubernetes import render_kubeconfig

    config = yaml.safe_load(render_kubeconfig("c1", "https://x.eks.amazonaws.com", "Q0E=", "us-east-1"))
    assert config["clusters"][0]["cluster"] == {
        "server": "https://x.eks.amazonaws.com",
        "certificate-authority-data": "Q0E=",
    }
    user = config["users"][0]["user"]["exec"]
    assert user["command"] == "aws" and user["args"][:2] == ["eks", "get-token"] and "c1" in user["args"]


def test_stack_passes_every_policy(eks):
    assert eks.violations() == []


def test_plan_cli_exits_0_for_the_stack():
    result = CliRunner().invoke(app, ["plan", "--stack", "aws-eks-h100", "--project", str(ROOT)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"network": {"egress": "none"}}, "gpu-cluster:cluster.network.egress"),
        (
            {"storage": {"shared": {"kind": "lustre", "sizeGb": 4800, "throughput": 1000, "path": "/shared"}}},
            "gpu-cluster:cluster.storage.shared",
        ),
        ({"identity": {"existing": "my-profile"}}, "gpu-cluster:cluster.identity.existing"),
        ({"image": "ami-0123456789abcdef0"}, "gpu-cluster:cluster.image"),
    ],
)
def test_what_eks_cannot_build_is_refused_by_key(extra, key):
    values = eks_values(**extra)
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(values))
    assert info.value.key == key


def test_vm_layout_untouched_without_the_scheduler():
    spec = spec_of(aws_values())
    layout = aws_layout.plan(spec)
    assert layout.kubernetes is None and layout.health_hook is True


def test_login_node_reaches_the_private_api():
    plan = plan_values(eks_values(login={}))
    rule = by_name(plan, "-eks-api-from-login")["inputs"]
    assert rule["securityGroupId"] == "<cluster security group of test-aws-eks>"
    assert rule["referencedSecurityGroupId"] == "<id of test-aws-login-sg>"
    assert (rule["ipProtocol"], rule["fromPort"], rule["toPort"]) == ("tcp", 443, 443)
    assert not [v for v in plan.violations() if v.level == "mandatory"]
    # without a login node nothing outside the cluster's members is admitted
    assert not [r for r in plan_values(eks_values()).resources if r.name.endswith("-eks-api-from-login")]
