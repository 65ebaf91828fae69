"""`monitoring.logs` on Huawei Cloud: the LTS group and stream as registered with the mocks, the agency's role for
ICAgent, the ICAgent part on every node kind (GPU nodes, the login node) under the 32 KB user data limit, the
warning (no DEW key on LTS), the scripts run against stubbed commands (ICAgent's, and the custom identifier an AS
group's nodes write), the refusals, the bill and the day-2 diff on the shipped stack. The host group and access
configuration: tests/test_huaweicloud_lts_ingestion.py."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
import yaml

from components import bootstrap
from components.diff import diff_plans
from components.errors import ConfigError
from components.layout.huaweicloud.logs import data
from components.layout.huaweicloud.nodes import user_data_max
from components.plan import load_stack

from .conftest import ROOT, one, plan_json, plan_stack_with, plan_values, resources_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin

STACK = "huaweicloud-dev"
SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "huaweicloud_icagent.sh"
UNIT = "/etc/systemd/system/gpu-cluster-icagent.service"
ENV = "/etc/gpu-cluster/icagent.env"
LOGS_ON = {"logs": {"enabled": True}}
INSTANCE = "huaweicloud:Ecs/instance:Instance"


@pytest.fixture(scope="module")
def plan():
    return plan_stack_with(STACK, monitoring=LOGS_ON)


def by_name(plan, name: str) -> dict:
    found = [r for r in plan.as_json()["resources"] if r["name"] == name]
    assert len(found) == 1, name
    return found[0]


def files_of(user_data: str | None) -> dict[str, str]:
    if not user_data:
        return {}
    doc = yaml.safe_load(user_data)
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def env_of(files: dict[str, str]) -> dict[str, str]:
    return {k: json.loads(v) for k, v in (line.split("=", 1) for line in files[ENV].splitlines())}


# --- resources ------------------------------------------------------------------------------------------------


def test_group_keeps_the_retention_and_the_stream_inherits_it(plan):
    group = one(plan, "Lts/group:Group")["inputs"]
    assert group["groupName"] == "hw-dev-huaweicloud-dev-logs"
    assert group["ttlInDays"] == 30
    assert group["tags"]["gpu-cluster:cluster"] == "hw-dev"
    stream = one(plan, "Lts/stream:Stream")["inputs"]
    assert stream["streamName"] == "nodes"
    assert stream["groupId"] == "<id of hw-dev-huaweicloud-logs>"
    assert "ttlInDays" not in stream  # -1: the group's


def test_retention_reaches_the_group():
    p = plan_stack_with(STACK, monitoring={"logs": {"enabled": True, "retentionDays": 365}})
    assert one(p, "Lts/group:Group")["inputs"]["ttlInDays"] == 365


def test_the_agency_gets_the_role_icagent_takes_its_credentials_with(plan):
    agency = one(plan, "Iam/agency:Agency")["inputs"]
    assert agency["allResourcesRoles"][0] == "APM Administrator" == data()["credentials"]["role"]
    off = one(plan_stack_with(STACK, monitoring={}), "Iam/agency:Agency")["inputs"]
    assert "APM Administrator" not in off.get("allResourcesRoles", [])  # least privilege: no role without logs


def test_no_key_is_in_any_user_data(plan):
    for node in resources_of(plan, "Ecs/instance:Instance"):
        text = node["inputs"].get("userData") or ""
        if not text.startswith("#cloud-config"):  # the login node's, gzip-compressed
            text = gzip.decompress(base64.b64decode(text)).decode()
        assert "-ak " not in text and "-sk " not in text and "securitykey" in text  # agency mode: the metadata


def test_warnings_say_what_the_stack_does_not_do(plan):
    warnings = [w for w in plan.as_json()["warnings"] if ".monitoring.logs" in w]
    assert len(warnings) == 1, warnings  # no console step: the files are bound by the stack
    assert "not under the cluster's DEW key" in warnings[0] and "create_log_group_params" in warnings[0]
    assert not [w for w in plan.as_json()["warnings"] if "console" in w]


def test_without_nat_the_plan_says_reaching_obs_is_not_verified():
    p = plan_stack_with(STACK, monitoring=LOGS_ON, network={"cidr": "10.63.0.0/16", "egress": "none"})
    (warning,) = [w for w in p.as_json()["warnings"] if "network.egress none" in w]
    assert "icagent-cn-north-4.obs.cn-north-4.myhuaweicloud.com" in warning and "not verified" in warning


def test_an_existing_agency_is_told_to_carry_the_role():
    p = plan_stack_with(STACK, monitoring=LOGS_ON, identity={"existing": "ops-agency"})
    assert any("identity.existing ops-agency" in w and "APM Administrator" in w for w in p.as_json()["warnings"])
    assert not resources_of(p, "Iam/agency:Agency")


def test_the_stack_output_names_the_group_stream_and_files(plan):
    out = plan.as_json()["outputs"]["logs"]
    assert out["logGroup"] == "hw-dev-huaweicloud-dev-logs" and out["logStream"] == "nodes"
    assert out["files"] == ["/var/log/cloud-init.log", "/var/log/cloud-init-output.log", "/var/log/syslog"]


def test_logs_off_builds_nothing_and_no_part():
    p = plan_stack_with(STACK, monitoring={})
    assert not [r for r in p.as_json()["resources"] if r["type"].startswith("huaweicloud:Lts/")]
    assert not [r for r in p.as_json()["resources"] if "LtsIngestion" in r["type"]]
    assert ENV not in files_of(by_name(p, "hw-dev-huaweicloud-login")["inputs"]["userData"])  # Prometheus only
    assert ENV not in files_of(by_name(p, "hw-dev-huaweicloud-node-0")["inputs"]["userData"])


# --- the part on every node kind ------------------------------------------------------------------------------


def test_the_gpu_node_and_the_login_node_get_icagent_under_the_limit(plan):
    for name in ("hw-dev-huaweicloud-node-0", "hw-dev-huaweicloud-login"):
        user_data = by_name(plan, name)["inputs"]["userData"]
        if name.endswith("login"):  # Prometheus, Grafana and ICAgent: over 32 KB plain, so gzip (as Slurm's)
            packed = base64.b64decode(user_data)
            assert len(packed) <= user_data_max()
            user_data = gzip.decompress(packed).decode()
        files = files_of(user_data)
        assert files["/usr/local/sbin/gpu-cluster-icagent"] == bootstrap.script("huaweicloud_icagent.sh")
        assert "ExecStart=/usr/local/sbin/gpu-cluster-icagent" in files[UNIT]
        assert env_of(files) == {
            "REGION": "cn-north-4",
            "INSTALLER_URL": "http://icagent-cn-north-4.obs.cn-north-4.myhuaweicloud.com/ICAgent_linux/"
            "apm_agent_install.sh",
            "ACCESS_IP": "100.125.12.150",
            "ACCESS_DOMAIN": "lts-access.cn-north-4.myhuaweicloud.com",
            "OBS_DOMAIN": "obs.cn-north-4.myhuaweicloud.com",
            "ICAGENT_DIR": "/opt/oss/servicemgr/ICAgent",
        }
        if name.endswith("node-0"):
            assert len(user_data.encode()) <= user_data_max() == 32768  # "最大长度为32K" before encoding


# --- refusals -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("days", [0, 366, 3653])
def test_retention_outside_the_groups_range_is_refused_with_one_keyed_error(days):
    with pytest.raises(ConfigError) as err:
        plan_stack_with(STACK, monitoring={"logs": {"enabled": True, "retentionDays": days}})
    assert "monitoring.logs.retentionDays" in str(err.value)


def test_a_region_without_a_known_access_address_is_refused_with_one_keyed_error():
    stack = load_stack(ROOT, STACK).values
    stack = {**stack, "huaweicloud:region": "cn-east-3", "gpu-cluster:cluster": {**stack["gpu-cluster:cluster"]}}
    stack["gpu-cluster:cluster"]["monitoring"] = LOGS_ON
    with pytest.raises(ConfigError) as err:
        plan_values(stack, STACK)
    assert str(err.value).startswith("gpu-cluster:cluster.monitoring.logs.enabled")
    assert "cn-east-3" in str(err.value) and "accessIps" in str(err.value)


# --- the script on stubs --------------------------------------------------------------------------------------

# curl: the metadata probe answers per $METADATA_READY, the installer download writes a stub installer that logs its
# arguments and the REGION it sees
CURL = r"""
out=""; url=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2 ;; --retry*|--connect-timeout|-m) shift 2 ;; -*) shift ;; *) url="$1"; shift ;;
  esac
done
echo "$url" >> "$CURL_LOG"
case "$url" in
  *securitykey) [ -e "$METADATA_READY" ] || exit 7; exit 0 ;;
esac
printf '#!/bin/bash\necho "REGION=$REGION $*" >> "$INSTALL_LOG"\nmkdir -p "$ICAGENT_DIR"\n' > "$out"
"""
SLEEP = 'touch "$METADATA_READY"\n'  # the agency's credentials appear while the script waits
TOOLS = ("bash", "mkdir", "mktemp", "rm", "printf", "seq", "touch")
INSTALLER = "http://icagent-cn-north-4.obs.cn-north-4.myhuaweicloud.com/ICAgent_linux/apm_agent_install.sh"


def run(tmp_path: Path, ready: bool = True, curl: str = CURL):
    metadata_ready = tmp_path / "metadata-ready"
    if ready:
        metadata_ready.touch()
    logs = {n: str(tmp_path / f"{n}.log") for n in ("curl", "install")}
    env = {
        "REGION": "cn-north-4",
        "INSTALLER_URL": INSTALLER,
        "ACCESS_IP": "100.125.12.150",
        "ACCESS_DOMAIN": "lts-access.cn-north-4.myhuaweicloud.com",
        "OBS_DOMAIN": "obs.cn-north-4.myhuaweicloud.com",
        "ICAGENT_DIR": str(tmp_path / "ICAgent"),
        "CURL_LOG": logs["curl"],
        "INSTALL_LOG": logs["install"],
        "METADATA_READY": str(metadata_ready),
        "TMPDIR": str(tmp_path),
    }
    stubs = {"curl": curl, "sleep": SLEEP}
    return run_hook(SCRIPT, stub_bin(tmp_path, stubs, TOOLS), env, isolated=True), logs


def read(path: str) -> list[str]:
    return Path(path).read_text().splitlines() if Path(path).exists() else []


def test_script_is_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


def test_installs_in_agency_mode_as_the_console_command(tmp_path):
    proc, logs = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert read(logs["curl"]) == ["http://169.254.169.254/openstack/latest/securitykey", INSTALLER]
    assert read(logs["install"]) == [
        "REGION=cn-north-4 -region cn-north-4 -accessip 100.125.12.150 -accessdomain "
        "lts-access.cn-north-4.myhuaweicloud.com -obsdomain obs.cn-north-4.myhuaweicloud.com"
    ]


def test_at_the_next_boot_nothing_is_installed(tmp_path):
    assert run(tmp_path)[0].returncode == 0
    proc, logs = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(read(logs["install"])) == 1 and len(read(logs["curl"])) == 2


def test_waits_for_the_agency_credentials(tmp_path):
    proc, logs = run(tmp_path, ready=False)
    assert proc.returncode == 0, proc.stderr
    assert read(logs["curl"])[:2] == ["http://169.254.169.254/openstack/latest/securitykey"] * 2
    assert len(read(logs["install"])) == 1


def test_a_failed_download_fails_the_unit_before_any_install(tmp_path):
    failing = CURL.replace("printf '#!/bin/bash", "exit 22\nprintf '#!/bin/bash")
    proc, logs = run(tmp_path, curl=failing)
    assert proc.returncode != 0
    assert read(logs["install"]) == []


# --- with an AS group: the custom identifier on stubs (the plan's side: tests/test_huaweicloud_as.py) ---------------

LABEL_SCRIPT = SCRIPT.with_name("huaweicloud_lts_label.sh")
LABEL_TOOLS = ("mkdir", "chmod", "mktemp", "mv", "rm")


def run_label(tmp_path: Path, label: str = "hw-as-huaweicloud-as-hosts"):
    env = {
        "LTS_LABEL": label,
        "LABEL_FILE": str(tmp_path / "opt" / "cloud" / "lts" / "custom_tag"),
        "DIR_MODE": "0750",
        "FILE_MODE": "0640",
    }
    return run_hook(LABEL_SCRIPT, stub_bin(tmp_path, {}, LABEL_TOOLS), env, isolated=True)


def test_label_script_is_shellcheck_clean():
    assert_shellcheck_clean(LABEL_SCRIPT)


def test_the_identifier_is_written_as_ltss_guide_makes_the_file(tmp_path):
    proc = run_label(tmp_path)
    assert proc.returncode == 0, proc.stderr
    tag = tmp_path / "opt" / "cloud" / "lts" / "custom_tag"
    assert tag.read_text() == "hw-as-huaweicloud-as-hosts\n"
    c = data()["customIdentifier"]
    assert (tag.stat().st_mode & 0o777, tag.parent.stat().st_mode & 0o777) == (
        int(c["fileMode"], 8),
        int(c["dirMode"], 8),
    )
    assert sorted(p.name for p in tag.parent.iterdir()) == ["custom_tag"]  # no temporary file left


def test_at_the_next_boot_the_identifier_is_the_stacks_again(tmp_path):
    tag = tmp_path / "opt" / "cloud" / "lts" / "custom_tag"
    assert run_label(tmp_path, "old-label").returncode == 0
    proc = run_label(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert tag.read_text() == "hw-as-huaweicloud-as-hosts\n"


def test_without_an_identifier_the_unit_fails_and_writes_nothing(tmp_path):
    proc = run_label(tmp_path, "")
    assert proc.returncode != 0
    assert not (tmp_path / "opt").exists()


# --- the bill and day 2 ---------------------------------------------------------------------------------------


def test_the_bill_names_the_logs_as_not_counted(plan):
    text = json.dumps(plan.summary()["costs"])
    assert "the nodes' logs in Log Tank Service (LTS)" in text and "Log Tank Service bills by use" in text


def _diff(old, new):
    return diff_plans(plan_json(old), plan_json(new))


def test_day2_retention_changes_only_the_group_in_place(plan):
    d = _diff(plan, plan_stack_with(STACK, monitoring={"logs": {"enabled": True, "retentionDays": 90}}))
    assert [(c.name, c.verdict) for c in d.changed] == [("hw-dev-huaweicloud-logs", "update")]


def test_day2_logs_on_adds_the_lts_resources_and_changes_the_agency_in_place(plan):
    d = _diff(plan_stack_with(STACK, monitoring={}), plan)
    added = sorted(urn.split("::")[-2].split("$")[-1].split(":")[-1] for urn in d.created)
    assert added == ["Group", "LtsIngestion", "Stream"]
    assert not d.deleted
    changed = {c.name: (c.verdict, {x.path for x in c.changes}) for c in d.changed}
    assert changed["hw-dev-huaweicloud-agency"][0] == "update"
    # user_data on ecs.Instance: no docstring says either way, so the diff may not promise in place
    assert changed["hw-dev-huaweicloud-node-0"] == ("may-replace", {"userData"})
    assert changed["hw-dev-huaweicloud-login"] == ("may-replace", {"userData"})
    assert set(changed) == {"hw-dev-huaweicloud-agency", "hw-dev-huaweicloud-node-0", "hw-dev-huaweicloud-login"}
    paths = {x.path.split("[")[0] for c in d.changed for x in c.changes}
    assert paths == {"allResourcesRoles", "userData"}


def test_day2_logs_off_says_data_loss_first(plan):
    d = _diff(plan, plan_stack_with(STACK, monitoring={}))
    assert any(w.startswith("DATA LOSS: deletes") and "hw-dev-huaweicloud-logs" in w for w in d.warnings), d.warnings


# --- with Slurm: the head is an ECS like the others -------------------------------------------------------------

SLURM = "huaweicloud-slurm"


@pytest.fixture(scope="module")
def slurm_plan():
    return plan_stack_with(SLURM, monitoring=LOGS_ON)


def unpacked(user_data: str) -> str:
    packed = base64.b64decode(user_data)
    assert len(packed) <= user_data_max()  # Huawei's 32 KB, gzip as every Slurm node's
    return gzip.decompress(packed).decode()


def test_with_slurm_the_head_the_gpu_nodes_and_the_login_node_get_icagent(slurm_plan):
    for name in ("hw-slurm-huaweicloud-head", "hw-slurm-huaweicloud-node-0", "hw-slurm-huaweicloud-login"):
        files = files_of(unpacked(by_name(slurm_plan, name)["inputs"]["userData"]))
        assert files["/usr/local/sbin/gpu-cluster-icagent"] == bootstrap.script("huaweicloud_icagent.sh"), name
        assert env_of(files)["ACCESS_IP"] == "100.125.12.150"
    head = files_of(unpacked(by_name(slurm_plan, "hw-slurm-huaweicloud-head")["inputs"]["userData"]))
    paths = list(head)
    # the head's Slurm parts are still there, ICAgent after them
    assert paths.index("/usr/local/sbin/gpu-cluster-slurm-head") < paths.index("/usr/local/sbin/gpu-cluster-icagent")


def test_with_slurm_the_host_group_lists_the_head_and_slurms_logs_are_collected(slurm_plan):
    inputs = one(slurm_plan, ":LtsIngestion")["inputs"]
    assert inputs["hostIds"] == [
        "<id of hw-slurm-huaweicloud-node-0>",
        "<id of hw-slurm-huaweicloud-node-1>",
        "<id of hw-slurm-huaweicloud-head>",
        "<id of hw-slurm-huaweicloud-login>",
    ]
    # slurmctld's on the head, slurmd's on the GPU nodes (bootstrap/slurm_conf.py, as AWS and Alibaba collect them)
    assert inputs["paths"] == [
        "/var/log/cloud-init.log",
        "/var/log/cloud-init-output.log",
        "/var/log/syslog",
        "/var/log/slurm/slurmctld.log",
        "/var/log/slurm/slurmd.log",
    ]
    assert slurm_plan.as_json()["outputs"]["logs"]["files"] == inputs["paths"]


def test_with_slurm_the_agency_the_head_carries_gets_icagents_role(slurm_plan):
    head = by_name(slurm_plan, "hw-slurm-huaweicloud-head")["inputs"]
    agency = one(slurm_plan, "Iam/agency:Agency")["inputs"]
    assert head["agencyName"] == agency["name"]
    assert "APM Administrator" in agency["allResourcesRoles"]


def test_without_slurm_no_slurm_file_is_collected(plan):
    assert not [p for p in one(plan, ":LtsIngestion")["inputs"]["paths"] if "slurm" in p]


def test_day2_slurm_logs_on_adds_the_lts_resources_and_keeps_every_urn(slurm_plan):
    d = _diff(plan_stack_with(SLURM, monitoring={}), slurm_plan)
    added = sorted(urn.split("::")[-2].split("$")[-1].split(":")[-1] for urn in d.created)
    assert added == ["Group", "LtsIngestion", "Stream"]
    assert not d.deleted
    changed = {c.name: (c.verdict, {x.path for x in c.changes}) for c in d.changed}
    assert changed["hw-slurm-huaweicloud-agency"][0] == "update"
    for node in ("head", "node-0", "node-1", "login"):
        assert changed[f"hw-slurm-huaweicloud-{node}"] == ("may-replace", {"userData"}), node
