"""slurm.accounting on GCP, through the offline plan: Cloud SQL for MySQL with a private IP only (private services
access on the host VPC, a range clear of the cluster's subnets), its password in Secret Manager readable only by the
head's own service account, slurmdbd in the head's startup script with the database's address filled in; the
password hook against stubs; and what is refused."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from components.bootstrap.slurm import DB_PASSWORD_ENV, DBD_TEMPLATE
from components.bootstrap.slurm_conf import DB_HOST_PLACEHOLDER, DB_PASSWORD_TOKEN
from components.errors import ConfigError
from components.layout.gcp import plan as gcp_plan
from components.layout.gcp.accounting import peering_range

from .conftest import gcp_values, one, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, rendered_hook, run_gcp_secret_hook
from .test_gcp_slurm import env_of

HOOK = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "gcp_db_password.sh"
NAME = "acct-gcp"
SECRET_ID = "gpu-cluster-acct-acct-slurmdbd-password"


def values(**cluster):
    return gcp_values(**{"scheduler": "slurm", "slurm": {"accounting": True}, "login": {}, **cluster})


@pytest.fixture(scope="module")
def plan():
    return plan_values(values(), stack="acct")


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


def test_the_database_is_mysql_8_private_only_backed_up_with_schedmd_s_flags(plan):
    db = one(plan, "sql/databaseInstance:DatabaseInstance")
    inputs, settings = db["inputs"], db["inputs"]["settings"]
    assert (inputs["databaseVersion"], inputs["region"]) == ("MYSQL_8_0", "us-central1")
    assert (settings["tier"], settings["edition"], settings["availabilityType"]) == (
        "db-g1-small",
        "ENTERPRISE",
        "ZONAL",
    )
    assert (settings["diskType"], settings["diskSize"], settings["diskAutoresize"]) == ("PD_SSD", 10, True)
    assert settings["locationPreference"] == {"zone": "us-central1-a"}  # beside the head
    assert db["ignoreChanges"] == ["settings.diskSize"]  # Cloud SQL grows the disk: no later apply shrinks it back
    ip = settings["ipConfiguration"]
    assert ip == {
        "ipv4Enabled": False,  # no public IP
        "privateNetwork": f"<id of {NAME}-host>",
        "allocatedIpRange": f"<autoname:{NAME}-db-psa>",
    }
    assert settings["backupConfiguration"] == {
        "enabled": True,
        "binaryLogEnabled": True,
        "transactionLogRetentionDays": 7,
        "backupRetentionSettings": {"retainedBackups": 7},
    }
    assert settings["databaseFlags"] == [{"name": "innodb_lock_wait_timeout", "value": "900"}]
    # `pulumi destroy` deletes it, as the AWS one: neither the provider's guard nor the API's
    assert inputs["deletionProtection"] is False and settings["deletionProtectionEnabled"] is False
    database = one(plan, "sql/database:Database")["inputs"]
    assert (database["name"], database["instance"]) == ("slurm_acct_db", f"<autoname:{NAME}-db>")
    user = one(plan, "sql/user:User")["inputs"]
    assert (user["name"], user["instance"], user["password"]) == ("slurm", f"<autoname:{NAME}-db>", "[secret]")


def test_private_services_access_takes_a_24_clear_of_the_cluster_on_its_own_vpc(plan):
    psa = one(plan, "compute/globalAddress:GlobalAddress")["inputs"]
    assert (psa["purpose"], psa["addressType"], psa["address"], psa["prefixLength"]) == (
        "VPC_PEERING",
        "INTERNAL",
        "172.31.255.0",
        24,
    )
    assert psa["network"] == f"<id of {NAME}-host>"
    connection = one(plan, "servicenetworking/connection:Connection")["inputs"]
    assert connection == {
        "network": f"<id of {NAME}-host>",
        "service": "servicenetworking.googleapis.com",
        "reservedPeeringRanges": [f"<autoname:{NAME}-db-psa>"],
    }
    # the cluster's subnets are those of a cluster without accounting
    plain = by_name(plan_values(gcp_values(scheduler="slurm", login={}), stack="acct"), "compute/subnetwork:Subnetwork")
    assert by_name(plan, "compute/subnetwork:Subnetwork") == plain


def test_the_range_moves_on_when_the_cluster_takes_the_first_candidate():
    moved = plan_values(values(network={"cidr": "172.31.0.0/16"}), stack="acct")
    assert one(moved, "compute/globalAddress:GlobalAddress")["inputs"]["address"] == "192.168.255.0"
    assert peering_range(["10.0.0.0/24", "10.1.0.0/24"], ("10.0.0.0/16",)) == "10.1.0.0/24"
    assert peering_range(["10.0.0.0/24"], ("10.0.0.0/8",)) is None


def test_only_the_head_s_own_account_reads_the_password(plan):
    assert one(plan, "randomPassword:RandomPassword")["inputs"] == {"length": 32, "special": False}
    secret = by_name(plan, "secretmanager/secret:Secret")[f"{NAME}-db-password"]
    assert secret["secretId"] == SECRET_ID
    assert secret["replication"] == {"userManaged": {"replicas": [{"location": "us-central1"}]}}
    version = by_name(plan, "secretmanager/secretVersion:SecretVersion")[f"{NAME}-db-password-version"]
    assert version == {"secret": f"<id of {NAME}-db-password>", "secretData": "[secret]"}
    grants = by_name(plan, "secretmanager/secretIamMember:SecretIamMember")
    readers = {n: g for n, g in grants.items() if g["secretId"] == f"<id of {NAME}-db-password>"}
    assert readers == {
        f"{NAME}-db-password-head-reader": {
            "secretId": f"<id of {NAME}-db-password>",
            "project": "my-gpu-project",
            "role": "roles/secretmanager.secretAccessor",
            "member": f"serviceAccount:<email of {NAME}-head-sa>",
        }
    }
    accounts = by_name(plan, "serviceaccount/account:Account")
    assert accounts[f"{NAME}-head-sa"]["accountId"] == "acct-head"
    assert "reads the accounting database's password" in accounts[f"{NAME}-head-sa"]["description"]
    instances = by_name(plan, "compute/instance:Instance")
    assert instances[f"{NAME}-head"]["serviceAccount"]["email"] == f"<email of {NAME}-head-sa>"
    # the login node (and the GPU nodes' template) keep the nodes' account: they cannot read the password
    assert instances[f"{NAME}-login"]["serviceAccount"]["email"] == f"<email of {NAME}-sa>"
    # the head still reads the MUNGE key, under its own account
    assert grants[f"{NAME}-munge-key-head-reader"]["member"] == f"serviceAccount:<email of {NAME}-head-sa>"


def test_the_head_runs_slurmdbd_with_the_database_address_and_never_the_password(plan):
    script = by_name(plan, "compute/instance:Instance")[f"{NAME}-head"]["metadata"]["startup-script"]
    assert f"StorageHost=<private ip of {NAME}-db>\n" in script and DB_HOST_PLACEHOLDER not in script
    assert f"StoragePass={DB_PASSWORD_TOKEN}\n" in script  # the head puts the password in at boot
    assert DBD_TEMPLATE in script and DB_PASSWORD_ENV in script
    assert env_of(script, "db-password") == {
        "DB_PASSWORD_SECRET": f"projects/my-gpu-project/secrets/{SECRET_ID}",
        "METADATA_TOKEN_URL": "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token",
        "SECRET_MANAGER_URL": "https://secretmanager.googleapis.com/v1",
    }
    assert "gpu-cluster-db-password: " in script and "secret_field()" in script  # the GCP hook, its library inlined
    assert "[secret]" not in script


def test_outputs_and_bill_name_the_database(plan):
    out = plan.run.outputs["slurm"]["accounting"]
    assert out["service"] == "Cloud SQL for MySQL"
    assert out["address"] == f"<private ip of {NAME}-db>" and out["passwordSecret"] == f"<id of {NAME}-db-password>"
    items = {i["item"]: i for i in plan.as_json()["summary"]["costs"]["items"]}
    assert items["accountingDatabase"]["hourly"] == 0.035 and items["accountingDatabase"]["per"] == "stack"
    assert items["accountingDatabaseStorage"]["price"] == "0.17/GB-month x 10 GB"


def test_policies_pass(plan):
    assert plan.violations() == []


def test_without_accounting_nothing_of_it_is_planned():
    plain = plan_values(gcp_values(scheduler="slurm", login={}), stack="acct")
    assert not resources_of(plain, "sql/") and not resources_of(plain, "servicenetworking/")
    assert f"{NAME}-head-sa" not in by_name(plain, "serviceaccount/account:Account")
    assert "accounting" not in plain.run.outputs["slurm"]


def test_with_elastic_partitions_the_head_keeps_one_account_of_its_own():
    both = plan_values(
        values(nodes=0, slurm={"accounting": True, "partitions": [{"name": "l4", "maxNodes": 2}]}), stack="acct"
    )
    accounts = by_name(both, "serviceaccount/account:Account")
    assert sorted(accounts) == [f"{NAME}-head-sa", f"{NAME}-sa"]
    assert "creates and deletes the GPU nodes" in accounts[f"{NAME}-head-sa"]["description"]
    readers = by_name(both, "secretmanager/secretIamMember:SecretIamMember")
    assert readers[f"{NAME}-db-password-head-reader"]["member"] == f"serviceAccount:<email of {NAME}-head-sa>"


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        (
            {
                "network": {
                    "cidr": "10.8.0.0/20",
                    "existing": {
                        "vpcId": "projects/host-prj/global/networks/shared",
                        "subnetIds": ["projects/host-prj/regions/us-central1/subnetworks/nodes"],
                    },
                }
            },
            "slurm.accounting",
            "network.existing",
        ),
        ({"storage": {"shared": {"kind": "lustre"}}}, "slurm.accounting", "Managed Lustre"),
    ],
    ids=["existing-network", "managed-lustre"],
)
def test_what_is_not_built_is_refused_with_its_key(extra, key, words):
    with pytest.raises(ConfigError) as info:
        gcp_plan(spec_of(values(**extra)))
    assert info.value.key == f"gpu-cluster:cluster.{key}" and words in str(info.value)


# --- the password hook, against stubs -----------------------------------------------------------------------------


def _hook(tmp_path: Path, token_answer: str, access_answer: str, access_exit: int = 0, hook: Path = HOOK):
    env = (
        'DB_PASSWORD_SECRET="projects/p/secrets/pw"\n'
        'METADATA_TOKEN_URL="http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"\n'
        'SECRET_MANAGER_URL="https://secretmanager.googleapis.com/v1"\n'
    )
    return run_gcp_secret_hook(tmp_path, hook, env, token_answer, access_answer, access_exit)


@pytest.mark.parametrize("rendered", [False, True], ids=["beside-its-library", "as-a-node-gets-it"])
def test_hook_prints_the_decoded_password_read_with_the_metadata_token(tmp_path, rendered):
    password = "Pa55w0rdLettersAndDigits12345678"
    payload = base64.b64encode(password.encode()).decode()
    access = f'{{\n  "name": "projects/1/secrets/pw/versions/1",\n  "payload": {{\n    "data": "{payload}"\n  }}\n}}'
    hook = rendered_hook(tmp_path, HOOK.name, "munge_key_bearer.sh", "secret_field") if rendered else HOOK
    proc, calls, sent = _hook(tmp_path, '{"access_token":"ya29.TOKEN"}', access, hook=hook)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == password  # the password alone, decoded: slurm_dbd.sh puts it into slurmdbd.conf
    assert calls[1].endswith(
        "-H @- https://secretmanager.googleapis.com/v1/projects/p/secrets/pw/versions/latest:access"
    )
    assert sent == "Authorization: Bearer ya29.TOKEN\n"  # the token on stdin, never in argv
    assert "ya29" not in "\n".join(calls) + proc.stderr and password not in proc.stderr and payload not in proc.stderr


def test_hook_fails_clearly_without_a_token_or_without_access(tmp_path):
    proc, calls, _ = _hook(tmp_path, "{}", "")
    assert proc.returncode == 1 and proc.stdout == "" and "without an access_token" in proc.stderr and len(calls) == 1
    other = tmp_path / "second"
    other.mkdir()
    proc, _, _ = _hook(other, '{"access_token":"T"}', '{"error": {"code": 403}}', access_exit=22)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "reading projects/p/secrets/pw failed" in proc.stderr


def test_hook_is_shellcheck_clean():
    assert_shellcheck_clean(HOOK)


def test_with_encryption_key_the_database_keeps_google_s_key_and_the_plan_says_so():
    keyed = plan_values(values(encryption={"key": "auto"}), stack="acct")
    assert "encryptionKeyName" not in one(keyed, "sql/databaseInstance:DatabaseInstance")["inputs"]
    assert any(w.startswith("encryption.key: the Slurm accounting database") for w in keyed.warnings())
    plain = plan_values(gcp_values(scheduler="slurm", login={}, encryption={"key": "auto"}), stack="acct")
    assert not any("accounting database" in w for w in plain.warnings())
