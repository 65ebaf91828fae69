"""slurm.accounting on Alibaba Cloud, through the offline plan: ApsaraDB RDS for MySQL 8.0 in the cluster's vSwitch
whitelisting only that vSwitch, its password a KMS ciphertext that only the head's own RAM role may decrypt, slurmdbd in
the head's user data with the database's address filled in; the password hook against stubs; and what is refused."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from components import bootstrap
from components.bootstrap.slurm import DB_PASSWORD_ENV, DB_PASSWORD_HOOK_PATH, DBD_TEMPLATE, KEY_HOOK_PATH
from components.bootstrap.slurm_conf import DB_HOST_PLACEHOLDER, DB_PASSWORD_TOKEN
from components.errors import ConfigError
from components.layout.alicloud import plan as ali_plan
from components.layout.alicloud.accounting import DB_CIPHERTEXT_PLACEHOLDER

from .conftest import plan_values, resources_of, spec_of
from .hook_helpers import alicloud_kms_curl, alicloud_signature, assert_shellcheck_clean, stub_bin
from .hook_helpers import run_hook as run_hook_on_stubs
from .test_alicloud_slurm import by_name, files_of, slurm_values

BOOTSTRAP = Path(__file__).resolve().parent.parent / "components" / "bootstrap"
HOOK = BOOTSTRAP / "alicloud_db_password.sh"
NAME = "slm-alicloud"
PASSWORD_MOCK = f"<password of {NAME}-db-password-value>"  # what the mocks answer for the random password
CONTEXT = {"gpu-cluster": "slm", "stack": "acct", "purpose": "slurmdbd-password"}


def values(**cluster):
    return slurm_values(**{"slurm": {"accounting": True}, "login": {}, **cluster})


@pytest.fixture(scope="module")
def plan():
    return plan_values(values(), stack="acct")


def inputs(plan, name: str) -> dict:
    return by_name(plan, name)["inputs"]


def test_the_database_is_mysql_8_basic_in_the_clusters_vswitch_whitelisting_only_it(plan):
    db = inputs(plan, f"{NAME}-db")
    assert (db["engine"], db["engineVersion"], db["category"]) == ("MySQL", "8.0", "Basic")
    assert (db["instanceType"], db["instanceStorage"], db["dbInstanceStorageType"]) == (
        "mysql.n2.small.1",
        20,
        "cloud_essd",
    )
    assert (db["vswitchId"], db["zoneId"]) == (f"<id of {NAME}-nodes>", "cn-beijing-l")  # beside the head
    # the nodes' vSwitch (the head is in it), nothing wider and no public address: no rds.Connection is made
    assert db["securityIps"] == ["10.42.0.0/17"]
    assert not resources_of(plan, "rds/connection:Connection")
    assert db["parameters"] == [{"name": "innodb_lock_wait_timeout", "value": "900"}]
    # `pulumi destroy` deletes it, as on AWS and GCP
    assert (db["instanceChargeType"], db["deletionProtection"]) == ("Postpaid", False)
    assert "encryptionKey" not in db  # no customer key on the disk (see the encryption test)
    backup = inputs(plan, f"{NAME}-db-backup")
    assert backup["instanceId"] == f"<id of {NAME}-db>" and backup["backupRetentionPeriod"] == 7
    assert len(backup["preferredBackupPeriods"]) == 7  # daily
    database = inputs(plan, f"{NAME}-db-database")
    assert (database["instanceId"], database["dataBaseName"]) == (f"<id of {NAME}-db>", "slurm_acct_db")
    account = inputs(plan, f"{NAME}-db-user")
    assert (account["dbInstanceId"], account["accountName"], account["accountType"]) == (
        f"<id of {NAME}-db>",
        "slurm",
        "Normal",
    )
    assert account["accountPassword"] == "[secret]"
    grant = inputs(plan, f"{NAME}-db-privilege")
    assert (grant["accountName"], grant["dbNames"], grant["privilege"]) == ("slurm", ["slurm_acct_db"], "ReadWrite")


def test_the_password_is_random_and_reaches_kms_only_as_a_secret(plan):
    password = inputs(plan, f"{NAME}-db-password-value")
    # 32 letters and digits with each kind (RDS wants three kinds of character)
    assert password == {"length": 32, "special": False, "minUpper": 1, "minLower": 1, "minNumeric": 1}
    ciphertext = inputs(plan, f"{NAME}-db-password")
    assert ciphertext["plaintext"] == "[secret]" and ciphertext["encryptionContext"] == CONTEXT
    assert ciphertext["keyId"] == f"<id of {NAME}-db-password-kms>"  # no encryption.key: a key of its own
    key = inputs(plan, f"{NAME}-db-password-kms")
    assert (key["keySpec"], key["keyUsage"], key["protectionLevel"]) == (
        "Aliyun_AES_256",
        "ENCRYPT/DECRYPT",
        "SOFTWARE",
    )
    assert "dkmsInstanceId" not in key  # a KMS default key, no KMS instance


def test_only_the_heads_own_role_may_decrypt_the_password(plan):
    policy = json.loads(inputs(plan, f"{NAME}-db-password-policy")["policyDocument"])
    assert policy["Statement"] == [
        {
            "Action": ["kms:Decrypt"],
            "Effect": "Allow",
            "Resource": [f"acs:kms:cn-beijing:<resolved at deploy: the account id>:key/<id of {NAME}-db-password-kms>"],
        }
    ]
    attachments = {r["name"]: r["inputs"] for r in resources_of(plan, "ram/rolePolicyAttachment:RolePolicyAttachment")}
    password_policy = inputs(plan, f"{NAME}-db-password-policy")["policyName"]
    holders = [a["roleName"] for a in attachments.values() if a["policyName"] == password_policy]
    assert holders == ["slm-acct-head"]
    role = inputs(plan, f"{NAME}-head-ram-role")
    assert role["roleName"] == "slm-acct-head" and "accounting database's password" in role["description"]
    # the head carries it; the login node and the GPU nodes keep the nodes' role (they cannot decrypt the password)
    roles = {r["name"]: r["inputs"] for r in resources_of(plan, "ecs/ramRoleAttachment:RamRoleAttachment")}
    assert roles[f"{NAME}-head-role"]["ramRoleName"] == "slm-acct-head"
    assert all(v["ramRoleName"] != "slm-acct-head" for k, v in roles.items() if k != f"{NAME}-head-role")
    # the head still decrypts the MUNGE key and reads the compute configuration, under its own role
    assert attachments[f"{NAME}-head-role-munge-key"]["roleName"] == "slm-acct-head"
    assert attachments[f"{NAME}-head-role-slurm-conf"]["roleName"] == "slm-acct-head"


def test_the_head_runs_slurmdbd_with_the_database_address_and_never_the_password(plan):
    user_data = inputs(plan, f"{NAME}-head")["userData"]
    files = files_of(user_data)
    conf = files[DBD_TEMPLATE]
    assert f"StorageHost=<connection string of {NAME}-db>\n" in conf
    assert f"StoragePass={DB_PASSWORD_TOKEN}\n" in conf  # the head puts the password in at boot
    env = files[DB_PASSWORD_ENV]
    assert f'MUNGE_CIPHERTEXT="<ciphertext of {NAME}-db-password>"' in env  # as the decrypting hook reads it
    assert 'KMS_ENDPOINT="https://kms-vpc.cn-beijing.aliyuncs.com"' in env
    assert json.loads(json.loads(env.split("ENCRYPTION_CONTEXT=", 1)[1].splitlines()[0])) == CONTEXT
    assert files[DB_PASSWORD_HOOK_PATH] == bootstrap.script("alicloud_db_password.sh")
    # the program it runs to decrypt: the MUNGE key hook, as every node has it
    assert files[KEY_HOOK_PATH] == bootstrap.script("alicloud_munge_key.sh")
    text = json.dumps(files)
    for token in (DB_HOST_PLACEHOLDER, DB_CIPHERTEXT_PLACEHOLDER, PASSWORD_MOCK, "[secret]"):
        assert token not in text
    everything = json.dumps([r.as_json() for r in plan.resources]) + json.dumps(plan.run.outputs, default=str)
    assert PASSWORD_MOCK not in everything


def test_sacct_on_the_login_node_reaches_slurmdbd_on_the_head_only(plan):
    rule = inputs(plan, f"{NAME}-head-sg-slurmdbd-from-login")
    assert (rule["type"], rule["portRange"], rule["sourceSecurityGroupId"], rule["securityGroupId"]) == (
        "ingress",
        "6819/6819",
        f"<id of {NAME}-login-sg>",
        f"<id of {NAME}-head-sg>",
    )


def test_outputs_and_bill_name_the_database_unpriced_with_the_reason(plan):
    out = plan.run.outputs["slurm"]["accounting"]
    assert out["service"] == "ApsaraDB RDS for MySQL"
    assert out["address"] == f"<connection string of {NAME}-db>"
    assert out["password"]["kmsKey"] == f"<id of {NAME}-db-password-kms>"
    items = {i["item"]: i for i in plan.as_json()["summary"]["costs"]["items"]}
    assert (
        items["accountingDatabase"]["hourly"] is None and "mysql.n2.small.1" in items["accountingDatabase"]["unpriced"]
    )
    assert items["accountingDatabaseStorage"]["hourly"] is None


def test_policies_pass(plan):
    assert plan.violations() == []


def test_with_the_clusters_key_the_password_is_on_it_and_the_plan_says_the_disk_is_not():
    keyed = plan_values(values(encryption={"key": "auto"}), stack="acct")
    assert inputs(keyed, f"{NAME}-db-password")["keyId"] == f"<id of {NAME}-kms>"
    assert not [r for r in keyed.resources if r.name == f"{NAME}-db-password-kms"]
    policy = json.loads(inputs(keyed, f"{NAME}-db-password-policy")["policyDocument"])
    assert policy["Statement"][0]["Resource"][0].endswith(f":key/<id of {NAME}-kms>")
    warnings = keyed.as_json()["warnings"]
    assert any("not encrypted with the cluster's KMS key" in w for w in warnings), warnings


def test_elastic_partitions_and_accounting_share_one_head_role():
    both = plan_values(
        values(
            nodes=0, nodeGroup="managed", slurm={"accounting": True, "partitions": [{"name": "gpu", "maxNodes": 2}]}
        ),
        stack="acct",
    )
    roles = [r.as_json()["inputs"] for r in both.resources if r.as_json()["type"] == "alicloud:ram/role:Role"]
    heads = [r for r in roles if r["roleName"] == "slm-acct-head"]
    assert len(heads) == 1 and "launches and deletes the GPU nodes" in heads[0]["description"]
    assert inputs(both, f"{NAME}-head-role-db-password")["roleName"] == "slm-acct-head"


def test_without_accounting_nothing_of_it_is_planned_and_the_head_keeps_the_nodes_role():
    plain = plan_values(slurm_values(login={}), stack="acct")
    assert not resources_of(plain, "rds/")
    names = {r.name for r in plain.resources}
    assert f"{NAME}-head-ram-role" not in names and f"{NAME}-db-password-kms" not in names
    assert f"{NAME}-role-slurm-conf" in names  # the nodes' role reads the configuration, as before
    assert "accounting" not in plain.run.outputs["slurm"]


def test_an_existing_network_is_refused_with_the_key():
    existing = {"existing": {"vpcId": "vpc-bp1abc234def567gh890i", "subnetIds": ["vsw-bp1abc234def567gh890i"]}}
    with pytest.raises(ConfigError) as caught:
        ali_plan(spec_of(values(network=existing)))  # the layout, before any resource
    assert caught.value.key == "gpu-cluster:cluster.slurm.accounting"
    assert "network.existing on alicloud" in caught.value.message


# --- the hook, on stubs --------------------------------------------------------------------------------------------
TOOLS = ("bash", "cat", "date", "head", "openssl", "paste", "sed", "sort", "base64")
CURL = alicloud_kms_curl(
    "slm-acct-head", "STS.headid", "head/secret+1", "CAIS+h==", "'\"${PLAINTEXT:-czNjcmV0UGFzc3dvcmQx}\"'"
)


def run_hook(tmp_path: Path, **env: str):
    env_file = tmp_path / "db-password.env"
    context = json.dumps(CONTEXT, sort_keys=True, separators=(",", ":"))
    env_file.write_text(
        "MUNGE_CIPHERTEXT=Q2lwaGVy+dGV4dA==\nKMS_ENDPOINT=https://kms-vpc.cn-beijing.aliyuncs.com\n"
        f"ENCRYPTION_CONTEXT='{context}'\n"
    )
    # the MUNGE key hook as the head has it installed: its library inlined, executable
    decrypt = tmp_path / "gpu-cluster-munge-key"
    decrypt.write_text(bootstrap.script("alicloud_munge_key.sh"))
    decrypt.chmod(0o755)
    log = tmp_path / "kms.log"
    full = {"KMS_LOG": str(log), "ENV_FILE": str(env_file), "DECRYPT": str(decrypt), **env}
    proc = run_hook_on_stubs(HOOK, stub_bin(tmp_path, {"curl": CURL}, TOOLS), full, isolated=True)
    return proc, log.read_text().strip() if log.exists() else None


def test_hook_decrypts_with_the_heads_role_and_prints_only_the_password(tmp_path):
    proc, url = run_hook(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "s3cretPassword1"  # KMS answers the base64 the stack encrypted; the hook decodes it
    assert "s3cretPassword1" not in proc.stderr and "czNjcmV0UGFzc3dvcmQx" not in proc.stderr
    assert url is not None and url.startswith("https://kms-vpc.cn-beijing.aliyuncs.com/?")
    query = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    assert {k: query[k] for k in ("Action", "Version", "CiphertextBlob")} == {
        "Action": "Decrypt",
        "Version": "2016-01-20",
        "CiphertextBlob": "Q2lwaGVy+dGV4dA==",
    }
    assert json.loads(query["EncryptionContext"]) == CONTEXT
    assert (query["AccessKeyId"], query["SecurityToken"]) == ("STS.headid", "CAIS+h==")
    sent = query.pop("Signature")
    assert sent == alicloud_signature("head/secret+1", query)


def test_hook_fails_quietly_when_kms_refuses_there_is_no_role_or_the_answer_is_not_base64(tmp_path):
    proc, _ = run_hook(tmp_path, KMS_DENY="1")
    assert proc.returncode == 1 and proc.stdout == "" and "kms:Decrypt failed" in proc.stderr
    assert "the password's KMS decryption failed" in proc.stderr
    (tmp_path / "kms.log").unlink()
    proc, url = run_hook(tmp_path, NO_ROLE="1")
    assert url is None  # no call to KMS without a role
    assert proc.returncode == 1 and proc.stdout == "" and "no RAM role attached" in proc.stderr
    proc, _ = run_hook(tmp_path, PLAINTEXT="not*base64")
    assert proc.returncode == 1 and "not base64" in proc.stderr and "not*base64" not in proc.stderr


def test_hook_is_shipped_as_written_and_shellcheck_clean():
    assert_shellcheck_clean(HOOK)
    assert bootstrap.script("alicloud_db_password.sh") == HOOK.read_text()  # no library: it runs the MUNGE key hook


def test_the_spec_accepts_accounting_on_alicloud():
    from components.catalog.accounting import refusal
    from components.spec import build_spec

    assert refusal("alicloud") is None  # catalog/accounting.yaml clouds.alicloud has no notBuilt
    spec = build_spec(values(), "test")
    assert spec.slurm is not None and spec.slurm.accounting
