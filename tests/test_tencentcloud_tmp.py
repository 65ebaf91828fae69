"""monitoring.prometheus managed on Tencent Cloud (TMP), the pure layout (layout/tencentcloud/tmp.py) and the login
node's token script on stubs: the instance's retention from TMP's allowed values, one TMP rule per rule of
bootstrap/monitoring.py rule_list, the agent's remote write with basic auth (APPID, the token file), Grafana's data
source reading the token from its environment, the token unit ordered before both readers, the grant on the one
instance, and the user data within Tencent's 16 KB. Nothing is built yet: the spec still refuses `managed`."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from components import bootstrap
from components.bootstrap import monitoring
from components.bootstrap.monitoring import Thresholds, rule_list
from components.diff import diff_plans
from components.errors import ConfigErrors
from components.layout.tencentcloud import monitoring as tc_monitoring
from components.layout.tencentcloud import tmp
from components.layout.tencentcloud.nodes import USER_DATA_MAX
from components.spec import build_spec

from .conftest import ROOT, load_stack, one, plan_json, plan_stack_with, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin
from .test_tencentcloud_kubernetes import tke_values
from .test_tencentcloud_resources import tencent_values
from .test_tencentcloud_slurm import PYTHON3


def managed_spec(**cluster):
    spec = spec_of(tencent_values(login={}, **cluster))
    assert spec.prometheus == "selfHosted"
    return replace(spec, prometheus="managed")  # the spec refuses it until the cloud package builds TMP


@pytest.fixture(scope="module")
def plan():
    return tmp_of(managed_spec())


def tmp_of(spec):
    found = tc_monitoring.plan(spec)
    assert found is not None and found.tmp is not None
    assert found.parts == found.tmp.parts  # the login node runs the agent, not the self-hosted Prometheus
    return found.tmp


def files_of(parts) -> dict[str, str]:
    doc = yaml.safe_load(bootstrap.cloud_init(parts))
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def test_only_a_login_nodes_managed_prometheus_gets_tmp():
    spec = managed_spec()
    assert tc_monitoring.plan(replace(spec, prometheus="selfHosted")).tmp is None
    assert tc_monitoring.plan(replace(spec, prometheus="none")) is None
    assert tc_monitoring.plan(replace(spec, login=None)) is None


@pytest.mark.parametrize(("days", "kept"), [(1, 15), (15, 15), (16, 30), (91, 180), (730, 730), (731, None)])
def test_the_retention_is_the_smallest_tmp_takes_at_or_above_the_asked(days, kept):
    # monitor.TmpInstance data_retention_time: "Value range: 15, 30, 45, 90, 180, 365, 730"
    assert tmp.retention_days(days) == kept


def test_the_instance_keeps_the_specs_retention_rounded_up(plan):
    assert plan.data_retention_time == 15  # monitoring.retentionDays' default, 15
    longer = managed_spec().monitoring.model_copy(update={"retention_days": 40})
    assert tmp_of(replace(managed_spec(), monitoring=longer)).data_retention_time == 45


def test_one_tmp_rule_per_rule_of_the_rule_list_named_by_the_cluster(plan):
    spec = managed_spec()
    listed = rule_list(Thresholds(**spec.monitoring.alerts.model_dump()))
    assert [r.rule_name for r in plan.rules] == [f"{spec.name}-{r['alert']}" for r in listed]
    for rule, source in zip(plan.rules, listed, strict=True):
        assert rule.expr == source["expr"] and rule.duration == source["for"] and rule.duration.endswith("m")
        assert dict(rule.labels) == {**source["labels"], "cluster": spec.name}
        assert dict(rule.annotations) == source["annotations"]


def test_the_agent_writes_with_basic_auth_the_appid_and_the_token_file(plan):
    files = files_of(plan.parts)
    prom = yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    assert prom["remote_write"] == [
        {
            "url": tmp.REMOTE_WRITE_PLACEHOLDER,
            "basic_auth": {"username": tmp.APPID_PLACEHOLDER, "password_file": tmp.TOKEN_FILE},
        }
    ]
    assert "rule_files" not in prom and "alerting" not in prom  # TMP evaluates the rules
    assert monitoring.RULES_YML not in files
    assert "--enable-feature=agent" in files["/etc/systemd/system/gpu-cluster-prometheus.service"]


def test_grafana_reads_the_instance_with_the_token_from_its_environment(plan):
    files = files_of(plan.parts)
    [source] = yaml.safe_load(files["/etc/grafana/provisioning/datasources/gpu-cluster.yaml"])["datasources"]
    assert source["url"] == tmp.QUERY_PLACEHOLDER and source["uid"] == "prometheus"
    assert source["basicAuth"] is True and source["basicAuthUser"] == tmp.APPID_PLACEHOLDER
    assert source["secureJsonData"] == {"basicAuthPassword": "$GF_TMP_TOKEN"}
    dropin = files["/etc/systemd/system/grafana-server.service.d/gpu-cluster-tmp.conf"]
    assert f"EnvironmentFile={tmp.GRAFANA_ENV}" in dropin


def test_the_token_unit_comes_first_and_both_readers_require_it(plan):
    assert plan.parts[0].name == "tmp-token"
    files = files_of(plan.parts)
    for reader in tmp.READERS:
        dropin = files[f"/etc/systemd/system/{reader}.d/gpu-cluster-tmp.conf"]
        assert f"Requires={tmp.TOKEN_UNIT}\nAfter={tmp.TOKEN_UNIT}\n" in dropin
    assert "RemainAfterExit=yes" in files[f"/etc/systemd/system/{tmp.TOKEN_UNIT}"]
    assert files[tmp.TOKEN_SCRIPT] == bootstrap.script("tencentcloud_tmp_token.sh")
    env = files[tmp.TOKEN_ENV]
    for line in (
        f'TMP_INSTANCE="{tmp.INSTANCE_PLACEHOLDER}"',
        'MONITOR_ENDPOINT="monitor.internal.tencentcloudapi.com"',
        'TOKEN_GROUP="prometheus"',
        'TCCLI_VENV="/opt/gpu-cluster/tccli"',
    ):
        assert line in env
    # no token anywhere in the user data: it is read at boot
    assert "AuthToken" not in json.dumps([f for f in files if f != tmp.TOKEN_SCRIPT])


def test_the_grant_is_describe_prometheus_instances_on_this_instance_only(plan):
    assert plan.token_resource == "qcs::monitor:{region}:{account}:prom-instance/{instance}"
    resource = plan.token_resource.format(region="ap-guangzhou", account="uin/1", instance="prom-abc")
    assert json.loads(plan.policy_document(resource)) == {
        "version": "2.0",
        "statement": [{"effect": "allow", "action": ["monitor:DescribePrometheusInstances"], "resource": [resource]}],
    }


def test_the_login_nodes_user_data_stays_under_16_kb(plan):
    # the placeholders are longer than the ids and addresses that replace them
    assert len(bootstrap.gzip_b64(bootstrap.cloud_init(plan.parts))) <= USER_DATA_MAX


def test_the_agents_config_passes_promtool(plan, promtool, tmp_path):
    text = files_of(plan.parts)[monitoring.PROMETHEUS_YML]
    token = tmp_path / "token"
    token.write_text("t")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        text.replace(tmp.REMOTE_WRITE_PLACEHOLDER, "http://10.0.0.9:9090/api/v1/prom/write")
        .replace(tmp.TOKEN_FILE, str(token))
        .replace(tc_monitoring.TARGETS_FILE, str(tmp_path / "targets.json"))
    )
    run = subprocess.run([promtool, "check", "config", "--agent", str(config)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


# --- the token script on stubs ---------------------------------------------------------------------------------------

TOKEN = "tok-abc123"


def run_token(tmp_path: Path, answer: dict | None, **env: str):
    (tmp_path / "answer.json").write_text(json.dumps(answer) if answer is not None else "")
    env_file = tmp_path / "tmp.env"
    env_file.write_text(
        'REGION="ap-shanghai"\nTMP_INSTANCE="prom-abc"\nMONITOR_ENDPOINT="monitor.internal.tencentcloudapi.com"\n'
        f'TOKEN_FILE="{tmp_path / "token"}"\nTOKEN_GROUP="{env.pop("GROUP", "")}"\n'
        f'GRAFANA_ENV="{tmp_path / "grafana.env"}"\n'
        'TCCLI_INDEX="http://mirrors.tencentyun.com/pypi/simple"\nTCCLI_HOST="mirrors.tencentyun.com"\n'
        f'TCCLI_VENV="{tmp_path / "tccli"}"\nTCCLI_LOCK="{tmp_path / "tccli.lock"}"\n'
    )
    hook = tmp_path / "tmp-token.sh"
    hook.write_text(bootstrap.script("tencentcloud_tmp_token.sh"))
    logs = {n: tmp_path / f"{n}.log" for n in ("pip", "tccli")}
    full = {
        "ENV_FILE": str(env_file),
        "ANSWER": str(tmp_path / "answer.json"),
        "PIP_LOG": str(logs["pip"]),
        "TCCLI_LOG": str(logs["tccli"]),
        "REAL_PYTHON3": str(shutil.which("python3")),
        **env,
    }
    tools = ("cat", "chmod", "chgrp", "mkdir", "mv", "printf", "flock")
    proc = run_hook(hook, stub_bin(tmp_path, {"python3": PYTHON3}, tools), full, isolated=True)
    return proc, {n: p.read_text().splitlines() if p.exists() else [] for n, p in logs.items()}


def answer(token: str = TOKEN) -> dict:
    return {"InstanceSet": [{"InstanceId": "prom-abc", "AuthToken": token}], "TotalCount": 1, "RequestId": "r"}


def test_the_token_is_read_with_the_cvm_role_and_kept_for_the_agent_and_grafana(tmp_path):
    group = subprocess.run(["id", "-gn"], capture_output=True, text=True, check=True).stdout.strip()
    proc, logs = run_token(tmp_path, answer(), GROUP=group)
    assert proc.returncode == 0, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    assert logs["tccli"] == [
        'monitor DescribePrometheusInstances --region ap-shanghai --InstanceIds ["prom-abc"] '
        "--endpoint monitor.internal.tencentcloudapi.com --use-cvm-role"
    ]
    token, grafana = tmp_path / "token", tmp_path / "grafana.env"
    assert token.read_text() == TOKEN and oct(token.stat().st_mode & 0o777) == "0o440"
    assert grafana.read_text() == f"GF_TMP_TOKEN={TOKEN}\n" and oct(grafana.stat().st_mode & 0o777) == "0o600"


def test_a_refused_describe_fails_and_writes_nothing(tmp_path):
    proc, _ = run_token(tmp_path, answer(), DENY="1")
    assert proc.returncode != 0 and "monitor:DescribePrometheusInstances prom-abc failed" in proc.stderr
    assert not (tmp_path / "token").exists() and not (tmp_path / "grafana.env").exists()


@pytest.mark.parametrize("reply", [answer(""), {"InstanceSet": [], "TotalCount": 0}, None])
def test_an_answer_without_a_token_fails_and_writes_nothing(tmp_path, reply):
    proc, _ = run_token(tmp_path, reply)
    assert proc.returncode != 0 and "no AuthToken for prom-abc" in proc.stderr
    assert not (tmp_path / "token").exists()


def test_the_token_script_is_shellcheck_clean_as_written_and_as_rendered(tmp_path):
    assert_shellcheck_clean(Path(bootstrap.__file__).parent / "tencentcloud_tmp_token.sh")
    rendered = tmp_path / "tmp-token.sh"
    rendered.write_text(bootstrap.script("tencentcloud_tmp_token.sh"))
    assert 'tencentcloud_ssm.sh"' not in rendered.read_text()
    assert_shellcheck_clean(rendered)


# --- the spec ------------------------------------------------------------------------------------------------------


def test_managed_is_accepted_with_a_login_node_and_keeps_the_retention():
    assert build_spec(tencent_values(login={}, monitoring={"prometheus": "managed"}), "t").prometheus == "managed"


def test_a_retention_past_tmps_longest_is_one_keyed_line():
    with pytest.raises(ConfigErrors) as info:
        build_spec(tencent_values(login={}, monitoring={"prometheus": "managed", "retentionDays": 800}), "t")
    [error] = info.value.errors
    assert error.key == "gpu-cluster:cluster.monitoring.prometheus"
    assert "at most 730 days" in error.message and "15, 30, 45, 90, 180, 365, 730" in error.message


def test_on_tke_it_is_refused_saying_why():
    with pytest.raises(ConfigErrors) as info:
        build_spec(tke_values(monitoring={"prometheus": "managed"}), "t")
    messages = [e.message for e in info.value.errors if e.key == "gpu-cluster:cluster.monitoring.prometheus"]
    assert messages and "TmpTkeClusterAgent" in messages[0]


# --- registered with the mocks -----------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["tencentcloud-dev", "tencentcloud-slurm"])
def planned(request):
    return request.param, plan_stack_with(request.param, monitoring={"prometheus": "managed"})


def test_the_instance_is_in_the_clusters_vpc_subnet_and_zone(planned):
    stack, plan = planned
    instance = one(plan, "Monitor/tmpInstance:TmpInstance")["inputs"]
    vpc = one(plan, "Vpc/instance:Instance")
    subnet = [s for s in resources_of(plan, "Subnet/instance:Instance") if s["name"].endswith("-nodes")]
    assert instance["vpcId"] == f"<id of {vpc['name']}>" and instance["subnetId"] == f"<id of {subnet[0]['name']}>"
    assert instance["dataRetentionTime"] == 15 and instance["instanceName"].endswith(stack)
    assert instance["zone"] == subnet[0]["inputs"]["availabilityZone"]


def test_one_enabled_rule_per_rule_without_receivers(planned):
    _, plan = planned
    rules = resources_of(plan, "Monitor/tmpAlertRule:TmpAlertRule")
    cluster = one(plan, "Monitor/tmpInstance:TmpInstance")["inputs"]["tags"]["gpu-cluster:cluster"]
    listed = rule_list(Thresholds(**managed_spec().monitoring.alerts.model_dump()))
    assert sorted(r["inputs"]["ruleName"] for r in rules) == sorted(f"{cluster}-{r['alert']}" for r in listed)
    for rule in rules:
        i = rule["inputs"]
        assert i["instanceId"].startswith("<id of") and i["instanceId"].endswith("-tmp>")
        assert i["receivers"] == [] and i["ruleState"] == 2
        assert {"key": "cluster", "value": cluster} in i["labels"]
        assert "summary" in {a["key"] for a in i["annotations"]}


def test_the_grant_is_the_token_read_on_this_instance_attached_to_the_login_nodes_role(planned):
    _, plan = planned
    [policy] = [p for p in resources_of(plan, "Cam/policy:Policy") if p["name"].endswith("-tmp-policy")]
    [statement] = json.loads(policy["inputs"]["document"])["statement"]
    assert statement["action"] == ["monitor:DescribePrometheusInstances"]
    [resource] = statement["resource"]
    assert resource.startswith("qcs::monitor:") and ":uin/" in resource and resource.endswith("-tmp>")
    [attach] = [a for a in resources_of(plan, "RolePolicyAttachmentByName") if a["name"].endswith("-role-tmp")]
    assert attach["inputs"]["policyName"] == policy["inputs"]["name"]


def test_the_login_nodes_user_data_has_the_token_part_and_the_agent_under_16_kb(planned):
    _, plan = planned
    [login] = [r["inputs"] for r in resources_of(plan, "Instance/instance:Instance") if r["name"].endswith("-login")]
    assert len(login["userData"]) <= USER_DATA_MAX
    doc = yaml.safe_load(gzip.decompress(base64.b64decode(login["userData"])).decode())
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    # Slurm's login node gets its parts without comments (layout/tencentcloud/__init__.py: the 16 KB)
    assert '/bin/tccli" monitor DescribePrometheusInstances' in files[tmp.TOKEN_SCRIPT]
    prom = yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    assert prom["remote_write"][0]["basic_auth"]["password_file"] == tmp.TOKEN_FILE


def test_the_output_names_the_instance_and_its_rules(planned):
    _, plan = planned
    out = plan.as_json()["outputs"]["monitoring"]
    assert out["prometheus"] == "managed" and out["service"] == "TencentCloud Managed Service for Prometheus (TMP)"
    assert out["workspace"].endswith("-tmp>") and out["retentionDays"] == 15 and len(out["rules"]) >= 5


# --- day 2 --------------------------------------------------------------------------------------------------------


def _changes(d):
    return sorted(
        (c.name, c.verdict, sorted({x.path.split(".")[0].split("[")[0] for x in c.changes})) for c in d.changed
    )


def test_switching_a_deployed_stack_to_managed_updates_the_login_node_and_adds_tmp():
    shipped = load_stack(ROOT, "tencentcloud-dev").values["gpu-cluster:cluster"]["monitoring"]  # logs on: kept
    new = plan_stack_with("tencentcloud-dev", monitoring={**shipped, "prometheus": "managed"})
    d = diff_plans(plan_json(plan_stack_with("tencentcloud-dev")), plan_json(new))
    assert _changes(d) == [("tc-dev-tencentcloud-login", "update", ["userData"])]
    assert d.deleted == []
    created = sorted(urn.rsplit("::", 1)[1] for urn in d.created)
    assert [c for c in created if "-tmp-rule-" not in c] == [
        "tc-dev-tencentcloud-role-tmp",
        "tc-dev-tencentcloud-tmp",
        "tc-dev-tencentcloud-tmp-policy",
    ]
    assert len([c for c in created if "-tmp-rule-" in c]) == len(new.as_json()["outputs"]["monitoring"]["rules"])
    assert {c.key: c for c in d.spec_changes}["cluster.monitoring.prometheus"].policy == "in-place"


def test_a_threshold_changes_the_tmp_rule_only():
    base = plan_stack_with("tencentcloud-dev", monitoring={"prometheus": "managed"})
    moved = plan_stack_with("tencentcloud-dev", monitoring={"prometheus": "managed", "alerts": {"gpuIdlePercent": 10}})
    d = diff_plans(plan_json(base), plan_json(moved))
    [(name, verdict, paths)] = _changes(d)
    # the summary names the threshold too
    assert name == "tc-dev-tencentcloud-tmp-rule-GpuIdle" and paths == ["annotations", "expr"]
    assert d.created == [] and d.deleted == []
    assert verdict == "may-replace"  # TmpAlertRule has no entry in diff/replacement/tencentcloud.yaml: unverified
