"""`scheduler: slurm` on Tencent Cloud: the private head node, the MUNGE key and the compute-side configuration in SSM
(GetSecretValue for the nodes' CAM role on exactly those two secrets), the Slurm ports in each group's rule set, the
user data within Tencent's 16 KB, what is refused, and the hooks run on stubs."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import bootstrap
from components.bootstrap import node_text
from components.bootstrap.slurm import CONF_HOOK_PATH, KEY_HOOK_PATH
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER, compute_config_files
from components.catalog.slurm import cloud_data
from components.errors import ConfigError, ConfigErrors
from components.layout import tencentcloud
from components.spec import build_spec

from .conftest import plan_values, spec_of
from .hook_helpers import BOOTSTRAP, assert_shellcheck_clean, run_hook, stub_bin
from .test_tencentcloud_resources import tencent_values

STACK = "tencentcloud-slurm"
P = "tc-slurm-tencentcloud"
USER_DATA_LIMIT = 16 * 1024  # Tencent's user data: 16 KB of Base64 (layout/tencentcloud gzip_b64)
OWNER, CREATOR = "<owner uin: resolved at deploy>", "<caller uin: resolved at deploy>"


def slurm_values(**cluster: Any) -> dict[str, Any]:
    base = {"gpu": "T4:1", "instanceType": None, "fabric": "none", "zone": "ap-shanghai-5", "scheduler": "slurm"}
    values = tencent_values(**{**base, **cluster})
    values["tencentcloud:region"] = "ap-shanghai"
    values["gpu-cluster:cluster"] = {k: v for k, v in values["gpu-cluster:cluster"].items() if v is not None}
    return values


@pytest.fixture(scope="module")
def doc(stack_plan):
    return stack_plan(STACK).as_json()


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r["inputs"] for r in doc["resources"]}


def cloud_config(b64: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(gzip.decompress(base64.b64decode(b64)).decode())
    return loaded


def files_of(b64: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in cloud_config(b64)["write_files"]}


def test_the_head_is_a_private_cvm_in_the_nodes_subnet_with_its_own_group_and_the_nodes_role(doc):
    got = by_name(doc)
    head = got[f"{P}-head"]
    assert head["instanceType"] == "S5.MEDIUM4"  # slurm.headInstanceType default: the login node's type
    assert head["subnetId"] == f"<id of {P}-nodes>" and head["vpcId"] == f"<id of {P}-vpc>"
    assert head["orderlySecurityGroups"] == [f"<id of {P}-head-sg>"]
    assert head["allocatePublicIp"] is False and "internetMaxBandwidthOut" not in head
    assert head["camRoleName"] == got[f"{P}-role"]["name"]
    assert head["systemDiskType"] == "CLOUD_SSD" and head["keyIds"] == [f"<id of {P}-key>"]
    files = files_of(head["userData"])
    # as the hooks are written, their comments dropped (Tencent's 16 KB)
    assert files[KEY_HOOK_PATH] == node_text(bootstrap.script("tencentcloud_munge_key.sh"))
    assert files[CONF_HOOK_PATH] == node_text(bootstrap.script("tencentcloud_slurm_conf.sh"))
    conf_env = files["/etc/gpu-cluster/slurm-conf.env"]
    assert f'SLURM_CONF_SECRET="{P}-slurm-slurm-compute-conf"' in conf_env and 'SLURM_CONF_VERSION="v1"' in conf_env
    assert HEAD_PLACEHOLDER not in json.dumps(files)  # the head's address is its own


def test_the_munge_key_is_a_random_secret_in_ssm_never_in_user_data(doc):
    got = by_name(doc)
    assert got[f"{P}-munge-key-bytes"] == {"length": 128}
    secret = got[f"{P}-slurm-munge-key"]
    assert secret["secretName"] == f"{P}-slurm-slurm-munge-key" and secret["recoveryWindowInDays"] == 0
    version = got[f"{P}-slurm-munge-key-v1"]
    assert version == {"secretName": f"{P}-slurm-slurm-munge-key", "versionId": "v1", "secretString": "[secret]"}
    for node in ("head", "login", "node-0", "node-1"):
        env = files_of(got[f"{P}-{node}"]["userData"])["/etc/gpu-cluster/munge-key.env"]
        assert f'MUNGE_SECRET="{P}-slurm-slurm-munge-key"' in env and "mock" not in env.lower()
        assert 'SSM_ENDPOINT="ssm.internal.tencentcloudapi.com"' in env and 'REGION="ap-shanghai"' in env
    assert "munge-key-bytes" not in json.dumps([got[f"{P}-{n}"]["userData"] for n in ("head", "login", "node-0")])


def test_the_nodes_role_may_read_exactly_the_two_secrets(doc):
    got = by_name(doc)
    policy = got[f"{P}-slurm-secrets-policy"]
    resource = "qcs::ssm:ap-shanghai:uin/{o}:secret/creatorUin/{c}/{n}"
    assert json.loads(policy["document"]) == {
        "statement": [
            {
                "action": ["name/ssm:GetSecretValue"],
                "effect": "allow",
                "resource": [
                    resource.format(o=OWNER, c=CREATOR, n=f"{P}-slurm-slurm-munge-key"),
                    resource.format(o=OWNER, c=CREATOR, n=f"{P}-slurm-slurm-compute-conf"),
                ],
            }
        ],
        "version": "2.0",
    }
    attachment = got[f"{P}-role-slurm-secrets"]
    assert attachment == {"policyName": policy["name"], "roleName": got[f"{P}-role"]["name"]}
    assert policy["name"] == f"{P}-slurm-slurm-secrets-read" and policy["name"] in doc["outputs"]["identity"]["grants"]


def test_the_compute_side_configuration_is_an_ssm_version_within_its_limit(doc):
    version = by_name(doc)[f"{P}-slurm-compute-conf-v1"]
    text = version["secretString"]
    assert version["versionId"] == "v1" and version["secretName"] == f"{P}-slurm-slurm-compute-conf"
    assert 0 < len(text.encode()) <= int(cloud_data("tencentcloud")["computeConfig"]["maxValueBytes"])
    nodes_conf = compute_config_files(text)["nodes.conf"]
    assert "Feature=gpu" in nodes_conf and "Gres=gpu:t4:1" in nodes_conf and "MaxNodeCount=" in nodes_conf


def test_the_gpu_and_login_nodes_learn_the_heads_address_at_deploy(doc):
    got = by_name(doc)
    for node in ("login", "node-0", "node-1"):
        text = json.dumps(files_of(got[f"{P}-{node}"]["userData"]))
        assert HEAD_PLACEHOLDER not in text
        assert f'HEAD_ADDRESS=\\"<private ip of {P}-head>\\"' in text


def ingress(doc: dict[str, Any], name: str) -> list[tuple[str, str, str]]:
    rules = by_name(doc)[name]["ingresses"]
    return [(r["port"], r.get("sourceSecurityId") or r.get("cidrBlock"), r["protocol"]) for r in rules]


def test_the_slurm_ports_are_open_inside_the_cluster_only(doc):
    nodes, login, head = (f"<id of {P}-{g}>" for g in ("sg", "login-sg", "head-sg"))
    assert ingress(doc, f"{P}-head-sg-rules") == [
        ("6817", nodes, "TCP"),
        ("6817", login, "TCP"),
        ("2049", nodes, "TCP"),
        ("2049", login, "TCP"),
        ("22", login, "TCP"),
    ]
    assert ingress(doc, f"{P}-sg-rules")[-2:] == [("6818", head, "TCP"), ("6818", login, "TCP")]
    assert ingress(doc, f"{P}-login-sg-rules") == [
        ("22", "203.0.113.0/24", "TCP"),
        ("60001-63000", head, "TCP"),
        ("60001-63000", nodes, "TCP"),
    ]
    assert by_name(doc)[f"{P}-login-sg-rules"]["egresses"][0]["cidrBlock"] == "0.0.0.0/0"


def test_the_slurm_output_names_the_secret_never_the_key(doc):
    out = doc["outputs"]["slurm"]
    assert out["headNode"] == {"instanceId": f"<id of {P}-head>", "privateIp": f"<private ip of {P}-head>"}
    assert out["mungeKey"]["store"] == "ssm-secret" and out["mungeKey"]["secret"] == f"{P}-slurm-slurm-munge-key"
    assert out["login"].startswith("ssh -i <private key> ubuntu@") and out["check"] == "sinfo -N -l"


def user_data_sizes(doc: dict[str, Any]) -> dict[str, int]:
    return {n: len(i["userData"]) for n, i in by_name(doc).items() if i.get("userData")}


def test_every_user_data_fits_tencents_16_kb(doc):
    sizes = user_data_sizes(doc)
    assert sorted(sizes) == [f"{P}-head", f"{P}-login", f"{P}-node-0", f"{P}-node-1"]
    assert max(sizes.values()) <= USER_DATA_LIMIT, sizes


USERS = [{"name": f"user{i}", "uid": 2000 + i, "sshPublicKey": "ssh-ed25519 " + "A" * 68} for i in range(4)]


def test_logs_monitoring_users_and_mps_fit_too():
    """monitoring.logs (LogListener on every node kind), the self-hosted monitoring, users with SSH keys and MPS."""
    values = slurm_values(nodes=4, monitoring={"logs": {"enabled": True}}, slurm={"users": USERS, "mps": True})
    doc = plan_values(values).as_json()
    sizes = user_data_sizes(doc)
    assert len(sizes) == 6 and max(sizes.values()) <= USER_DATA_LIMIT, sizes
    assert "logs" in doc["outputs"] and "pg" not in json.dumps(sorted(sizes))


def test_user_data_over_16_kb_is_refused_before_any_resource():
    """Containers (pyxis, enroot) with all of the above: the login node's user data would pass 16 KB."""
    slurm = {"users": USERS, "containers": "pyxis"}
    spec = spec_of(slurm_values(nodes=4, monitoring={"logs": {"enabled": True}}, slurm=slurm))
    with pytest.raises(ConfigError) as got:
        tencentcloud.plan(spec)
    error = got.value
    assert error.key == "gpu-cluster:cluster.slurm"
    assert error.message.startswith("the login node's user data is ") and "over Tencent's 16384" in error.message
    assert error.message.endswith("drop slurm.containers, slurm.mps or slurm.users, or monitoring.logs")


def errors_of(values: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as got:
        build_spec(values, "test")
    return [(e.key, e.message) for e in got.value.errors]


def test_elastic_partitions_are_refused_with_the_datas_reason():
    part = {"name": "t4", "instanceType": "GN7.2XLARGE32", "maxNodes": 2}
    got = dict(errors_of(slurm_values(nodes=0, slurm={"partitions": [part]})))
    why = " ".join(str(cloud_data("tencentcloud")["powerSave"]["notBuilt"]).split())
    assert got["gpu-cluster:cluster.slurm.partitions"] == f"elastic partitions are not built on tencentcloud: {why}"


def test_slurm_on_hcc_warns_that_tccl_is_not_installed():
    spec = spec_of(tencent_values(scheduler="slurm", fabric="required"))
    layout = tencentcloud.plan(spec)
    assert layout.slurm is not None and layout.hpc_cluster
    warned = [w for w in layout.warnings if w.startswith("gpu-cluster:cluster.scheduler: slurm on HCCG5v")]
    assert len(warned) == 1 and "TCCL" in warned[0] and "multi-node jobs run over TCP" in warned[0]
    # the HPC cluster is the nodes' one switch: too few for a topology (components/layout/slurm.py)
    assert layout.slurm.layout.topology is None


def test_without_slurm_nothing_of_it_is_planned(stack_plan):
    names = [r["name"] for r in stack_plan("tencentcloud-dev").as_json()["resources"]]
    assert not [n for n in names if "head" in n or "munge" in n or "slurm" in n]


# --- the hooks on stubs -----------------------------------------------------------------------------------------

# python3 -m venv makes the venv's pip and tccli; tccli logs its arguments and answers as tccli prints GetSecretValue
PYTHON3 = r"""
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/bash\necho "$*" >> "$PIP_LOG"\n' > "$3/bin/pip"
  printf '#!/bin/bash\necho "$*" >> "$TCCLI_LOG"\n[ -z "$DENY" ] || exit 1\ncat "$ANSWER"\n' > "$3/bin/tccli"
  chmod 755 "$3/bin/pip" "$3/bin/tccli"
  exit 0
fi
exec "$REAL_PYTHON3" "$@"
"""
KEY = base64.b64encode(b"k" * 128).decode()


def run_ssm_hook(tmp_path: Path, name: str, env_lines: str, secret: str, **env: str):
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"SecretString": secret, "VersionId": "v1", "RequestId": "r1"}))
    env_file = tmp_path / "hook.env"
    env_file.write_text(
        env_lines + 'REGION="ap-shanghai"\nSSM_ENDPOINT="ssm.internal.tencentcloudapi.com"\n'
        'TCCLI_INDEX="http://mirrors.tencentyun.com/pypi/simple"\nTCCLI_HOST="mirrors.tencentyun.com"\n'
        f'TCCLI_VENV="{tmp_path / "tccli"}"\nTCCLI_LOCK="{tmp_path / "tccli.lock"}"\n'
    )
    hook = tmp_path / name
    hook.write_text(bootstrap.script(name))  # tencentcloud_ssm.sh inlined, as a node gets it
    logs = {n: tmp_path / f"{n}.log" for n in ("pip", "tccli")}
    full = {
        "ENV_FILE": str(env_file),
        "ANSWER": str(answer),
        "PIP_LOG": str(logs["pip"]),
        "TCCLI_LOG": str(logs["tccli"]),
        "REAL_PYTHON3": str(shutil.which("python3")),
        **env,
    }
    bin_dir = stub_bin(tmp_path, {"python3": PYTHON3}, ("cat", "chmod", "mkdir", "printf", "flock"))
    proc = run_hook(hook, bin_dir, full, isolated=True)
    return proc, {n: p.read_text().splitlines() if p.exists() else [] for n, p in logs.items()}


def test_the_munge_hook_reads_the_key_with_the_cvm_role_and_prints_only_it(tmp_path):
    env = f'MUNGE_SECRET="{P}-slurm-slurm-munge-key"\nMUNGE_SECRET_VERSION="v1"\n'
    proc, logs = run_ssm_hook(tmp_path, "tencentcloud_munge_key.sh", env, KEY)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == KEY + "\n" and proc.stderr == ""
    assert logs["pip"] == [
        "install -q --index-url http://mirrors.tencentyun.com/pypi/simple --trusted-host mirrors.tencentyun.com tccli"
    ]
    assert logs["tccli"] == [
        f"ssm GetSecretValue --region ap-shanghai --SecretName {P}-slurm-slurm-munge-key --VersionId v1 "
        "--endpoint ssm.internal.tencentcloudapi.com --use-cvm-role"
    ]
    # a second run reuses the venv
    proc, logs = run_ssm_hook(tmp_path, "tencentcloud_munge_key.sh", env, KEY)
    assert proc.returncode == 0 and len(logs["pip"]) == 1 and len(logs["tccli"]) == 2


def test_a_refused_read_fails_without_printing_anything(tmp_path):
    env = f'MUNGE_SECRET="{P}-slurm-slurm-munge-key"\nMUNGE_SECRET_VERSION="v1"\n'
    proc, _ = run_ssm_hook(tmp_path, "tencentcloud_munge_key.sh", env, KEY, DENY="1")
    assert proc.returncode != 0 and proc.stdout == ""
    assert "ssm:GetSecretValue" in proc.stderr and KEY not in proc.stderr


def test_the_conf_hook_prints_the_configuration_text(tmp_path):
    text = "# gpu-cluster file: nodes.conf\nNodeSet=gpu Feature=gpu\n"
    env = f'SLURM_CONF_SECRET="{P}-slurm-slurm-compute-conf"\nSLURM_CONF_VERSION="v1"\n'
    proc, logs = run_ssm_hook(tmp_path, "tencentcloud_slurm_conf.sh", env, text)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == text and f"--SecretName {P}-slurm-slurm-compute-conf" in logs["tccli"][0]


def test_a_hook_without_its_settings_says_so(tmp_path):
    proc, logs = run_ssm_hook(tmp_path, "tencentcloud_slurm_conf.sh", "", "x")
    assert proc.returncode == 1 and proc.stdout == "" and "no secret in" in proc.stderr and logs["tccli"] == []


@pytest.mark.parametrize("name", ["tencentcloud_munge_key.sh", "tencentcloud_slurm_conf.sh"])
def test_the_hooks_are_shellcheck_clean_as_written_and_as_rendered(tmp_path, name):
    assert_shellcheck_clean(BOOTSTRAP / name)
    rendered = tmp_path / name
    rendered.write_text(bootstrap.script(name))
    assert 'tencentcloud_ssm.sh"' not in rendered.read_text()
    assert_shellcheck_clean(rendered)
