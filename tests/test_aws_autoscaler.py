"""EKS: the Cluster Autoscaler on a GPU node group that may grow (maxNodes > nodes) or shrink (minNodes < nodes), as
registered with Pulumi's mocks: its Helm release, its EKS Pod Identity (add-on, role, policy, association) and the
node group it moves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from components.catalog import kubernetes as offers
from components.errors import ConfigError
from components.layout import aws as aws_layout
from components.layout.kubernetes import charts
from components.plan.render import cost_text

from .conftest import one, plan_values, resources_of, spec_of
from .test_aws_kubernetes import by_name, eks_values, releases

CA = "cluster-autoscaler"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SCALING = {"nodes": 2, "minNodes": 0, "maxNodes": 4}  # deployed with 2, CA takes it to 0 when idle and up to 4


@pytest.fixture(scope="module")
def scaled():
    return plan_values(eks_values(**SCALING))


def _policy(plan):
    return json.loads(by_name(plan, "-autoscaler-policy")["inputs"]["policy"])


def test_the_release_is_the_pinned_chart_with_the_clusters_values(scaled):
    ca = releases(scaled)[CA]
    pinned = charts()[CA]
    assert (ca["chart"], ca["version"], ca["repositoryOpts"]) == (
        "cluster-autoscaler",
        "9.59.0",
        {"repo": "https://kubernetes.github.io/autoscaler"},
    )
    assert pinned["version"] == "9.59.0" and ca["namespace"] == "kube-system"
    cluster = one(scaled, "eks/cluster:Cluster")
    assert ca["values"] == {
        "cloudProvider": "aws",
        "awsRegion": "us-east-1",
        "image": {"tag": "v1.36.1"},  # the cluster's minor (kubernetes.version default 1.36)
        # known at deploy: the cluster's generated name; the tags are the chart's own default, written out
        "autoDiscovery": {
            "clusterName": f"<autoname:{cluster['name']}>",
            "tags": [
                "k8s.io/cluster-autoscaler/enabled",
                "k8s.io/cluster-autoscaler/{{ .Values.autoDiscovery.clusterName }}",
            ],
        },
        "rbac": {"serviceAccount": {"create": True, "name": "cluster-autoscaler"}},
        "nodeSelector": {"gpu-cluster.dev/pool": "system"},
        "extraArgs": {
            "balance-similar-node-groups": True,
            "expander": "least-waste",
            "skip-nodes-with-local-storage": False,
        },
    }


@pytest.mark.parametrize(("version", "tag"), [("1.36", "v1.36.1"), ("1.33", "v1.33.6"), ("1.32", "v1.32.7")])
def test_the_image_is_the_clusters_kubernetes_minor(version, tag):
    plan = plan_values(eks_values(kubernetes={"version": version}, **SCALING))
    assert releases(plan)[CA]["values"]["image"] == {"tag": tag}


def test_every_eks_version_has_an_autoscaler_image():
    offer = offers.offer("aws")
    assert offer is not None
    tags = charts()[CA]["imageTags"]
    assert set(offer.versions) <= set(tags), "charts.yaml cluster-autoscaler imageTags misses an EKS version"
    assert all(tags[v] == f"v{v}." + tags[v].rsplit(".", 1)[-1] for v in tags)  # CA minor = cluster minor


def test_the_role_is_pod_identitys_only(scaled):
    trust = json.loads(by_name(scaled, "-autoscaler-role")["inputs"]["assumeRolePolicy"])
    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ]
    assoc = one(scaled, "eks/podIdentityAssociation:PodIdentityAssociation")["inputs"]
    ca = releases(scaled)[CA]
    cluster = one(scaled, "eks/cluster:Cluster")["name"]
    # the association names the account the chart creates, in the release's namespace, on this cluster
    assert (assoc["namespace"], assoc["serviceAccount"]) == (
        ca["namespace"],
        ca["values"]["rbac"]["serviceAccount"]["name"],
    )
    assert assoc["clusterName"] == f"<autoname:{cluster}>"
    assert assoc["roleArn"] == f"<arn of {by_name(scaled, '-autoscaler-role')['name']}>"
    agent = one(scaled, "eks/addon:Addon")["inputs"]
    assert agent["addonName"] == "eks-pod-identity-agent" and agent["clusterName"] == f"<autoname:{cluster}>"


def test_the_policy_scales_only_this_clusters_tagged_groups(scaled):
    cluster = one(scaled, "eks/cluster:Cluster")["name"]
    statements = {s["Sid"]: s for s in _policy(scaled)["Statement"]}
    assert set(statements) == {"DescribeScalingInputs", "DescribeOwnNodegroups", "ScaleOwnGroups"}
    describe = statements["DescribeScalingInputs"]
    assert describe["Resource"] == "*" and "Condition" not in describe
    assert all(a.split(":")[1].startswith(("Describe", "GetInstanceTypes")) for a in describe["Action"])
    nodegroups = statements["DescribeOwnNodegroups"]
    assert nodegroups["Action"] == ["eks:DescribeNodegroup"]
    assert nodegroups["Resource"] == f"<arn of {cluster}>/*"  # the cluster ARN with nodegroup/ for cluster/ at deploy
    scale = statements["ScaleOwnGroups"]
    assert scale["Action"] == ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    assert scale["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
            f"aws:ResourceTag/k8s.io/cluster-autoscaler/<autoname:{cluster}>": "owned",
        }
    }
    # nothing that writes is granted anywhere else
    writes = [a for s in statements.values() if s is not scale for a in s["Action"] if "Describe" not in a]
    assert writes == ["ec2:GetInstanceTypesFromInstanceRequirements"]  # a read: instance types for requirements


def test_the_nodegroup_arn_pattern_of_a_real_cluster_arn():
    from components.layout.aws.kubernetes import policy_document

    ca = aws_layout.plan(spec_of(eks_values(**SCALING))).kubernetes
    assert ca is not None and ca.autoscaler is not None
    arn = "arn:aws:eks:us-east-1:111122223333:cluster/llm-eks-1a2b3c"
    doc = json.loads(
        policy_document(ca.autoscaler.policy, "llm-eks-1a2b3c", arn.replace(":cluster/", ":nodegroup/") + "/*")
    )
    by_sid = {s["Sid"]: s for s in doc["Statement"]}
    assert (
        by_sid["DescribeOwnNodegroups"]["Resource"] == "arn:aws:eks:us-east-1:111122223333:nodegroup/llm-eks-1a2b3c/*"
    )
    assert (
        "aws:ResourceTag/k8s.io/cluster-autoscaler/llm-eks-1a2b3c"
        in by_sid["ScaleOwnGroups"]["Condition"]["StringEquals"]
    )


def test_the_release_waits_for_its_identity(scaled):
    ca = next(r for r in scaled.resources if r.type.endswith("helm.sh/v3:Release") and r.name.endswith(f"-{CA}"))
    needed = {by_name(scaled, s)["urn"] for s in ("-autoscaler-identity", "-autoscaler-policy", "-pod-identity-agent")}
    assert needed <= set(ca.dependencies)


def test_the_gpu_group_keeps_the_autoscalers_count_and_says_what_an_empty_group_offers(scaled):
    gpu = by_name(scaled, "-aws-gpu")
    assert gpu["inputs"]["scalingConfig"] == {"desiredSize": 2, "minSize": 0, "maxSize": 4}
    assert gpu["ignoreChanges"] == ["scalingConfig.desiredSize"]
    assert gpu["inputs"]["labels"]["k8s.amazonaws.com/accelerator"] == "h100"  # CA's GPU label (README GPU note)
    # scale from zero: CA reads the group's tags with eks:DescribeNodegroup; p5.48xlarge wires 32 EFA interfaces
    assert gpu["inputs"]["tags"]["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == "32"
    system = by_name(scaled, "-aws-system")
    assert (
        system["ignoreChanges"] == []
        and system["inputs"]["scalingConfig"]["minSize"] == 2 == (system["inputs"]["scalingConfig"]["maxSize"])
    )  # auto-discovered too, but CA cannot move a group whose min is its max


def test_a_group_that_may_only_grow_keeps_nodes_as_its_floor():
    plan = plan_values(eks_values(nodes=2, maxNodes=4))
    gpu = by_name(plan, "-aws-gpu")
    assert gpu["inputs"]["scalingConfig"] == {"desiredSize": 2, "minSize": 2, "maxSize": 4}
    assert CA in releases(plan)


def test_the_shipped_eks_stack_scales_its_gpu_group_to_zero(stack_plan):
    plan = stack_plan("aws-eks-h100")  # nodes 4, minNodes 0, maxNodes 4 (default: nodes)
    assert CA in releases(plan)
    gpu = by_name(plan, "-aws-gpu")
    assert gpu["inputs"]["scalingConfig"] == {"desiredSize": 4, "minSize": 0, "maxSize": 4}
    assert gpu["ignoreChanges"] == ["scalingConfig.desiredSize"]
    assert plan.summary()["hourlyUsdAtMinNodes"] == 0


def test_a_fixed_group_installs_no_autoscaler():
    plan = plan_values(eks_values(nodes=4))  # maxNodes and minNodes default to nodes
    assert CA not in releases(plan)
    for kind in ("eks/addon:Addon", "eks/podIdentityAssociation:PodIdentityAssociation"):
        assert resources_of(plan, kind) == []
    assert not [r for r in plan.resources if r.name.endswith("-autoscaler-role")]
    gpu = by_name(plan, "-aws-gpu")
    assert gpu["ignoreChanges"] == [] and gpu["inputs"]["scalingConfig"] == {
        "desiredSize": 4,
        "minSize": 4,
        "maxSize": 4,
    }
    assert "k8s.amazonaws.com/accelerator" not in gpu["inputs"]["labels"]
    assert not [k for k in gpu["inputs"]["tags"] if k.startswith("k8s.io/cluster-autoscaler")]


def test_min_nodes_is_built_on_eks_and_on_demand_base_still_refused():
    aws_layout.plan(spec_of(eks_values(**SCALING)))  # no refusal
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(eks_values(spot={"enabled": True, "onDemandBase": 1}, **SCALING)))
    assert info.value.key == "gpu-cluster:cluster.spot.onDemandBase"


def test_the_cost_row_reads_at_min_the_deploy_count_and_max(scaled):
    summary = scaled.summary()
    assert (summary["minNodes"], summary["nodes"], summary["maxNodes"]) == (0, 2, 4)
    text = cost_text(summary)
    assert text.startswith("$0.00/h at minNodes (0 nodes), ") and "at the target (2 nodes)" in text
    assert f"up to ${summary['hourlyUsdAtMaxNodes']:,.2f}/h at 4 nodes" in text


def _chart_dir(tmp_path: Path, helm: str) -> Path | None:
    """The pinned chart: CLUSTER_AUTOSCALER_CHART (a local copy of the chart) or `helm pull` from its repository."""
    local = os.environ.get("CLUSTER_AUTOSCALER_CHART")
    if local:
        return Path(local)
    pinned = charts()[CA]
    pulled = subprocess.run(
        [helm, "pull", pinned["chart"], "--repo", pinned["repo"], "--version", pinned["version"], "--untar"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return tmp_path / pinned["chart"] if pulled.returncode == 0 else None


def test_helm_renders_the_values_into_the_autoscalers_arguments(scaled, tmp_path):
    helm = shutil.which("helm")
    if helm is None:
        pytest.skip("no helm binary (not a Debian package: go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
    chart = _chart_dir(tmp_path, helm)
    if chart is None:
        pytest.skip("the pinned chart could not be pulled (offline); set CLUSTER_AUTOSCALER_CHART to a local copy")
    values = releases(scaled)[CA]["values"]
    values["autoDiscovery"]["clusterName"] = "llm-eks-1a2b3c"  # the generated name, known at deploy
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    rendered = subprocess.run(
        [helm, "template", CA, str(chart), "--namespace", "kube-system", "-f", str(tmp_path / "values.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.1"
    args = container["command"]
    assert "--cloud-provider=aws" in args
    assert (
        "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/llm-eks-1a2b3c"
        in args
    )
    assert {
        "--balance-similar-node-groups=true",
        "--expander=least-waste",
        "--skip-nodes-with-local-storage=false",
    } <= set(args)
    assert {"name": "AWS_REGION", "value": "us-east-1"} in container["env"]
    assert pod["serviceAccountName"] == "cluster-autoscaler" and pod["nodeSelector"] == {
        "gpu-cluster.dev/pool": "system"
    }
    account = next(d for d in docs if d["kind"] == "ServiceAccount")
    assert (account["metadata"]["name"], account["metadata"]["namespace"]) == ("cluster-autoscaler", "kube-system")
