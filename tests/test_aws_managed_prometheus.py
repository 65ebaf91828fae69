"""monitoring.prometheus managed on AWS, as registered with the mocks: the AMP workspace under the cluster's key, the
alert rules as its rule groups namespace (judged by promtool), its alert manager to the SNS topic and the topic's
policy for AMP, the node role's writes and queries on that workspace only (no sns:Publish), the key policy's AMP
statements, the login node's Prometheus agent and Grafana (the agent's config judged by promtool --agent), the plan's
row and price, and the refusals."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
from typing import Any

import pytest
import yaml

from components.bootstrap import alertmanager, monitoring
from components.errors import ConfigError, ConfigErrors
from components.layout.aws.monitoring import TOPIC_PLACEHOLDER, WORKSPACE_PLACEHOLDER

from .conftest import aws_values, one, plan_values, resources_of

MANAGED = {"prometheus": "managed"}
NOTIFY = {"notify": ["ops@example.com"]}
ENDPOINT = "<endpoint of test-aws-amp>/"  # the mocks' prometheusEndpoint (components/plan/mocks/aws.yaml)
QUERIES = ["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata"]


def _login(plan: Any) -> dict[str, Any]:
    login = next(r for r in resources_of(plan, "ec2/instance:Instance") if r["name"].endswith("-login"))
    encoded = login["inputs"]["userDataBase64"]
    assert len(base64.b64decode(encoded)) < 16 * 1024  # EC2's user data limit
    doc: dict[str, Any] = yaml.safe_load(gzip.decompress(base64.b64decode(encoded)).decode())
    return doc


def _files(doc: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def _policies(plan: Any) -> dict[str, list[dict[str, Any]]]:
    return {
        r["name"]: json.loads(r["inputs"]["policy"])["Statement"]
        for r in resources_of(plan, "iam/rolePolicy:RolePolicy")
    }


@pytest.fixture(scope="module")
def slurm_plan():
    return plan_values(aws_values(scheduler="slurm", encryption={"key": "auto"}, monitoring=MANAGED | NOTIFY))


def test_the_workspace_is_under_the_clusters_key_and_holds_the_alert_rules(slurm_plan):
    workspace = one(slurm_plan, "amp/workspace:Workspace")
    assert workspace["name"] == "test-aws-amp"
    assert workspace["inputs"]["kmsKeyArn"] == "<arn of test-aws-kms>"
    assert workspace["inputs"]["alias"] == "gpu-cluster-test-test"
    rules = one(slurm_plan, "amp/ruleGroupNamespace:RuleGroupNamespace")["inputs"]
    assert rules["workspaceId"] == "<id of test-aws-amp>" and rules["name"] == "gpu-cluster"
    # the same rules the self-hosted Prometheus evaluates (bootstrap/monitoring.py rule_list)
    (group,) = yaml.safe_load(rules["data"])["groups"]
    alerts = {r["alert"] for r in group["rules"]}
    assert {"GpuIdle", "GpuXidError", "NodeMissing", "DiskNearlyFull"} <= alerts
    assert group["rules"][0]["expr"] == "avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m]) < 5"


def test_without_a_key_the_workspace_uses_amps_own_encryption():
    plan = plan_values(aws_values(login={}, monitoring=MANAGED))
    assert "kmsKeyArn" not in one(plan, "amp/workspace:Workspace")["inputs"]
    assert not resources_of(plan, "amp/alertManagerDefinition:AlertManagerDefinition")  # no notify: no receiver
    assert not resources_of(plan, "sns/topicPolicy:TopicPolicy")


def test_the_alert_manager_publishes_to_the_topic_which_lets_only_this_workspace_in(slurm_plan):
    definition = one(slurm_plan, "amp/alertManagerDefinition:AlertManagerDefinition")["inputs"]
    assert definition["workspaceId"] == "<id of test-aws-amp>"
    config = yaml.safe_load(definition["definition"])
    (receiver,) = config["receivers"]
    (sns,) = receiver["sns_configs"]
    # AMP-alertmanager-receiver-config: sigv4 needs its region; api_url and http_config are not allowed
    assert sns["topic_arn"] == "<arn of test-aws-alerts>" and sns["sigv4"] == {"region": "us-east-1"}
    assert not {"api_url", "http_config"} & set(sns)
    assert config["route"]["receiver"] == receiver["name"]
    assert TOPIC_PLACEHOLDER not in definition["definition"]
    policy = one(slurm_plan, "sns/topicPolicy:TopicPolicy")["inputs"]
    assert policy["arn"] == "<arn of test-aws-alerts>"
    (statement,) = json.loads(policy["policy"])["Statement"]
    assert statement["Principal"] == {"Service": "aps.amazonaws.com"}
    assert statement["Action"] == ["sns:Publish", "sns:GetTopicAttributes"]
    assert statement["Resource"] == "<arn of test-aws-alerts>"
    assert statement["Condition"]["ArnEquals"] == {"aws:SourceArn": "<arn of test-aws-amp>"}
    assert set(statement["Condition"]["StringEquals"]) == {"aws:SourceAccount"}


def test_the_node_role_writes_and_queries_this_workspace_only_and_publishes_nothing(slurm_plan):
    policies = _policies(slurm_plan)
    assert policies["test-aws-node-role-amp"] == [
        {
            "Sid": "WriteAndQueryClusterWorkspace",
            "Effect": "Allow",
            "Action": ["aps:RemoteWrite", *QUERIES],
            "Resource": "<arn of test-aws-amp>",
        }
    ]
    assert "test-aws-node-role-alerts" not in policies  # AMP publishes, not the login node
    assert "test-aws-node-role-monitoring" in policies  # the agent still discovers the nodes (ec2_sd)


def test_the_key_policy_lets_amp_use_the_key_and_publish_to_the_encrypted_topic(slurm_plan):
    statements = {s["Sid"]: s for s in json.loads(one(slurm_plan, "kms/key:Key")["inputs"]["policy"])["Statement"]}
    through_amp = statements["AccountUsesTheKeyThroughAmp"]
    assert "kms:CreateGrant" in through_amp["Action"] and "kms:GenerateDataKey*" in through_amp["Action"]
    assert through_amp["Condition"]["StringEquals"]["kms:ViaService"] == "aps.us-east-1.amazonaws.com"
    publishes = statements["AmpPublishesToTheAlertTopic"]
    assert publishes["Principal"] == {"Service": "aps.amazonaws.com"}
    assert publishes["Action"] == ["kms:GenerateDataKey*", "kms:Decrypt"]
    assert "AccountPublishesToTheAlertTopic" not in statements  # no node publishes


def test_a_self_hosted_key_policy_has_no_amp_statement():
    plan = plan_values(aws_values(login={}, encryption={"key": "auto"}, monitoring=NOTIFY))
    sids = {s["Sid"] for s in json.loads(one(plan, "kms/key:Key")["inputs"]["policy"])["Statement"]}
    assert "AccountPublishesToTheAlertTopic" in sids and not {s for s in sids if "Amp" in s}


@pytest.mark.parametrize("cluster", [{"login": {}}, {"scheduler": "slurm"}], ids=["vm-login", "slurm"])
def test_the_login_node_runs_an_agent_writing_to_the_workspace_and_grafana_reading_it(cluster):
    plan = plan_values(aws_values(**cluster, monitoring=MANAGED | NOTIFY))
    doc = _login(plan)
    files = _files(doc)
    config = yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    assert config["remote_write"] == [
        {"url": f"{ENDPOINT}api/v1/remote_write", "sigv4": {"region": "us-east-1"}}  # the instance role's keys
    ]
    assert not {"rule_files", "alerting"} & set(config) and "evaluation_interval" not in config["global"]
    assert {j["job_name"] for j in config["scrape_configs"]} == {"dcgm-exporter", "node-exporter"}
    unit = files["/etc/systemd/system/gpu-cluster-prometheus.service"]
    assert f"--enable-feature=agent --storage.agent.path={monitoring.AGENT_DIR} " in unit
    assert "--storage.tsdb" not in unit  # server-only flags: Prometheus refuses them in agent mode
    assert monitoring.AGENT_DIR in files["/etc/gpu-cluster/monitoring.env"]  # the directory the script creates
    assert monitoring.RULES_YML not in files and alertmanager.ALERTMANAGER_YML not in files
    assert ["systemctl", "enable", "--now", "--no-block", alertmanager.INSTALL] not in doc["runcmd"]
    (source,) = yaml.safe_load(files["/etc/grafana/provisioning/datasources/gpu-cluster.yaml"])["datasources"]
    assert source["url"] == ENDPOINT and source["uid"] == "prometheus"  # the dashboards' uid
    assert source["jsonData"] == {"sigV4Auth": True, "sigV4AuthType": "default", "sigV4Region": "us-east-1"}
    assert (
        "Environment=GF_AUTH_SIGV4_AUTH_ENABLED=true\n"
        in files["/etc/systemd/system/grafana-server.service.d/gpu-cluster.conf"]
    )
    assert any(path.startswith(monitoring.DASHBOARD_DIR) for path in files)
    assert WORKSPACE_PLACEHOLDER not in json.dumps(doc)


def test_a_self_hosted_login_node_keeps_its_server_rules_and_local_grafana():
    files = _files(_login(plan_values(aws_values(login={}))))
    config = yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    assert "remote_write" not in config and config["rule_files"] == [monitoring.RULES_YML]
    unit = files["/etc/systemd/system/gpu-cluster-prometheus.service"]
    assert "--storage.tsdb.retention.time=15d" in unit and "agent" not in unit
    (source,) = yaml.safe_load(files["/etc/grafana/provisioning/datasources/gpu-cluster.yaml"])["datasources"]
    assert source["url"] == "http://127.0.0.1:9090" and "jsonData" not in source


def test_the_agent_config_and_the_workspaces_rules_pass_promtool(promtool, tmp_path):
    plan = plan_values(aws_values(login={}, monitoring=MANAGED))
    config = tmp_path / "prometheus.yml"
    agent_config = _files(_login(plan))[monitoring.PROMETHEUS_YML].replace(ENDPOINT, "https://aps.example/ws/")
    config.write_text(agent_config)
    # as an agent's, and as the login node's monitoring.sh checks it (plain `check config`: a valid server config too)
    for flags in (["--agent"], []):
        run = subprocess.run([promtool, "check", "config", *flags, str(config)], capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
    rules = tmp_path / "rules.yml"
    rules.write_text(one(plan, "amp/ruleGroupNamespace:RuleGroupNamespace")["inputs"]["data"])
    run = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    # a negative control: agent mode refuses what only a server evaluates
    config.write_text(agent_config + f"rule_files: [{rules}]\n")
    assert subprocess.run([promtool, "check", "config", "--agent", str(config)], capture_output=True).returncode != 0


def test_the_plan_names_the_workspace_the_managed_grafana_it_needs_admins_for_and_the_usage_price(slurm_plan):
    summary = slurm_plan.summary()
    row = summary["monitoring"]
    assert row["prometheus"] == "managed" and row["service"] == "Amazon Managed Service for Prometheus"
    assert row["workspace"] == "gpu-cluster-test-test" and row["endpoint"] == ENDPOINT
    assert row["grafanaNote"].startswith(
        "dashboards on the login node's Grafana; Amazon Managed Grafana with them only"
    )
    assert "managedGrafana" not in row  # no grafanaAdmins: tests/test_aws_managed_grafana.py builds it
    bill = json.dumps(slurm_plan.as_json(), default=str)
    assert "its rate table is not in the stored text" in bill  # named, never counted


def _errors(**cluster: Any) -> list[ConfigError]:
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(aws_values(**cluster))
    return list(getattr(info.value, "errors", [info.value]))


def test_managed_with_eks_is_built_and_refused_only_under_a_customer_managed_key():
    # built on EKS by AMP's managed collector (tests/test_aws_eks_managed_prometheus.py)
    plan = plan_values(aws_values(scheduler="kubernetes", monitoring=MANAGED))
    assert one(plan, "amp/scraper:Scraper") and one(plan, "amp/workspace:Workspace")
    (error,) = _errors(scheduler="kubernetes", encryption={"key": "auto"}, monitoring=MANAGED)
    assert error.key == "gpu-cluster:cluster.monitoring.prometheus"
    assert error.message.startswith("managed cannot be built with encryption.key auto: AMP's managed collector")


def test_managed_without_a_login_node_or_a_way_out_is_one_line_each():
    (error,) = _errors(monitoring=MANAGED)
    assert error.key == "gpu-cluster:cluster.monitoring.prometheus"
    assert "needs a host for the Prometheus agent" in error.message and "login: {}" in error.message
    errors = _errors(login={}, network={"egress": "none"}, monitoring=MANAGED)
    assert [e.key for e in errors] == ["gpu-cluster:cluster.monitoring.prometheus"]
    assert "needs network.egress nat, got none" in errors[0].message


def test_notify_with_managed_is_accepted_and_auto_never_picks_managed():
    plan = plan_values(aws_values(login={}, monitoring=NOTIFY))  # auto: selfHosted, as before
    assert not resources_of(plan, "amp/workspace:Workspace")
    assert one(plan, "sns/topic:Topic")


def _shipped_with(stack: str, **monitoring_keys: Any) -> dict[str, Any]:
    import copy

    from components.plan import load_stack, make_plan
    from components.plan.stackfile import StackFile

    from .conftest import ROOT

    shipped = load_stack(ROOT, stack)
    values = copy.deepcopy(shipped.values)
    values["gpu-cluster:cluster"]["monitoring"] = monitoring_keys
    stack_file = StackFile(shipped.project, shipped.stack, shipped.path, values, shipped.secret_keys)
    loaded: dict[str, Any] = json.loads(json.dumps(make_plan(ROOT, stack_file).as_json(), default=str))
    return loaded


def test_day2_self_hosted_to_managed_adds_beside_and_restarts_only_the_login_node(stack_plan):
    from components.diff import diff_plans

    new = json.loads(json.dumps(stack_plan("aws-h100-cmk").as_json(), default=str))
    old = _shipped_with("aws-h100-cmk", notify=["ops@example.com"])  # selfHosted with its Alertmanager
    d = diff_plans(old, new)
    assert [c.key for c in d.spec_changes] == ["cluster.monitoring.prometheus"]
    verdicts = {c.name: c.verdict for c in d.changed}
    # the login VM stops and starts for its user data; the key policy gains AMP's statements in place
    assert verdicts == {"h100-cmk-aws-login": "restart", "h100-cmk-aws-kms": "update"}
    added = sorted(urn.rsplit("::", 1)[1] for urn in d.created)
    assert added == [
        "h100-cmk-aws-alerts-amp",
        "h100-cmk-aws-amp",
        "h100-cmk-aws-amp-alertmanager",
        "h100-cmk-aws-amp-rules",
        "h100-cmk-aws-node-role-amp",
    ]
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.deleted) == ["h100-cmk-aws-node-role-alerts"]


def test_day2_managed_back_to_self_hosted_names_the_workspaces_data_loss(stack_plan):
    from components.diff import diff_plans

    old = json.loads(json.dumps(stack_plan("aws-h100-cmk").as_json(), default=str))
    new = _shipped_with("aws-h100-cmk", prometheus="selfHosted", notify=["ops@example.com"])
    d = diff_plans(old, new)
    assert any(w.startswith("DATA LOSS") and "h100-cmk-aws-amp" in w for w in d.warnings), d.warnings


def test_the_workspace_key_pattern_is_botocores_and_a_multi_region_key_is_refused():
    from botocore.session import get_session

    from components.catalog import monitoring as catalog_monitoring

    shape = get_session().get_service_model("amp").shape_for("KmsKeyArn")
    entry = catalog_monitoring.managed("aws")
    assert entry is not None and entry["kmsKeyPattern"] == shape.metadata["pattern"]
    (error,) = _errors(
        login={},
        encryption={"key": "arn:aws:kms:us-east-1:111122223333:key/mrk-1234abcd12ab34cd56ef1234567890ab"},
        monitoring=MANAGED,
    )
    assert error.key == "gpu-cluster:cluster.monitoring.prometheus" and "multi-Region" in error.message


def test_an_existing_single_region_key_encrypts_the_workspace_and_the_plan_says_what_its_policy_needs():
    from components.layout.aws import encryption
    from components.spec import build_spec

    arn = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    values = aws_values(login={}, encryption={"key": arn}, monitoring=MANAGED | NOTIFY)
    planned = encryption.plan(build_spec(values, "test"))
    assert planned is not None and planned.amp and planned.create is None
    assert any("aps.us-east-1.amazonaws.com" in n and "aps.amazonaws.com publishing" in n for n in planned.notes)
    plan = plan_values(values)
    assert one(plan, "amp/workspace:Workspace")["inputs"]["kmsKeyArn"] == arn
    assert not resources_of(plan, "kms/key:Key")
