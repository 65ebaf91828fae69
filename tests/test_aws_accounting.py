"""slurm.accounting on AWS, through the offline plan: RDS for MySQL (private, encrypted, in two database subnets of a
secondary VPC block), its password in Secrets Manager readable only by the head's own role, slurmdbd in the head's user
data with the database's address filled in, the login node's sacct reaching slurmdbd; and the head's scripts."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from components.bootstrap.slurm import DB_PASSWORD_ENV, DBD_TEMPLATE, head_parts
from components.bootstrap.slurm_conf import DB_HOST_PLACEHOLDER, DB_PASSWORD_TOKEN
from components.layout.aws.accounting import AwsAccounting
from components.layout.slurm import slurm_layout

from .conftest import aws_values, one, plan_values, resources_of, spec_of
from .hook_helpers import run_aws_secret_hook
from .test_slurm_scripts import part_env

HERE = Path(__file__).resolve().parent.parent / "components" / "bootstrap"
NAME = "acct-aws"


def values(**cluster):
    return aws_values(scheduler="slurm", slurm={"accounting": True}, login={}, **cluster)


@pytest.fixture(scope="module")
def plan():
    return plan_values(values(), stack="acct")


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


def decoded(b64: str) -> str:
    return gzip.decompress(base64.b64decode(b64)).decode()


def written(user_data: str) -> dict[str, dict]:
    doc = yaml.safe_load(user_data.removeprefix("#cloud-config\n"))
    return {f["path"]: f for f in doc["write_files"]}


def test_the_database_is_private_encrypted_backed_up_and_in_its_own_subnets(plan):
    db = one(plan, "rds/instance:Instance")["inputs"]
    assert (db["engine"], db["engineVersion"], db["instanceClass"]) == ("mysql", "8.0", "db.t4g.micro")
    assert db["autoMinorVersionUpgrade"] is True  # engine_version is a major version
    assert db["publiclyAccessible"] is False and db["multiAz"] is False
    assert db["storageEncrypted"] is True and "kmsKeyId" not in db  # RDS's default key without encryption.key
    assert (db["storageType"], db["allocatedStorage"], db["backupRetentionPeriod"]) == ("gp3", 20, 7)
    assert db["skipFinalSnapshot"] is True and db["deletionProtection"] is False
    assert (db["dbName"], db["username"], db["port"]) == ("slurm_acct_db", "slurm", 3306)
    assert db["password"] == "[secret]"
    assert db["dbSubnetGroupName"] == f"<autoname:{NAME}-db-subnets>"
    assert db["vpcSecurityGroupIds"] == [f"<id of {NAME}-db-sg>"]
    assert db["parameterGroupName"] == f"<autoname:{NAME}-db-params>"
    params = one(plan, "rds/parameterGroup:ParameterGroup")["inputs"]
    assert params["family"] == "mysql8.0"
    assert [(p["name"], p["value"]) for p in params["parameters"]] == [("innodb_lock_wait_timeout", "900")]


def test_two_database_subnets_in_two_zones_come_from_a_secondary_block_and_no_subnet_moves(plan):
    block = one(plan, "VpcIpv4CidrBlockAssociation")["inputs"]
    assert block == {"vpcId": f"<id of {NAME}-vpc>", "cidrBlock": "100.64.0.0/27"}
    group = one(plan, "rds/subnetGroup:SubnetGroup")["inputs"]
    assert group["subnetIds"] == [f"<id of {NAME}-db-0>", f"<id of {NAME}-db-1>"]
    subnets = by_name(plan, "ec2/subnet:Subnet")
    db0, db1 = subnets[f"{NAME}-db-0"], subnets[f"{NAME}-db-1"]
    assert (db0["cidrBlock"], db1["cidrBlock"]) == ("100.64.0.0/28", "100.64.0.16/28")
    assert db0["availabilityZone"] == "us-east-1a" and db1["availabilityZone"] != "us-east-1a"
    assert db0["mapPublicIpOnLaunch"] is False and db1["mapPublicIpOnLaunch"] is False
    # the cluster's own subnets: the same CIDRs as without accounting
    plain = by_name(plan_values(aws_values(scheduler="slurm", login={}), stack="acct"), "ec2/subnet:Subnet")
    assert {n: s["cidrBlock"] for n, s in subnets.items() if n in plain} == {
        n: s["cidrBlock"] for n, s in plain.items()
    }
    assert set(subnets) - set(plain) == {f"{NAME}-db-0", f"{NAME}-db-1"}


def test_only_the_head_reaches_mysql_and_only_the_login_node_reaches_slurmdbd(plan):
    rules = by_name(plan, "SecurityGroupIngressRule")
    into_db = {n: r for n, r in rules.items() if r["securityGroupId"] == f"<id of {NAME}-db-sg>"}
    assert into_db == {
        f"{NAME}-db-sg-mysql-from-head": {
            "securityGroupId": f"<id of {NAME}-db-sg>",
            "referencedSecurityGroupId": f"<id of {NAME}-head-sg>",
            "ipProtocol": "tcp",
            "fromPort": 3306,
            "toPort": 3306,
            "description": "MySQL from slurmdbd on the Slurm head node",
        }
    }
    dbd = rules[f"{NAME}-head-sg-slurmdbd-from-login"]
    assert (dbd["referencedSecurityGroupId"], dbd["fromPort"], dbd["toPort"]) == (
        f"<id of {NAME}-login-sg>",
        6819,
        6819,
    )
    assert not any("egress" in n for n in into_db)


def test_the_password_is_a_secret_only_the_head_s_own_role_may_read(plan):
    password = one(plan, "randomPassword:RandomPassword")["inputs"]
    assert password == {"length": 32, "special": False}
    secrets = by_name(plan, "secretsmanager/secret:Secret")
    assert secrets[f"{NAME}-db-password"]["name"] == "gpu-cluster/acct/acct/slurmdbd-password"
    policies = by_name(plan, "iam/rolePolicy:RolePolicy")
    readers = {n: json.loads(p["policy"]) for n, p in policies.items() if f"{NAME}-db-password>" in p["policy"]}
    assert list(readers) == [f"{NAME}-head-role-db-password"]
    assert readers[f"{NAME}-head-role-db-password"]["Statement"] == [
        {
            "Sid": "ReadOwnDbPassword",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": f"<arn of {NAME}-db-password>",
        }
    ]
    assert policies[f"{NAME}-head-role-db-password"]["role"] == f"<autoname:{NAME}-head-node-role>"
    # the head carries its own profile: the GPU nodes and the login node cannot read the password
    instances = by_name(plan, "ec2/instance:Instance")
    assert instances[f"{NAME}-head"]["iamInstanceProfile"] == f"<autoname:{NAME}-head-node-profile>"
    assert instances[f"{NAME}-login"]["iamInstanceProfile"] != instances[f"{NAME}-head"]["iamInstanceProfile"]


def test_the_head_runs_slurmdbd_with_the_database_address_and_never_the_password(plan):
    head = by_name(plan, "ec2/instance:Instance")[f"{NAME}-head"]
    text = decoded(head["userDataBase64"])
    files = written(text)
    dbd = files[DBD_TEMPLATE]
    assert dbd["permissions"] == "0600"
    assert f"StorageHost=<address of {NAME}-db>\n" in dbd["content"] and DB_HOST_PLACEHOLDER not in text
    assert f"StoragePass={DB_PASSWORD_TOKEN}\n" in dbd["content"]  # the head puts the password in at boot
    assert "StorageType=accounting_storage/mysql\n" in dbd["content"] and "StorageLoc=slurm_acct_db\n" in dbd["content"]
    env = files[DB_PASSWORD_ENV]
    assert (
        env["permissions"] == "0600"
        and env["content"] == 'DB_PASSWORD_SECRET_ID="gpu-cluster/acct/acct/slurmdbd-password"\n'
    )
    conf = files["/etc/gpu-cluster/slurm/slurm.conf"]["content"]
    assert "AccountingStorageType=accounting_storage/slurmdbd\n" in conf
    assert "JobAcctGatherType=jobacct_gather/linux\n" in conf and "AccountingStoragePort=6819\n" in conf
    assert "slurm-smd-slurmdbd" in files["/etc/gpu-cluster/slurm-head.env"]["content"]
    assert "WantedBy=slurmctld.service" in files["/etc/systemd/system/gpu-cluster-slurmdbd.service"]["content"]
    # the head's boot waits for the database (its address is in the user data), and the password is in no input
    assert "[secret]" not in text


def test_encryption_key_encrypts_the_database_and_its_secret():
    plan = plan_values(values(encryption={"key": "auto"}), stack="acct")
    db = one(plan, "rds/instance:Instance")["inputs"]
    key = one(plan, "kms/key:Key")["name"]
    assert db["storageEncrypted"] is True and db["kmsKeyId"] == f"<arn of {key}>"
    assert by_name(plan, "secretsmanager/secret:Secret")[f"{NAME}-db-password"]["kmsKeyId"] == f"<arn of {key}>"


def test_outputs_and_bill_name_the_database(plan):
    out = plan.run.outputs["slurm"]["accounting"]
    assert out["address"] == f"<address of {NAME}-db>" and out["passwordSecret"] == f"<arn of {NAME}-db-password>"
    items = {i["item"]: i for i in plan.as_json()["summary"]["costs"]["items"]}
    assert items["accountingDatabase"]["hourly"] == 0.016 and items["accountingDatabase"]["per"] == "stack"
    assert items["accountingDatabaseStorage"]["price"] == "0.115/GB-month x 20 GB"


def test_policies_pass(plan):
    assert plan.violations() == []


def test_without_accounting_nothing_of_it_is_planned():
    plain = plan_values(aws_values(scheduler="slurm", login={}), stack="acct")
    assert not resources_of(plain, "rds/") and not resources_of(plain, "VpcIpv4CidrBlockAssociation")
    head = by_name(plain, "ec2/instance:Instance")[f"{NAME}-head"]
    assert "gpu-cluster-slurmdbd" not in decoded(head["userDataBase64"])
    assert "accounting" not in plain.run.outputs["slurm"]


def layout():
    out = slurm_layout(spec_of(values()))
    assert out is not None and out.accounting is not None
    return out


def test_slurmdbd_is_a_oneshot_slurmctld_pulls_in_and_waits_for_the_head_s_script_unchanged():
    from components.bootstrap import script
    from components.layout.aws.accounting import plan as accounting_plan

    lay = layout()
    acct = accounting_plan(spec_of(values()))
    assert isinstance(acct, AwsAccounting)
    parts = head_parts(lay, key_hook="#!/bin/bash\n", conf_hook="", dbd=acct.hook)
    names = [p.name for p in parts]
    assert names.index("slurmdbd") < names.index("slurm-head")  # enabled before the head starts slurmctld
    dbd = next(p for p in parts if p.name == "slurmdbd")
    files = {f.path: f for f in dbd.files}
    unit = files["/etc/systemd/system/gpu-cluster-slurmdbd.service"].content
    assert "Before=slurmctld.service\n" in unit and "WantedBy=slurmctld.service\n" in unit
    assert "Type=oneshot\n" in unit and "ExecStart=/usr/local/sbin/gpu-cluster-slurmdbd\n" in unit
    assert dbd.commands == (("systemctl", "daemon-reload"), ("systemctl", "enable", "gpu-cluster-slurmdbd.service"))
    assert files["/usr/local/sbin/gpu-cluster-slurmdbd"].content == script("slurm_dbd.sh")
    assert files["/usr/local/sbin/gpu-cluster-db-password"].content == script("aws_db_password.sh")
    assert (files[DBD_TEMPLATE].permissions, files[DB_PASSWORD_ENV].permissions) == ("0600", "0600")
    # the head's own script and its unit are those of a cluster without accounting; only its packages grow
    plain = slurm_layout(spec_of(aws_values(scheduler="slurm", login={})))
    assert plain is not None
    plain_head = next(p for p in head_parts(plain, key_hook="#!/bin/bash\n", conf_hook="") if p.name == "slurm-head")
    head = next(p for p in parts if p.name == "slurm-head")
    assert part_env(parts, "slurm-head")["SLURM_PACKAGES"].endswith(" slurm-smd-slurmdbd")
    same = {f.path: f.content for f in plain_head.files if not f.path.endswith(".env") and "/slurm/" not in f.path}
    assert {f.path: f.content for f in head.files if f.path in same} == same


def test_slurm_dbd_sh_fills_the_address_writes_the_conf_starts_slurmdbd_and_registers_once(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    stubs = {
        "hostname": 'case "$1" in -s) echo ip-10-46-0-9 ;; -I) echo "10.46.0.9 172.17.0.1" ;; esac',
        "systemctl": f'echo "systemctl $*" >>"{calls}"',
        "chown": f'echo "chown $*" >>"{calls}"',
        # the cluster is not there the first time: it is added
        "sacctmgr": f'echo "sacctmgr $*" >>"{calls}"; case "$*" in *show*) echo "" ;; esac',
        "hook": "printf 'pa55word\\n'",
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    conf_dir = tmp_path / "etc"
    conf_dir.mkdir()
    (conf_dir / "slurm.conf").write_text("AccountingStorageHost=@@GPU_CLUSTER_HEAD_ADDRESS@@\n")
    lay = layout()
    assert lay.slurmdbd_conf is not None
    template = tmp_path / "template"
    template.write_text(lay.slurmdbd_conf.replace(DB_HOST_PLACEHOLDER, "db.example"))
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "DBD_TEMPLATE": str(template),
           "DB_PASSWORD_HOOK": str(bin_dir / "hook"), "CONF_DIR": str(conf_dir), "CLUSTER_NAME": "acct",
           "RETRY_SECONDS": "0"}  # fmt: skip
    proc = subprocess.run(["bash", str(HERE / "slurm_dbd.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "pa55word" not in proc.stdout + proc.stderr + calls.read_text()
    assert (conf_dir / "slurm.conf").read_text() == "AccountingStorageHost=10.46.0.9\n"
    dbd = (conf_dir / "slurmdbd.conf").read_text()
    assert "StoragePass=pa55word\n" in dbd and "DbdHost=ip-10-46-0-9\n" in dbd and "StorageHost=db.example\n" in dbd
    assert oct((conf_dir / "slurmdbd.conf").stat().st_mode & 0o777) == "0o600"
    lines = calls.read_text().splitlines()
    assert lines[0] == f"chown slurm:slurm {conf_dir}/slurmdbd.conf.new"
    assert lines[1:] == [
        "systemctl enable slurmdbd",
        "systemctl restart slurmdbd",
        "sacctmgr --noheader --parsable2 show cluster acct format=cluster",
        "sacctmgr --immediate add cluster acct",
    ]


def test_the_aws_password_hook_reads_its_secret_by_name_in_the_instance_region(tmp_path):
    proc, calls = run_aws_secret_hook(
        tmp_path, HERE / "aws_db_password.sh", 'DB_PASSWORD_SECRET_ID="gpu-cluster/s/c/slurmdbd-password"', "s3cr3t"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "s3cr3t\n"  # the password alone on stdout
    assert calls == [
        "secretsmanager", "get-secret-value", "--region", "us-east-1", "--secret-id",
        "gpu-cluster/s/c/slurmdbd-password", "--query", "SecretString", "--output", "text",
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["slurm_dbd.sh", "aws_db_password.sh"])
def test_shellcheck_clean(name):
    proc = subprocess.run(["shellcheck", "-x", str(HERE / name)], capture_output=True, text=True, cwd=HERE)
    assert proc.returncode == 0, proc.stdout


def test_the_diff_keeps_the_database_on_a_later_change_and_says_data_loss_when_accounting_goes_off():
    from components.diff import diff_plans

    from .conftest import plan_json

    on = plan_json(plan_values(values(), stack="acct"))
    # a later change of the cluster (here its tags and the head's type) updates the database at most in place
    changed = aws_values(
        scheduler="slurm", login={}, tags={"team": "day2"},
        slurm={"accounting": True, "headInstanceType": "m7i.xlarge"},
    )  # fmt: skip
    later = plan_json(plan_values(changed, stack="acct"))
    d = diff_plans(on, later)
    db = [c for c in d.changed if c.name == f"{NAME}-db"]
    assert all(c.verdict == "update" for c in db), [(c.verdict, c.reasons) for c in db]
    off = plan_json(plan_values(aws_values(scheduler="slurm", slurm={"accounting": False}, login={}), stack="acct"))
    gone = diff_plans(on, off)
    assert any(urn.endswith(f"::{NAME}-db") for urn in gone.deleted)
    assert [c.policy for c in gone.spec_changes if c.key == "cluster.slurm.accounting"] == ["refused"]
    assert any(w.startswith("DATA LOSS") and f"{NAME}-db" in w for w in gone.warnings), gone.warnings
    # and the review says the head restarts
    assert any(f"`{NAME}-head`" in w and "stop/start" in w for w in gone.warnings), gone.warnings
