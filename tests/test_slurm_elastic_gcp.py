"""Elastic Slurm partitions on GCP (slurm.partitions): per partition the instance template the head's resume program
creates nodes from (instances.insert), no group and no GPU instance; the head's own service account, allowed to create
and delete only this cluster's instances (a custom role under an IAM condition) and to run them as the nodes' account;
the channel naming each template. Then the hook scripts against a stubbed curl (the Compute API and the metadata
server), and the day-2 diffs of the shipped stack."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from components.bootstrap.slurm_conf import compute_config_files
from components.diff import diff_plans
from components.errors import ConfigError
from components.layout.gcp import plan as gcp_plan

from .conftest import ROOT, gcp_values, one, plan_json, plan_stack_with, resources_of, spec_of
from .hook_helpers import run_power_program

STACK = "gcp-slurm-elastic"
BOOT = ROOT / "components" / "bootstrap"
NAME = "slurm-elastic-gcp"
ZONE_PATH = "projects/my-gpu-project/zones/us-central1-a"


@pytest.fixture
def plan(stack_plan):
    return stack_plan(STACK)


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


# --- what is registered ---------------------------------------------------------------------------------------------


def test_each_partition_has_its_template_and_no_group_or_gpu_instance_runs(plan):
    assert resources_of(plan, "instanceGroupManager:InstanceGroupManager") == []
    assert resources_of(plan, "instanceFromTemplate:InstanceFromTemplate") == []
    assert sorted(by_name(plan, "compute/instance:Instance")) == [f"{NAME}-head", f"{NAME}-login"]
    templates = by_name(plan, "InstanceTemplate")
    assert sorted(templates) == [f"{NAME}-a3mega-template", f"{NAME}-l4-template"]
    a3, l4 = templates[f"{NAME}-a3mega-template"], templates[f"{NAME}-l4-template"]
    assert (a3["machineType"], l4["machineType"]) == ("a3-megagpu-8g", "g2-standard-48")
    # a3-mega's 8 GPUDirect-TCPXO NICs on the cluster's 8 GPU VPCs; g2 on the host subnet only
    assert [n["subnetwork"] for n in a3["networkInterfaces"]] == [
        f"<id of {NAME}-nodes>",
        *(f"<id of {NAME}-gpu-{i}-subnet>" for i in range(8)),
    ]
    assert [n["subnetwork"] for n in l4["networkInterfaces"]] == [f"<id of {NAME}-nodes>"]
    assert a3["scheduling"] == {
        "automaticRestart": False, "onHostMaintenance": "TERMINATE", "provisioningModel": "STANDARD",
        "preemptible": False,
    }  # fmt: skip
    # Spot, deleted when reclaimed: Slurm launches the node again under its name
    assert l4["scheduling"] == {
        "automaticRestart": False, "onHostMaintenance": "TERMINATE", "provisioningModel": "SPOT",
        "instanceTerminationAction": "DELETE", "preemptible": True,
    }  # fmt: skip
    assert a3["resourcePolicies"] == f"<self link of {NAME}-a3mega-placement>"
    assert l4["resourcePolicies"] == f"<self link of {NAME}-l4-placement>"
    policies = by_name(plan, "resourcePolicy:ResourcePolicy")
    for part in ("a3mega", "l4"):  # no vmCount: nodes are created one by one, as jobs need them
        assert policies[f"{NAME}-{part}-placement"]["groupPlacementPolicy"] == {"collocation": "COLLOCATED"}
    for template in (a3, l4):
        assert template["serviceAccount"] == {"email": f"<email of {NAME}-sa>", "scopes": ["cloud-platform"]}
        script = template["metadata"]["startup-script"]
        assert "NODE_NAME_HOOK=" in script and "instance/name" in script
        assert "gpu-cluster-slurm-leave" not in script  # a CLOUD node is powered down, never deleted from Slurm
        assert "<private ip of slurm-elastic-gcp-head>" in script
    assert resources_of(plan, "healthCheck:HealthCheck") == []  # no group to autoheal


def test_the_head_has_its_own_account_allowed_only_this_clusters_nodes(plan):
    instances = by_name(plan, "compute/instance:Instance")
    assert instances[f"{NAME}-head"]["serviceAccount"]["email"] == f"<email of {NAME}-head-sa>"
    assert instances[f"{NAME}-login"]["serviceAccount"]["email"] == f"<email of {NAME}-sa>"
    role = one(plan, "iAMCustomRole:IAMCustomRole")["inputs"]
    assert role["roleId"] == "gpuCluster_gcp_slurm_elastic_slurm_elastic_slurmPower"
    assert role["permissions"] == [
        "compute.instances.create",
        "compute.instances.delete",
        "compute.instances.get",
        "compute.instances.setMetadata",
        "compute.instances.setLabels",
        "compute.instances.setServiceAccount",
        "compute.disks.create",
        "compute.subnetworks.use",
        "compute.instanceTemplates.useReadOnly",
        "compute.zoneOperations.get",
        "compute.resourcePolicies.use",  # the partitions' compact placement policies
    ]
    members = by_name(plan, "projects/iAMMember:IAMMember")
    power = members[f"{NAME}-head-sa-slurm-power"]
    assert (power["role"], power["member"]) == (
        f"<autoname:{NAME}-head-slurm-power>",
        f"serviceAccount:<email of {NAME}-head-sa>",
    )
    assert power["condition"]["expression"] == (
        '(resource.type != "compute.googleapis.com/Instance" || '
        f'resource.name.startsWith("{ZONE_PATH}/instances/slurm-elastic-")) && '
        '(resource.type != "compute.googleapis.com/Disk" || '
        f'resource.name.startsWith("{ZONE_PATH}/disks/slurm-elastic-"))'
    )
    # what the nodes' account gave the head: the same project roles, and the MUNGE secret
    head_roles = sorted(m["role"] for n, m in members.items() if n.startswith(f"{NAME}-head-sa-") and "power" not in n)
    node_roles = sorted(m["role"] for n, m in members.items() if n.startswith(f"{NAME}-sa-"))
    assert head_roles == node_roles
    readers = by_name(plan, "SecretIamMember")
    assert readers[f"{NAME}-munge-key-head-reader"]["member"] == f"serviceAccount:<email of {NAME}-head-sa>"
    assert readers[f"{NAME}-munge-key-reader"]["member"] == f"serviceAccount:<email of {NAME}-sa>"
    # actAs on the nodes' account only: a binding on that account, not on the project
    act_as = one(plan, "serviceaccount/iAMMember:IAMMember")["inputs"]
    assert act_as == {
        "serviceAccountId": f"projects/my-gpu-project/serviceAccounts/<email of {NAME}-sa>",
        "role": "roles/iam.serviceAccountUser",
        "member": f"serviceAccount:<email of {NAME}-head-sa>",
    }
    assert not [m for m in members.values() if m["role"] == "roles/iam.serviceAccountUser"]


def test_the_channel_names_each_partitions_template_and_the_head_has_the_power_programs(plan):
    item = one(plan, "ProjectMetadataItem")["inputs"]
    files = compute_config_files(item["value"])
    assert files["launch.env"] == (
        f"LAUNCH_a3mega=<self link of {NAME}-a3mega-template>\nLAUNCH_l4=<self link of {NAME}-l4-template>\n"
    )
    assert "NodeName=a3mega-[0-1] CPUs=208" in files["nodes.conf"]
    assert "NodeName=l4-[0-3] Name=gpu Type=l4 File=/dev/nvidia[0-3]" in files["gres.conf"]
    head = by_name(plan, "compute/instance:Instance")[f"{NAME}-head"]["metadata"]["startup-script"]
    for path in ("gpu-cluster-slurm-resume", "gpu-cluster-slurm-suspend", "gpu-cluster-slurm-resume-fail"):
        assert f"/usr/local/sbin/{path}" in head
    assert "sourceInstanceTemplate" in head and 'ZONE="us-central1-a"\nCLUSTER="slurm-elastic"' in head
    assert "a3mega-[0-1]" not in head  # the partitions reach the head through the channel only


def test_the_plan_shows_the_partitions_and_the_power_saving(plan):
    summary = plan.summary()
    assert [(p["name"], p["instanceType"], p["maxNodes"], p["spot"]) for p in summary["partitions"]] == [
        ("a3mega", "a3-megagpu-8g", 2, False),
        ("l4", "g2-standard-48", 4, True),
    ]
    assert plan.run.outputs["slurm"]["powerSaving"].startswith("on: a3mega 0..2, l4 0..4 nodes")
    assert summary["placement"] == "cluster"  # the partitions' compact policies
    usd = summary["costs"]["totals"]["USD"]
    assert usd["hourly"]["minNodes"] == usd["fixedHourly"]
    assert not [v for v in plan.violations() if v.level == "mandatory"]


# --- keyed refusals of the layout -----------------------------------------------------------------------------------


def elastic(partitions: list[dict], **cluster: object) -> dict:
    values = gcp_values(
        gpu=None,
        instanceType="g2-standard-48",
        nodes=0,
        scheduler="slurm",
        slurm={"partitions": partitions},
        network={"cidr": "10.48.0.0/16", "egress": "nat"},
        **cluster,
    )
    values["gpu-cluster:cluster"] = {k: v for k, v in values["gpu-cluster:cluster"].items() if v is not None}
    return values


def refusal(values: dict) -> tuple[str, str]:
    with pytest.raises(ConfigError) as info:
        gcp_plan(spec_of(values))
    return info.value.key, info.value.message


def test_a_partition_whose_fabric_the_clusters_type_does_not_wire_is_refused():
    key, message = refusal(
        elastic([{"name": "l4", "maxNodes": 2}, {"name": "a3", "instanceType": "a3-megagpu-8g", "maxNodes": 2}])
    )
    assert key == "gpu-cluster:cluster.slurm.partitions[1].instanceType"
    assert message.startswith("a3-megagpu-8g has gpudirect-tcpxo, whose GPU VPCs the cluster builds")


def test_a_partition_above_the_compact_placement_cap_is_refused():
    values = elastic([{"name": "l4", "maxNodes": 30}], gcp={"placementMaxDistance": 1})
    assert refusal(values) == (
        "gpu-cluster:cluster.slurm.partitions[0].maxNodes",
        "30 nodes in one compact placement policy; g2-standard-48 with maxDistance 1 allows at most 22 "
        "(catalog/gcp.yaml compactPlacementMaxVms); lower it or set placement: none",
    )


def test_an_existing_identity_is_refused_with_partitions():
    values = elastic(
        [{"name": "l4", "maxNodes": 2}], identity={"existing": "ml-nodes@my-gpu-project.iam.gserviceaccount.com"}
    )
    key, message = refusal(values)
    assert key == "gpu-cluster:cluster.identity.existing"
    assert "iam.serviceAccounts.actAs" in message


def test_one_node_partitions_get_no_placement_policy_and_no_placement_permission():
    layout = gcp_plan(spec_of(elastic([{"name": "l4", "maxNodes": 1}])))
    assert layout.partitions[0].layout.placement is None
    assert layout.slurm is not None and layout.slurm.power is not None
    assert "compute.resourcePolicies.use" not in layout.slurm.power.permissions


# --- the hooks with a stubbed curl ----------------------------------------------------------------------------------

# A stand-in for curl: logs "METHOD URL DATA AUTH" (AUTH: the header read on stdin), answers from $ANSWERS (a JSON
# file: "METHOD URL" -> [status, body], or a list of them consumed in order), and prints the body then the status as
# curl -w '\n%{http_code}' does; the metadata server's token and name are answered directly.
CURL = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
method, data, url, auth = "GET", "", args[-1], ""
for i, a in enumerate(args):
    if a == "-X": method = args[i + 1]
    if a == "--data": data = args[i + 1]
    if a == "-H" and args[i + 1] == "@-": auth = sys.stdin.read().strip()
if "service-accounts/default/token" in url:
    print('{"access_token": "tok-123", "expires_in": 3599}'); sys.exit(0)
if url.endswith("/instance/name"):
    print(os.environ["INSTANCE_NAME"]); sys.exit(0)
with open(os.environ["LOG"], "a") as log:
    log.write(json.dumps([method, url, data, auth]) + "\n")
path = os.environ["ANSWERS"]
answers = json.load(open(path))
key = f"{method} {url}"
answer = answers.get(key, [404, '{"error": {"code": 404, "message": "not found"}}'])
if answer and isinstance(answer[0], list):
    answers[key] = answer[1:] or answer[-1:]
    answer = answer[0]
    json.dump(answers, open(path, "w"))
print(answer[1]); print(answer[0], end="")
"""

API = "https://compute.googleapis.com/compute/v1"
INSTANCES = f"{API}/{ZONE_PATH}/instances"
TEMPLATE = "https://www.googleapis.com/compute/v1/projects/my-gpu-project/global/instanceTemplates/a3mega-t-1"
OP = f"{API}/{ZONE_PATH}/operations/operation-1"


def run_power(tmp_path: Path, action: str, hostlist: str, answers: dict) -> tuple[int, list[list[str]], str]:
    """slurm_power.sh as `action` with GCP's hook; curl answers from `answers`; scontrol logs its arguments."""
    log = tmp_path / "calls"
    # scontrol logs JSON lines, as the curl stub does
    scontrol = (
        'if [ "$1" = show ]; then printf "%s\\n" ${HOSTS}; exit 0; fi\necho "[\\"scontrol\\", \\"$*\\"]" >>"$LOG"\n'
    )
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    (tmp_path / "launch.env").write_text(f"LAUNCH_a3mega={TEMPLATE}\n")
    env = {
        "LAUNCH_ENV": str(tmp_path / "launch.env"),
        "LOG": str(log),
        "ANSWERS": str(tmp_path / "answers.json"),
        "PROJECT": "my-gpu-project",
        "ZONE": "us-central1-a",
        "CLUSTER": "slurm-elastic",
        "COMPUTE_API": API,
        "TOKEN_URL": "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token",
        "POLL_SECONDS": "0",
        "POLLS": "5",
    }
    hook = BOOT / "gcp_slurm_power.sh"
    proc = run_power_program(tmp_path, action, hostlist, hook, {"curl": CURL, "scontrol": scontrol}, env)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc.returncode, calls, proc.stderr


def op(status: str, error: str | None = None) -> str:
    body: dict = {"kind": "compute#operation", "name": "operation-1", "status": status, "selfLink": OP}
    if error:
        body["error"] = {"errors": [{"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "message": error}]}
    return json.dumps(body)


INSTANCE = json.dumps(
    {"name": "slurm-elastic-a3mega-1", "status": "PROVISIONING", "networkInterfaces": [{"networkIP": "10.48.0.17"}]}
)


def test_launch_inserts_the_node_from_its_template_by_name_and_sets_its_address(tmp_path):
    answers = {
        f"POST {INSTANCES}?sourceInstanceTemplate={TEMPLATE}": [200, op("RUNNING")],
        f"GET {OP}": [[200, op("RUNNING")], [200, op("DONE")]],
        f"GET {INSTANCES}/slurm-elastic-a3mega-1": [200, INSTANCE],
    }
    code, calls, _ = run_power(tmp_path, "resume", "a3mega-1", answers)
    assert code == 0
    api = [c for c in calls if c[0] != "scontrol"]
    # exactly the documented call: POST .../zones/Z/instances?sourceInstanceTemplate=<self link>, body {name}
    assert api[0] == [
        "POST",
        f"{INSTANCES}?sourceInstanceTemplate={TEMPLATE}",
        '{"name": "slurm-elastic-a3mega-1"}',
        "Authorization: Bearer tok-123",
    ]
    # the operation until DONE, then the instance for its address
    assert [c[:2] for c in api[1:]] == [["GET", OP], ["GET", OP], ["GET", f"{INSTANCES}/slurm-elastic-a3mega-1"]]
    assert all(c[2] == "" for c in api[1:])  # nothing else is sent
    assert [c for c in calls if c[0] == "scontrol"] == [
        ["scontrol", "update nodename=a3mega-1 nodeaddr=10.48.0.17 nodehostname=slurm-elastic-a3mega-1"]
    ]


def test_a_refused_launch_downs_the_node_with_the_apis_message(tmp_path):
    refused = json.dumps({"error": {"code": 403, "message": "Required 'compute.instances.create' permission"}})
    answers = {f"POST {INSTANCES}?sourceInstanceTemplate={TEMPLATE}": [403, refused]}
    code, calls, stderr = run_power(tmp_path, "resume", "a3mega-0", answers)
    assert code == 1
    assert "HTTP 403: Required 'compute.instances.create' permission" in stderr
    assert [c for c in calls if c[0] == "scontrol"] == [
        [
            "scontrol",
            "update nodename=a3mega-0 state=down reason=gpu-cluster launch failed: POST "
            f"{INSTANCES}: HTTP 403: Required 'compute.instances.create' permission",
        ],
        ["scontrol", "update nodename=a3mega-0 state=power_down"],
    ]


def test_a_launch_whose_operation_fails_returns_the_clouds_message(tmp_path):
    answers = {
        f"POST {INSTANCES}?sourceInstanceTemplate={TEMPLATE}": [200, op("PENDING")],
        f"GET {OP}": [200, op("DONE", "The zone does not have enough resources")],
    }
    code, calls, stderr = run_power(tmp_path, "resume", "a3mega-0", answers)
    assert code == 1
    assert "ZONE_RESOURCE_POOL_EXHAUSTED: The zone does not have enough resources" in stderr
    assert not [c for c in calls if c[0] == "GET" and "/instances/" in c[1]]


def test_suspend_deletes_only_this_clusters_instance_of_the_node(tmp_path):
    answers = {f"DELETE {INSTANCES}/slurm-elastic-a3mega-1": [200, op("DONE")]}
    code, calls, _ = run_power(tmp_path, "suspend", "a3mega-1", answers)
    assert code == 0
    assert calls == [["DELETE", f"{INSTANCES}/slurm-elastic-a3mega-1", "", "Authorization: Bearer tok-123"]]


def test_suspend_of_a_node_without_an_instance_succeeds(tmp_path):
    code, calls, _ = run_power(tmp_path, "resume-fail", "a3mega-0", {})  # every call answers 404
    assert code == 0
    assert [c[:2] for c in calls] == [["DELETE", f"{INSTANCES}/slurm-elastic-a3mega-0"]]


def test_the_node_reads_its_name_from_the_metadata_server(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text(CURL)
    (bin_dir / "curl").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "INSTANCE_NAME": "slurm-elastic-a3mega-1"}
    proc = subprocess.run(
        ["bash", str(BOOT / "gcp_slurm_node_name.sh")], env=env, capture_output=True, text=True, timeout=30
    )
    assert (proc.returncode, proc.stdout) == (0, "a3mega-1\n")
    env["INSTANCE_NAME"] = "login"
    proc = subprocess.run(
        ["bash", str(BOOT / "gcp_slurm_node_name.sh")], env=env, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1 and proc.stdout == ""


# --- day 2 ----------------------------------------------------------------------------------------------------------

SHIPPED = [
    {"name": "a3mega", "maxNodes": 2},
    {"name": "l4", "instanceType": "g2-standard-48", "maxNodes": 4, "spot": True},
]


def _with_partitions(partitions: list[dict]) -> dict:
    return plan_json(plan_stack_with(STACK, slurm={"partitions": partitions}))


def test_adding_a_partition_is_in_place_and_growing_one_changes_only_the_channel():
    base = _with_partitions(SHIPPED)
    added = diff_plans(
        base, _with_partitions([*SHIPPED, {"name": "a2", "instanceType": "a2-highgpu-1g", "maxNodes": 1}])
    )
    assert [(c.key, c.policy) for c in added.spec_changes] == [("cluster.slurm.partitions", "in-place")]
    assert {urn.rsplit("::", 1)[1] for urn in added.created} == {f"{NAME}-a2-template"}
    assert not [c for c in added.changed if c.name == f"{NAME}-head"]  # the head instance stays as it is
    grown = diff_plans(base, _with_partitions([{**SHIPPED[0], "maxNodes": 4}, SHIPPED[1]]))
    assert [(c.key, c.old, c.new, c.policy) for c in grown.spec_changes] == [
        ("cluster.slurm.partitions.maxNodes", {"a3mega": 2}, {"a3mega": 4}, "in-place")
    ]
    assert sorted(c.type.split(":")[-1] for c in grown.changed) == ["GpuCluster", "ProjectMetadataItem"]
