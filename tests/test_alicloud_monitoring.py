"""The self-hosted Prometheus and Grafana on Alibaba Cloud: `auto` on the shipped Slurm stacks, the login node's user
data (Prometheus, Grafana and the target list's timer), the RAM grant (ecs:DescribeInstances on "*", nothing else),
the rendered prometheus.yml with file_sd judged by promtool, and the target list script against a stubbed curl (the
hardened metadata service and ECS DescribeInstances pages, signatures checked)."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from alibabacloud_ecs20140526 import models as ecs_models

from components import bootstrap
from components.bootstrap import monitoring
from components.diff import diff_plans
from components.layout import alicloud as ali
from components.layout import file_sd
from components.layout.alicloud import monitoring as ali_monitoring

from .conftest import ROOT, load_stack, plan_json, plan_stack_with, plan_values, resources_of, spec_of
from .hook_helpers import ALICLOUD_HARDENED_METADATA, alicloud_signature, assert_shellcheck_clean, run_hook, stub_bin
from .test_alicloud_slurm import files_of
from .test_layout_alicloud import ali_values

SCRIPT = ROOT / "components" / "bootstrap" / "alicloud_prometheus_targets.sh"


def vm_with_login(**cluster):
    return ali_values(login={}, network={"egress": "nat"}, **cluster)


# --- the spec and the layout ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["alicloud-slurm-elastic", "alicloud-a100-cmk", "alicloud-mlps3-sm4"])
def test_auto_is_self_hosted_on_the_shipped_slurm_stacks_with_a_login_node_and_nat(stack):
    values = load_stack(ROOT, stack).values
    assert values["gpu-cluster:cluster"]["network"]["egress"] == "nat"
    spec = spec_of(values, stack)
    assert spec.prometheus == "selfHosted"


def test_auto_is_none_without_a_login_node_or_without_nat():
    assert spec_of(ali_values(network={"egress": "nat"})).prometheus == "none"  # VM mode, no login node
    assert spec_of(ali_values(login={}, network={"egress": "none"})).prometheus == "none"  # nothing to install from
    assert spec_of(vm_with_login()).prometheus == "selfHosted"


def test_the_discovery_is_the_file_the_timer_writes_and_relabels_as_the_other_clouds():
    config = yaml.safe_load(monitoring.prometheus_config(_settings()))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"dcgm-exporter", "node-exporter"}
    for job in jobs.values():
        assert job["file_sd_configs"] == [{"files": [ali_monitoring.TARGETS_FILE]}]  # no port: file_sd takes none
        relabel = {r["target_label"]: r for r in job["relabel_configs"]}
        assert relabel["__address__"]["source_labels"] == ["__meta_alicloud_private_ip"]
        assert relabel["node"]["source_labels"] == ["__meta_alicloud_hostname"]
        assert relabel["instance_id"]["source_labels"] == ["__meta_alicloud_instance_id"]
        assert relabel["pool"]["source_labels"] == ["__meta_alicloud_scaling_group_id"]
        assert relabel["cluster"]["replacement"] == "c"
    assert jobs["dcgm-exporter"]["relabel_configs"][0]["replacement"] == "${1}:9400"
    assert jobs["node-exporter"]["relabel_configs"][0]["replacement"] == "${1}:9100"


def _settings() -> monitoring.Monitoring:
    spec = spec_of(vm_with_login())
    thresholds = monitoring.Thresholds(**spec.monitoring.alerts.model_dump())
    return monitoring.Monitoring("c", ali_monitoring.discovery(), 15, thresholds)


def test_the_rendered_config_with_file_sd_passes_promtool(promtool, tmp_path):
    m = _settings()
    rules = tmp_path / "rules.yml"
    rules.write_text(monitoring.alert_rules(m))
    config = tmp_path / "prometheus.yml"
    text = monitoring.prometheus_config(m).replace(monitoring.RULES_YML, str(rules))
    config.write_text(text.replace(ali_monitoring.TARGETS_FILE, str(tmp_path / "targets.json")))
    run = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    # with the list the script writes (promtool then reads it and relabels its targets)
    (tmp_path / "run").mkdir()
    proc, _, written = run_targets(
        tmp_path / "run", {"": page([instance(1), instance(2, **{"acs:autoscaling:scalingGroupId": "asg-1"})])}
    )
    assert proc.returncode == 0, proc.stderr
    groups = json.loads(written.read_text())
    (tmp_path / "targets.json").write_text(json.dumps(groups))
    run = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True)
    assert run.returncode == 0 and "does not exist" not in run.stdout, run.stdout + run.stderr
    (tmp_path / "targets.json").write_text('[{"targets": ["10.0.0.5"], "labels": {"bad-name": "x"}}]')
    assert subprocess.run([promtool, "check", "config", str(config)], capture_output=True).returncode != 0
    # a negative control: a port under file_sd_configs, as the other kinds take it, is refused
    config.write_text(text.replace(f"- {ali_monitoring.TARGETS_FILE}", f"- {tmp_path}/t.json\n    port: 9400", 1))
    assert subprocess.run([promtool, "check", "config", str(config)], capture_output=True).returncode != 0


def test_the_scripts_settings_name_the_ecs_vpc_endpoint_the_tags_and_the_cpu_nodes():
    spec = spec_of(vm_with_login(name="c1"), stack="prod")
    env = ali_monitoring.targets_env(spec)
    assert env["ECS_ENDPOINT"] == "https://ecs-vpc.cn-beijing.aliyuncs.com" and env["ECS_API_VERSION"] == "2014-05-26"
    assert (env["CLUSTER_TAG"], env["CLUSTER"], env["STACK_TAG"], env["STACK"]) == (
        "gpu-cluster:cluster", "c1", "gpu-cluster:stack", "prod"
    )  # fmt: skip
    assert env["SKIP_NAMES"] == "c1-login c1-head"
    assert spec.base_tags["gpu-cluster:cluster"] == "c1" and spec.base_tags["gpu-cluster:stack"] == "prod"


def test_no_part_and_no_grant_when_prometheus_is_none():
    layout = ali.plan(spec_of(ali_values(login={}, monitoring={"prometheus": "none"}, network={"egress": "nat"})))
    assert layout.monitoring is None


# --- the stacks registered with the mocks ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def elastic():
    return plan_stack_with("alicloud-slurm-elastic")


def _by_name(plan, suffix):
    found = [r.as_json() for r in plan.resources if r.name.endswith(suffix)]
    assert len(found) == 1, suffix
    return found[0]


def test_the_login_node_gets_prometheus_grafana_and_the_timer_after_its_slurm_parts(elastic):
    login = _by_name(elastic, "-alicloud-login")
    files = files_of(login["inputs"]["userData"])
    assert files[file_sd.TARGETS_SCRIPT] == bootstrap.script("alicloud_prometheus_targets.sh")
    assert 'SKIP_NAMES="slurm-elastic-login slurm-elastic-head"' in files[file_sd.TARGETS_ENV]
    assert "OnUnitActiveSec=60" in files[f"/etc/systemd/system/{file_sd.TARGETS_UNIT}.timer"]
    prom = yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    assert prom["scrape_configs"][0]["file_sd_configs"] == [{"files": [ali_monitoring.TARGETS_FILE]}]
    paths = list(files)
    assert paths.index(file_sd.TARGETS_SCRIPT) > max(i for i, p in enumerate(paths) if "slurm" in p)


def test_the_grant_is_describe_instances_on_star_on_the_nodes_role_and_nothing_else(elastic):
    policies = [r for r in resources_of(elastic, "ram/policy:Policy") if r["name"].endswith("-monitoring-policy")]
    assert len(policies) == 1
    document = json.loads(policies[0]["inputs"]["policyDocument"])
    assert document == {
        "Statement": [{"Action": ["ecs:DescribeInstances"], "Effect": "Allow", "Resource": ["*"]}],
        "Version": "1",
    }
    attachment = _by_name(elastic, "-role-monitoring")["inputs"]
    role = elastic.layout.identity.role_name
    assert attachment["roleName"] == role and attachment["policyType"] == "Custom"
    assert attachment["policyName"] == policies[0]["inputs"]["policyName"]
    # the login node carries that role
    attached = [r["inputs"] for r in resources_of(elastic, "ecs/ramRoleAttachment:RamRoleAttachment")]
    assert any(a["ramRoleName"] == role and "login" in a["instanceId"] for a in attached)


def test_the_output_says_how_to_reach_grafana(elastic):
    out = elastic.run.outputs["monitoring"]
    assert out["prometheus"] == "selfHosted" and out["grafana"]["url"] == "http://localhost:3000"
    assert "ali-instance-cli portforward -i " in str(out["grafana"]["forward"])
    assert str(out["grafana"]["forward"]).endswith(" -r 3000 -l 3000")


def test_vm_mode_with_a_login_node_gets_the_parts_as_its_whole_user_data():
    plan = plan_values(vm_with_login(name="vm"))
    files = files_of(_by_name(plan, "-alicloud-login")["inputs"]["userData"])
    assert file_sd.TARGETS_SCRIPT in files and monitoring.PROMETHEUS_YML in files
    assert len(resources_of(plan, "ram/policy:Policy")) == 1
    # Slurm login parts are absent in VM mode
    assert not any("slurm" in p for p in files)


def test_without_a_login_node_nothing_is_added():
    plan = plan_values(ali_values(network={"egress": "nat"}))
    assert not [r for r in resources_of(plan, "ram/policy:Policy") if r["name"].endswith("-monitoring-policy")]
    assert plan.run.outputs["monitoring"] == {"prometheus": "none", "grafana": None}


# --- the target list script on a stubbed curl ----------------------------------------------------------------------

ENDPOINT = "https://ecs-vpc.cn-beijing.aliyuncs.com"
ROLE = "c1-prod-nodes"
SECRET = "login/secret+1"
CREDS = f'{{"AccessKeyId" : "STS.loginid", "AccessKeySecret" : "{SECRET}", "SecurityToken" : "CAIS+tok==" }}'
CURL = (
    ALICLOUD_HARDENED_METADATA
    + rf"""
url="${{@: -1}}"
case "$url" in
  */meta-data/ram/security-credentials/) echo {ROLE} ;;
  */meta-data/ram/security-credentials/{ROLE}) echo '{CREDS}' ;;
  {ENDPOINT}/*) exec python3 "$ECS_STUB" "$url" ;;
  *) exit 22 ;;
esac
"""
)
# answers DescribeInstances from $PAGES (NextToken or "" -> [curl exit status, body]), logging each query
ECS_STUB = r"""
import json, os, sys
from urllib.parse import parse_qsl, urlsplit
query = dict(parse_qsl(urlsplit(sys.argv[1]).query, keep_blank_values=True))
with open(os.environ["LOG"], "a") as log:
    log.write(json.dumps(query) + "\n")
status, body = json.load(open(os.environ["PAGES"]))[query.get("NextToken", "")]
if status:
    sys.exit(status)  # curl -f on an HTTP error: nothing on stdout
print(json.dumps(body))
"""


def instance(i: int, name: str | None = None, **tags: str) -> dict:
    extra = [{"TagKey": k, "TagValue": v} for k, v in tags.items()]
    tag_list = [{"TagKey": "gpu-cluster:cluster", "TagValue": "c1"}, *extra]
    return {
        "InstanceId": f"i-{i:04d}",
        "InstanceName": name or f"c1-node-{i}",
        "HostName": name or f"c1-node-{i}",
        "InstanceType": "ecs.gn7i-c16g1.4xlarge",
        "VpcAttributes": {"PrivateIpAddress": {"IpAddress": [f"10.0.0.{i}"]}},
        "Tags": {"Tag": tag_list},
    }


def page(instances: list[dict], token: str = "") -> list:
    return [0, {"RequestId": "R", "Instances": {"Instance": instances}, "NextToken": token, "TotalCount": 0}]


def run_targets(tmp_path: Path, pages: dict, old: str | None = None):
    (tmp_path / "ecs_stub.py").write_text(ECS_STUB)
    (tmp_path / "pages.json").write_text(json.dumps(pages))
    targets = tmp_path / "prom" / "alicloud-targets.json"
    if old is not None:
        targets.parent.mkdir()
        targets.write_text(old)
    env = {
        **{k: v for k, v in ali_monitoring.targets_env(spec_of(vm_with_login(name="c1"), "prod")).items()},
        "ECS_ENDPOINT": ENDPOINT,
        "TARGETS_FILE": str(targets),
        "LOG": str(tmp_path / "calls"),
        "ECS_STUB": str(tmp_path / "ecs_stub.py"),
        "PAGES": str(tmp_path / "pages.json"),
        "TMPDIR": str(tmp_path),
    }
    proc = run_hook(SCRIPT, stub_bin(tmp_path, {"curl": CURL}), env)
    log = tmp_path / "calls"
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls, targets


def test_two_pages_become_one_target_group_per_gpu_node(tmp_path):
    pages = {
        "": page(
            [instance(1), instance(2, "c1-login"), instance(3, **{"acs:autoscaling:scalingGroupId": "asg-1"})], "t2"
        ),
        "t2": page([instance(4, "c1-head"), instance(5, "c1-gpu-7"), instance(6, **{"gpu-cluster:stack": "other"})]),
    }
    proc, calls, targets = run_targets(tmp_path, pages)
    assert proc.returncode == 0, proc.stderr
    groups = json.loads(targets.read_text())
    assert [g["targets"] for g in groups] == [["10.0.0.1"], ["10.0.0.3"], ["10.0.0.5"]]
    assert groups[1]["labels"] == {
        "__meta_alicloud_private_ip": "10.0.0.3",
        "__meta_alicloud_hostname": "c1-node-3",
        "__meta_alicloud_instance_id": "i-0003",
        "__meta_alicloud_instance_type": "ecs.gn7i-c16g1.4xlarge",
        "__meta_alicloud_scaling_group_id": "asg-1",
    }
    assert groups[2]["labels"]["__meta_alicloud_hostname"] == "c1-gpu-7"  # an elastic Slurm node
    assert oct(targets.stat().st_mode & 0o777) == "0o644"
    assert [c.get("NextToken") for c in calls] == [None, "t2"]
    for call in calls:
        own = {k: v for k, v in call.items() if k not in COMMON}
        token = {"NextToken": "t2"} if "NextToken" in call else {}
        assert own == {
            "Action": "DescribeInstances",
            "RegionId": "cn-beijing",
            "Status": "Running",
            "MaxResults": "100",
            "Tag.1.Key": "gpu-cluster:cluster",
            "Tag.1.Value": "c1",
            **token,
        }
        signature = call.pop("Signature")
        assert signature == alicloud_signature(SECRET, call)
        assert call["AccessKeyId"] == "STS.loginid" and call["SecurityToken"] == "CAIS+tok=="
    assert not list(tmp_path.glob("prom/alicloud-targets.json.*"))  # no temporary file left


COMMON = {"AccessKeyId", "Format", "SecurityToken", "SignatureMethod", "SignatureNonce", "SignatureVersion",
          "Timestamp", "Version", "Signature"}  # fmt: skip


def test_no_instances_is_an_empty_list(tmp_path):
    proc, calls, targets = run_targets(tmp_path, {"": page([])}, old='[{"targets": ["10.0.0.9"]}]')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(targets.read_text()) == [] and len(calls) == 1


def test_an_api_error_keeps_the_old_list(tmp_path):
    old = '[{"targets": ["10.0.0.9"], "labels": {}}]\n'
    proc, _, targets = run_targets(tmp_path, {"": page([instance(1)], "t2"), "t2": [22, {}]}, old=old)
    assert proc.returncode != 0 and "DescribeInstances (page 2) failed" in proc.stderr
    assert targets.read_text() == old
    assert not list(tmp_path.glob("prom/alicloud-targets.json.*"))


def test_an_answer_that_is_not_a_listing_keeps_the_old_list(tmp_path):
    old = "[]\n"
    refused = [0, {"Code": "Forbidden.RAM", "Message": "User not authorized to operate on the specified resource."}]
    proc, _, targets = run_targets(tmp_path, {"": refused}, old=old)
    assert proc.returncode != 0 and "Forbidden.RAM" in proc.stderr
    assert targets.read_text() == old


def test_an_unchanged_list_is_not_rewritten(tmp_path):
    proc, _, targets = run_targets(tmp_path, {"": page([instance(1)])})
    assert proc.returncode == 0, proc.stderr
    before = targets.stat().st_ino
    proc, _, _ = run_targets(tmp_path, {"": page([instance(1)])})
    assert proc.returncode == 0 and targets.stat().st_ino == before


def test_every_call_is_a_request_alibabas_ecs_model_knows(tmp_path):
    _, calls, _ = run_targets(tmp_path, {"": page([instance(1)], "t2"), "t2": page([])})
    known = set(ecs_models.DescribeInstancesRequest().from_map({}).to_map()) | set(
        ecs_models.DescribeInstancesRequest(tag=[ecs_models.DescribeInstancesRequestTag(key="k", value="v")],
                                            max_results=100, next_token="t", status="Running",
                                            region_id="r").to_map()
    )  # fmt: skip
    for call in calls:
        own = {k.split(".")[0] for k in call if k not in COMMON and k != "Action"}
        assert own <= known, own - known


def test_the_script_is_shellcheck_clean_and_ships_with_the_signer_inlined(tmp_path):
    assert_shellcheck_clean(SCRIPT)
    text = bootstrap.script("alicloud_prometheus_targets.sh")
    assert 'alicloud_rpc.sh"' not in text and text.count("rpc_call() {") == 1
    rendered = tmp_path / "gpu-cluster-prometheus-targets"
    rendered.write_text(text)
    assert_shellcheck_clean(rendered)


def test_the_nodes_group_admits_the_exporters_from_the_login_nodes_group_only(elastic):
    rules = {r["name"]: r["inputs"] for r in resources_of(elastic, "ecs/securityGroupRule:SecurityGroupRule")}
    for exporter, port in (("dcgm-exporter", 9400), ("node-exporter", 9100)):
        rule = rules[f"slurm-elastic-alicloud-sg-{exporter}-from-login"]
        assert rule["portRange"] == f"{port}/{port}" and rule["type"] == "ingress" and rule["policy"] == "accept"
        assert rule["sourceSecurityGroupId"] == "<id of slurm-elastic-alicloud-login-sg>"
        assert rule["securityGroupId"] == "<id of slurm-elastic-alicloud-sg>" and "cidrIp" not in rule
    plan = plan_values(ali_values(network={"egress": "nat"}))  # no login node, no Prometheus: no rule
    assert not [r for r in resources_of(plan, "SecurityGroupRule") if "exporter" in r["name"]]


def test_turning_it_on_for_a_deployed_stack_restarts_only_the_login_node_and_adds_the_grant_and_rules(elastic):
    shipped = load_stack(ROOT, "alicloud-slurm-elastic").values["gpu-cluster:cluster"]["monitoring"]  # logs on: kept
    old = plan_json(plan_stack_with("alicloud-slurm-elastic", monitoring={**shipped, "prometheus": "none"}))
    d = diff_plans(old, plan_json(elastic))
    assert [(c.name, c.verdict, sorted({x.path for x in c.changes})) for c in d.changed] == [
        ("slurm-elastic-alicloud-login", "restart", ["userData"])
    ]
    assert d.deleted == []
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.created) == [
        "slurm-elastic-alicloud-monitoring-policy",
        "slurm-elastic-alicloud-role-monitoring",
        "slurm-elastic-alicloud-sg-dcgm-exporter-from-login",
        "slurm-elastic-alicloud-sg-node-exporter-from-login",
    ]
    said = {c.key: c for c in d.spec_changes}
    assert said["cluster.monitoring.prometheus"].policy == "in-place"


@pytest.mark.parametrize("stack", ["alicloud-slurm-elastic", "alicloud-a100-cmk", "alicloud-mlps3-sm4"])
def test_the_login_nodes_user_data_stays_under_16_kb_with_the_monitoring_parts(stack):
    # gzip, as the nodes' (bootstrap.gzipped: cloud-init's ~16384 bytes); about 13.2 KB today
    login = _by_name(plan_stack_with(stack), "-alicloud-login")
    assert file_sd.TARGETS_SCRIPT in files_of(login["inputs"]["userData"])
    assert len(base64.b64decode(login["inputs"]["userData"])) < 16 * 1024
