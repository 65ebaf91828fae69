"""`scheduler: slurm` on Huawei Cloud: the private head node, the MUNGE key and the compute-side configuration in DEW
CSMS (a custom policy for the agency reading exactly those two secrets and decrypting with the cluster's key), the
Slurm ports, the SFS Turbo mount on the head and the login node, the gzip user data within Huawei's 32 KB, what is
refused, and the hooks run on a stubbed curl, their signature checked against huaweicloudsdkcore's signer."""

from __future__ import annotations

import base64
import gzip
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from huaweicloudsdkcore.auth.credentials import BasicCredentials
from huaweicloudsdkcore.sdk_request import SdkRequest
from huaweicloudsdkcore.signer.signer import Signer

from components import bootstrap
from components.bootstrap import node_text
from components.bootstrap.mounts import SOURCE_PLACEHOLDER
from components.bootstrap.slurm import CONF_HOOK_PATH, KEY_HOOK_PATH
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER, compute_config_files
from components.catalog import accounting
from components.catalog.slurm import cloud_data
from components.errors import ConfigError, ConfigErrors
from components.layout import huaweicloud as hw
from components.layout.huaweicloud.nodes import user_data_max
from components.layout.huaweicloud.slurm import size_problems
from components.spec import build_spec

from .conftest import spec_of
from .hook_helpers import BOOTSTRAP, assert_shellcheck_clean, run_hook, stub_bin
from .test_huaweicloud_resources import huawei_values

STACK = "huaweicloud-slurm"
P = "hw-slurm-huaweicloud"
SECRET = f"{P}-slurm-slurm"  # the stack's secret names: <cluster>-<stack>-slurm-<what>


def slurm_values(**cluster: Any) -> dict[str, Any]:
    base = {"gpu": "T4:1", "nodes": 2, "fabric": "none", "scheduler": "slurm", "login": {"publicIp": True},
            "network": {"sshCidrs": ["203.0.113.0/24"]}}  # fmt: skip
    return huawei_values(**{**base, **cluster})


@pytest.fixture(scope="module")
def plan(stack_plan):
    return stack_plan(STACK)


@pytest.fixture(scope="module")
def doc(plan):
    return plan.as_json()


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r["inputs"] for r in doc["resources"]}


def unpacked(b64: str) -> str:
    return gzip.decompress(base64.b64decode(b64)).decode()


def files_of(b64: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in yaml.safe_load(unpacked(b64))["write_files"]}


def test_the_head_is_a_private_ecs_in_the_nodes_subnet_with_its_own_group_and_the_agency(doc):
    got = by_name(doc)
    head = got[f"{P}-head"]
    assert head["flavorId"] == "s6.small.1"  # slurm.headInstanceType default: the login node's flavor
    assert head["networks"] == [{"uuid": f"<id of {P}-nodes>"}]
    assert head["securityGroupIds"] == [f"<id of {P}-head-sg>"]
    assert "eipType" not in head and "bandwidth" not in head  # private: egress through the NAT
    assert head["agencyName"] == got[f"{P}-agency"]["name"] and head["keyPair"] == got[f"{P}-keypair"]["name"]
    assert head["systemDiskKmsKeyId"] == f"<id of {P}-key>" and head["chargingMode"] == "postPaid"
    files = files_of(head["userData"])
    # as the hooks are written, their libraries inlined and comments dropped
    assert files[KEY_HOOK_PATH] == node_text(bootstrap.script("huaweicloud_munge_key.sh"))
    assert files[CONF_HOOK_PATH] == node_text(bootstrap.script("huaweicloud_slurm_conf.sh"))
    conf_env = files["/etc/gpu-cluster/slurm-conf.env"]
    assert f'SLURM_CONF_SECRET="{SECRET}-compute-conf"' in conf_env
    assert 'CSMS_ENDPOINT="kms.cn-north-4.myhuaweicloud.com"' in conf_env and 'CSMS_VERSION="latest"' in conf_env
    text = json.dumps(files)
    assert HEAD_PLACEHOLDER not in text  # the head's address is its own
    assert SOURCE_PLACEHOLDER not in text and "<export location of " in text  # /home and the state on SFS Turbo


def test_the_head_waits_for_both_secrets_and_the_grant(plan):
    head = next(r for r in plan.resources if r.name == f"{P}-head")
    deps = " ".join(head.dependencies)
    for name in ("slurm-munge-key", "slurm-compute-conf", "slurm-secrets-role"):
        assert f"::{P}-{name}" in deps


def test_the_munge_key_is_a_random_secret_in_csms_never_in_user_data(doc):
    got = by_name(doc)
    assert got[f"{P}-munge-key-bytes"] == {"length": 128}
    secret = got[f"{P}-slurm-munge-key"]
    assert secret["name"] == f"{SECRET}-munge-key" and secret["secretText"] == "[secret]"
    assert secret["kmsKeyId"] == f"<id of {P}-key>"
    for node in ("head", "login", "node-0", "node-1"):
        env = files_of(got[f"{P}-{node}"]["userData"])["/etc/gpu-cluster/munge-key.env"]
        assert f'MUNGE_SECRET="{SECRET}-munge-key"' in env and 'METADATA_URL="http://169.254.169.254"' in env
    assert "munge-key-bytes" not in json.dumps([unpacked(got[f"{P}-{n}"]["userData"]) for n in ("head", "node-0")])
    for node in ("node-0", "login"):  # the GPU nodes and the login node carry the key's hook too
        assert (
            files_of(got[f"{P}-{node}"]["userData"])[KEY_HOOK_PATH]
            == files_of(got[f"{P}-head"]["userData"])[KEY_HOOK_PATH]
        )


def test_the_agency_may_read_exactly_the_two_secrets_and_decrypt_with_the_clusters_key(doc, plan):
    got = by_name(doc)
    role = got[f"{P}-slurm-secrets-role"]
    assert role["name"] == f"{SECRET}-secrets-read" and role["type"] == "XA"
    assert json.loads(role["policy"]) == {
        "Statement": [
            {
                "Action": ["csms:secretVersion:get"],
                "Effect": "Allow",
                "Resource": [f"csms:*:*:secretName:{SECRET}-munge-key", f"csms:*:*:secretName:{SECRET}-compute-conf"],
            },
            {"Action": ["kms:dek:crypto"], "Effect": "Allow", "Resource": [f"kms:*:*:KeyId:<id of {P}-key>"]},
        ],
        "Version": "1.1",
    }
    agency = got[f"{P}-agency"]
    assert agency["allResourcesRoles"] == ["ECS ReadOnlyAccess", role["name"]]  # the login node's Prometheus, Slurm
    assert role["name"] in doc["outputs"]["identity"]["grants"]
    made = next(r for r in plan.resources if r.name == f"{P}-agency")
    assert any(d.endswith(f"::{P}-slurm-secrets-role") for d in made.dependencies)  # the policy exists first


def test_the_compute_side_configuration_is_a_csms_secret_within_its_limit(doc):
    secret = by_name(doc)[f"{P}-slurm-compute-conf"]
    text = secret["secretText"]
    assert secret["name"] == f"{SECRET}-compute-conf" and secret["kmsKeyId"] == f"<id of {P}-key>"
    assert 0 < len(text.encode()) <= int(cloud_data("huaweicloud")["computeConfig"]["maxValueBytes"])
    nodes_conf = compute_config_files(text)["nodes.conf"]
    assert "Feature=gpu" in nodes_conf and "Gres=gpu:t4:1" in nodes_conf and "MaxNodeCount=" in nodes_conf


def test_the_gpu_and_login_nodes_learn_the_heads_address_and_the_mount_at_deploy(doc):
    got = by_name(doc)
    for node in ("login", "node-0", "node-1"):
        text = json.dumps(files_of(got[f"{P}-{node}"]["userData"]))
        assert HEAD_PLACEHOLDER not in text and SOURCE_PLACEHOLDER not in text
        assert f'HEAD_ADDRESS=\\"<private ip of {P}-head>\\"' in text


def rules(doc: dict[str, Any], group: str) -> list[tuple[str, str]]:
    return sorted(
        (r["inputs"].get("ports", "all"), r["inputs"].get("remoteGroupId") or r["inputs"].get("remoteIpPrefix"))
        for r in doc["resources"]
        if r["type"].endswith("SecgroupRule")
        and r["inputs"]["securityGroupId"] == f"<id of {P}-{group}>"
        and r["inputs"]["direction"] == "ingress"
    )


def test_the_slurm_ports_are_open_inside_the_cluster_only(doc):
    nodes, login, head = (f"<id of {P}-{g}>" for g in ("sg", "login-sg", "head-sg"))
    # no NFS export on the head: /home is on SFS Turbo
    assert rules(doc, "head-sg") == [("22", login), ("6817", login), ("6817", nodes)]
    assert {("6818", head), ("6818", login)} <= set(rules(doc, "sg"))
    assert [r for r in rules(doc, "login-sg") if r[0] == "60001-63000"] == [
        ("60001-63000", head),
        ("60001-63000", nodes),
    ]


def test_the_head_and_the_login_node_may_mount_the_shared_filesystem(doc):
    head, login, nodes = (f"<id of {P}-{g}>" for g in ("head-sg", "login-sg", "sg"))
    got = rules(doc, "shared-sg")
    for port in ("111", "2049", "2051-2052", "20048"):
        assert {(port, head), (port, login), (port, nodes)} <= set(got)


def test_without_storage_shared_the_head_exports_home_to_the_nodes_and_login(stack_plan):
    from .conftest import plan_stack_with

    doc = plan_stack_with(STACK, storage={"scratch": "disk", "scratchGb": 200}).as_json()
    nodes, login = (f"<id of {P}-{g}>" for g in ("sg", "login-sg"))
    assert {("2049", nodes), ("2049", login)} <= set(rules(doc, "head-sg"))
    assert not [r for r in doc["resources"] if "shared" in r["name"]]


def test_every_user_data_is_gzip_and_fits_huaweis_32_kb(doc):
    got = by_name(doc)
    for node in ("head", "login", "node-0"):
        raw = base64.b64decode(got[f"{P}-{node}"]["userData"])
        assert raw[:2] == b"\x1f\x8b" and len(raw) <= user_data_max()
        assert unpacked(got[f"{P}-{node}"]["userData"]).startswith("#cloud-config\n")


def test_the_slurm_output_names_the_secret_never_the_key(doc):
    out = doc["outputs"]["slurm"]
    assert out["mungeKey"]["store"] == "dew-csms-secret" and out["mungeKey"]["secret"] == f"{SECRET}-munge-key"
    assert out["computeConfig"] == f"{SECRET}-compute-conf" and out["headNode"]["privateIp"].endswith(f"{P}-head>")


def test_a_head_or_login_user_data_over_32_kb_gzip_is_refused_by_key():
    layout = hw.plan(spec_of(slurm_values()))
    assert layout.slurm is not None and size_problems(layout.slurm) == []
    noise = base64.b64encode(os.urandom(48 * 1024)).decode()  # does not compress below 32 KB
    errors = size_problems(replace(layout.slurm, login_user_data=noise))
    assert [e.key for e in errors] == ["gpu-cluster:cluster.slurm"]
    assert (
        errors[0].message.startswith("the login node's user data is ")
        and "(gzip), over Huawei's 32768" in errors[0].message
    )


def errors_of(values: dict[str, Any]) -> dict[str, str]:
    with pytest.raises((ConfigErrors, ConfigError)) as got:
        hw.plan(build_spec(values, "test"))
    errors = got.value.errors if isinstance(got.value, ConfigErrors) else [got.value]
    return {e.key: e.message for e in errors}


def test_elastic_partitions_are_refused_with_the_datas_reason():
    part = {"name": "t4", "instanceType": "pi2.2xlarge.4", "maxNodes": 2}
    got = errors_of(slurm_values(nodes=0, slurm={"partitions": [part]}))
    why = " ".join(str(cloud_data("huaweicloud")["powerSave"]["notBuilt"]).split())
    assert got["gpu-cluster:cluster.slurm.partitions"] == f"elastic partitions are not built on huaweicloud: {why}"


def test_accounting_is_refused_with_the_datas_reason():
    got = errors_of(slurm_values(slurm={"accounting": True}))
    assert (
        got["gpu-cluster:cluster.slurm.accounting"] == f"true on huaweicloud, but {accounting.refusal('huaweicloud')}"
    )
    assert "RDS for MySQL" in got["gpu-cluster:cluster.slurm.accounting"]


def test_a_managed_node_group_is_refused_by_key():
    got = errors_of(slurm_values(nodeGroup="managed"))
    assert got["gpu-cluster:cluster.nodeGroup"].startswith("managed with scheduler slurm on huaweicloud: ")


def test_an_existing_agency_is_granted_nothing_and_warned():
    layout = hw.plan(spec_of(slurm_values(identity={"existing": "ops-agency"})))
    assert layout.slurm is not None and layout.identity.roles == ()
    warned = [w for w in layout.warnings if "csms:secretVersion:get" in w]
    assert len(warned) == 1 and "ops-agency" in warned[0] and layout.slurm.munge_secret in warned[0]


def test_without_slurm_nothing_of_it_is_planned(stack_plan):
    names = [r["name"] for r in stack_plan("huaweicloud-shared").as_json()["resources"]]
    assert not [n for n in names if "head" in n or "munge" in n or "slurm" in n]


# --- the hooks on a stubbed curl ------------------------------------------------------------------------------------

AK, SK, TOKEN, PROJECT = "TMPAK", "tmp/secret+1", "tok+en==", "0123456789abcdef0123456789abcdef"
CREDS = {"credential": {"access": AK, "secret": SK, "securitytoken": TOKEN, "expires_at": "2033-05-18T03:33:19Z"}}
META = "http://169.254.169.254"
ENDPOINT = "kms.cn-north-4.myhuaweicloud.com"
KEY = base64.b64encode(b"k" * 128).decode()
# the metadata service (no session token), and CSMS logging each request's headers and url and answering
# ShowSecretVersion from $ANSWER (or failing as curl -f does with DENY set)
CURL = rf"""
url="${{@: -1}}"
case "$url" in
  {META}/meta-data/latest/api/token) exit 22 ;;
  {META}/openstack/latest/securitykey) [ -z "${{NO_AGENCY:-}}" ] || exit 22; cat "$CREDS" ;;
  {META}/openstack/latest/meta_data.json) echo '{{"uuid": "u", "project_id": "{PROJECT}"}}' ;;
  https://{ENDPOINT}/*)
    python3 "$CALL_LOGGER" "$@" >>"$LOG"
    [ -z "${{DENY:-}}" ] || exit 22
    cat "$ANSWER" ;;
  *) exit 22 ;;
esac
"""


# one request's headers (the -H @file) and url, as a JSON line
CALL_LOGGER = """
import json, sys
args = sys.argv[1:]
lines = open(args[args.index("-H") + 1][1:]).read().splitlines()
print(json.dumps({"headers": dict(line.split(": ", 1) for line in lines), "url": args[-1]}))
"""


def run_csms_hook(tmp_path: Path, name: str, env_lines: str, secret: str, **env: str):
    (tmp_path / "call_logger.py").write_text(CALL_LOGGER)
    (tmp_path / "creds.json").write_text(json.dumps(CREDS))
    answer = {"version": {"version_metadata": {"id": "v2", "secret_name": "x"}, "secret_string": secret}}
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    env_file = tmp_path / "hook.env"
    env_file.write_text(env_lines + f'METADATA_URL="{META}"\nCSMS_ENDPOINT="{ENDPOINT}"\nCSMS_VERSION="latest"\n')
    hook = tmp_path / name
    hook.write_text(bootstrap.script(name))  # huaweicloud_csms.sh and huaweicloud_sign.sh inlined, as a node gets it
    log = tmp_path / "calls"
    full = {
        "ENV_FILE": str(env_file),
        "CREDS": str(tmp_path / "creds.json"),
        "ANSWER": str(tmp_path / "answer.json"),
        "LOG": str(log),
        "CALL_LOGGER": str(tmp_path / "call_logger.py"),
        "TMPDIR": str(tmp_path),
        **env,
    }
    proc = run_hook(hook, stub_bin(tmp_path, {"curl": CURL}), full)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, calls


def sdk_authorization(headers: dict[str, str], url: str) -> str:
    """The Authorization huaweicloudsdkcore's Signer computes for this GET, with the same X-Sdk-Date."""
    parts = urlsplit(url)
    request = SdkRequest(
        method="GET",
        schema="https",
        host=parts.netloc,
        resource_path=parts.path,
        query_params=[],
        header_params={k: v for k, v in headers.items() if k != "Authorization"},
        body="",
    )
    return str(Signer(BasicCredentials(AK, SK, PROJECT)).sign(request).header_params["Authorization"])


def test_the_munge_hook_reads_the_latest_version_with_the_agency_and_prints_only_the_key(tmp_path):
    proc, calls = run_csms_hook(tmp_path, "huaweicloud_munge_key.sh", f'MUNGE_SECRET="{SECRET}-munge-key"\n', KEY)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == KEY + "\n" and proc.stderr == ""
    assert len(calls) == 1
    h, url = calls[0]["headers"], calls[0]["url"]
    assert url == f"https://{ENDPOINT}/v1/{PROJECT}/secrets/{SECRET}-munge-key/versions/latest"
    assert (h["Host"], h["X-Project-Id"], h["X-Security-Token"]) == (ENDPOINT, PROJECT, TOKEN)
    assert h["Authorization"] == sdk_authorization(h, url)
    assert h["Authorization"] != sdk_authorization(h, url.replace("latest", "v1"))  # the check itself is not blind
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("tmp")] == []  # the answer's directory is gone


def test_a_refused_read_fails_without_printing_anything(tmp_path):
    proc, _ = run_csms_hook(tmp_path, "huaweicloud_munge_key.sh", f'MUNGE_SECRET="{SECRET}-munge-key"\n', KEY, DENY="1")
    assert proc.returncode != 0 and proc.stdout == ""
    assert "csms:secretVersion:get" in proc.stderr and KEY not in proc.stderr


def test_a_node_without_an_agency_says_so_and_calls_nothing(tmp_path):
    env = f'MUNGE_SECRET="{SECRET}-munge-key"\n'
    proc, calls = run_csms_hook(tmp_path, "huaweicloud_munge_key.sh", env, KEY, NO_AGENCY="1")
    assert proc.returncode != 0 and proc.stdout == "" and calls == []
    assert "no agency on this node?" in proc.stderr


def test_the_conf_hook_prints_the_configuration_text(tmp_path):
    text = "# gpu-cluster file: nodes.conf\nNodeSet=gpu Feature=gpu\n"
    env = f'SLURM_CONF_SECRET="{SECRET}-compute-conf"\n'
    proc, calls = run_csms_hook(tmp_path, "huaweicloud_slurm_conf.sh", env, text)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == text and calls[0]["url"].endswith(f"/secrets/{SECRET}-compute-conf/versions/latest")


def test_a_hook_without_its_settings_says_so(tmp_path):
    proc, calls = run_csms_hook(tmp_path, "huaweicloud_slurm_conf.sh", "", "x")
    assert proc.returncode == 1 and proc.stdout == "" and "no secret in" in proc.stderr and calls == []


@pytest.mark.parametrize("name", ["huaweicloud_munge_key.sh", "huaweicloud_slurm_conf.sh"])
def test_the_hooks_are_shellcheck_clean_as_written_and_as_rendered(tmp_path, name):
    for library in ("huaweicloud_csms.sh", "huaweicloud_sign.sh"):
        assert_shellcheck_clean(BOOTSTRAP / library)
    assert_shellcheck_clean(BOOTSTRAP / name)
    rendered = tmp_path / name
    rendered.write_text(bootstrap.script(name))
    text = rendered.read_text()
    assert 'huaweicloud_csms.sh"' not in text and 'huaweicloud_sign.sh"' not in text
    assert text.count("hw_sign() {") == 1 and text.count("csms_secret() {") == 1
    assert_shellcheck_clean(rendered)
