"""monitoring.notify on Huawei Cloud, as registered with the mocks: the SMN topic and its email subscriptions, the
agency's custom policy publishing to that topic only, the login node's Alertmanager posting to the webhook (its file
judged by amtool), and the webhook script on a stubbed curl, its signature checked against huaweicloudsdkcore's
signer with the JSON body it sends."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from huaweicloudsdkcore.auth.credentials import BasicCredentials
from huaweicloudsdkcore.sdk_request import SdkRequest
from huaweicloudsdkcore.signer.signer import Signer

from components import bootstrap
from components.bootstrap import alertmanager
from components.bootstrap import huaweicloud_smn as smn
from components.diff import diff_plans
from components.errors import ConfigErrors
from components.layout import huaweicloud as hw
from components.layout.huaweicloud.nodes import user_data_max

from .conftest import plan_json, plan_stack_with, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, stub_bin
from .test_huaweicloud_resources import huawei_values

EMAILS = ["ops@example.com", "ml@example.org"]
NOTIFY = {"notify": EMAILS}
URN = "<urn of test-huaweicloud-alerts>"


def _login(plan: Any) -> dict[str, Any]:
    (login,) = [r for r in resources_of(plan, "Ecs/instance:Instance") if r["name"].endswith("-login")]
    return login


def _files(user_data: str) -> tuple[dict[str, str], dict[str, Any]]:
    doc: dict[str, Any] = yaml.safe_load(gzip.decompress(base64.b64decode(user_data)))
    return {f["path"]: f["content"] for f in doc["write_files"]}, doc


@pytest.fixture(scope="module")
def vm_plan():
    return plan_values(huawei_values(login={}, monitoring=NOTIFY))


# --- the resources ---------------------------------------------------------------------------------------------------


def test_the_topic_and_one_email_subscription_per_address(vm_plan):
    (topic,) = resources_of(vm_plan, "Smn/topic:Topic")
    assert topic["name"] == "test-huaweicloud-alerts"
    assert topic["inputs"]["name"] == "test-test-alerts" and topic["inputs"]["displayName"] == "gpu-cluster test alerts"
    subscriptions = {r["name"]: r["inputs"] for r in resources_of(vm_plan, "Smn/subscription:Subscription")}
    assert subscriptions == {
        "test-huaweicloud-alerts-ops-example-com": {
            "protocol": "email",
            "endpoint": "ops@example.com",
            "topicUrn": URN,
        },
        "test-huaweicloud-alerts-ml-example-org": {"protocol": "email", "endpoint": "ml@example.org", "topicUrn": URN},
    }


def test_the_agency_may_publish_to_this_topic_only(vm_plan):
    roles = {r["name"]: r["inputs"] for r in resources_of(vm_plan, "Iam/role:Role")}
    role = roles["test-huaweicloud-alerts-publish-role"]
    assert role["type"] == "XA" and role["name"] == "test-test-alerts-publish"
    assert json.loads(role["policy"]) == {
        "Statement": [
            {"Action": ["smn:topic:publish"], "Effect": "Allow", "Resource": ["smn:*:*:topic:test-test-alerts"]}
        ],
        "Version": "1.1",
    }
    (agency,) = resources_of(vm_plan, "Iam/agency:Agency")
    assert agency["inputs"]["allResourcesRoles"] == ["ECS ReadOnlyAccess", "test-test-alerts-publish"]


def test_an_existing_agency_is_granted_nothing_and_the_plan_says_what_it_needs():
    layout = hw.plan(spec_of(huawei_values(login={}, identity={"existing": "ops-agency"}, monitoring=NOTIFY)))
    assert "test-test-alerts-publish" not in layout.identity.roles
    (said,) = [w for w in layout.warnings if "SMN" in w]
    assert "smn:topic:publish on the topic test-test-alerts" in said and "ops-agency" in said


def test_without_notify_nothing_of_it_is_built_and_the_login_user_data_stays_plain():
    plan = plan_values(huawei_values(login={}))
    assert not resources_of(plan, "Smn/topic:Topic") and not resources_of(plan, "Iam/role:Role")
    text = _login(plan)["inputs"]["userData"]
    assert text.startswith("#cloud-config") and alertmanager.ALERTMANAGER_YML not in text


# --- the login node --------------------------------------------------------------------------------------------------


def test_the_login_nodes_alertmanager_posts_to_the_webhook_that_publishes_to_the_topic(vm_plan):
    user_data = _login(vm_plan)["inputs"]["userData"]
    assert len(base64.b64decode(user_data)) <= user_data_max()  # gzip: the plain text is over 32 KB
    files, doc = _files(user_data)
    am = yaml.safe_load(files[alertmanager.ALERTMANAGER_YML])
    (receiver,) = am["receivers"]
    assert receiver["webhook_configs"] == [{"url": "http://127.0.0.1:9095/", "send_resolved": True}]
    assert am["route"]["receiver"] == receiver["name"]
    assert "ListenStream=127.0.0.1:9095\nAccept=yes" in files[f"/etc/systemd/system/{smn.SOCKET}"]
    service = files["/etc/systemd/system/gpu-cluster-smn-publish@.service"]
    assert "StandardInput=socket" in service and "StandardOutput=socket" in service
    env = files[smn.ENV_PATH]
    assert f'TOPIC_URN="{URN}"' in env and 'SMN_ENDPOINT="smn.cn-north-4.myhuaweicloud.com"' in env
    assert files[smn.SCRIPT_PATH] == bootstrap.script("huaweicloud_smn_publish.sh")
    socket = ["systemctl", "enable", "--now", smn.SOCKET]
    assert doc["runcmd"].index(socket) < doc["runcmd"].index(list(alertmanager.COMMANDS[0]))
    assert smn.TOPIC_PLACEHOLDER not in json.dumps(doc)


def test_a_slurm_login_node_gets_the_topic_too():
    plan = plan_stack_with("huaweicloud-slurm", monitoring=NOTIFY)
    (topic,) = resources_of(plan, "Smn/topic:Topic")
    files, _ = _files(_login(plan)["inputs"]["userData"])
    assert f'TOPIC_URN="<urn of {topic["name"]}>"' in files[smn.ENV_PATH]
    (agency,) = resources_of(plan, "Iam/agency:Agency")
    assert [r for r in agency["inputs"]["allResourcesRoles"] if r.endswith("-alerts-publish")]


def test_notify_on_cce_is_refused_by_key():
    with pytest.raises(ConfigErrors) as caught:
        spec_of(huawei_values(scheduler="kubernetes", monitoring=NOTIFY))
    assert "gpu-cluster:cluster.monitoring.notify" in [e.key for e in caught.value.errors]


@pytest.fixture
def amtool() -> str:
    path = shutil.which("amtool")
    if not path:
        pytest.skip("amtool is not installed (Debian package prometheus-alertmanager)")
    return path


def test_the_webhook_config_passes_amtool_and_a_subject_would_not(amtool, tmp_path):
    receiver = hw.monitoring.receiver(hw.alerts.webhook(spec_of(huawei_values(login={}, monitoring=NOTIFY))))
    config = tmp_path / "alertmanager.yml"
    config.write_text(alertmanager.alertmanager_config("test", receiver))
    run = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    # the negative control: webhook_configs has no subject (why Receiver.titled leaves it off)
    config.write_text(config.read_text().replace("send_resolved: true", "send_resolved: true\n    subject: x"))
    assert subprocess.run([amtool, "check-config", str(config)], capture_output=True).returncode != 0


# --- the webhook on a stubbed curl -----------------------------------------------------------------------------------

AK, SK, TOKEN, PROJECT = "TMPAK", "tmp/secret+1", "tok+en==", "0123456789abcdef0123456789abcdef"
CREDS = {"credential": {"access": AK, "secret": SK, "securitytoken": TOKEN, "expires_at": "2033-05-18T03:33:19Z"}}
META = "http://169.254.169.254"
ENDPOINT = "smn.cn-north-4.myhuaweicloud.com"
TOPIC = "urn:smn:cn-north-4:0123456789abcdef0123456789abcdef:c-prod-alerts"
CURL = rf"""
url="${{@: -1}}"
case "$url" in
  {META}/meta-data/latest/api/token) exit 22 ;;
  {META}/openstack/latest/securitykey) cat "$CREDS" ;;
  {META}/openstack/latest/meta_data.json) echo '{{"uuid": "u", "project_id": "{PROJECT}"}}' ;;
  https://{ENDPOINT}/*)
    python3 "$CALL_LOGGER" "$@" >>"$LOG"
    [ -z "${{DENY:-}}" ] || {{ echo "curl: (22) The requested URL returned error: 403" >&2; exit 22; }}
    echo '{{"request_id": "r", "message_id": "m"}}' ;;
  *) exit 22 ;;
esac
"""
# one request's method, headers, body and url, as a JSON line
CALL_LOGGER = """
import json, sys
args = sys.argv[1:]
lines = open(args[args.index("-H") + 1][1:]).read().splitlines()
body = open(args[args.index("--data-binary") + 1][1:], "rb").read().decode()
print(json.dumps({"method": args[args.index("-X") + 1], "headers": dict(line.split(": ", 1) for line in lines),
                  "body": body, "url": args[-1]}))
"""
ALERTS = {
    "status": "firing",
    "groupLabels": {"alertname": "GpuIdle", "cluster": "c"},
    "commonLabels": {"alertname": "GpuIdle", "cluster": "c"},
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "GpuIdle", "cluster": "c", "node": "c-gpu-0"},
            "annotations": {"summary": "GPU idle on c-gpu-0 (节点)"},
            "startsAt": "2026-12-03T10:00:00Z",
        }
    ],
}


def _request(body: bytes, method: str = "POST") -> bytes:
    head = f"{method} / HTTP/1.1\r\nHost: 127.0.0.1:9095\r\nContent-Type: application/json\r\n"
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def run_webhook(tmp_path: Path, request: bytes, **env: str) -> tuple[subprocess.CompletedProcess[bytes], list[Any]]:
    (tmp_path / "call_logger.py").write_text(CALL_LOGGER)
    (tmp_path / "creds.json").write_text(json.dumps(CREDS))
    env_file = tmp_path / "smn.env"
    env_file.write_text(
        f'SMN_ENDPOINT="{ENDPOINT}"\nTOPIC_URN="{TOPIC}"\nMETADATA_URL="{META}"\n'
        'SUBJECT_MAX_BYTES="512"\nMESSAGE_MAX_BYTES="262144"\n'
    )
    hook = tmp_path / "gpu-cluster-smn-publish"
    hook.write_text(bootstrap.script("huaweicloud_smn_publish.sh"))  # huaweicloud_sign.sh inlined, as on the node
    log = tmp_path / "calls"
    bin_dir = stub_bin(tmp_path, {"curl": CURL})
    full = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "ENV_FILE": str(env_file),
        "CREDS": str(tmp_path / "creds.json"),
        "LOG": str(log),
        "CALL_LOGGER": str(tmp_path / "call_logger.py"),
        "TMPDIR": str(tmp_path),
        **env,
    }
    bash = shutil.which("bash")
    assert bash
    proc = subprocess.run([bash, str(hook)], input=request, env=full, capture_output=True, timeout=30)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls


def sdk_authorization(headers: dict[str, str], url: str, body: str) -> str:
    """The Authorization huaweicloudsdkcore's Signer computes for this POST and body, with the same X-Sdk-Date."""
    parts = urlsplit(url)
    request = SdkRequest(
        method="POST",
        schema="https",
        host=parts.netloc,
        resource_path=parts.path,
        query_params=[],
        header_params={k: v for k, v in headers.items() if k != "Authorization"},
        body=body,
    )
    return str(Signer(BasicCredentials(AK, SK, PROJECT)).sign(request).header_params["Authorization"])


def test_the_script_is_shellcheck_clean_with_the_signing_inlined(tmp_path):
    path = tmp_path / "gpu-cluster-smn-publish"
    path.write_text(bootstrap.script("huaweicloud_smn_publish.sh"))
    assert "hw_sign() {" in path.read_text()
    assert_shellcheck_clean(path)


def test_a_notification_is_published_to_the_topic_signed_with_the_agency(tmp_path):
    proc, calls = run_webhook(tmp_path, _request(json.dumps(ALERTS).encode()))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"HTTP/1.1 200 OK\r\n")
    (call,) = calls
    h, url = call["headers"], call["url"]
    assert call["method"] == "POST"
    assert url == f"https://{ENDPOINT}/v2/{PROJECT}/notifications/topics/{TOPIC}/publish"
    assert (h["Host"], h["X-Project-Id"], h["X-Security-Token"]) == (ENDPOINT, PROJECT, TOKEN)
    assert h["Content-Type"] == "application/json"
    assert h["Authorization"] == sdk_authorization(h, url, call["body"])
    assert h["Authorization"] != sdk_authorization(h, url, call["body"] + " ")  # the body is signed
    body = json.loads(call["body"])
    assert body["subject"] == "[FIRING:1] GpuIdle on c"
    assert "FIRING GpuIdle since 2026-12-03T10:00:00Z" in body["message"]
    assert "GPU idle on c-gpu-0 (节点)" in body["message"] and "node=c-gpu-0" in body["message"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("tmp")] == []


def test_a_subject_is_cut_to_smns_512_bytes_on_a_character_boundary(tmp_path):
    alerts = {**ALERTS, "commonLabels": {"alertname": "界" * 300, "cluster": "c"}}
    proc, calls = run_webhook(tmp_path, _request(json.dumps(alerts).encode()))
    assert proc.returncode == 0, proc.stderr
    subject = json.loads(calls[0]["body"])["subject"]
    assert len(subject.encode()) <= 512 and subject.startswith("[FIRING:1] 界")


def test_a_refused_publish_answers_500_so_alertmanager_retries(tmp_path):
    proc, calls = run_webhook(tmp_path, _request(json.dumps(ALERTS).encode()), DENY="1")
    assert proc.stdout.startswith(b"HTTP/1.1 500 ") and len(calls) == 1
    assert b"PublishMessage to " + TOPIC.encode() + b" failed" in proc.stderr


@pytest.mark.parametrize(
    "request_bytes",
    [_request(b"{}", method="GET"), _request(b"not json"), _request(b'{"alerts": 1}'), b"POST / HTTP/1.1\r\n\r\n"],
    ids=["get", "not-json", "not-webhook-json", "no-length"],
)
def test_what_is_not_a_webhook_post_answers_400_and_publishes_nothing(tmp_path, request_bytes):
    proc, calls = run_webhook(tmp_path, request_bytes)
    assert proc.stdout.startswith(b"HTTP/1.1 400 ") and calls == []


def test_the_outputs_name_the_topic_and_the_plan_says_who_the_alerts_reach(vm_plan):
    out = vm_plan.run.outputs
    assert out["alerts"]["topic"] == URN and out["alerts"]["emails"] == EMAILS
    said = out["monitoring"]["alerts"]
    assert "SMN topic test-test-alerts" in said and "ops@example.com, ml@example.org" in said
    assert "confirms SMN's subscription mail first" in said


def test_day2_turning_it_on_adds_beside_and_names_the_login_nodes_possible_replacement():
    old = plan_json(plan_stack_with("huaweicloud-dev"))
    d = diff_plans(old, plan_json(plan_stack_with("huaweicloud-dev", monitoring={"notify": ["ops@example.com"]})))
    changed = {(c.name, c.verdict, tuple(sorted({x.path.split(".")[0] for x in c.changes}))) for c in d.changed}
    assert changed == {
        ("hw-dev-huaweicloud-agency", "update", ("allResourcesRoles[1]",)),  # the policy's name added
        ("hw-dev-huaweicloud-login", "may-replace", ("userData",)),  # gzip now; the SDK says nothing either way
    }, changed
    assert d.deleted == []
    assert sorted(urn.rsplit("::", 1)[1] for urn in d.created) == [
        "hw-dev-huaweicloud-alerts",
        "hw-dev-huaweicloud-alerts-ops-example-com",
        "hw-dev-huaweicloud-alerts-publish-role",
    ]
    said = {c.key: c for c in d.spec_changes}
    assert said["cluster.monitoring.notify"].policy == "replace"  # spec/updates.yaml when cloud huaweicloud
