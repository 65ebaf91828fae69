"""`monitoring.logs` on Tencent Cloud: the CLS logset, topic, machine group, collection configs and LogListener's
credentials (CAM sub-user, its policy, the SSM secret, the nodes' read grant) as registered with the mocks, the
LogListener part on every node kind (GPU nodes, the login node) under the 16 KB user data limit, the script run
against stubbed commands, the refusals, the bill and the day-2 diff on the shipped stack."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from pathlib import Path

import pytest
import yaml

from components import bootstrap
from components.diff import diff_plans
from components.errors import ConfigError
from components.layout.tencentcloud.logs import data, label
from components.layout.tencentcloud.nodes import USER_DATA_MAX
from components.plan import load_stack

from .conftest import ROOT, one, plan_json, plan_stack, plan_stack_with, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin
from .test_tencentcloud_resources import tencent_values

STACK = "tencentcloud-dev"
SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "tencentcloud_loglistener.sh"
UNIT = "/etc/systemd/system/gpu-cluster-loglistener.service"
ENV = "/etc/gpu-cluster/loglistener.env"
LOGS_ON = {"logs": {"enabled": True}}
INSTANCE = "tencentcloud:Instance/instance:Instance"


@pytest.fixture(scope="module")
def plan():
    return plan_stack(STACK)


def by_name(plan, name: str) -> dict:
    found = [r for r in plan.as_json()["resources"] if r["name"] == name]
    assert len(found) == 1, name
    return found[0]


def files_of(user_data_b64: str) -> dict[str, str]:
    doc = yaml.safe_load(gzip.decompress(base64.b64decode(user_data_b64)).decode())
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def env_of(files: dict[str, str]) -> dict[str, str]:
    return {k: json.loads(v) for k, v in (line.split("=", 1) for line in files[ENV].splitlines())}


# --- resources ------------------------------------------------------------------------------------------------


def test_logset_and_topic_keep_the_logs_retention_days(plan):
    logset = one(plan, "Cls/logset:Logset")["inputs"]
    topic = one(plan, "Cls/topic:Topic")["inputs"]
    assert logset["logsetName"] == "tc-dev-tencentcloud-dev-logs"  # unique per account: cluster and stack
    assert logset["tags"]["gpu-cluster:cluster"] == "tc-dev"
    assert topic["logsetId"] == "<id of tc-dev-tencentcloud-logs>"
    assert (topic["topicName"], topic["period"]) == ("nodes", 30)


def test_machine_group_takes_the_nodes_by_label_not_by_ip(plan):
    group = one(plan, "Cls/machineGroup:MachineGroup")["inputs"]
    spec = spec_of(load_stack(ROOT, STACK).values, STACK)
    assert group["machineGroupType"] == {"type": "label", "values": [label(spec)]}
    assert group["groupName"] == "tc-dev-tencentcloud-dev-nodes"


def test_one_collection_config_per_file_each_attached_to_the_group(plan):
    configs = {r["inputs"]["name"]: r for r in resources_of(plan, "Cls/config:Config")}
    assert {n: c["inputs"]["path"] for n, c in configs.items()} == {
        "cloud-init": "/var/log/cloud-init.log",
        "cloud-init-output": "/var/log/cloud-init-output.log",
        "syslog": "/var/log/syslog",
    }
    for config in configs.values():
        inputs = config["inputs"]
        assert inputs["output"] == "<id of tc-dev-tencentcloud-logs-topic>"
        assert (inputs["logType"], inputs["extractRule"]) == ("minimalist_log", {"backtracking": -1})
    attachments = resources_of(plan, "Cls/configAttachment:ConfigAttachment")
    assert sorted(a["inputs"]["configId"] for a in attachments) == sorted(
        f"<id of {c['name']}>" for c in configs.values()
    )
    assert {a["inputs"]["groupId"] for a in attachments} == {"<id of tc-dev-tencentcloud-logs-group>"}


def test_loglisteners_sub_user_may_push_to_this_topic_only(plan):
    user = by_name(plan, "tc-dev-tencentcloud-logs-user")["inputs"]
    assert (user["name"], user["useApi"], user["consoleLogin"], user["forceDelete"]) == (
        "tc-dev-tencentcloud-dev-loglistener",
        True,
        False,
        True,
    )
    policy = json.loads(by_name(plan, "tc-dev-tencentcloud-logs-user-policy")["inputs"]["document"])
    scoped, unscoped = policy["statement"]
    assert scoped == {
        "action": ["name/cls:pushLog"],
        "effect": "allow",
        "resource": [
            "qcs::cls:ap-shanghai:uin/<owner uin: resolved at deploy>:topic/<id of tc-dev-tencentcloud-logs-topic>"
        ],
    }
    # CLS's own minimal LogListener policy leaves these two on "*" (catalog/logs/tencentcloud.yaml grant)
    assert unscoped == {"action": ["name/cls:getConfig", "name/cls:agentHeartBeat"], "effect": "allow",
                        "resource": ["*"]}  # fmt: skip
    attach = by_name(plan, "tc-dev-tencentcloud-logs-user-push")["inputs"]
    assert attach == {"userName": "tc-dev-tencentcloud-dev-loglistener",
                      "policyId": "<id of tc-dev-tencentcloud-logs-user-policy>"}  # fmt: skip


def test_the_key_is_in_ssm_and_the_nodes_role_may_read_that_secret_only(plan):
    secret = by_name(plan, "tc-dev-tencentcloud-logs-secret")["inputs"]
    assert (secret["secretName"], secret["recoveryWindowInDays"]) == ("tc-dev-tencentcloud-dev-loglistener", 0)
    version = by_name(plan, "tc-dev-tencentcloud-logs-secret-v1")["inputs"]
    assert (version["secretName"], version["versionId"]) == ("tc-dev-tencentcloud-dev-loglistener", "v1")
    read = json.loads(by_name(plan, "tc-dev-tencentcloud-logs-read-policy")["inputs"]["document"])
    assert read["statement"] == [
        {
            "action": ["name/ssm:GetSecretValue"],
            "effect": "allow",
            "resource": [
                "qcs::ssm:ap-shanghai:uin/<owner uin: resolved at deploy>:secret/creatorUin/"
                "<caller uin: resolved at deploy>/tc-dev-tencentcloud-dev-loglistener"
            ],
        }
    ]
    grant = by_name(plan, "tc-dev-tencentcloud-logs-read")["inputs"]
    assert grant == {
        "policyName": "tc-dev-tencentcloud-dev-loglistener-read",
        "roleName": "tc-dev-tencentcloud-dev-nodes",
    }


def test_no_key_is_in_any_user_data(plan):
    for node in resources_of(plan, "Instance/instance:Instance"):
        text = gzip.decompress(base64.b64decode(node["inputs"]["userData"])).decode()
        assert "secret key" not in text.lower() and "AKID" not in text


def test_the_stack_output_names_the_topic_and_what_is_collected(plan):
    out = plan.as_json()["outputs"]["logs"]
    assert out["service"] == "Cloud Log Service (CLS)" and out["retentionDays"] == 30
    assert out["files"] == ["/var/log/cloud-init.log", "/var/log/cloud-init-output.log", "/var/log/syslog"]
    assert out["credentials"] == {"camUser": "tc-dev-tencentcloud-dev-loglistener",
                                  "ssmSecret": "tc-dev-tencentcloud-dev-loglistener"}  # fmt: skip


def test_the_login_node_gets_egress_for_loglistener_only_with_logs(plan):
    egress = [{"action": "ACCEPT", "cidrBlock": "0.0.0.0/0", "protocol": "ALL", "port": "all", "description": "egress"}]
    assert by_name(plan, "tc-dev-tencentcloud-login-sg-rules")["inputs"]["egresses"] == egress
    without = plan_stack_with(STACK, monitoring={"prometheus": "none"})  # nor the self-hosted Prometheus
    off = by_name(without, "tc-dev-tencentcloud-login-sg-rules")["inputs"]
    assert "egresses" not in off  # a rule set without egress rules rejects all outbound traffic


def test_logs_off_builds_nothing_and_no_part():
    p = plan_stack_with(STACK, monitoring={})
    types = {r["type"] for r in p.as_json()["resources"]}
    assert not [t for t in types if t.startswith(("tencentcloud:Cls/", "tencentcloud:Ssm/"))]
    assert "tencentcloud:Cam/user:User" not in types
    login = by_name(p, "tc-dev-tencentcloud-login")["inputs"]  # the self-hosted Prometheus alone (auto)
    assert ENV not in files_of(login["userData"])
    node = by_name(p, "tc-dev-tencentcloud-node-0")["inputs"]
    assert ENV not in files_of(node["userData"])


def test_retention_reaches_the_topic():
    p = plan_stack_with(STACK, monitoring={"logs": {"enabled": True, "retentionDays": 3600}})
    assert one(p, "Cls/topic:Topic")["inputs"]["period"] == 3600


# --- the part on every node kind ------------------------------------------------------------------------------


def _assert_loglistener(files: dict[str, str], values: dict, stack: str = "test") -> None:
    assert files["/usr/local/sbin/gpu-cluster-loglistener"] == bootstrap.script("tencentcloud_loglistener.sh")
    assert "ExecStart=/usr/local/sbin/gpu-cluster-loglistener" in files[UNIT]
    env = env_of(files)
    spec = spec_of(values, stack)
    assert env["LOGLISTENER_URL"] == "http://mirrors.tencentyun.com/install/cls/loglistener-linux-x64.tar.gz"
    assert (env["LOGLISTENER_DIR"], env["NETWORK"]) == ("/usr/local/loglistener", "intra")
    assert env["REGION"] == spec.region and env["LABEL"] == label(spec)
    assert (env["SECRET_NAME"], env["SECRET_VERSION"]) == (f"{spec.name}-{stack}-loglistener", "v1")
    assert env["SSM_ENDPOINT"] == "ssm.internal.tencentcloudapi.com"  # inside the VPC, no NAT
    assert (env["TCCLI_INDEX"], env["TCCLI_HOST"]) == ("http://mirrors.tencentyun.com/pypi/simple",
                                                       "mirrors.tencentyun.com")  # fmt: skip


def test_the_gpu_node_and_the_login_node_get_loglistener(plan):
    values = load_stack(ROOT, STACK).values
    for name in ("tc-dev-tencentcloud-node-0", "tc-dev-tencentcloud-login"):
        _assert_loglistener(files_of(by_name(plan, name)["inputs"]["userData"]), values, STACK)


def test_hcc_nodes_get_loglistener_and_stay_under_16_kb():
    values = tencent_values(monitoring=LOGS_ON, login={})
    p = plan_values(values)
    nodes = resources_of(p, "Instance/instance:Instance")
    assert sorted(n["name"] for n in nodes) == ["test-tencentcloud-login", "test-tencentcloud-node-0",
                                                "test-tencentcloud-node-1"]  # fmt: skip
    for node in nodes:
        _assert_loglistener(files_of(node["inputs"]["userData"]), values)
        assert len(node["inputs"]["userData"]) <= USER_DATA_MAX  # "Must be base64 encoded and up to 16 KB"


def test_label_is_unique_per_stack_and_within_30_characters():
    long = "a" * 31
    prod = label(spec_of(tencent_values(name=long), "prod"))
    dev = label(spec_of(tencent_values(name=long), "dev"))
    assert prod != dev
    assert len(prod) <= int(data()["identity"]["maxLength"]) == 30
    assert prod.startswith("a" * 17 + "-")


# --- refusals -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("days", [0, 3601, 3653])
def test_retention_outside_the_topics_range_is_refused_with_one_keyed_error(days):
    with pytest.raises(ConfigError) as err:
        plan_values(tencent_values(monitoring={"logs": {"enabled": True, "retentionDays": days}}))
    assert "monitoring.logs.retentionDays" in str(err.value)


# --- the script on stubs --------------------------------------------------------------------------------------

# curl writes a tarball whose tools/loglistener.sh logs its arguments; tccli answers GetSecretValue as tccli prints
# it (the Response's members, SecretString the JSON the stack stores); python3 -m venv makes the venv's tccli
CURL = r"""
out=""; url=""
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift 2 ;; --retry*) shift 2 ;; -*) shift ;; *) url="$1"; shift ;; esac
done
echo "$url" >> "$CURL_LOG"
src="$(mktemp -d)"; mkdir -p "$src/loglistener/tools"
cat > "$src/loglistener/tools/loglistener.sh" <<'LL'
#!/bin/bash
echo "$*" >> "$LL_LOG"
LL
chmod 755 "$src/loglistener/tools/loglistener.sh"
tar -zcf "$out" -C "$src" loglistener
"""
PYTHON3 = r"""
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/bash\necho "$*" >> "$PIP_LOG"\n' > "$3/bin/pip"
  printf '#!/bin/bash\necho "$*" >> "$TCCLI_LOG"\n[ -e "$SECRET_READY" ] || exit 1\ncat "$ANSWER"\n' > "$3/bin/tccli"
  chmod 755 "$3/bin/pip" "$3/bin/tccli"
  exit 0
fi
exec "$REAL_PYTHON3" "$@"
"""
ANSWER = {"SecretString": json.dumps({"SecretId": "AKIDtest", "SecretKey": "keytest"}), "VersionId": "v1"}
SYSTEMCTL = 'echo "$*" >> "$SYSTEMCTL_LOG"\n'
SLEEP = 'touch "$SECRET_READY"\n'  # the secret appears while the script waits
TOOLS = ("cat", "chmod", "mkdir", "mktemp", "rm", "dirname", "printf", "tar", "gzip", "seq", "touch")


def run(tmp_path: Path, ready: bool = True, curl: str = CURL, **env: str):
    secret_ready = tmp_path / "secret-ready"
    if ready:
        secret_ready.touch()
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(ANSWER))
    logs = {n: str(tmp_path / f"{n}.log") for n in ("curl", "ll", "pip", "tccli", "systemctl")}
    full = {
        "REGION": "ap-shanghai",
        "LOGLISTENER_URL": "http://mirrors.tencentyun.com/install/cls/loglistener-linux-x64.tar.gz",
        "LOGLISTENER_DIR": str(tmp_path / "local" / "loglistener"),
        "NETWORK": "intra",
        "LABEL": "tc-dev-0123456789ab",
        "SECRET_NAME": "tc-dev-tencentcloud-dev-loglistener",
        "SECRET_VERSION": "v1",
        "SSM_ENDPOINT": "ssm.internal.tencentcloudapi.com",
        "TCCLI_INDEX": "http://mirrors.tencentyun.com/pypi/simple",
        "TCCLI_HOST": "mirrors.tencentyun.com",
        "TCCLI_VENV": str(tmp_path / "tccli"),
        "CURL_LOG": logs["curl"],
        "LL_LOG": logs["ll"],
        "PIP_LOG": logs["pip"],
        "TCCLI_LOG": logs["tccli"],
        "SYSTEMCTL_LOG": logs["systemctl"],
        "SECRET_READY": str(secret_ready),
        "ANSWER": str(answer),
        "REAL_PYTHON3": str(shutil.which("python3")),
        "TMPDIR": str(tmp_path),
        **env,
    }
    (tmp_path / "local").mkdir(exist_ok=True)
    stubs = {"curl": curl, "python3": PYTHON3, "systemctl": SYSTEMCTL, "sleep": SLEEP}
    return run_hook(SCRIPT, stub_bin(tmp_path, stubs, TOOLS), full, isolated=True), logs


def read(path: str) -> list[str]:
    return Path(path).read_text().splitlines() if Path(path).exists() else []


def test_script_is_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


def test_installs_as_tencent_documents_then_inits_with_the_key_read_by_the_role(tmp_path):
    proc, logs = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert read(logs["curl"]) == ["http://mirrors.tencentyun.com/install/cls/loglistener-linux-x64.tar.gz"]
    assert read(logs["pip"]) == [
        "install -q --index-url http://mirrors.tencentyun.com/pypi/simple --trusted-host mirrors.tencentyun.com tccli"
    ]
    assert read(logs["tccli"]) == [
        "ssm GetSecretValue --region ap-shanghai --SecretName tc-dev-tencentcloud-dev-loglistener --VersionId v1 "
        "--endpoint ssm.internal.tencentcloudapi.com --use-cvm-role"
    ]
    assert read(logs["ll"]) == [
        "install",
        "init -secretid AKIDtest -secretkey keytest -region ap-shanghai -network intra -label tc-dev-0123456789ab",
    ]
    assert read(logs["systemctl"]) == ["restart loglistenerd"]


def test_at_the_next_boot_nothing_is_installed_and_the_key_is_read_again(tmp_path):
    assert run(tmp_path)[0].returncode == 0
    proc, logs = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(read(logs["curl"])) == 1 and len(read(logs["pip"])) == 1  # installed once
    assert read(logs["ll"])[2:] == [read(logs["ll"])[1]]  # init again: a rotated key is picked up
    assert len(read(logs["tccli"])) == 2


def test_waits_for_the_secret_created_beside_the_node(tmp_path):
    proc, logs = run(tmp_path, ready=False)
    assert proc.returncode == 0, proc.stderr
    assert len(read(logs["tccli"])) == 2  # refused once, read after one wait
    assert read(logs["systemctl"]) == ["restart loglistenerd"]


def test_a_failed_download_fails_the_unit_before_any_init(tmp_path):
    proc, logs = run(tmp_path, curl="exit 22\n")
    assert proc.returncode != 0
    assert read(logs["ll"]) == [] and read(logs["tccli"]) == [] and read(logs["systemctl"]) == []


# --- the bill and day 2 ---------------------------------------------------------------------------------------


def test_the_bill_names_the_logs_as_not_counted(plan):
    text = json.dumps(plan.summary()["costs"])
    assert "the nodes' logs in Cloud Log Service (CLS)" in text and "Cloud Log Service bills by use" in text


def _diff(old, new):
    return diff_plans(plan_json(old), plan_json(new))


def test_day2_retention_changes_only_the_topic_in_place(plan):
    d = _diff(plan, plan_stack_with(STACK, monitoring={"logs": {"enabled": True, "retentionDays": 90}}))
    assert [(c.name, c.verdict) for c in d.changed] == [("tc-dev-tencentcloud-logs-topic", "update")]


def test_day2_logs_on_adds_the_cls_resources_and_updates_the_user_data_in_place(plan):
    d = _diff(plan_stack_with(STACK, monitoring={}), plan)
    added = sorted(urn.split("::")[-2].split("$")[-1].split(":")[-1] for urn in d.created)
    assert added == sorted(["Logset", "Topic", "MachineGroup", *["Config", "ConfigAttachment"] * 3, "User", "Policy",
                            "Policy", "UserPolicyAttachment", "Secret", "SecretVersion",
                            "RolePolicyAttachmentByName"])  # fmt: skip
    assert not d.deleted and not d.may_replace
    changed = {c.name: (c.verdict, {x.path for x in c.changes}) for c in d.changed}
    assert changed == {
        "tc-dev-tencentcloud-node-0": ("update", {"userData"}),
        "tc-dev-tencentcloud-login": ("update", {"userData"}),
        # the login node's way out is there already for its Prometheus (monitoring.prometheus auto)
    }
    no_prometheus = {"prometheus": "none"}
    d = _diff(
        plan_stack_with(STACK, monitoring=no_prometheus),
        plan_stack_with(STACK, monitoring={**no_prometheus, "logs": {"enabled": True}}),
    )
    assert {c.name: {x.path for x in c.changes} for c in d.changed}["tc-dev-tencentcloud-login-sg-rules"] == {
        "egresses"  # LogListener's way out, in place
    }


def test_day2_logs_off_says_data_loss_first(plan):
    d = _diff(plan, plan_stack_with(STACK, monitoring={}))
    assert any(w.startswith("DATA LOSS: deletes") and "logs-topic" in w for w in d.warnings), d.warnings
