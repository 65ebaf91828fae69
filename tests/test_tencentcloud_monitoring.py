"""The self-hosted Prometheus and Grafana on Tencent Cloud: `auto` on the shipped stacks (a login node and NAT), the
login node's user data (Prometheus, Grafana and the target list's timer, under the 16 KB user_data limit), the CAM
grant (name/cvm:DescribeInstances on "*", nothing else), the exporters' rules from the login node's group and its
egress, the rendered prometheus.yml with file_sd judged by promtool, and the target list script against a stubbed
curl (the metadata service's role credentials and CVM DescribeInstances pages; the TC3 signature recomputed by
tencentcloud-sdk-python-common's own signer, the body read by tencentcloud-sdk-python-cvm's request model)."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import warnings
from pathlib import Path

import pytest
import yaml
from tencentcloud.common.abstract_client import AbstractClient
from tencentcloud.common.http.request import RequestInternal
from tencentcloud.cvm.v20170312 import models as cvm

from components import bootstrap
from components.bootstrap import monitoring
from components.diff import diff_plans
from components.layout import file_sd
from components.layout import tencentcloud as tc
from components.layout.tencentcloud import monitoring as tc_monitoring
from components.layout.tencentcloud.nodes import USER_DATA_MAX

from .conftest import ROOT, load_stack, plan_json, plan_stack_with, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin
from .test_tencentcloud_resources import tencent_values

SCRIPT = ROOT / "components" / "bootstrap" / "tencentcloud_prometheus_targets.sh"
STACKS = ("tencentcloud-dev", "tencentcloud-hcc")


def with_login(**cluster):
    return tencent_values(login={}, **cluster)


def files_of(user_data_b64: str) -> dict[str, str]:
    doc = yaml.safe_load(gzip.decompress(base64.b64decode(user_data_b64)).decode())
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def _by_name(plan, suffix):
    found = [r.as_json() for r in plan.resources if r.name.endswith(suffix)]
    assert len(found) == 1, suffix
    return found[0]


# --- the spec and the layout ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_auto_is_self_hosted_on_the_shipped_stacks_with_a_login_node_and_nat(stack):
    values = load_stack(ROOT, stack).values
    assert "login" in values["gpu-cluster:cluster"] and "egress" not in values["gpu-cluster:cluster"]["network"]
    assert spec_of(values, stack).prometheus == "selfHosted"


def test_auto_is_none_without_a_login_node_or_without_nat():
    assert spec_of(tencent_values()).prometheus == "none"  # no login node: nowhere private to run it
    assert spec_of(with_login(network={"egress": "none"})).prometheus == "none"
    assert spec_of(with_login()).prometheus == "selfHosted"
    assert tc.plan(spec_of(with_login(monitoring={"prometheus": "none"}))).monitoring is None


def test_the_discovery_is_the_file_the_timer_writes_and_relabels_as_the_other_clouds():
    config = yaml.safe_load(monitoring.prometheus_config(_settings()))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"dcgm-exporter", "node-exporter"}
    for job in jobs.values():
        assert job["file_sd_configs"] == [{"files": [tc_monitoring.TARGETS_FILE]}]
        relabel = {r["target_label"]: r for r in job["relabel_configs"]}
        assert relabel["__address__"]["source_labels"] == ["__meta_tencentcloud_private_ip"]
        assert relabel["node"]["source_labels"] == ["__meta_tencentcloud_hostname"]
        assert relabel["instance_id"]["source_labels"] == ["__meta_tencentcloud_instance_id"]
        assert relabel["instance_type"]["source_labels"] == ["__meta_tencentcloud_instance_type"]
        assert "pool" not in relabel  # instances only: no node group to name
    assert jobs["dcgm-exporter"]["relabel_configs"][0]["replacement"] == "${1}:9400"
    assert jobs["node-exporter"]["relabel_configs"][0]["replacement"] == "${1}:9100"


def _settings() -> monitoring.Monitoring:
    spec = spec_of(with_login())
    thresholds = monitoring.Thresholds(**spec.monitoring.alerts.model_dump())
    return monitoring.Monitoring("c", tc_monitoring.discovery(), 15, thresholds)


def test_the_rendered_config_with_file_sd_passes_promtool_with_the_list_the_script_writes(promtool, tmp_path):
    m = _settings()
    rules = tmp_path / "rules.yml"
    rules.write_text(monitoring.alert_rules(m))
    config = tmp_path / "prometheus.yml"
    text = monitoring.prometheus_config(m).replace(monitoring.RULES_YML, str(rules))
    config.write_text(text.replace(tc_monitoring.TARGETS_FILE, str(tmp_path / "targets.json")))
    run = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    (tmp_path / "run").mkdir()
    proc, _, written = run_targets(tmp_path / "run", {"0": page([instance(1), instance(2)], 2)})
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "targets.json").write_text(written.read_text())
    run = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True)
    assert run.returncode == 0 and "does not exist" not in run.stdout, run.stdout + run.stderr
    (tmp_path / "targets.json").write_text('[{"targets": ["10.0.0.5"], "labels": {"bad-name": "x"}}]')
    assert subprocess.run([promtool, "check", "config", str(config)], capture_output=True).returncode != 0


def test_the_scripts_settings_name_the_internal_endpoint_the_tags_and_the_login_node():
    spec = spec_of(with_login(name="c1"), stack="prod")
    env = tc_monitoring.targets_env(spec)
    assert env["CVM_ENDPOINT"] == "cvm.internal.tencentcloudapi.com" and env["CVM_API_VERSION"] == "2017-03-12"
    assert env["CREDENTIALS_URL"] == "http://metadata.tencentyun.com/latest/meta-data/cam/security-credentials/"
    assert (env["CLUSTER_TAG"], env["CLUSTER"], env["STACK_TAG"], env["STACK"]) == (
        "gpu-cluster:cluster", "c1", "gpu-cluster:stack", "prod"
    )  # fmt: skip
    assert env["SKIP_NAMES"] == "c1-login" and env["REGION"] == "ap-guangzhou"
    assert spec.base_tags["gpu-cluster:cluster"] == "c1" and spec.base_tags["gpu-cluster:stack"] == "prod"


# --- the stacks registered with the mocks ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev():
    return plan_stack_with("tencentcloud-dev")


@pytest.mark.parametrize("stack", STACKS)
def test_the_login_nodes_user_data_is_the_part_and_stays_under_16_kb(stack):
    login = _by_name(plan_stack_with(stack), "-tencentcloud-login")["inputs"]
    # the limit counts the Base64 text (nodes.py USER_DATA_MAX, the stricter reading); about 10.4 KB today
    assert len(login["userData"]) <= USER_DATA_MAX
    files = files_of(login["userData"])
    assert files[file_sd.TARGETS_SCRIPT] == bootstrap.script("tencentcloud_prometheus_targets.sh")
    assert "OnUnitActiveSec=60" in files[f"/etc/systemd/system/{file_sd.TARGETS_UNIT}.timer"]
    assert 'SKIP_NAMES="' in files[file_sd.TARGETS_ENV]
    prom = yaml.safe_load(files[monitoring.PROMETHEUS_YML])
    assert prom["scrape_configs"][0]["file_sd_configs"] == [{"files": [tc_monitoring.TARGETS_FILE]}]
    doc = yaml.safe_load(gzip.decompress(base64.b64decode(login["userData"])).decode())
    assert ["systemctl", "enable", "--now", "--no-block", "gpu-cluster-monitoring.service"] in doc["runcmd"]
    assert "grafana-admin-password" not in json.dumps(doc["runcmd"])  # generated on the node, never in user data


def test_the_grant_is_describe_instances_on_star_attached_to_the_login_nodes_role(dev):
    policies = [p for p in resources_of(dev, "Cam/policy:Policy") if p["name"].endswith("-monitoring-policy")]
    assert len(policies) == 1 and policies[0]["name"] == "tc-dev-tencentcloud-monitoring-policy"
    assert json.loads(policies[0]["inputs"]["document"]) == {
        "statement": [{"action": ["name/cvm:DescribeInstances"], "effect": "allow", "resource": ["*"]}],
        "version": "2.0",
    }
    assert policies[0]["inputs"]["name"] == "tc-dev-tencentcloud-dev-prometheus-targets"
    attachment = _by_name(dev, "-role-monitoring")["inputs"]
    assert attachment == {"policyName": policies[0]["inputs"]["name"], "roleName": "tc-dev-tencentcloud-dev-nodes"}
    login = _by_name(dev, "-tencentcloud-login")["inputs"]
    assert login["camRoleName"] == attachment["roleName"]  # the login node carries that role
    assert dev.run.outputs["identity"]["grants"] == ["tc-dev-tencentcloud-dev-prometheus-targets"]  # the plan says so


def test_an_existing_role_gets_the_policy_attached_by_name():
    plan = plan_values(with_login(identity={"existing": "ops-role"}))
    assert not resources_of(plan, "Cam/role:Role")
    assert _by_name(plan, "-role-monitoring")["inputs"]["roleName"] == "ops-role"


def test_the_nodes_group_admits_the_exporters_from_the_login_nodes_group_only_after_its_rules(dev):
    rules = _by_name(dev, "tc-dev-tencentcloud-sg-rules")["inputs"]["ingresses"]
    assert rules[0]["description"] == "all traffic between nodes"  # the existing rules keep their order
    scrapes = [r for r in rules if "exporter" in r["description"]]
    assert rules[-len(scrapes) :] == scrapes
    assert [(r["port"], r["protocol"], r["sourceSecurityId"], r["action"]) for r in scrapes] == [
        ("9400", "TCP", "<id of tc-dev-tencentcloud-login-sg>", "ACCEPT"),
        ("9100", "TCP", "<id of tc-dev-tencentcloud-login-sg>", "ACCEPT"),
    ]
    assert all("cidrBlock" not in r for r in scrapes)


def test_the_login_nodes_group_gets_egress_only_with_prometheus(dev):
    login_rules = _by_name(dev, "tc-dev-tencentcloud-login-sg-rules")["inputs"]
    assert login_rules["egresses"] == [
        {"action": "ACCEPT", "cidrBlock": "0.0.0.0/0", "protocol": "ALL", "port": "all", "description": "egress"}
    ]
    off = plan_stack_with("tencentcloud-dev", monitoring={"prometheus": "none"})
    assert "egresses" not in _by_name(off, "tc-dev-tencentcloud-login-sg-rules")["inputs"]
    assert "userData" not in _by_name(off, "-tencentcloud-login")["inputs"]
    assert not resources_of(off, "Cam/policy:Policy")
    assert off.run.outputs["monitoring"] == {"prometheus": "none", "grafana": None}


def test_without_a_login_node_nothing_is_added():
    plan = plan_values(tencent_values())
    assert not resources_of(plan, "Cam/policy:Policy")
    rules = _by_name(plan, "-tencentcloud-sg-rules")["inputs"]["ingresses"]
    assert not [r for r in rules if "exporter" in r["description"]]


def test_the_output_says_how_to_reach_grafana(dev):
    out = dev.run.outputs["monitoring"]
    assert out["prometheus"] == "selfHosted" and out["grafana"]["url"] == "http://localhost:3000"
    assert (
        str(out["grafana"]["forward"])
        == "ssh -N -L 3000:127.0.0.1:3000 ubuntu@<public ip of tc-dev-tencentcloud-login>"
    )


def test_turning_it_on_for_a_deployed_stack_updates_the_login_node_and_the_rules_in_place(dev):
    shipped = load_stack(ROOT, "tencentcloud-dev").values["gpu-cluster:cluster"]["monitoring"]  # logs on: kept
    old = plan_json(plan_stack_with("tencentcloud-dev", monitoring={**shipped, "prometheus": "none"}))
    d = diff_plans(old, plan_json(dev))
    assert sorted(
        (c.name, c.verdict, sorted({x.path.split(".")[0].split("[")[0] for x in c.changes})) for c in d.changed
    ) == [
        ("tc-dev-tencentcloud-login", "update", ["userData"]),
        ("tc-dev-tencentcloud-sg-rules", "update", ["ingresses"]),
    ]  # the login node's egress is there already for LogListener (logs on in the shipped stack)
    assert d.deleted == []
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.created) == [
        "tc-dev-tencentcloud-monitoring-policy",
        "tc-dev-tencentcloud-role-monitoring",
    ]
    said = {c.key: c for c in d.spec_changes}
    assert said["cluster.monitoring.prometheus"].policy == "in-place"


# --- the target list script on a stubbed curl ----------------------------------------------------------------------

ROLE = "c1-prod-nodes"
SECRET = "login/secret+1"
CREDS = {
    "TmpSecretId": "AKIDtmp",
    "TmpSecretKey": SECRET,
    "Token": "tok+en==",
    "ExpiredTime": 1999999999,
    "Expiration": "2033-05-18T03:33:19Z",
    "Code": "Success",
}
META = "http://metadata.tencentyun.com/latest/meta-data/cam/security-credentials/"
CURL = rf"""
url="${{@: -1}}"
case "$url" in
  {META}) echo {ROLE} ;;
  {META}{ROLE}) cat "$CREDS" ;;
  https://cvm.internal.tencentcloudapi.com/) exec python3 "$CVM_STUB" "$@" ;;
  *) exit 22 ;;
esac
"""
# answers DescribeInstances from $PAGES (Offset -> [curl exit status, body]), logging each request's headers and body
CVM_STUB = r"""
import json, os, sys
args = sys.argv[1:]
headers, body = {}, ""
for i, a in enumerate(args):
    if a == "-H":
        for line in open(args[i + 1][1:]).read().splitlines():
            k, _, v = line.partition(": ")
            headers[k] = v
    if a == "--data-binary":
        body = open(args[i + 1][1:]).read()
assert "-X" in args and args[args.index("-X") + 1] == "POST"
with open(os.environ["LOG"], "a") as log:
    log.write(json.dumps({"headers": headers, "body": body}) + "\n")
status, answer = json.load(open(os.environ["PAGES"]))[str(json.loads(body)["Offset"])]
if status:
    sys.exit(status)  # curl -f on an HTTP error: nothing on stdout
print(json.dumps(answer))
"""


def instance(i: int, name: str | None = None, **tags: str) -> dict:
    tag_list = [{"Key": "gpu-cluster:cluster", "Value": "c1"}, *({"Key": k, "Value": v} for k, v in tags.items())]
    return {
        "InstanceId": f"ins-{i:04d}",
        "InstanceName": name or f"c1-node-{i}",
        "HostName": name or f"c1-node-{i}",
        "InstanceType": "GN7.2XLARGE32",
        "InstanceState": "RUNNING",
        "PrivateIpAddresses": [f"10.0.0.{i}"],
        "Tags": tag_list,
    }


def page(instances: list[dict], total: int) -> list:
    return [0, {"Response": {"TotalCount": total, "InstanceSet": instances, "RequestId": "R"}}]


def run_targets(tmp_path: Path, pages: dict, old: str | None = None, creds: dict | None = None):
    (tmp_path / "cvm_stub.py").write_text(CVM_STUB)
    (tmp_path / "pages.json").write_text(json.dumps(pages))
    (tmp_path / "creds.json").write_text(json.dumps(creds or CREDS))
    targets = tmp_path / "prom" / "tencentcloud-targets.json"
    if old is not None:
        targets.parent.mkdir()
        targets.write_text(old)
    env = {
        **tc_monitoring.targets_env(spec_of(with_login(name="c1"), "prod")),
        "TARGETS_FILE": str(targets),
        "LOG": str(tmp_path / "calls"),
        "CVM_STUB": str(tmp_path / "cvm_stub.py"),
        "PAGES": str(tmp_path / "pages.json"),
        "CREDS": str(tmp_path / "creds.json"),
        "TMPDIR": str(tmp_path),
    }
    proc = run_hook(SCRIPT, stub_bin(tmp_path, {"curl": CURL}), env)
    log = tmp_path / "calls"
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls, targets


def sdk_signature(headers: dict[str, str], body: str) -> str:
    """The signature tencentcloud-sdk-python-common computes for this request (AbstractClient._get_tc3_signature)."""
    req = RequestInternal(headers["Host"], "POST", "/", dict(headers), body)
    date = headers["Authorization"].split("Credential=")[1].split("/")[1]
    client = AbstractClient.__new__(AbstractClient)
    return client._get_tc3_signature({}, req, date, "cvm", SECRET)


def test_two_pages_become_one_target_group_per_gpu_node_signed_as_the_sdk_signs(tmp_path):
    pages = {
        "0": page([instance(1), instance(2, "c1-login"), *(instance(i) for i in range(3, 101))], 103),
        "100": page([instance(101, **{"gpu-cluster:stack": "other"}), instance(102), instance(103)], 103),
    }
    proc, calls, targets = run_targets(tmp_path, pages)
    assert proc.returncode == 0, proc.stderr
    groups = json.loads(targets.read_text())
    ids = [g["labels"]["__meta_tencentcloud_instance_id"] for g in groups]
    assert len(groups) == 101 and "ins-0002" not in ids and "ins-0101" not in ids  # the login node, another stack
    assert groups[0] == {
        "targets": ["10.0.0.1"],
        "labels": {
            "__meta_tencentcloud_private_ip": "10.0.0.1",
            "__meta_tencentcloud_hostname": "c1-node-1",
            "__meta_tencentcloud_instance_id": "ins-0001",
            "__meta_tencentcloud_instance_type": "GN7.2XLARGE32",
        },
    }
    assert oct(targets.stat().st_mode & 0o777) == "0o644"
    assert [json.loads(c["body"])["Offset"] for c in calls] == [0, 100]
    for call in calls:
        h, body = call["headers"], call["body"]
        assert json.loads(body)["Filters"] == [
            {"Name": "tag:gpu-cluster:cluster", "Values": ["c1"]},
            {"Name": "instance-state", "Values": ["RUNNING"]},
        ]
        assert json.loads(body)["Limit"] == 100
        assert (h["Host"], h["Content-Type"], h["X-TC-Action"], h["X-TC-Version"], h["X-TC-Region"]) == (
            "cvm.internal.tencentcloudapi.com", "application/json", "DescribeInstances", "2017-03-12", "ap-guangzhou"
        )  # fmt: skip
        assert h["X-TC-Token"] == "tok+en=="
        auth = h["Authorization"]
        assert auth.startswith("TC3-HMAC-SHA256 Credential=AKIDtmp/") and "/cvm/tc3_request, " in auth
        assert "SignedHeaders=content-type;host, " in auth
        assert auth.rsplit("Signature=", 1)[1] == sdk_signature(h, body)
    assert not list(tmp_path.glob("prom/tencentcloud-targets.json.*"))  # no temporary file left


def test_the_signature_check_itself_catches_a_changed_body(tmp_path):
    _, calls, _ = run_targets(tmp_path, {"0": page([instance(1)], 1)})
    h, body = calls[0]["headers"], calls[0]["body"]
    assert h["Authorization"].rsplit("Signature=", 1)[1] != sdk_signature(
        h, body.replace('"Limit": 100', '"Limit": 99')
    )


def test_every_request_body_is_what_the_cvm_model_knows(tmp_path):
    _, calls, _ = run_targets(tmp_path, {"0": page([instance(1)], 1)})
    for call in calls:
        request = cvm.DescribeInstancesRequest()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            request.from_json_string(call["body"])
        assert not caught, [str(w.message) for w in caught]  # the model warns "fileds are useless" on unknown keys
        assert request.Limit == 100 and [f.Name for f in request.Filters] == [
            "tag:gpu-cluster:cluster",
            "instance-state",
        ]


def test_no_instances_is_an_empty_list(tmp_path):
    proc, calls, targets = run_targets(tmp_path, {"0": page([], 0)}, old='[{"targets": ["10.0.0.9"]}]')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(targets.read_text()) == [] and len(calls) == 1


def test_an_http_error_keeps_the_old_list(tmp_path):
    old = '[{"targets": ["10.0.0.9"], "labels": {}}]\n'
    pages = {"0": page([instance(i) for i in range(1, 101)], 150), "100": [22, {}]}
    proc, _, targets = run_targets(tmp_path, pages, old=old)
    assert proc.returncode != 0 and "DescribeInstances (page 2) failed" in proc.stderr
    assert targets.read_text() == old
    assert not list(tmp_path.glob("prom/tencentcloud-targets.json.*"))


def test_an_api_error_answer_keeps_the_old_list(tmp_path):
    old = "[]\n"
    refused = [
        0,
        {"Response": {"Error": {"Code": "UnauthorizedOperation", "Message": "no permission"}, "RequestId": "R"}},
    ]
    proc, _, targets = run_targets(tmp_path, {"0": refused}, old=old)
    assert proc.returncode != 0 and "UnauthorizedOperation: no permission" in proc.stderr
    assert targets.read_text() == old


def test_credentials_that_are_not_a_success_keep_the_old_list(tmp_path):
    proc, calls, targets = run_targets(tmp_path, {}, old="[]\n", creds={"Code": "Failed"})
    assert proc.returncode != 0 and "Code Failed" in proc.stderr and calls == []
    assert targets.read_text() == "[]\n"


def test_an_unchanged_list_is_not_rewritten(tmp_path):
    proc, _, targets = run_targets(tmp_path, {"0": page([instance(1)], 1)})
    assert proc.returncode == 0, proc.stderr
    before = targets.stat().st_ino
    proc, _, _ = run_targets(tmp_path, {"0": page([instance(1)], 1)})
    assert proc.returncode == 0 and targets.stat().st_ino == before


def test_the_script_is_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)
