"""monitoring.logs with scheduler kubernetes on AWS (EKS), as registered with the mocks: the Amazon CloudWatch
Observability add-on (pinned, container logs only, its metrics off), the three Container Insights groups it writes to
(named after the cluster's EKS name, the retention, the cluster's key), the node role's writes scoped to them (the
broad CloudWatchAgentServerPolicy left off), the key policy's statement for them, and the day-2 diff of turning logs
on, changing the retention and turning them off on the shipped EKS stack (logs stay off as shipped)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog import monitoring as catalog_monitoring
from components.diff import diff_plans
from components.diff.spec_changes import mode_of
from components.layout import aws as aws_layout
from components.plan import load_stack
from components.spec.updates import update_policies

from .conftest import ROOT, aws_values, plan_json, plan_stack_with, plan_values, resources_of, spec_of

LOGS = {"logs": {"enabled": True, "retentionDays": 14}}
BROAD = "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"
GROUPS = ("application", "dataplane", "host")
EKS = {"scheduler": "kubernetes", "nodeGroup": "managed", "kubernetes": {"systemNodes": 2}}


@pytest.fixture(scope="module")
def eks_plan() -> Any:
    return plan_values(aws_values(**EKS, encryption={"key": "auto"}, monitoring=LOGS))


def _named(plan: Any, type_suffix: str, name: str) -> dict[str, Any]:
    return next(r for r in resources_of(plan, type_suffix) if r["name"] == name)


def _attached(plan: Any) -> set[str]:
    return {r["inputs"]["policyArn"] for r in resources_of(plan, "iam/rolePolicyAttachment:RolePolicyAttachment")}


def test_the_add_on_is_pinned_and_ships_container_logs_only(eks_plan):
    addon = _named(eks_plan, "eks/addon:Addon", "test-aws-cloudwatch-observability")["inputs"]
    assert addon["addonName"] == "amazon-cloudwatch-observability"
    assert addon["addonVersion"] == "v6.4.0-eksbuild.1"
    assert addon["clusterName"] == "<autoname:test-aws-eks>"
    assert json.loads(addon["configurationValues"]) == {
        "containerLogs": {"enabled": True},
        # metrics stay with kube-prometheus-stack and the GPU operator's DCGM exporter
        "containerInsights": {"enabled": False},
        "applicationSignals": {"enabled": False},
        "dcgmExporter": {"enabled": False},
        "neuronMonitor": {"enabled": False},
    }


def test_the_groups_fluent_bit_writes_are_created_first_with_retention_and_the_key(eks_plan):
    groups = {r["name"]: r["inputs"] for r in resources_of(eks_plan, "cloudwatch/logGroup:LogGroup")}
    assert sorted(groups) == [f"test-aws-logs-{g}" for g in GROUPS]
    for g in GROUPS:
        inputs = groups[f"test-aws-logs-{g}"]
        # Fluent Bit's outputs: /aws/containerinsights/${CLUSTER_NAME}/<group> (chart 6.4.0 values.yaml)
        assert inputs["name"] == f"/aws/containerinsights/<autoname:test-aws-eks>/{g}"
        assert inputs["retentionInDays"] == 14
        assert inputs["kmsKeyId"] == "<arn of test-aws-kms>"
    # no group of the VM mode (no agent on EKS nodes)
    assert not [r for r in resources_of(eks_plan, "cloudwatch/logGroup:LogGroup") if r["name"] == "test-aws-logs"]


def test_the_node_role_writes_only_to_those_groups_and_loses_the_broad_policy(eks_plan):
    policy = json.loads(_named(eks_plan, "iam/rolePolicy:RolePolicy", "test-aws-node-role-logs")["inputs"]["policy"])
    (statement,) = policy["Statement"]
    assert statement["Action"] == catalog_monitoring.logs("aws")["grant"]  # type: ignore[index]
    assert "logs:CreateLogGroup" not in statement["Action"]  # the groups exist: Fluent Bit never creates one
    assert statement["Resource"] == [
        r for g in GROUPS for r in (f"<arn of test-aws-logs-{g}>", f"<arn of test-aws-logs-{g}>:*")
    ]
    assert BROAD not in _attached(eks_plan)
    identity = eks_plan.as_json()["outputs"]["identity"]
    assert identity["inline"][0]["action"] == statement["Action"]


def test_the_key_lets_cloudwatch_logs_encrypt_the_clusters_container_insights_groups(eks_plan):
    key = _named(eks_plan, "kms/key:Key", "test-aws-kms")["inputs"]
    by_sid = {s["Sid"]: s for s in json.loads(key["policy"])["Statement"]}
    statement = by_sid["CloudWatchLogsEncryptsTheClusterGroup"]
    assert statement["Principal"] == {"Service": "logs.us-east-1.amazonaws.com"}
    # the EKS name is generated at deploy, after the key: Pulumi's auto-name of test-aws-eks, each group
    assert statement["Condition"] == {
        "ArnLike": {
            "kms:EncryptionContext:aws:logs:arn": "arn:<partition of us-east-1>:logs:us-east-1:<account id>:"
            "log-group:/aws/containerinsights/test-aws-eks-*/*"
        }
    }


def test_without_a_key_the_groups_use_cloudwatch_logs_own_encryption():
    plan = plan_values(aws_values(**EKS, monitoring=LOGS))
    groups = resources_of(plan, "cloudwatch/logGroup:LogGroup")
    assert len(groups) == 3 and all("kmsKeyId" not in g["inputs"] for g in groups)
    assert [r["name"] for r in resources_of(plan, "kms/key:Key")] == ["test-aws-eks-secrets"]


def test_without_logs_nothing_is_added_and_the_role_keeps_the_managed_policy():
    plan = plan_values(aws_values(**EKS))
    assert not resources_of(plan, "cloudwatch/logGroup:LogGroup")
    assert [r["name"] for r in resources_of(plan, "eks/addon:Addon")] == []
    assert BROAD in _attached(plan)
    assert aws_layout.plan(spec_of(aws_values(**EKS))).kubernetes.logs is None  # type: ignore[union-attr]


def test_the_nodes_boot_data_does_not_change_with_logs():
    on = aws_layout.plan(spec_of(aws_values(**EKS, monitoring=LOGS)))
    off = aws_layout.plan(spec_of(aws_values(**EKS)))
    assert on.kubernetes is not None and off.kubernetes is not None
    assert on.kubernetes.gpu_user_data == off.kubernetes.gpu_user_data
    assert on.logs is None  # the VM mode's agent and group are not planned


def test_an_existing_key_is_not_edited_and_the_plan_says_what_its_policy_needs():
    arn = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    planned = aws_layout.plan(spec_of(aws_values(**EKS, encryption={"key": arn}, monitoring=LOGS))).encryption
    assert planned is not None and planned.create is None
    assert any("/aws/containerinsights/{cluster}/*" in n for n in planned.notes)


def _eks(monitoring: dict[str, Any] | None) -> dict[str, Any]:
    return plan_json(plan_stack_with("aws-eks-h100", monitoring=monitoring or {}))


@pytest.fixture(scope="module")
def shipped() -> dict[str, Any]:
    return _eks(None)


@pytest.fixture(scope="module")
def with_logs() -> dict[str, Any]:
    return _eks(LOGS)


def test_day2_turning_logs_on_replaces_no_cluster_node_group_or_template(shipped, with_logs):
    d = diff_plans(shipped, with_logs)
    said = {c.key: c.policy for c in d.spec_changes}
    policy = update_policies()["cluster.monitoring.logs.enabled"].effect(mode_of(with_logs))
    assert said["cluster.monitoring.logs.enabled"] == policy.policy == "in-place"
    # nothing existing changes: the cluster, its node groups and launch templates keep every input
    assert {c.name: c.verdict for c in d.changed} == {}
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.created) == [
        "llm-eks-aws-cloudwatch-observability",
        "llm-eks-aws-logs-application",
        "llm-eks-aws-logs-dataplane",
        "llm-eks-aws-logs-host",
        "llm-eks-aws-node-role-logs",
    ]
    assert [urn.rsplit("::", 1)[1] for urn in d.deleted] == ["llm-eks-aws-node-role-cloudwatchagentserverpolicy"]


def test_day2_a_new_retention_updates_the_groups_in_place(with_logs):
    d = diff_plans(with_logs, _eks({"logs": {"enabled": True, "retentionDays": 60}}))
    assert {c.name: c.verdict for c in d.changed} == {f"llm-eks-aws-logs-{g}": "update" for g in GROUPS}
    assert [c.key for c in d.spec_changes] == ["cluster.monitoring.logs.retentionDays"]


def test_day2_turning_logs_off_says_data_loss_for_the_groups(shipped, with_logs):
    d = diff_plans(with_logs, shipped)
    loss = [w for w in d.warnings if w.startswith("DATA LOSS: deletes")]
    assert len(loss) == 3 and all("the data on it is lost" in w for w in loss)
    assert {urn.rsplit("::", 1)[1] for urn in d.deleted} >= {f"llm-eks-aws-logs-{g}" for g in GROUPS}


def test_the_plan_says_where_the_logs_go_and_names_their_usage_bill(eks_plan):
    summary = eks_plan.as_json()["summary"]
    assert summary["monitoring"]["logs"] == (
        "CloudWatch Logs /aws/containerinsights/<EKS cluster>/{application,dataplane,host} (14 days, the cluster's "
        "key) from the EKS add-on amazon-cloudwatch-observability (Fluent Bit)"
    )
    unpriced = {i["item"]: i["unpriced"] for i in summary["costs"]["items"] if i["unpriced"]}
    assert unpriced["logs"].startswith("usage-based: CloudWatch Logs")


# monitoring.logs.controlPlane: EKS's own group, created before the cluster under the written EKS name
NAMED = {**EKS, "kubernetes": {"systemNodes": 2, "clusterName": "llm-eks-prod"}}
PLANE = {"logs": {"enabled": True, "retentionDays": 14, "controlPlane": ["scheduler", "audit", "api", "audit"]}}


@pytest.fixture(scope="module")
def plane_plan() -> Any:
    return plan_values(aws_values(**NAMED, encryption={"key": "auto"}, monitoring=PLANE))


def test_the_control_plane_group_is_created_first_with_retention_and_the_key(plane_plan):
    group = _named(plane_plan, "cloudwatch/logGroup:LogGroup", "test-aws-logs-control-plane")
    # EKS's group for every log type: /aws/eks/<cluster name>/cluster (EKS User Guide, control-plane-logs)
    assert group["inputs"]["name"] == "/aws/eks/llm-eks-prod/cluster"
    assert group["inputs"]["retentionInDays"] == 14
    assert group["inputs"]["kmsKeyId"] == "<arn of test-aws-kms>"
    cluster = next(r for r in plane_plan.resources if r.name == "test-aws-eks")
    # the cluster waits for the group: EKS would otherwise create it, never expiring and without the key
    assert group["urn"] in cluster.dependencies


def test_the_cluster_takes_the_written_name_and_the_types_as_a_set(plane_plan):
    inputs = _named(plane_plan, "eks/cluster:Cluster", "test-aws-eks")["inputs"]
    assert inputs["name"] == "llm-eks-prod"
    assert inputs["enabledClusterLogTypes"] == ["api", "audit", "scheduler"]  # botocore eks LogType values
    # the Container Insights groups and the add-on follow the written name too
    names = sorted(r["inputs"]["name"] for r in resources_of(plane_plan, "cloudwatch/logGroup:LogGroup"))
    assert names == ["/aws/containerinsights/llm-eks-prod/" + g for g in GROUPS] + ["/aws/eks/llm-eks-prod/cluster"]


def test_the_key_names_the_control_plane_group_beside_the_container_insights_ones(plane_plan):
    key = _named(plane_plan, "kms/key:Key", "test-aws-kms")["inputs"]
    statement = {s["Sid"]: s for s in json.loads(key["policy"])["Statement"]}["CloudWatchLogsEncryptsTheClusterGroup"]
    prefix = "arn:<partition of us-east-1>:logs:us-east-1:<account id>:log-group:"
    assert statement["Condition"] == {
        "ArnLike": {
            "kms:EncryptionContext:aws:logs:arn": [
                f"{prefix}/aws/containerinsights/llm-eks-prod/*",
                f"{prefix}/aws/eks/llm-eks-prod/cluster",
            ]
        }
    }


def test_the_plan_and_outputs_name_the_control_plane_group(plane_plan):
    out = plane_plan.as_json()
    assert out["outputs"]["logs"]["controlPlane"] == {
        "group": "/aws/eks/llm-eks-prod/cluster",
        "types": ["api", "audit", "scheduler"],
    }
    assert out["summary"]["monitoring"]["logs"].endswith(
        "; the control plane's api, audit, scheduler to /aws/eks/llm-eks-prod/cluster"
    )


def test_without_types_the_cluster_has_no_log_input_and_no_group():
    plan = plan_values(aws_values(**NAMED, monitoring=LOGS))
    inputs = _named(plan, "eks/cluster:Cluster", "test-aws-eks")["inputs"]
    assert "enabledClusterLogTypes" not in inputs and inputs["name"] == "llm-eks-prod"
    assert not [r for r in resources_of(plan, "cloudwatch/logGroup:LogGroup") if "control-plane" in r["name"]]


def test_an_existing_key_is_told_about_the_control_plane_group():
    arn = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    planned = aws_layout.plan(spec_of(aws_values(**NAMED, encryption={"key": arn}, monitoring=PLANE))).encryption
    assert planned is not None and planned.create is None
    assert any("/aws/containerinsights/llm-eks-prod/* and /aws/eks/llm-eks-prod/cluster" in n for n in planned.notes)


def test_the_shipped_eks_cluster_keeps_its_inputs_without_the_new_keys(shipped):
    cluster = next(r for r in shipped["resources"] if r["type"] == "aws:eks/cluster:Cluster")
    # no name input (Pulumi's auto-name, as deployed) and no logging input: no diff for a deployed cluster
    assert "name" not in cluster["inputs"] and "enabledClusterLogTypes" not in cluster["inputs"]


NAMED_LOGS = {"logs": {"enabled": True, "retentionDays": 14}}


def load_kube(stack: str) -> dict[str, Any]:
    return dict(load_stack(ROOT, stack).values["gpu-cluster:cluster"]["kubernetes"])


def _named_eks(monitoring: dict[str, Any]) -> dict[str, Any]:
    kube = {**load_kube("aws-eks-h100"), "clusterName": "llm-eks-aws-eks-1a2b3c4"}
    return plan_json(plan_stack_with("aws-eks-h100", kubernetes=kube, monitoring=monitoring))


def test_day2_turning_the_control_plane_logs_on_updates_the_cluster_in_place():
    before = _named_eks(NAMED_LOGS)
    after = _named_eks({"logs": {**NAMED_LOGS["logs"], "controlPlane": ["audit"]}})
    d = diff_plans(before, after)
    policy = update_policies()["cluster.monitoring.logs.controlPlane"].effect(mode_of(after))
    assert {c.key: c.policy for c in d.spec_changes} == {"cluster.monitoring.logs.controlPlane": "in-place"}
    assert policy.policy == "in-place"
    # the cluster: enabledClusterLogTypes in place (UpdateClusterConfig logging); the key policy gains the group
    assert {c.name: c.verdict for c in d.changed} == {"llm-eks-aws-eks": "update"}
    assert [urn.rsplit("::", 1)[1] for urn in d.created] == ["llm-eks-aws-logs-control-plane"]
    assert not d.deleted
    # and off again: the group and its logs go, said first
    back = diff_plans(after, before)
    assert {c.name: c.verdict for c in back.changed} == {"llm-eks-aws-eks": "update"}
    assert any(w.startswith("DATA LOSS: deletes") and "control-plane" in w for w in back.warnings)


def test_day2_writing_a_cluster_name_is_counted_as_a_replacement_offline(shipped):
    # the offline diff cannot read the deployed auto-name; the update policy says what `pulumi preview` shows
    named = plan_json(plan_stack_with("aws-eks-h100", kubernetes={**load_kube("aws-eks-h100"), "clusterName": "x1"}))
    d = diff_plans(shipped, named)
    assert {c.key: c.policy for c in d.spec_changes} == {"cluster.kubernetes.clusterName": "replace"}
    assert {c.name: c.verdict for c in d.changed}["llm-eks-aws-eks"] == "replace"
