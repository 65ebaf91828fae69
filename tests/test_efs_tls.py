"""EFS encrypted in transit and enforced by the file system, as registered with Pulumi's mocks.

The nodes mount through a local stunnel TLS tunnel (bootstrap/mounts_efs_tls.sh, run here from the rendered user
data against stubbed commands); the file system's policy (catalog/storage/aws.yaml `fileSystemPolicy`) denies every
request where aws:SecureTransport is false and allows the clients that come through a mount target; the plan says
so (inTransit), the profile's in-transit rule passes, and the diff says what the policy does to nodes mounted
before it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from components.catalog import storage
from components.cli import app
from components.diff.engine import diff_plans
from components.plan import load_stack
from components.policy import Resource
from components.policy.transit import enforced, in_transit

from .conftest import ROOT, aws_values, one, plan_values, resources_of
from .test_aws_resources import decode_user_data
from .test_mounts_script import run, stunnel_conf

POLICY = "aws:efs/fileSystemPolicy:FileSystemPolicy"
ACTIONS = {"elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite", "elasticfilesystem:ClientRootAccess"}


@pytest.fixture(scope="module")
def efs():
    return plan_values(aws_values(storage={"shared": {"kind": "nfs", "retain": False}}))


def _files(user_data: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in yaml.safe_load(user_data)["write_files"]}


def _env(text: str) -> dict[str, str]:
    """A KEY="value" EnvironmentFile (bootstrap.env_file: JSON quoting)."""
    return {k: json.loads(v) for k, v in (line.split("=", 1) for line in text.splitlines() if line)}


def test_the_file_system_policy_denies_without_tls_and_allows_the_mount_targets_clients(efs):
    res = one(efs, "efs/fileSystemPolicy:FileSystemPolicy")
    fs = one(efs, "efs/fileSystem:FileSystem")
    assert res["parent"] == fs["parent"] and res["parent"].endswith("gpu-cluster:aws:Cluster::test-aws")
    assert res["inputs"]["fileSystemId"] == "<id of test-aws-shared>"
    assert "bypassPolicyLockoutSafetyCheck" not in res["inputs"]  # the API's lockout check stays on
    doc = json.loads(res["inputs"]["policy"])
    assert doc["Version"] == "2012-10-17"
    deny = [s for s in doc["Statement"] if s["Effect"] == "Deny"]
    allow = [s for s in doc["Statement"] if s["Effect"] == "Allow"]
    assert deny == [
        {
            "Sid": "DenyWithoutTls",
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Action": "*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            "Resource": "<arn of test-aws-shared>",
        }
    ]
    # a policy replaces EFS's default one (full access through a mount target): the nodes keep it, over TLS only
    assert len(allow) == 1 and set(allow[0]["Action"]) == ACTIONS and allow[0]["Principal"] == {"AWS": "*"}
    assert allow[0]["Condition"] == {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}}
    assert allow[0]["Resource"] == "<arn of test-aws-shared>"


def test_the_policy_goes_with_the_tls_mount_and_only_with_efs(stack_plan):
    # the data holds them together: a TLS-only policy with plain mounts would lock every node out
    nfs = storage.load("aws").services["nfs"]  # type: ignore[union-attr]
    assert nfs.data["fileSystemPolicy"]["statements"] and nfs.client["install"] == "efs-stunnel-apt"
    assert nfs.data["mount"]["tls"] == "stunnel" and "port=20049" in nfs.options.split(",")
    assert "stunnel4" in nfs.client["packages"].split() and "nfs-common" in nfs.client["packages"].split()
    assert not resources_of(stack_plan("aws-h100"), "efs/fileSystemPolicy")  # FSx for Lustre: no EFS, no policy
    existing = plan_values(aws_values(storage={"shared": {"kind": "existing", "existing": "10.0.0.5:/export"}}))
    assert not resources_of(existing, "efs/")


def test_the_rendered_user_data_tunnels_to_the_file_systems_dns_name(efs, tmp_path):
    files = _files(decode_user_data(one(efs, "launchTemplate:LaunchTemplate")["inputs"]["userData"]))
    env = _env(files["/etc/gpu-cluster/mounts.env"])
    dns = efs.run.outputs["sharedFilesystem"]["mount"].split(":", 1)[0]
    assert dns == "<dns name of test-aws-shared>"  # the mocks' answer for the file system's dns_name
    assert env["MOUNT_SOURCE"] == f"{dns}:/"  # SOURCE_PLACEHOLDER substituted at deploy
    # the node's own script and settings, run against stubs (paths under tmp_path)
    settings = {**env, "MOUNT_PATH": str(tmp_path / "shared"), "RESULT": str(tmp_path / "mounts.json")}
    proc, calls = run(
        tmp_path,
        installed=False,
        script=files["/usr/local/sbin/gpu-cluster-mounts"],
        TLS_CONF=str(tmp_path / "efs-tls.conf"),
        **settings,
    )
    assert proc.returncode == 0, proc.stderr
    conf = stunnel_conf((tmp_path / "efs-tls.conf").read_text())
    assert conf["checkHost"] == [dns] and conf["connect"] == [f"{dns}:2049"]
    assert conf["accept"] == ["127.0.0.1:20049"] and conf["verifyChain"] == ["yes"]
    assert conf["sslVersion"] == ["TLSv1.2"]
    mounts = [c for c in calls if c.startswith("mount ")]
    assert mounts == [f"mount -t nfs4 -o {env['MOUNT_OPTIONS']} 127.0.0.1:/ {tmp_path}/shared"]
    assert env["MOUNT_OPTIONS"].endswith(",noresvport,port=20049")
    assert "Requires=gpu-cluster-efs-tls.service" in (tmp_path / "units" / "shared.mount").read_text()


def _nfs_stack(tmp_path: Path) -> Path:
    values = copy.deepcopy(load_stack(ROOT, "aws-h100-cmk").values)
    values["gpu-cluster:cluster"]["storage"]["shared"] = {"kind": "nfs", "path": "/shared"}
    values["gpu-cluster:cluster"]["compliance"] = "mlps3"
    path = tmp_path / "Pulumi.efs-tls.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    return path


@pytest.fixture(scope="module")
def efs_plan(tmp_path_factory) -> dict[str, Any]:
    stack = _nfs_stack(tmp_path_factory.mktemp("efs"))
    out = CliRunner().invoke(app, ["plan", "--config", str(stack), "--format", "json"])
    assert out.exit_code == 0, out.output
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def test_a_stack_with_efs_plans_the_policy_and_says_encrypted_and_enforced(efs_plan):
    policies = [r for r in efs_plan["resources"] if r["type"] == POLICY]
    assert len(policies) == 1 and policies[0]["inputs"]["fileSystemId"] == "<id of h100-cmk-aws-shared>"
    shared = efs_plan["summary"]["inTransit"]["sharedStorage"]
    assert (shared["kind"], shared["inTransit"], shared["enforced"]) == ("nfs", "used", True)
    # the Slurm head and login nodes mount it the same way: the same client in every user data that mounts it
    clients = [r for r in efs_plan["resources"] if r["type"] == "aws:ec2/instance:Instance"]
    assert clients
    for r in clients:
        raw = r["inputs"].get("userData") or decode_user_data(r["inputs"]["userDataBase64"])
        assert 'CLIENT="efs-stunnel-apt"' in raw and "127.0.0.1:$export_path" in raw, r["name"]


def test_the_profiles_in_transit_rule_passes_for_a_stack_with_efs(efs_plan):
    compliance = efs_plan["summary"]["compliance"]
    rules = {r["rule"]: r for r in compliance["rules"]}
    assert rules["in-transit"]["result"] == "pass" and rules["in-transit"]["level"] == "mandatory"
    assert compliance["passed"], [r for r in compliance["rules"] if r["result"] == "fail"]


def test_enforced_reads_the_registered_policy():
    deny = {"Effect": "Deny", "Action": "*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    allow = {"Effect": "Allow", "Action": ["elasticfilesystem:ClientMount"], "Principal": {"AWS": "*"}}

    def policy(*statements: dict[str, Any]) -> list[Resource]:
        return [Resource(POLICY, {"policy": json.dumps({"Statement": list(statements)})}, "urn:p", "p")]

    assert enforced(policy(allow, deny), POLICY)
    assert not enforced(policy(allow), POLICY)  # an Allow alone does not refuse plain NFS
    assert not enforced(policy({**deny, "Action": "elasticfilesystem:ClientWrite"}), POLICY)  # writes only
    assert not enforced(policy({**deny, "Condition": {"Bool": {"aws:SecureTransport": "true"}}}), POLICY)
    assert not enforced([], POLICY) and not enforced([Resource(POLICY, {"policy": "<unknown>"}, "u", "p")], POLICY)


def test_no_policy_registered_says_not_enforced(efs):
    resources = [Resource(r.type, r.inputs, r.urn, r.name) for r in efs.resources if r.type != POLICY]
    shared = in_transit("aws", resources, shared_kind="nfs")["sharedStorage"]
    assert shared["inTransit"] == "used" and shared["enforced"] is False


# --- the diff: the policy added to a file system the nodes already mount ---


def _without_policy(doc: dict[str, Any]) -> dict[str, Any]:
    old = copy.deepcopy(doc)
    old["resources"] = [r for r in old["resources"] if r["type"] != POLICY]
    return old


def test_the_diff_says_nodes_mounted_without_tls_are_cut_off(efs_plan):
    diff = diff_plans(_without_policy(efs_plan), efs_plan)
    assert [u for u in diff.created if POLICY in u] and len(diff.created) == 1
    found = [w for w in diff.warnings if w.startswith("DISRUPTION: creates " + POLICY)]
    assert found == [
        f"DISRUPTION: creates {POLICY} `h100-cmk-aws-shared-policy`: from when it takes effect (within minutes), "
        "EFS refuses NFS without TLS: running nodes that mounted the file system before the TLS tunnel (their user "
        "data is older) lose it at their next connection (a reconnect, a remount, a reboot) until they are replaced "
        "(an instance refresh) with the new user data, which mounts through the tunnel"
    ]


def test_the_diff_is_quiet_where_nothing_mounted_the_file_system_before(efs_plan):
    # a new stack, or a file system created with its policy: no node ever mounted it without TLS
    assert not [w for w in diff_plans(None, efs_plan).warnings if "creates" in w]
    old = copy.deepcopy(efs_plan)
    old["resources"] = [r for r in old["resources"] if not r["type"].startswith("aws:efs/")]
    assert not [w for w in diff_plans(old, efs_plan).warnings if w.startswith("DISRUPTION: creates")]


def test_the_policy_rule_updates_in_place_and_replaces_on_another_file_system(efs_plan):
    new = copy.deepcopy(efs_plan)
    policy = next(r for r in new["resources"] if r["type"] == POLICY)
    policy["inputs"]["policy"] = policy["inputs"]["policy"].replace("DenyWithoutTls", "DenyPlainNfs")
    diff = diff_plans(efs_plan, new)
    assert [c.verdict for c in diff.changed] == ["update"]
    policy["inputs"]["fileSystemId"] = "<id of another>"
    assert [c.verdict for c in diff_plans(efs_plan, new).changed] == ["replace"]
