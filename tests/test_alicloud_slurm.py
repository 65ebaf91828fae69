"""`scheduler: slurm` on Alibaba Cloud: the head node, the MUNGE key's delivery (KMS ciphertext, kms:Decrypt on the
cluster's own key only), the Slurm ports, the rendered configuration for ebmgn8v, and the key hook run on stubs."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml
from rich.console import Console

from components import bootstrap
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER, compute_config_files
from components.layout import alicloud as ali
from components.layout.alicloud.nodes import DRIVER_BOOT_FILE
from components.layout.alicloud.slurm import munge_hook
from components.plan.render import render_json, render_table

from .conftest import one, plan_values, resources_of
from .hook_helpers import alicloud_kms_curl, alicloud_signature, assert_shellcheck_clean, stub_bin
from .hook_helpers import run_hook as run_hook_on_stubs
from .test_layout_alicloud import ali_values

HOOK = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "alicloud_munge_key.sh"
KEY_MOCK = "<base64 of slm-alicloud-munge-key-bytes>"  # what the mocks answer for the random key


def slurm_values(**cluster):
    extra = {"name": "slm", "fabric": "required", "scheduler": "slurm", "tags": {"team": "hpc", "environment": "dev"}}
    return ali_values(**{**extra, **cluster})


@pytest.fixture(scope="module")
def plan():
    return plan_values(slurm_values())


def by_name(plan, name):
    found = [r.as_json() for r in plan.resources if r.name == name]
    assert len(found) == 1, name
    return found[0]


def cloud_config(b64: str) -> dict:
    raw = base64.b64decode(b64)
    return yaml.safe_load(gzip.decompress(raw).decode() if raw[:2] == b"\x1f\x8b" else raw.decode())


def files_of(b64: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in cloud_config(b64).get("write_files", [])}


def test_head_node_is_private_in_the_nodes_vswitch_with_its_own_group(plan):
    head = by_name(plan, "slm-alicloud-head")["inputs"]
    assert head["instanceType"] == "ecs.g7.large"  # slurm.headInstanceType default: the login node's type
    assert head["vswitchId"] == "<id of slm-alicloud-nodes>"
    assert head["securityGroups"] == ["<id of slm-alicloud-head-sg>"]
    assert head["internetMaxBandwidthOut"] == 0
    assert head["systemDiskEncrypted"] is True
    role = by_name(plan, "slm-alicloud-head-role")["inputs"]
    assert role == {"instanceId": "<id of slm-alicloud-head>", "ramRoleName": "slm-test-nodes"}


def test_munge_key_is_encrypted_with_the_clusters_kms_key_and_only_that_key_is_decryptable(plan):
    ciphertext = one(plan, "kms/ciphertext:Ciphertext")["inputs"]
    key = by_name(plan, "slm-alicloud-munge-kms")
    assert ciphertext["keyId"] == f"<id of {key['name']}>"
    assert ciphertext["plaintext"] == "[secret]"
    assert ciphertext["encryptionContext"] == {"gpu-cluster": "slm", "stack": "test", "purpose": "munge-key"}
    assert one(plan, "randomBytes:RandomBytes")["inputs"]["length"] == 128
    policy = json.loads(by_name(plan, "slm-alicloud-munge-policy")["inputs"]["policyDocument"])
    assert policy["Statement"] == [
        {
            "Action": ["kms:Decrypt"],
            "Effect": "Allow",
            "Resource": [f"acs:kms:cn-beijing:<resolved at deploy: the account id>:key/<id of {key['name']}>"],
        }
    ]
    grant = by_name(plan, "slm-alicloud-role-munge-key")["inputs"]
    assert grant["policyType"] == "Custom" and grant["roleName"] == "slm-test-nodes"
    assert grant["policyName"] == by_name(plan, "slm-alicloud-munge-policy")["inputs"]["policyName"]


def test_the_key_is_never_in_clear_in_inputs_outputs_or_the_printed_plan(plan):
    everything = json.dumps([r.as_json() for r in plan.resources]) + json.dumps(plan.run.outputs, default=str)
    assert KEY_MOCK not in everything
    console = Console(record=True, width=200)
    render_table(plan, console)
    assert KEY_MOCK not in console.export_text()
    assert KEY_MOCK not in render_json(plan)
    # what the nodes get is the ciphertext, in a 0600 env file
    for name in ("slm-alicloud-head", "slm-alicloud-login", "slm-alicloud-node-0"):
        files = files_of(by_name(plan, name)["inputs"]["userData"])
        env = files["/etc/gpu-cluster/munge-key.env"]
        assert 'MUNGE_CIPHERTEXT="<ciphertext of slm-alicloud-munge-key>"' in env
        assert 'KMS_ENDPOINT="https://kms-vpc.cn-beijing.aliyuncs.com"' in env
        assert ali.CIPHERTEXT_PLACEHOLDER not in json.dumps(files)
        assert KEY_MOCK not in json.dumps(files)
        assert files["/usr/local/sbin/gpu-cluster-munge-key"] == bootstrap.script("alicloud_munge_key.sh")


def test_every_user_data_stays_under_alibabas_16_kb(plan):
    for name in ("slm-alicloud-head", "slm-alicloud-login", "slm-alicloud-node-0"):
        assert len(base64.b64decode(by_name(plan, name)["inputs"]["userData"])) < 16 * 1024, name


def test_nodes_and_login_learn_the_heads_address_at_deploy(plan):
    for name in ("slm-alicloud-login", "slm-alicloud-node-1"):
        files = files_of(by_name(plan, name)["inputs"]["userData"])
        assert HEAD_PLACEHOLDER not in json.dumps(files)
        env = next(v for k, v in files.items() if k.startswith("/etc/gpu-cluster/slurm-") and k.endswith(".env"))
        assert 'HEAD_ADDRESS="<private ip of slm-alicloud-head>"' in env


def test_rendered_conf_for_ebmgn8v(plan):
    head = files_of(by_name(plan, "slm-alicloud-head")["inputs"]["userData"])
    conf = head["/etc/gpu-cluster/slurm/slurm.conf"]
    assert "SlurmctldParameters=enable_configless" in conf
    assert "SelectType=select/cons_tres" in conf and "GresTypes=gpu" in conf
    assert "MailProg=/usr/bin/logger\n" in conf and conf.endswith("Include nodes.conf\n")
    # the GPU nodes: in the OOS parameter the head reads, not in its user data (issue 28)
    conf = compute_config_files(by_name(plan, "slm-alicloud-slurm-compute-conf")["inputs"]["value"])["nodes.conf"]
    assert "MaxNodeCount=4\n" in conf
    # a GPU's share: 996147 // 8 MiB, 192 // 8 vCPUs
    partition = "PartitionName=gpu Nodes=gpu_nodes Default=YES MaxTime=INFINITE State=UP"
    assert f"{partition} DefCpuPerGPU=24 DefMemPerGPU=124518\n" in conf
    # 1024 GiB less 5% (the catalog row; Alibaba names no GPU model, so the GRES is untyped)
    assert "Gres=gpu:8 RealMemory=996147" in conf
    assert head["/etc/gpu-cluster/slurm/gres.conf"] == "AutoDetect=nvml\n"
    # the nodes' one LowLatency deployment set is no topology (docs/slurm.md, Topology)
    assert "/etc/gpu-cluster/slurm/topology.yaml" not in head
    node = files_of(by_name(plan, "slm-alicloud-node-0")["inputs"]["userData"])
    env = node["/etc/gpu-cluster/slurm-compute.env"]
    assert 'DYNAMIC_CONF="Feature=gpu Gres=gpu:8 RealMemory=996147"' in env
    # slurmd waits for the boot after the GPU driver installer
    dropin = node["/etc/systemd/system/gpu-cluster-slurm-compute.service.d/10-after-driver.conf"]
    assert "ExecCondition=" in dropin and DRIVER_BOOT_FILE in dropin


def test_slurm_ports_open_only_between_head_nodes_and_login(plan):
    rules = {r["name"]: r["inputs"] for r in resources_of(plan, "SecurityGroupRule")}

    def rule(name):
        r = rules[f"slm-alicloud-{name}"]
        return r["securityGroupId"], r["sourceSecurityGroupId"], r["portRange"]

    head, nodes, login = "<id of slm-alicloud-head-sg>", "<id of slm-alicloud-sg>", "<id of slm-alicloud-login-sg>"
    assert rule("head-sg-slurmctld-from-nodes") == (head, nodes, "6817/6817")
    assert rule("head-sg-slurmctld-from-login") == (head, login, "6817/6817")
    assert rule("head-sg-nfs-from-nodes") == (head, nodes, "2049/2049")
    assert rule("sg-slurmd-from-head") == (nodes, head, "6818/6818")
    assert rule("sg-slurmd-from-login") == (nodes, login, "6818/6818")
    assert rule("login-sg-srun-from-head")[:2] == (login, head)
    assert not [r for r in rules.values() if r.get("cidrIp") == "0.0.0.0/0"]
    assert plan.violations() == []


def test_scheduler_none_builds_no_slurm(stack_plan):
    plan = stack_plan("alicloud-erdma")
    assert not resources_of(plan, "kms/ciphertext:Ciphertext") and "slurm" not in plan.run.outputs


# --- the key hook, run for real against a stubbed metadata service and KMS endpoint (curl) ---------------
TOOLS = ("cat", "sed", "head", "sort", "paste", "date", "openssl")
CURL = alicloud_kms_curl("slm-test-nodes", "STS.kmsid", "kms/secret+1", "CAIS+tok==", "bXVuZ2Uta2V5LWJ5dGVz")


def run_hook(tmp_path: Path, **env: str):
    env_file = tmp_path / "munge-key.env"
    context = json.dumps({"gpu-cluster": "slm", "purpose": "munge-key", "stack": "test"}, separators=(",", ":"))
    env_file.write_text(
        "MUNGE_CIPHERTEXT=Q2lwaGVy+dGV4dA==\nKMS_ENDPOINT=https://kms-vpc.cn-beijing.aliyuncs.com\n"
        f"ENCRYPTION_CONTEXT='{context}'\n"
    )
    log = tmp_path / "kms.log"
    full = {"KMS_LOG": str(log), "ENV_FILE": str(env_file), **env}
    proc = run_hook_on_stubs(HOOK, stub_bin(tmp_path, {"curl": CURL}, TOOLS), full, isolated=True)
    return proc, log.read_text().strip() if log.exists() else None


def test_hook_is_the_one_the_layout_ships():
    assert munge_hook() == bootstrap.script("alicloud_munge_key.sh")


def test_hook_decrypts_with_the_role_and_prints_only_the_key(tmp_path):
    proc, url = run_hook(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "bXVuZ2Uta2V5LWJ5dGVz\n"  # the base64 key, nothing else
    assert "bXVuZ2Uta2V5LWJ5dGVz" not in proc.stderr
    assert url is not None and url.startswith("https://kms-vpc.cn-beijing.aliyuncs.com/?")
    query = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    assert {k: query[k] for k in ("Action", "Version", "CiphertextBlob")} == {
        "Action": "Decrypt",
        "Version": "2016-01-20",
        "CiphertextBlob": "Q2lwaGVy+dGV4dA==",
    }
    assert json.loads(query["EncryptionContext"]) == {"gpu-cluster": "slm", "purpose": "munge-key", "stack": "test"}
    assert (query["AccessKeyId"], query["SecurityToken"]) == ("STS.kmsid", "CAIS+tok==")
    sent = query.pop("Signature")
    assert sent == alicloud_signature("kms/secret+1", query)


def test_hook_fails_quietly_when_kms_refuses_or_there_is_no_role(tmp_path):
    proc, url = run_hook(tmp_path, KMS_DENY="1")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "kms:Decrypt failed" in proc.stderr
    (tmp_path / "kms.log").unlink()
    proc, url = run_hook(tmp_path, NO_ROLE="1")
    assert url is None  # no call to KMS without a role
    assert proc.returncode == 1 and proc.stdout == "" and "no RAM role attached" in proc.stderr


def test_hook_shellcheck_clean():
    assert_shellcheck_clean(HOOK)
