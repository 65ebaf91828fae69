"""`monitoring.logs` on Alibaba Cloud: the SLS project, logstore, machine group and Logtail configurations as
registered with the mocks, the Logtail part on every node kind (GPU nodes, instances, elastic partitions, the Slurm
head, the login node with and without Slurm), the script run against stubbed commands, the refusals, the plan's bill
and the day-2 diff of the keys on the shipped stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components import bootstrap
from components.diff import diff_plans
from components.errors import ConfigError
from components.layout.alicloud.logs import data, identity
from components.plan import load_stack

from .conftest import ROOT, one, plan_json, plan_stack, plan_stack_with, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin
from .test_alicloud_slurm import files_of
from .test_layout_alicloud import ali_values, layout_of

STACK = "alicloud-slurm-elastic"
SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "alicloud_logtail.sh"
UNIT = "/etc/systemd/system/gpu-cluster-logtail.service"
ENV = "/etc/gpu-cluster/logtail.env"
LOGS_ON = {"logs": {"enabled": True}}


@pytest.fixture(scope="module")
def plan():
    return plan_stack(STACK)


def by_name(plan, name: str) -> dict:
    found = [r for r in plan.as_json()["resources"] if r["name"] == name]
    assert len(found) == 1, name
    return found[0]


def env_of(files: dict[str, str]) -> dict[str, str]:
    return {k: json.loads(v) for k, v in (line.split("=", 1) for line in files[ENV].splitlines())}


# --- resources ------------------------------------------------------------------------------------------------


def test_project_and_logstore_keep_the_logs_retention_days(plan):
    project = one(plan, "log/project:Project")["inputs"]
    store = one(plan, "log/store:Store")["inputs"]
    assert project["projectName"] == "slurm-elastic-logs-<suffix of slurm-elastic-alicloud-logs-suffix>"
    assert project["tags"]["gpu-cluster:cluster"] == "slurm-elastic"
    assert store["projectName"] == project["projectName"]
    assert (store["logstoreName"], store["retentionPeriod"]) == ("nodes", 30)
    assert "encryptConf" not in store  # encryption provider: as SLS defaults


def test_machine_group_is_the_clusters_user_defined_identity(plan):
    group = one(plan, "log/machineGroup:MachineGroup")["inputs"]
    spec = spec_of(load_stack(ROOT, STACK).values, STACK)
    assert group["identifyType"] == "userdefined"
    assert group["identifyLists"] == [identity(spec)]
    assert group["name"] == "nodes"


def test_one_logtail_config_per_file_set_each_attached_to_the_group(plan):
    configs = {r["inputs"]["name"]: r["inputs"] for r in resources_of(plan, "log/logTailConfig:LogTailConfig")}
    assert set(configs) == {"cloud-init", "syslog", "slurm"}
    files = {n: (json.loads(c["inputDetail"])["logPath"], json.loads(c["inputDetail"])["filePattern"]) for n, c in
             configs.items()}  # fmt: skip
    assert files == {
        "cloud-init": ("/var/log", "cloud-init*.log"),
        "syslog": ("/var/log", "syslog"),
        "slurm": ("/var/log/slurm", "*.log"),  # slurm_conf.py SlurmctldLogFile, SlurmdLogFile, slurmdbd
    }
    for config in configs.values():
        detail = json.loads(config["inputDetail"])
        assert (config["inputType"], config["outputType"], config["logstore"]) == ("file", "LogService", "nodes")
        assert (detail["logType"], detail["regex"], detail["key"], detail["maxDepth"]) == (
            "common_reg_log",
            "(.*)",
            ["content"],
            0,
        )
    attachments = resources_of(plan, "log/logTailAttachment:LogTailAttachment")
    assert sorted(a["inputs"]["logtailConfigName"] for a in attachments) == sorted(configs)
    assert {a["inputs"]["machineGroupName"] for a in attachments} == {"nodes"}


def test_the_stack_output_names_the_project_and_what_is_collected(plan):
    out = plan.as_json()["outputs"]["logs"]
    assert out["logstore"] == "nodes" and out["retentionDays"] == 30
    assert out["files"] == ["/var/log/cloud-init*.log", "/var/log/syslog", "/var/log/slurm/*.log"]


def test_without_slurm_no_slurm_config():
    p = plan_values(ali_values(nodes=1, instanceType="ecs.gn7i-c8g1.2xlarge", zone="cn-beijing-h", monitoring=LOGS_ON))
    names = {r["inputs"]["name"] for r in resources_of(p, "log/logTailConfig:LogTailConfig")}
    assert names == {"cloud-init", "syslog"}


def test_logs_off_builds_nothing_and_no_part():
    p = plan_stack_with(STACK, monitoring={})
    assert not [r for r in p.as_json()["resources"] if r["type"].startswith("alicloud:log/")]
    assert "logtail" not in layout_of(nodes=1).user_data


def test_retention_reaches_the_logstore():
    p = plan_stack_with(STACK, monitoring={"logs": {"enabled": True, "retentionDays": 3650}})
    assert one(p, "log/store:Store")["inputs"]["retentionPeriod"] == 3650


def test_with_encryption_the_logstore_takes_the_sls_service_key_and_the_plan_says_why():
    p = plan_values(
        ali_values(nodes=1, instanceType="ecs.gn7i-c8g1.2xlarge", zone="cn-beijing-h", monitoring=LOGS_ON,
                   encryption={"key": "auto"})
    )  # fmt: skip
    store = one(p, "log/store:Store")["inputs"]
    assert store["encryptConf"] == {"enable": True, "encryptType": "default"}
    assert any("service key, not encryption.key" in w for w in p.warnings())


def test_the_encryption_note_is_said_once_with_elastic_partitions():
    p = plan_stack_with(STACK, encryption={"key": "auto"})
    assert len([w for w in p.warnings() if w.startswith("gpu-cluster:cluster.monitoring.logs:")]) == 1


# --- the part on every node kind ------------------------------------------------------------------------------


def _assert_logtail(files: dict[str, str], spec_values: dict, stack: str = "test") -> None:
    assert files["/usr/local/sbin/gpu-cluster-logtail"] == bootstrap.script("alicloud_logtail.sh")
    assert "ExecStart=/usr/local/sbin/gpu-cluster-logtail" in files[UNIT]
    env = env_of(files)
    assert (
        env["INSTALLER_URL"]
        == "http://logtail-release-cn-beijing.oss-cn-beijing-internal.aliyuncs.com/linux64/logtail.sh"
    )
    assert env["INSTALLER_ARGS"] == "install cn-beijing"
    assert env["ID_FILE"] == "/etc/ilogtail/user_defined_id"
    assert env["USER_DEFINED_ID"] == identity(spec_of(spec_values, stack))


def test_every_node_kind_of_the_slurm_stack_gets_logtail(plan):
    values = load_stack(ROOT, STACK).values
    for name in ("slurm-elastic-alicloud-head", "slurm-elastic-alicloud-login"):
        _assert_logtail(files_of(by_name(plan, name)["inputs"]["userData"]), values, STACK)
    templates = resources_of(plan, "ecs/ecsLaunchTemplate:EcsLaunchTemplate")
    assert len(templates) == 2  # one per elastic partition
    for template in templates:
        _assert_logtail(files_of(template["inputs"]["userData"]), values, STACK)


def test_instances_and_the_login_node_without_slurm_get_logtail():
    values = ali_values(nodes=2, login={}, monitoring=LOGS_ON)
    p = plan_values(values)
    nodes = resources_of(p, "ecs/instance:Instance")
    names = sorted(r["name"] for r in nodes)
    assert names == ["test-alicloud-login", "test-alicloud-node-0", "test-alicloud-node-1"]
    for node in nodes:
        _assert_logtail(files_of(node["inputs"]["userData"]), values)


def test_the_managed_groups_configuration_gets_logtail():
    values = ali_values(nodes=1, nodeGroup="managed", instanceType="ecs.gn7i-c8g1.2xlarge", zone="cn-beijing-h",
                        monitoring=LOGS_ON)  # fmt: skip
    config = one(plan_values(values), "ess/scalingConfiguration:ScalingConfiguration")["inputs"]
    _assert_logtail(files_of(config["userData"]), values)


def test_the_login_node_without_slurm_logs_or_prometheus_keeps_no_user_data():
    values = ali_values(nodes=2, login={}, monitoring={"prometheus": "none"})
    login = [r for r in resources_of(plan_values(values), "ecs/instance:Instance") if r["name"].endswith("-login")]
    assert len(login) == 1 and login[0]["inputs"].get("userData") is None


def test_identity_is_unique_per_stack_and_within_alibabas_30_characters():
    long = "a" * 31
    one_ = identity(spec_of(ali_values(name=long), "prod"))
    other = identity(spec_of(ali_values(name=long), "dev"))
    assert one_ != other
    assert len(one_) <= int(data()["identity"]["maxLength"]) == 30
    assert one_.startswith("a" * 17 + "-")


# --- refusals -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("days", [0, 3651, 3653])
def test_retention_outside_sls_range_is_refused_with_one_keyed_error(days):
    with pytest.raises(ConfigError) as err:
        plan_values(ali_values(nodes=1, monitoring={"logs": {"enabled": True, "retentionDays": days}}))
    assert "monitoring.logs.retentionDays" in str(err.value)


# --- the script on stubs --------------------------------------------------------------------------------------

CURL = r"""
out=""; url=""
while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift 2 ;; -*) shift ;; *) url="$1"; shift ;; esac; done
echo "$url" >> "$CURL_LOG"
cat > "$out" <<'INSTALLER'
#!/bin/bash
echo "$*" >> "$INSTALL_LOG"
mkdir -p "$LOGTAIL_DIR" && printf '#!/bin/sh\n' > "$LOGTAIL_DIR/ilogtail" && chmod 755 "$LOGTAIL_DIR/ilogtail"
INSTALLER
"""
TOOLS = ("cat", "chmod", "mkdir", "mktemp", "rm", "dirname", "printf")


def run(tmp_path: Path, **env: str):
    full = {
        "INSTALLER_URL": "http://logtail-release-cn-beijing.oss-cn-beijing-internal.aliyuncs.com/linux64/logtail.sh",
        "INSTALLER_ARGS": "install cn-beijing",
        "LOGTAIL_DIR": str(tmp_path / "ilogtail"),
        "ID_FILE": str(tmp_path / "etc" / "user_defined_id"),
        "USER_DEFINED_ID": "slurm-elastic-0123456789ab",
        "CURL_LOG": str(tmp_path / "curl.log"),
        "INSTALL_LOG": str(tmp_path / "install.log"),
        "TMPDIR": str(tmp_path),
        **env,
    }
    return run_hook(SCRIPT, stub_bin(tmp_path, {"curl": CURL}, TOOLS), full, isolated=True)


def test_script_is_shellcheck_clean():
    assert_shellcheck_clean(SCRIPT)


def test_installs_with_alibabas_command_then_writes_the_identity(tmp_path):
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "curl.log").read_text().split() == [
        "http://logtail-release-cn-beijing.oss-cn-beijing-internal.aliyuncs.com/linux64/logtail.sh"
    ]
    assert (tmp_path / "install.log").read_text() == "install cn-beijing\n"
    assert (tmp_path / "etc" / "user_defined_id").read_text() == "slurm-elastic-0123456789ab\n"


def test_at_the_next_boot_nothing_is_downloaded_and_the_identity_is_kept(tmp_path):
    assert run(tmp_path).returncode == 0
    ident = tmp_path / "etc" / "user_defined_id"
    before = ident.stat().st_mtime_ns
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len((tmp_path / "curl.log").read_text().split()) == 1  # installed once
    assert ident.stat().st_mtime_ns == before


def test_a_changed_identity_is_rewritten(tmp_path):
    assert run(tmp_path).returncode == 0
    assert run(tmp_path, USER_DEFINED_ID="other-id").returncode == 0
    assert (tmp_path / "etc" / "user_defined_id").read_text() == "other-id\n"


def test_a_failed_download_fails_the_unit_and_writes_no_identity(tmp_path):
    bin_dir = stub_bin(tmp_path, {"curl": "exit 22\n"}, TOOLS)
    env = {"INSTALLER_URL": "http://x/logtail.sh", "INSTALLER_ARGS": "install cn-beijing",
           "LOGTAIL_DIR": str(tmp_path / "ilogtail"), "ID_FILE": str(tmp_path / "id"), "USER_DEFINED_ID": "x",
           "TMPDIR": str(tmp_path)}  # fmt: skip
    proc = run_hook(SCRIPT, bin_dir, env, isolated=True)
    assert proc.returncode != 0 and not (tmp_path / "id").exists()


# --- the bill and day 2 ---------------------------------------------------------------------------------------


def test_the_bill_names_the_logs_as_not_counted(plan):
    costs = plan.summary()["costs"]
    text = json.dumps(costs)
    assert "the nodes' logs in Simple Log Service (SLS)" in text and "Simple Log Service bills by use" in text


def _diff(old, new):
    return diff_plans(plan_json(old), plan_json(new))


def test_day2_retention_changes_only_the_logstore_in_place(plan):
    d = _diff(plan, plan_stack_with(STACK, monitoring={"logs": {"enabled": True, "retentionDays": 90}}))
    changed = [(c.name, c.verdict) for c in d.changed]
    assert changed == [("slurm-elastic-alicloud-logs-store", "update")]


def test_day2_logs_on_adds_the_sls_resources_and_touches_only_boot_data():
    d = _diff(plan_stack_with(STACK, monitoring={}), plan_stack(STACK))
    added = sorted(urn.split("::")[-2].split(":")[-1] for urn in d.created)
    assert added == sorted(["LogTailAttachment"] * 3 + ["LogTailConfig"] * 3 + ["MachineGroup", "Project", "Store",
                                                                                 "RandomString"])  # fmt: skip
    assert not d.deleted and not d.may_replace
    others = {c.name: c.verdict for c in d.changed}
    # the head and login node restart with the new user data (the update policy's Alibaba Slurm override says so);
    # the partitions' templates get a new version; nothing is replaced or deleted
    assert others == {
        "slurm-elastic-alicloud-head": "restart",
        "slurm-elastic-alicloud-login": "restart",
        "slurm-elastic-alicloud-a10-template": "update",
        "slurm-elastic-alicloud-ebmgn8v-template": "update",
        "slurm-elastic-alicloud-slurm-compute-conf": "update",
    }
