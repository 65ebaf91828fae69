"""Amazon Managed Grafana beside AMP (monitoring.prometheus managed with monitoring.grafanaAdmins), as registered with
the mocks: the customer-managed workspace with IAM Identity Center sign-in and its role (trusted by Amazon Managed
Grafana for this account's workspaces, querying this cluster's AMP workspace only), the admins' role association, the
service account token configuring an explicit grafana provider, the AMP data source and the login node's dashboards
inside it (their panels on that data source's uid), the plan's row and price, the refusals, the day-2 verdicts, and
that no other cloud's plan imports pulumiverse_grafana."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from components.bootstrap import monitoring
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors

from .conftest import ROOT, aws_values, one, plan_values, resources_of

ADMIN = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
STORE_ADMIN = "90670a1b2c-" + ADMIN  # an id prefixed by its identity store (botocore SsoId pattern)
GRAFANA = {"prometheus": "managed", "grafanaAdmins": [ADMIN, STORE_ADMIN]}
QUERIES = ["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata"]


@pytest.fixture(scope="module")
def plan():
    return plan_values(aws_values(login={}, monitoring=GRAFANA))


def _json(plan: Any) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(plan.as_json(), default=str))
    return loaded


def _registered(plan: Any, type_: str) -> list[Any]:
    return [r for r in plan.resources if r.type == type_]


def test_the_workspace_is_customer_managed_with_identity_center_and_our_role(plan):
    workspace = one(plan, "grafana/workspace:Workspace")
    i = workspace["inputs"]
    assert workspace["name"] == "test-aws-grafana"
    assert i["accountAccessType"] == "CURRENT_ACCOUNT"
    assert i["authenticationProviders"] == ["AWS_SSO"]
    # botocore: "Use only the CUSTOMER_MANAGED permission type when creating a workspace with the API"
    assert i["permissionType"] == "CUSTOMER_MANAGED"
    assert i["roleArn"] == "<arn of test-aws-grafana-role>"
    assert i["grafanaVersion"] == "12.4" and i["name"] == "gpu-cluster-test-test"
    # workspaceDataSources is "for internal use only"; one subnet cannot make a VPC configuration (2 to 6)
    assert "dataSources" not in i and "vpcConfiguration" not in i


def test_the_workspace_role_is_trusted_by_grafana_here_and_queries_this_amp_workspace_only(plan):
    role = next(r for r in resources_of(plan, "iam/role:Role") if r["name"] == "test-aws-grafana-role")
    (trust,) = json.loads(role["inputs"]["assumeRolePolicy"])["Statement"]
    assert trust["Principal"] == {"Service": "grafana.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": "<account id>"}
    assert trust["Condition"]["StringLike"] == {
        "aws:SourceArn": "arn:<partition of us-east-1>:grafana:us-east-1:<account id>:/workspaces/*"
    }
    policy = next(
        r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"] == "test-aws-grafana-role-amp"
    )
    assert policy["inputs"]["role"] == "<autoname:test-aws-grafana-role>"
    (statement,) = json.loads(policy["inputs"]["policy"])["Statement"]
    assert statement["Action"] == QUERIES and statement["Resource"] == "<arn of test-aws-amp>"
    # the workspace waits for the grant its data source signs with
    workspace = _registered(plan, "aws:grafana/workspace:Workspace")[0]
    assert any(d.endswith("::test-aws-grafana-role-amp") for d in workspace.dependencies)


def test_every_named_user_is_an_admin_of_this_workspace(plan):
    association = one(plan, "grafana/roleAssociation:RoleAssociation")["inputs"]
    assert association == {"workspaceId": "<id of test-aws-grafana>", "role": "ADMIN", "userIds": [ADMIN, STORE_ADMIN]}


def test_a_service_account_token_of_thirty_days_configures_the_explicit_grafana_provider(plan):
    account = one(plan, "grafana/workspaceServiceAccount:WorkspaceServiceAccount")["inputs"]
    assert account == {
        "workspaceId": "<id of test-aws-grafana>",
        "grafanaRole": "ADMIN",
        "name": "gpu-cluster-provisioner",
    }
    token = one(plan, "grafana/workspaceServiceAccountToken:WorkspaceServiceAccountToken")["inputs"]
    assert token["secondsToLive"] == 2592000  # botocore: secondsToLive max 2592000 (30 days)
    assert token["serviceAccountId"] == "<service account id of test-aws-grafana-provisioner>"
    (provider,) = _registered(plan, "pulumi:providers:grafana")
    assert provider.inputs["url"] == "https://<endpoint of test-aws-grafana>"
    assert provider.inputs["auth"] == "[secret]"  # the token's key, kept secret in state
    inside = _registered(plan, "grafana:oss/dataSource:DataSource") + _registered(
        plan, "grafana:oss/dashboard:Dashboard"
    )
    assert len(inside) == 1 + len(monitoring.dashboards())
    assert {r.provider.rsplit("::", 1)[0] for r in inside} == {provider.urn}  # opts.provider: ours, never a default one


def test_the_data_source_reads_amp_with_sigv4_and_the_workspace_role(plan):
    source = one(plan, "oss/dataSource:DataSource")["inputs"]
    assert source["type"] == "prometheus" and source["uid"] == "gpu-cluster-amp" and source["isDefault"] is True
    assert source["url"] == "<endpoint of test-aws-amp>/"  # the AMP workspace's query endpoint
    assert json.loads(source["jsonDataEncoded"]) == {
        "sigV4Auth": True,
        "sigV4AuthType": "ec2_iam_role",
        "sigV4Region": "us-east-1",
    }


def _datasource_refs(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node["datasource"]] if isinstance(node.get("datasource"), dict) else []
        return own + [ref for v in node.values() for ref in _datasource_refs(v)]
    if isinstance(node, list):
        return [ref for v in node for ref in _datasource_refs(v)]
    return []


def test_the_login_nodes_dashboards_are_provisioned_on_that_data_source(plan):
    uid = one(plan, "oss/dataSource:DataSource")["inputs"]["uid"]
    boards = {r["name"]: json.loads(r["inputs"]["configJson"]) for r in resources_of(plan, "oss/dashboard:Dashboard")}
    assert set(boards) == {f"test-aws-grafana-{f.removesuffix('.json')}" for f in monitoring.dashboards()}
    for file, original in monitoring.dashboards().items():
        board = boards[f"test-aws-grafana-{file.removesuffix('.json')}"]
        assert board["uid"] == original["uid"] and board["title"] == original["title"]
        refs = _datasource_refs(board)
        assert len(refs) == len(_datasource_refs(original)) > 0
        assert {(r["type"], r["uid"]) for r in refs} == {("prometheus", uid)}
        # the same panels and queries the login node provisions
        assert [p.get("targets") for p in board["panels"]] == [p.get("targets") for p in original["panels"]]
    for dashboard in _registered(plan, "grafana:oss/dashboard:Dashboard"):
        assert any(d.endswith("::test-aws-grafana-amp") for d in dashboard.dependencies)


def test_the_plan_names_the_endpoint_the_dashboards_and_the_admins_price(plan):
    row = _json(plan)["outputs"]["monitoring"]
    grafana = row["managedGrafana"]
    assert grafana["endpoint"] == "https://<endpoint of test-aws-grafana>"
    assert grafana["dashboards"] == [b["title"] for b in monitoring.dashboards().values()]
    assert "IAM Identity Center, ADMIN for 2 user(s)" in grafana["signIn"]
    assert "only with monitoring.grafanaAdmins" in row["grafanaNote"]
    (item,) = [i for i in _json(plan)["summary"]["costs"]["items"] if i["item"] == "managedGrafana"]
    assert item["count"] == 2 and item["price"] == "9/month"
    assert item["hourly"] == pytest.approx(2 * 9 / 730, abs=0.01)


def test_with_a_cluster_key_the_amp_workspace_is_under_it_and_the_grafana_workspace_is_not():
    plan = plan_values(aws_values(login={}, encryption={"key": "auto"}, monitoring=GRAFANA))
    assert one(plan, "amp/workspace:Workspace")["inputs"]["kmsKeyArn"] == "<arn of test-aws-kms>"
    assert "kmsKeyId" not in one(plan, "grafana/workspace:Workspace")["inputs"]  # unsourced key policy: not set


def test_without_admins_there_is_no_managed_grafana_and_the_note_says_what_it_needs():
    plan = plan_values(aws_values(login={}, monitoring={"prometheus": "managed"}))
    assert not [r for r in plan.resources if "grafana" in r.type]
    row = _json(plan)["outputs"]["monitoring"]
    assert "managedGrafana" not in row
    assert "Amazon Managed Grafana with them only with monitoring.grafanaAdmins" in row["grafanaNote"]


def _errors(**cluster: Any) -> list[ConfigError]:
    with pytest.raises(ConfigErrors) as err:
        plan_values(aws_values(**cluster))
    return list(err.value.errors)


def test_admins_are_refused_by_key_without_managed_and_when_not_identity_center_ids():
    (error,) = _errors(login={}, monitoring={"grafanaAdmins": [ADMIN]})
    assert error.key == "gpu-cluster:cluster.monitoring.grafanaAdmins"
    assert "Amazon Managed Grafana built with monitoring.prometheus managed, got auto" in error.message
    errors = _errors(login={}, monitoring={"prometheus": "managed", "grafanaAdmins": [ADMIN, "ops@example.com", "x"]})
    assert [e.key for e in errors] == [
        "gpu-cluster:cluster.monitoring.grafanaAdmins[1]",
        "gpu-cluster:cluster.monitoring.grafanaAdmins[2]",
    ]
    assert "on aws must be an IAM Identity Center user id" in errors[0].message


def test_day2_adding_an_admin_updates_the_association_in_place_and_the_first_adds_beside():
    base = aws_values(login={}, monitoring={"prometheus": "managed", "grafanaAdmins": [ADMIN]})
    more = aws_values(login={}, monitoring=GRAFANA)
    d = diff_plans(_json(plan_values(base)), _json(plan_values(more)))
    assert [c.key for c in d.spec_changes] == ["cluster.monitoring.grafanaAdmins"]
    assert {c.name: c.verdict for c in d.changed} == {"test-aws-grafana-admins": "update"}
    assert not d.created and not d.deleted
    none = aws_values(login={}, monitoring={"prometheus": "managed"})
    first = diff_plans(_json(plan_values(none)), _json(plan_values(base)))
    assert not first.changed and not first.deleted  # the login node and AMP are untouched
    assert "::test-aws-grafana" in " ".join(first.created)


def test_other_clouds_plans_never_import_the_grafana_provider():
    code = (
        "import contextlib, io, sys\n"
        "from components.cli import main\n"
        "for stack in sys.argv[1:]:\n"
        "    sys.argv = ['gpu-cluster', 'plan', '--stack', stack, '--format', 'json']\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main()\n"
        "print(sorted(m for m in sys.modules if m.startswith('pulumiverse_grafana')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "azure-managed-prom", "gcp-dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_on_eks_the_collectors_workspace_gets_the_same_grafana_and_dashboards():
    """EKS with managed has no Grafana in the cluster: with admins, Amazon Managed Grafana reads the workspace AMP's
    collector writes, with the login node's dashboards (their labels node and cluster: layout/aws/eks_amp.py)."""
    eks = {"scheduler": "kubernetes", "kubernetes": {"version": "1.36"}, "network": {"egress": "nat"}}
    plan = plan_values(aws_values(**eks, monitoring=GRAFANA))
    assert one(plan, "amp/scraper:Scraper")["inputs"]["destination"]["amp"]["workspaceArn"] == "<arn of test-aws-amp>"
    policy = next(
        r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"] == "test-aws-grafana-role-amp"
    )
    assert json.loads(policy["inputs"]["policy"])["Statement"][0]["Resource"] == "<arn of test-aws-amp>"
    boards = resources_of(plan, "oss/dashboard:Dashboard")
    assert len(boards) == len(monitoring.dashboards())
    row = _json(plan)["outputs"]["monitoring"]
    assert row["managedGrafana"]["endpoint"] == "https://<endpoint of test-aws-grafana>"
    (item,) = [i for i in _json(plan)["summary"]["costs"]["items"] if i["item"] == "managedGrafana"]
    assert item["count"] == 2
