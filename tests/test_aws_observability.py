"""monitoring.logs and monitoring.notify on AWS, as registered with the mocks: the CloudWatch Logs group (retention,
key), the key policy's statements for CloudWatch Logs and SNS, the node role's scoped writes (and the broad managed
policy left off), the CloudWatch agent's configuration per node kind (GPU nodes, elastic partitions, Slurm head,
login), the SNS topic and its email subscriptions, Alertmanager on the login node (its file judged by amtool), and the
refusals."""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
import subprocess
from typing import Any

import pytest
import yaml

from components.bootstrap import alertmanager, monitoring
from components.errors import ConfigError, ConfigErrors
from components.layout import aws as aws_layout
from components.layout.aws.monitoring import TOPIC_PLACEHOLDER
from components.layout.aws.scaling import AGENT_CONFIG

from .conftest import aws_values, one, plan_values, resources_of, spec_of

LOGS = {"logs": {"enabled": True, "retentionDays": 14}}
NOTIFY = {"notify": ["ops@example.com", "ml@example.org"]}
BROAD = "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"
EVERY = ["/var/log/cloud-init.log", "/var/log/cloud-init-output.log", "/var/log/syslog"]


def _cloud_config(encoded: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(gzip.decompress(base64.b64decode(encoded)).decode())
    return doc


def _files(doc: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def _instance(plan: Any, suffix: str) -> dict[str, Any]:
    return _cloud_config(
        next(r for r in resources_of(plan, "ec2/instance:Instance") if r["name"].endswith(suffix))["inputs"][
            "userDataBase64"
        ]
    )


def _collected(doc: dict[str, Any]) -> list[dict[str, str]]:
    config = json.loads(_files(doc)[AGENT_CONFIG])
    collected: list[dict[str, str]] = config["logs"]["logs_collected"]["files"]["collect_list"]
    return collected


def _policy(plan: Any, name: str) -> list[dict[str, Any]]:
    policies = {r["name"]: r["inputs"] for r in resources_of(plan, "iam/rolePolicy:RolePolicy")}
    statements: list[dict[str, Any]] = json.loads(policies[name]["policy"])["Statement"]
    return statements


@pytest.fixture(scope="module")
def slurm_plan():
    return plan_values(
        aws_values(scheduler="slurm", slurm={"accounting": True}, encryption={"key": "auto"}, monitoring=LOGS | NOTIFY)
    )


def test_one_log_group_with_the_retention_asked_under_the_clusters_key(slurm_plan):
    group = one(slurm_plan, "cloudwatch/logGroup:LogGroup")
    assert group["name"] == "test-aws-logs"
    inputs = group["inputs"]
    assert (inputs["name"], inputs["retentionInDays"], inputs["kmsKeyId"]) == (
        "/gpu-cluster/test/test",
        14,
        "<arn of test-aws-kms>",
    )


def test_without_a_key_the_group_uses_cloudwatch_logs_own_encryption():
    plan = plan_values(aws_values(login={}, monitoring=LOGS))
    assert "kmsKeyId" not in one(plan, "cloudwatch/logGroup:LogGroup")["inputs"]


def test_the_key_policy_lets_cloudwatch_logs_use_it_for_this_group_and_publishers_through_sns(slurm_plan):
    statements = json.loads(one(slurm_plan, "kms/key:Key")["inputs"]["policy"])["Statement"]
    by_sid = {s["Sid"]: s for s in statements}
    logs = by_sid["CloudWatchLogsEncryptsTheClusterGroup"]
    assert logs["Principal"] == {"Service": "logs.us-east-1.amazonaws.com"}
    assert logs["Action"] == ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
    assert logs["Condition"] == {
        "ArnEquals": {
            "kms:EncryptionContext:aws:logs:arn": "arn:<partition of us-east-1>:logs:us-east-1:<account id>:"
            "log-group:/gpu-cluster/test/test"
        }
    }
    sns = by_sid["AccountPublishesToTheAlertTopic"]
    assert sns["Action"] == ["kms:GenerateDataKey*", "kms:Decrypt"]
    assert sns["Condition"]["StringEquals"]["kms:ViaService"] == "sns.us-east-1.amazonaws.com"
    assert sns["Condition"]["StringEquals"]["kms:CallerAccount"] == "<account id>"


def test_a_key_without_logs_or_notify_keeps_its_policy():
    plan = plan_values(aws_values(scheduler="slurm", encryption={"key": "auto"}))
    sids = [s["Sid"] for s in json.loads(one(plan, "kms/key:Key")["inputs"]["policy"])["Statement"]]
    assert sids == [
        "AccountAdministersTheKey",
        "AccountUsesTheKeyThroughItsServices",
        "AutoScalingUsesTheKey",
        "AutoScalingAttachesVolumes",
    ]


def test_the_roles_write_only_into_the_clusters_group_and_the_broad_policy_is_left_off(slurm_plan):
    expected = [
        {
            "Sid": "ShipLogsToClusterGroup",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            "Resource": ["<arn of test-aws-logs>", "<arn of test-aws-logs>:*"],
        }
    ]
    assert _policy(slurm_plan, "test-aws-node-role-logs") == expected
    # the head (accounting) carries a role of its own: it ships its logs with the same grant
    assert _policy(slurm_plan, "test-aws-head-role-logs") == expected
    attached = [r["inputs"]["policyArn"] for r in resources_of(slurm_plan, "rolePolicyAttachment:RolePolicyAttachment")]
    assert BROAD not in attached and "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore" in attached


def test_without_logs_the_role_keeps_the_managed_policy_and_nothing_is_created():
    plan = plan_values(aws_values(scheduler="slurm"))
    attached = [r["inputs"]["policyArn"] for r in resources_of(plan, "rolePolicyAttachment:RolePolicyAttachment")]
    assert BROAD in attached
    assert not resources_of(plan, "cloudwatch/logGroup:LogGroup") and not resources_of(plan, "sns/topic:Topic")
    assert AGENT_CONFIG not in _files(_instance(plan, "-head"))


def test_each_node_kind_ships_its_files_one_stream_per_node_and_file(slurm_plan):
    head = _collected(_instance(slurm_plan, "-head"))
    login = _collected(_instance(slurm_plan, "-login"))
    gpu = _collected(_cloud_config(one(slurm_plan, "launchTemplate:LaunchTemplate")["inputs"]["userData"]))
    assert [c["file_path"] for c in head] == [*EVERY, "/var/log/slurm/slurmctld.log", "/var/log/slurm/slurmdbd.log"]
    assert [c["file_path"] for c in login] == EVERY
    assert [c["file_path"] for c in gpu] == [*EVERY, "/var/log/slurm/slurmd.log"]
    for entry in (*head, *login, *gpu):
        assert entry["log_group_name"] == "/gpu-cluster/test/test"
        assert entry["log_stream_name"] == "{instance_id}/" + entry["file_path"].rsplit("/", 1)[1]
        assert "retention_in_days" not in entry  # the group's retention is the stack's, not the agent's
    for doc in (_instance(slurm_plan, "-head"), _instance(slurm_plan, "-login")):
        assert ["systemctl", "enable", "--now", "--no-block", "gpu-cluster-cloudwatch-agent.service"] in doc["runcmd"]


def test_the_slurm_conf_writes_the_logs_the_agent_reads(slurm_plan):
    head = _files(_instance(slurm_plan, "-head"))
    conf = next(text for path, text in head.items() if path.endswith("/slurm.conf"))
    assert "SlurmctldLogFile=/var/log/slurm/slurmctld.log" in conf
    assert "SlurmdLogFile=/var/log/slurm/slurmd.log" in conf


def test_the_shipped_elastic_stack_ships_from_every_partitions_template_and_mails_ops(stack_plan):
    plan = stack_plan("aws-slurm-elastic")
    templates = resources_of(plan, "launchTemplate:LaunchTemplate")
    assert sorted(t["name"] for t in templates) == ["slurm-elastic-aws-h100-lt", "slurm-elastic-aws-l40s-lt"]
    for template in templates:
        collected = _collected(_cloud_config(template["inputs"]["userData"]))
        assert [c["file_path"] for c in collected] == [*EVERY, "/var/log/slurm/slurmd.log"]
        assert {c["log_group_name"] for c in collected} == {"/gpu-cluster/aws-slurm-elastic/slurm-elastic"}
    subscription = one(plan, "sns/topicSubscription:TopicSubscription")["inputs"]
    assert (subscription["protocol"], subscription["endpoint"]) == ("email", "ops@example.com")
    summary = plan.as_json()["summary"]
    assert "CloudWatch Logs /gpu-cluster/aws-slurm-elastic/slurm-elastic (30 days)" in summary["monitoring"]["logs"]
    unpriced = {i["item"]: i["unpriced"] for i in summary["costs"]["items"] if i["unpriced"]}
    assert unpriced["logs"].startswith("usage-based: CloudWatch Logs") and unpriced["alerts"].startswith("usage-based")


def test_an_elastic_fleet_keeps_its_gpu_metric_beside_the_logs():
    fleet = {"instanceType": "g6e.xlarge", "gpu": None, "nodes": 1, "minNodes": 1, "maxNodes": 4, "placement": "none"}
    plan = plan_values(aws_values(**fleet, scaling={"metric": "gpuUtilization", "target": 60}, monitoring=LOGS))
    doc = _cloud_config(one(plan, "launchTemplate:LaunchTemplate")["inputs"]["userData"])
    config = json.loads(_files(doc)[AGENT_CONFIG])
    assert config["metrics"]["metrics_collected"] == {
        "nvidia_gpu": {"measurement": ["utilization_gpu"], "append_dimensions": {"Cluster": "test"}}
    }
    assert [c["file_path"] for c in config["logs"]["logs_collected"]["files"]["collect_list"]] == EVERY
    # one agent, one unit: the metric and the logs share the configuration
    assert sum(1 for cmd in doc["runcmd"] if "gpu-cluster-cloudwatch-agent.service" in cmd) == 1
    statements = _policy(plan, "test-aws-node-role-scaling") + _policy(plan, "test-aws-node-role-logs")
    assert {s["Sid"] for s in statements} == {"PutGpuMetricIntoClusterNamespace", "ShipLogsToClusterGroup"}


def test_vm_mode_login_without_monitoring_runs_only_the_agent():
    plan = plan_values(aws_values(login={}, monitoring={"prometheus": "none", **LOGS}))
    doc = _instance(plan, "-login")
    assert set(_files(doc)) == {
        AGENT_CONFIG,
        "/usr/local/sbin/gpu-cluster-cloudwatch-agent",
        "/etc/gpu-cluster/cloudwatch-agent.env",
        "/etc/systemd/system/gpu-cluster-cloudwatch-agent.service",
    }
    assert [c["file_path"] for c in _collected(doc)] == EVERY
    nodes = _collected(_cloud_config(one(plan, "launchTemplate:LaunchTemplate")["inputs"]["userData"]))
    assert [c["file_path"] for c in nodes] == EVERY


def test_the_topic_its_email_subscriptions_and_the_publish_grant(slurm_plan):
    topic = one(slurm_plan, "sns/topic:Topic")
    assert topic["name"] == "test-aws-alerts"
    assert topic["inputs"]["kmsMasterKeyId"] == "<arn of test-aws-kms>"
    subscriptions = {
        r["name"]: r["inputs"] for r in resources_of(slurm_plan, "sns/topicSubscription:TopicSubscription")
    }
    assert subscriptions == {
        "test-aws-alerts-ops-example-com": {
            "protocol": "email",
            "endpoint": "ops@example.com",
            "topic": "<arn of test-aws-alerts>",
        },
        "test-aws-alerts-ml-example-org": {
            "protocol": "email",
            "endpoint": "ml@example.org",
            "topic": "<arn of test-aws-alerts>",
        },
    }
    assert _policy(slurm_plan, "test-aws-node-role-alerts") == [
        {
            "Sid": "PublishClusterAlerts",
            "Effect": "Allow",
            "Action": "sns:Publish",
            "Resource": "<arn of test-aws-alerts>",
        }
    ]


def _alertmanager_yml(doc: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(_files(doc)[alertmanager.ALERTMANAGER_YML])
    return loaded


@pytest.mark.parametrize("cluster", [{"login": {}}, {"scheduler": "slurm"}], ids=["vm-login", "slurm"])
def test_the_login_nodes_alertmanager_publishes_to_the_topic_signed_by_its_role(cluster):
    plan = plan_values(aws_values(**cluster, monitoring=NOTIFY))
    login = next(r for r in resources_of(plan, "ec2/instance:Instance") if r["name"].endswith("-login"))
    assert len(base64.b64decode(login["inputs"]["userDataBase64"])) < 16 * 1024
    doc = _cloud_config(login["inputs"]["userDataBase64"])
    am = _alertmanager_yml(doc)
    (receiver,) = am["receivers"]
    assert receiver["sns_configs"] == [
        {
            "topic_arn": "<arn of test-aws-alerts>",  # filled in at deploy
            "sigv4": {"region": "us-east-1"},  # no keys: the instance role's credentials
            "subject": "[{{ .Status | toUpper }}] {{ .CommonLabels.alertname }} on test",
            "send_resolved": True,
        }
    ]
    assert am["route"]["receiver"] == receiver["name"]
    prometheus = yaml.safe_load(_files(doc)[monitoring.PROMETHEUS_YML])
    assert prometheus["alerting"] == {"alertmanagers": [{"static_configs": [{"targets": ["127.0.0.1:9093"]}]}]}
    unit = _files(doc)["/etc/systemd/system/gpu-cluster-alertmanager.service"]
    assert "--web.listen-address=127.0.0.1:9093" in unit and "--cluster.listen-address=\n" in unit
    env = _files(doc)[alertmanager.ENV_PATH]
    assert 'ALERTMANAGER_VERSION="0.28.1"' in env and "ALERTMANAGER_SHA256_AMD64=" in env
    assert ["systemctl", "enable", "--now", "--no-block", alertmanager.INSTALL] in doc["runcmd"]
    assert TOPIC_PLACEHOLDER not in json.dumps(doc)


def test_without_notify_there_is_no_alertmanager():
    plan = plan_values(aws_values(login={}))
    doc = _instance(plan, "-login")
    assert alertmanager.ALERTMANAGER_YML not in _files(doc)
    assert "alerting" not in yaml.safe_load(_files(doc)[monitoring.PROMETHEUS_YML])
    assert alertmanager.ENV_PATH not in _files(doc)
    assert not [r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"].endswith("-alerts")]


@pytest.fixture
def amtool() -> str:
    path = shutil.which("amtool") or os.environ.get("AMTOOL")
    if not path:
        pytest.skip("amtool is not installed (Debian package prometheus-alertmanager)")
    return path


def test_the_rendered_alertmanager_config_passes_amtool(amtool, tmp_path):
    receiver = alertmanager.Receiver(
        "sns",
        {"topic_arn": "arn:aws:sns:us-east-1:123456789012:test-aws-alerts-a1b2c3d", "sigv4": {"region": "us-east-1"}},
    )
    config = tmp_path / "alertmanager.yml"
    config.write_text(alertmanager.alertmanager_config("test", receiver))
    run = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    # a negative control: amtool does judge the file (a route to a receiver that does not exist)
    config.write_text(
        alertmanager.alertmanager_config("test", receiver).replace("receiver: cluster-alerts", "receiver: x")
    )
    assert subprocess.run([amtool, "check-config", str(config)], capture_output=True).returncode != 0


def test_notify_without_the_self_hosted_prometheus_is_refused_by_key():
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(aws_values(monitoring={"prometheus": "none", **NOTIFY}))
    errors = getattr(info.value, "errors", [info.value])
    assert [e.key for e in errors] == ["gpu-cluster:cluster.monitoring.notify"]


def test_a_retention_cloudwatch_logs_refuses_is_one_keyed_line():
    with pytest.raises(ConfigErrors) as info:
        plan_values(aws_values(login={}, monitoring={"logs": {"enabled": True, "retentionDays": 31}}))
    (error,) = info.value.errors
    assert error.key == "gpu-cluster:cluster.monitoring.logs.retentionDays"
    assert error.message.startswith("got 31; CloudWatch Logs keeps logs for one of 1, 3, 5, 7, 14, 30, 60")


def test_an_existing_key_is_not_edited_and_the_plan_says_what_its_policy_needs():
    arn = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    from components.layout.aws import encryption
    from components.spec import build_spec

    spec = build_spec(aws_values(login={}, encryption={"key": arn}, monitoring=LOGS | NOTIFY), "test")
    planned = encryption.plan(spec, "/gpu-cluster/test/test")
    assert planned is not None and planned.create is None
    assert any("logs.us-east-1.amazonaws.com" in n and "SNS" in n for n in planned.notes)
    plan = plan_values(aws_values(login={}, encryption={"key": arn}, monitoring=LOGS | NOTIFY))
    assert one(plan, "cloudwatch/logGroup:LogGroup")["inputs"]["kmsKeyId"] == arn
    assert not resources_of(plan, "kms/key:Key")


def _shipped_without(stack: str, **monitoring_off: Any) -> dict[str, Any]:
    import copy

    from components.plan import load_stack, make_plan
    from components.plan.stackfile import StackFile

    from .conftest import ROOT

    shipped = load_stack(ROOT, stack)
    values = copy.deepcopy(shipped.values)
    values["gpu-cluster:cluster"]["monitoring"] = monitoring_off
    stack_file = StackFile(shipped.project, shipped.stack, shipped.path, values, shipped.secret_keys)
    loaded: dict[str, Any] = json.loads(json.dumps(make_plan(ROOT, stack_file).as_json(), default=str))
    return loaded


def test_day2_turning_logs_and_notify_on_adds_beside_and_restarts_only_head_and_login(stack_plan):
    from components.diff import diff_plans
    from components.diff.spec_changes import mode_of
    from components.spec.updates import update_policies

    new = json.loads(json.dumps(stack_plan("aws-slurm-elastic").as_json(), default=str))
    old = _shipped_without("aws-slurm-elastic")
    d = diff_plans(old, new)
    said = {c.key: c.policy for c in d.spec_changes}
    policies = update_policies()
    assert (
        said["cluster.monitoring.logs.enabled"]
        == policies["cluster.monitoring.logs.enabled"].effect(mode_of(new)).policy
    )
    assert said["cluster.monitoring.notify"] == "in-place"
    assert "head and the login node stop" in policies["cluster.monitoring.logs.enabled"].effect(mode_of(new)).jobs
    verdicts = {c.name: c.verdict for c in d.changed}
    # what the policy says: head and login stop and start, the partitions' templates change, nothing is replaced
    assert verdicts == {
        "slurm-elastic-aws-head": "restart",
        "slurm-elastic-aws-login": "restart",
        "slurm-elastic-aws-h100-lt": verdicts["slurm-elastic-aws-h100-lt"],
        "slurm-elastic-aws-l40s-lt": verdicts["slurm-elastic-aws-l40s-lt"],
        # the head's launch rights and the compute configuration name the templates' new versions
        "slurm-elastic-aws-head-role-slurm-power": "update",
        "slurm-elastic-aws-slurm-compute-conf": "update",
    }
    assert "replace" not in {verdicts["slurm-elastic-aws-h100-lt"], verdicts["slurm-elastic-aws-l40s-lt"]}
    added = sorted(urn.rsplit("::", 1)[1] for urn in d.created)
    assert added == [
        "slurm-elastic-aws-alerts",
        "slurm-elastic-aws-alerts-ops-example-com",
        "slurm-elastic-aws-head-role-logs",
        "slurm-elastic-aws-logs",
        "slurm-elastic-aws-node-role-alerts",
        "slurm-elastic-aws-node-role-logs",
    ]
    removed = sorted(urn.rsplit("::", 1)[1] for urn in d.deleted)
    assert removed == [
        "slurm-elastic-aws-head-node-role-cloudwatchagentserverpolicy",
        "slurm-elastic-aws-node-role-cloudwatchagentserverpolicy",
    ]


def test_day2_a_new_retention_updates_the_group_in_place(stack_plan):
    from components.diff import diff_plans

    new = json.loads(json.dumps(stack_plan("aws-slurm-elastic").as_json(), default=str))
    old = _shipped_without("aws-slurm-elastic", logs={"enabled": True, "retentionDays": 7}, notify=["ops@example.com"])
    d = diff_plans(old, new)
    assert {c.name: c.verdict for c in d.changed} == {"slurm-elastic-aws-logs": "update"}
    assert [c.key for c in d.spec_changes] == ["cluster.monitoring.logs.retentionDays"]


def test_logs_without_a_way_out_are_refused_by_key():
    values = aws_values(login={}, network={"egress": "none"}, monitoring={"prometheus": "none", **LOGS})
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(values))
    assert info.value.key == "gpu-cluster:cluster.network.egress"
    assert "CloudWatch agent" in info.value.message
