"""Elastic Slurm partitions on Azure (slurm.partitions): the registered resources (per partition a Flexible scale set
and its proximity placement group, no GPU VM and no Uniform scale set, the head's own identity with a custom role on
the cluster's resource group), the channel (the head's userData: nodes.conf, gres.conf, launch.env and each
partition's VM body, checked against azure-mgmt-compute's VirtualMachine model), and the head's program with stubbed
curl: the exact ARM calls, the cloud's error on stderr, the node's name from IMDS. The real slurmctld loads the
shipped stack's files in tests/test_slurm_power_real.py."""

from __future__ import annotations

import base64
import copy
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER, compute_config_files, compute_config_text
from components.catalog.slurm import cloud_data
from components.diff import diff_plans
from components.layout.azure import count_wired_gbps
from components.policy import Resource
from components.policy.rules.nodes import node_login

from .conformance import azure as conformance
from .conformance.azure_models import operation
from .conftest import ROOT, plan_json, plan_stack, plan_stack_with, resources_of
from .hook_helpers import assert_shellcheck_clean, run_power_program

STACK = "azure-slurm-elastic"
BOOT = ROOT / "components" / "bootstrap"
POWER = cloud_data("azure")["powerSave"]
API = POWER["computeApiVersion"]
SUB, RG = "00000000-1111-2222-3333-444444444444", "slurm-elastic-rg"
VM_URL = (
    f"https://management.azure.com/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Compute/virtualMachines"
)


@pytest.fixture(scope="module")
def plan():
    return plan_stack(STACK)


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


def channel(plan) -> dict[str, str]:
    head = by_name(plan, "compute:VirtualMachine")["slurm-elastic-azure-head"]
    return compute_config_files(base64.b64decode(head["userData"]).decode())


# --- the registered resources -----------------------------------------------------------------------------------------


def test_each_partition_has_a_flexible_scale_set_and_no_gpu_vm_runs(plan):
    sets = by_name(plan, "compute:VirtualMachineScaleSet")
    assert sorted(sets) == ["slurm-elastic-azure-a100-vmss", "slurm-elastic-azure-h100-vmss"]
    for name, vmss in sets.items():
        part = name.split("-")[-2]
        # a container: no VM profile, no capacity, one fault domain, the partition's proximity placement group
        assert vmss["orchestrationMode"] == "Flexible" and vmss["platformFaultDomainCount"] == 1
        assert "virtualMachineProfile" not in vmss and "sku" not in vmss
        assert vmss["proximityPlacementGroup"] == {"id": f"<id of slurm-elastic-azure-{part}-ppg>"}
    ppgs = by_name(plan, "compute:ProximityPlacementGroup")
    # no size intent: a partition's type changes in place (day 2), its group and scale set stay
    assert sorted(ppgs) == ["slurm-elastic-azure-a100-ppg", "slurm-elastic-azure-h100-ppg"]
    assert all("intent" not in g and g["proximityPlacementGroupType"] == "Standard" for g in ppgs.values())
    # the head and the login node only: the GPU VMs are the head's to create
    assert sorted(by_name(plan, "compute:VirtualMachine")) == ["slurm-elastic-azure-head", "slurm-elastic-azure-login"]
    assert not resources_of(plan, "compute:AvailabilitySet")


def test_the_head_has_an_identity_of_its_own_with_a_role_on_the_clusters_resource_group_only(plan):
    vms = by_name(plan, "compute:VirtualMachine")
    assert vms["slurm-elastic-azure-head"]["identity"]["userAssignedIdentities"] == [
        "<id of slurm-elastic-azure-head-identity>"
    ]
    # the login node keeps the nodes' identity, which cannot create or delete anything
    assert vms["slurm-elastic-azure-login"]["identity"]["userAssignedIdentities"] == [
        "<id of slurm-elastic-azure-identity>"
    ]
    role = by_name(plan, "authorization:RoleDefinition")["slurm-elastic-azure-head-power-role"]
    scope = "/subscriptions/<resolved at deploy: subscription id>/resourceGroups/<autoname:slurm-elastic-azure-rg>"
    assert role["scope"] == scope and role["assignableScopes"] == [scope]
    assert role["roleType"] == "CustomRole"
    actions = role["permissions"][0]["actions"]
    assert actions == POWER["headActions"] and not any("*" in a for a in actions)
    assert {a.split("/")[0] for a in actions} == {"Microsoft.Compute", "Microsoft.Network", "Microsoft.ManagedIdentity"}
    assert "notActions" not in role["permissions"][0] and "dataActions" not in role["permissions"][0]
    grants = by_name(plan, "authorization:RoleAssignment")
    power = grants["slurm-elastic-azure-head-role-slurm-power"]
    assert power["principalId"] == "<principal id of slurm-elastic-azure-head-identity>"
    assert power["roleDefinitionId"] == "<id of slurm-elastic-azure-head-power-role>" and power["scope"] == scope
    # the MUNGE key: the head's identity and the nodes' each on exactly the secret
    secret_grants = {n: g for n, g in grants.items() if g["scope"] == "<id of slurm-elastic-azure-munge-key>"}
    assert {g["principalId"] for g in secret_grants.values()} == {
        "<principal id of slurm-elastic-azure-head-identity>",
        "<principal id of slurm-elastic-azure-identity>",
    }


def test_the_plan_passes_every_mandatory_policy_and_shows_power_saving(plan):
    assert not [v for v in plan.violations() if v.level == "mandatory"]
    assert plan.run.outputs["slurm"]["powerSaving"].startswith("on: h100 0..2, a100 0..4 nodes")
    assert [(p["name"], p["spot"]) for p in plan.summary()["partitions"]] == [("h100", False), ("a100", True)]


# --- the channel: nodes.conf, gres.conf, launch.env and the VM bodies -------------------------------------------------


def test_the_channel_carries_the_partitions_and_each_ones_vm_body_within_the_user_data_limit(plan):
    head = by_name(plan, "compute:VirtualMachine")["slurm-elastic-azure-head"]
    assert len(head["userData"]) <= cloud_data("azure")["computeConfig"]["maxUserDataBytes"]
    files = channel(plan)
    assert sorted(files) == [
        "azure-launch-a100.json",
        "azure-launch-h100.json",
        "gres.conf",
        "launch.env",
        "nodes.conf",
    ]
    assert files["launch.env"] == (
        "LAUNCH_h100=/etc/slurm/azure-launch-h100.json\nLAUNCH_a100=/etc/slurm/azure-launch-a100.json\n"
    )
    assert "NodeName=h100-[0-1]" in files["nodes.conf"] and "NodeName=a100-[0-3]" in files["nodes.conf"]
    assert "NodeName=a100-[0-3] Name=gpu Type=a100 File=/dev/nvidia[0-3]" in files["gres.conf"]
    # the head's own boot does not carry the partitions: they change through the channel, in place
    custom = base64.b64decode(head["osProfile"]["customData"]).decode()
    assert "h100-[0-1]" not in custom and "/usr/local/sbin/gpu-cluster-slurm-resume" in custom


def _body(plan, part: str) -> dict:
    return json.loads(channel(plan)[f"azure-launch-{part}.json"])


@pytest.mark.parametrize("part", ["h100", "a100"])
def test_each_vm_body_is_a_virtual_machine_the_sdk_model_accepts(plan, part):
    body = _body(plan, part)
    build = conformance.Build()
    op = operation("azure.mgmt.compute", "VirtualMachinesOperations", "begin_create_or_update")
    sent = build.model("body", op.body, body)
    assert not build.problems
    assert not conformance.deserialize(op.body, sent)


def test_the_vm_body_joins_the_partitions_scale_set_with_its_nic_and_the_nodes_identity(plan):
    h100, a100 = _body(plan, "h100"), _body(plan, "a100")
    props = h100["properties"]
    assert props["hardwareProfile"] == {"vmSize": "Standard_ND96isr_H100_v5"}
    assert props["virtualMachineScaleSet"] == {"id": "<id of slurm-elastic-azure-h100-vmss>"}
    assert props["proximityPlacementGroup"] == {"id": "<id of slurm-elastic-azure-h100-ppg>"}
    assert h100["identity"] == {
        "type": "UserAssigned",
        "userAssignedIdentities": {"<id of slurm-elastic-azure-identity>": {}},
    }
    nic = props["networkProfile"]
    assert nic["networkApiVersion"] == "2020-11-01"
    config = nic["networkInterfaceConfigurations"][0]
    assert config["properties"]["deleteOption"] == "Delete"
    assert config["properties"]["enableAcceleratedNetworking"] is True
    assert config["properties"]["ipConfigurations"][0]["properties"]["subnet"] == {
        "id": "<id of slurm-elastic-azure-nodes>"
    }
    assert props["storageProfile"]["osDisk"]["deleteOption"] == "Delete"
    os_profile = props["osProfile"]
    assert os_profile["computerName"] == "slurm-elastic-@@GPU_CLUSTER_SLURM_NODE@@"
    assert os_profile["linuxConfiguration"]["disablePasswordAuthentication"] is True
    assert "adminPassword" not in os_profile and "priority" not in props
    # Spot only on the partition that asks: Delete, at most the on-demand price
    spot = a100["properties"]
    assert (spot["priority"], spot["evictionPolicy"], spot["billingProfile"]) == ("Spot", "Delete", {"maxPrice": -1})
    assert spot["virtualMachineScaleSet"] == {"id": "<id of slurm-elastic-azure-a100-vmss>"}


def test_the_vm_custom_data_is_the_partitions_gpu_node_with_slurmd_as_its_cloud_node(plan):
    text = gzip.decompress(base64.b64decode(_body(plan, "h100")["properties"]["osProfile"]["customData"])).decode()
    doc = yaml.safe_load(text.removeprefix("#cloud-config\n"))
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    hook = files["/usr/local/sbin/gpu-cluster-slurm-node-name"]
    assert hook.startswith("#!/bin/bash\n")  # the hook as it is; its prefix is the node's Slurm setting
    assert 'NODE_NAME_PREFIX="slurm-elastic-"' in files["/etc/gpu-cluster/slurm-compute.env"]
    # the head's address is filled at deploy (the offline plan shows the mock's stand-in)
    assert HEAD_PLACEHOLDER not in text
    assert 'HEAD_ADDRESS="<private ip, known after deploy>"' in files["/etc/gpu-cluster/slurm-compute.env"]
    assert 'NODE_NAME_HOOK="/usr/local/sbin/gpu-cluster-slurm-node-name"' in files["/etc/gpu-cluster/slurm-compute.env"]
    # the IB partition's node sets up InfiniBand; the A100 (no IB) partition's does not
    a100 = gzip.decompress(base64.b64decode(_body(plan, "a100")["properties"]["osProfile"]["customData"])).decode()
    assert "/usr/local/sbin/gpu-cluster-azure-ib" in files
    assert "/usr/local/sbin/gpu-cluster-azure-ib" not in a100


# --- the program with stubbed curl ------------------------------------------------------------------------------------

CURL = r"""#!/bin/bash
# a stub of curl: logs the method, URL, the header lines from stdin and the body; answers per URL
method=GET url="" out="" body="" stdin_headers=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    -X) method="${args[i+1]}" ;;
    -o) out="${args[i+1]}" ;;
    -H) [ "${args[i+1]}" = "@-" ] && stdin_headers=$(cat) ;;
    --data-binary) body="${args[i+1]#@}" ;;
    http*) url="${args[i]}" ;;
  esac
done
case "$url" in
  *169.254.169.254/metadata/identity/oauth2/token*) echo '{"access_token":"tok-123","token_type":"Bearer"}'; exit 0 ;;
  */metadata/instance/compute/subscriptionId*) echo "$SUB"; exit 0 ;;
  */metadata/instance/compute/resourceGroupName*) echo "$RG"; exit 0 ;;
esac
{
  echo "$method $url"
  [ -n "$stdin_headers" ] && echo "header $stdin_headers"
  [ -n "$body" ] && echo "body $(cat "$body")"
} >>"$LOG"
answer="$(printf '%s' "$ANSWERS" | python3 -c 'import json,sys; a=json.load(sys.stdin); m,u=sys.argv[1:3]
for k,v in a.items():
    km,ku=k.split(" ",1)
    if km==m and ku in u: print(v[0]); print(json.dumps(v[1])); break
else: print(404); print("{\"error\":{\"code\":\"NotFound\",\"message\":\"no stub\"}}")' "$method" "$url")"
status=$(head -n 1 <<<"$answer")
if [ -n "$out" ]; then tail -n +2 <<<"$answer" >"$out"; else tail -n +2 <<<"$answer"; fi
printf '%s' "$status"
"""


def run_power(tmp_path: Path, action: str, hostlist: str, answers: dict) -> tuple[int, list[str], str]:
    """slurm_power.sh as `action` with Azure's hook; curl, scontrol and sleep are stubs (curl answers `answers`:
    "METHOD url-part" -> [status, json])."""
    log = tmp_path / "calls"
    for part in ("h100", "a100"):
        (tmp_path / f"azure-launch-{part}.json").write_text(
            json.dumps({"properties": {"osProfile": {"computerName": "slurm-elastic-@@GPU_CLUSTER_SLURM_NODE@@"}}})
            + "\n"
        )
    (tmp_path / "launch.env").write_text(
        f"LAUNCH_h100={tmp_path}/azure-launch-h100.json\nLAUNCH_a100={tmp_path}/azure-launch-a100.json\n"
    )
    (tmp_path / "hook.sh").write_text((BOOT / "azure_slurm_power.sh").read_text())
    d = cloud_data("azure")
    env = {
        "LAUNCH_ENV": str(tmp_path / "launch.env"),
        "LOG": str(log),
        "SUB": SUB,
        "RG": RG,
        "ANSWERS": json.dumps(answers),
        "TMPDIR": str(tmp_path),
        "CLUSTER": "slurm-elastic",
        "COMPUTE_API_VERSION": API,
        "NETWORK_API_VERSION": POWER["networkReadApiVersion"],
        "MANAGEMENT_URL": POWER["managementUrl"],
        "MANAGEMENT_RESOURCE": POWER["managementResource"],
        "IMDS_TOKEN_URL": d["imds"]["tokenUrl"],
        "IMDS_API_VERSION": d["imds"]["apiVersion"],
        "IMDS_COMPUTE_URL": "http://169.254.169.254/metadata/instance/compute",
        "IMDS_COMPUTE_API_VERSION": POWER["imdsApiVersion"],
        "FORCE_DELETION": "true",
        "POLL_SECONDS": "0",
    }
    proc = run_power_program(tmp_path, action, hostlist, tmp_path / "hook.sh", {"curl": CURL}, env)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, calls, proc.stderr


NIC = "/subscriptions/S/resourceGroups/RG/providers/Microsoft.Network/networkInterfaces/slurm-elastic-h100-0-nic"
CREATING = {"properties": {"provisioningState": "Creating"}}
SUCCEEDED = {"properties": {"provisioningState": "Succeeded", "networkProfile": {"networkInterfaces": [{"id": NIC}]}}}
NIC_ANSWER = {"properties": {"ipConfigurations": [{"properties": {"privateIPAddress": "10.48.0.17"}}]}}


def test_launch_puts_exactly_the_nodes_vm_waits_for_it_and_sets_its_address(tmp_path):
    answers = {
        "PUT /virtualMachines/slurm-elastic-h100-0": [201, CREATING],
        "GET /virtualMachines/slurm-elastic-h100-0": [200, SUCCEEDED],
        f"GET {NIC}": [200, NIC_ANSWER],
    }
    code, calls, err = run_power(tmp_path, "resume", "h100-0", answers)
    assert code == 0, err
    puts = [c for c in calls if c.startswith("PUT ")]
    assert puts == [f"PUT {VM_URL}/slurm-elastic-h100-0?api-version={API}"]
    # the token on stdin (never in argv), the partition's body with the node's name, nothing else
    assert calls[1] == "header Authorization: Bearer tok-123"
    assert calls[2] == 'body {"properties": {"osProfile": {"computerName": "slurm-elastic-h100-0"}}}'
    methods = [c.split()[0] for c in calls if c.split()[0] in ("PUT", "GET", "DELETE", "POST", "PATCH")]
    assert methods == ["PUT", "GET", "GET"]
    assert f"GET https://management.azure.com{NIC}?api-version={POWER['networkReadApiVersion']}" in calls
    scontrol = [c for c in calls if c.startswith("scontrol")]
    assert scontrol == ["scontrol update nodename=h100-0 nodeaddr=10.48.0.17 nodehostname=slurm-elastic-h100-0"]


def test_a_failed_launch_returns_non_zero_with_azures_message_and_downs_the_node(tmp_path):
    error = {"error": {"code": "SkuNotAvailable", "message": "The requested size is not available in eastus."}}
    code, calls, err = run_power(
        tmp_path, "resume", "a100-3", {"PUT /virtualMachines/slurm-elastic-a100-3": [409, error]}
    )
    assert code == 1
    assert "SkuNotAvailable: The requested size is not available in eastus." in err
    assert [c for c in calls if c.startswith("scontrol")] == [
        "scontrol update nodename=a100-3 state=down reason=gpu-cluster launch failed: SkuNotAvailable: The "
        "requested size is not available in eastus. (HTTP 409 on PUT Microsoft.Compute/virtualMachines/"
        "slurm-elastic-a100-3)",
        "scontrol update nodename=a100-3 state=power_down",
    ]


def test_a_vm_azure_fails_to_provision_is_a_failed_launch(tmp_path):
    answers = {
        "PUT /virtualMachines/slurm-elastic-h100-1": [201, CREATING],
        "GET /virtualMachines/slurm-elastic-h100-1": [200, {"properties": {"provisioningState": "Failed"}}],
    }
    code, _, err = run_power(tmp_path, "resume", "h100-1", answers)
    assert code == 1 and "provisioningState Failed for slurm-elastic-h100-1" in err


def test_suspend_deletes_only_the_clusters_vm_of_the_node(tmp_path):
    code, calls, err = run_power(
        tmp_path, "suspend", "a100-2", {"DELETE /virtualMachines/slurm-elastic-a100-2": [202, {}]}
    )
    assert code == 0, err
    requests = [c for c in calls if c.split()[0] in ("PUT", "GET", "DELETE")]
    assert requests == [f"DELETE {VM_URL}/slurm-elastic-a100-2?forceDeletion=true&api-version={API}"]


def test_deleting_a_node_without_a_vm_succeeds(tmp_path):
    code, calls, _ = run_power(tmp_path, "resume-fail", "h100-0", {})  # every call answers 404
    assert code == 0
    assert [c.split("?")[0] for c in calls if c.startswith("DELETE")] == [f"DELETE {VM_URL}/slurm-elastic-h100-0"]


def test_a_failed_delete_is_reported(tmp_path):
    error = {"error": {"code": "AuthorizationFailed", "message": "no delete"}}
    code, _, err = run_power(tmp_path, "suspend", "h100-0", {"DELETE /virtualMachines/": [403, error]})
    assert code == 1 and "AuthorizationFailed: no delete" in err


def test_the_node_reads_its_name_from_its_vm_name(tmp_path, plan):
    text = gzip.decompress(base64.b64decode(_body(plan, "h100")["properties"]["osProfile"]["customData"])).decode()
    doc = yaml.safe_load(text.removeprefix("#cloud-config\n"))
    hook = next(f["content"] for f in doc["write_files"] if f["path"] == "/usr/local/sbin/gpu-cluster-slurm-node-name")
    script = tmp_path / "node-name"
    script.write_text(hook)
    assert_shellcheck_clean(script)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text(
        '#!/bin/bash\ncase "$*" in *"Metadata: true"*/metadata/instance/compute/name?*format=text*) '
        "echo slurm-elastic-h100-1 ;; *) exit 22 ;; esac\n"
    )
    (bin_dir / "curl").chmod(0o755)
    # run as slurm_compute.sh runs it: with the node's Slurm settings in its environment
    settings = next(f["content"] for f in doc["write_files"] if f["path"] == "/etc/gpu-cluster/slurm-compute.env")
    prefix = next(
        line.split("=", 1)[1].strip('"') for line in settings.splitlines() if line.startswith("NODE_NAME_PREFIX=")
    )
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "NODE_NAME_PREFIX": prefix}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert (proc.returncode, proc.stdout) == (0, "h100-1\n")
    env.pop("NODE_NAME_PREFIX")  # without its prefix the node refuses to guess a name
    assert subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30).returncode == 1


def test_the_hooks_are_shellcheck_clean():
    assert_shellcheck_clean(BOOT / "azure_slurm_power.sh")
    assert_shellcheck_clean(BOOT / "azure_slurm_node_name.sh")


# --- day 2 ------------------------------------------------------------------------------------------------------------

SHIPPED = [
    {"name": "h100", "maxNodes": 2},
    {"name": "a100", "instanceType": "Standard_NC96ads_A100_v4", "maxNodes": 4, "spot": True},
]


def _with_partitions(partitions: list[dict]) -> dict:
    return plan_json(plan_stack_with(STACK, slurm={"partitions": partitions}))


def test_growing_a_partition_changes_only_the_heads_user_data_in_place():
    base = _with_partitions(SHIPPED)
    grown = diff_plans(base, _with_partitions([{**SHIPPED[0], "maxNodes": 4}, SHIPPED[1]]))
    assert [(c.key, c.policy) for c in grown.spec_changes] == [("cluster.slurm.partitions.maxNodes", "in-place")]
    head = [c for c in grown.changed if c.name == "slurm-elastic-azure-head"]
    assert len(head) == 1 and not grown.created and not grown.deleted
    assert sorted(c.type.split(":")[-1] for c in grown.changed) == ["GpuCluster", "VirtualMachine"]


def test_adding_a_partition_adds_its_scale_set_and_keeps_the_head():
    base = _with_partitions(SHIPPED)
    added = diff_plans(
        base, _with_partitions([*SHIPPED, {"name": "t4", "instanceType": "Standard_NC64as_T4_v3", "maxNodes": 1}])
    )
    assert [(c.key, c.policy) for c in added.spec_changes] == [("cluster.slurm.partitions", "in-place")]
    assert {urn.rsplit("::", 1)[1] for urn in added.created} == {
        "slurm-elastic-azure-t4-vmss",
        "slurm-elastic-azure-t4-ppg",
    }
    assert not added.deleted


# --- the node-login policy on a scale set that defines no VM --------------------------------------------------------


def test_node_login_skips_a_flexible_scale_set_without_a_vm_profile_and_still_checks_one_with_a_profile():
    kind = "azure-native:compute:VirtualMachineScaleSet"
    container = Resource(kind, {"orchestrationMode": "Flexible", "platformFaultDomainCount": 1}, "urn:a", "a")
    assert list(node_login(container, None)) == []
    profile = {"virtualMachineProfile": {"osProfile": {"linuxConfiguration": {}}}}
    assert list(node_login(Resource(kind, profile, "urn:b", "b"), None)) == [
        "password authentication is not disabled (linuxConfiguration.disablePasswordAuthentication)"
    ]


def test_the_fabric_proof_counts_the_ib_partitions_vms_from_the_heads_channel(plan):
    # no VM is registered for a partition: the proof reads the body the head sends (a VM joining a scale set)
    assert plan.summary()["fabricGbpsPerNode"] == 3200 == plan.summary()["fabricGbpsRated"]
    resources = copy.deepcopy([r.as_json() for r in plan.resources])  # the plan is cached: change a copy
    head = next(r for r in resources if r["name"] == "slurm-elastic-azure-head")
    files = channel(plan)
    files["azure-launch-h100.json"] = files["azure-launch-h100.json"].replace('"virtualMachineScaleSet"', '"x"')
    head["inputs"]["userData"] = base64.b64encode(compute_config_text(files).encode()).decode()
    assert count_wired_gbps(resources, 400) == 0  # outside a scale set: no fabric


def test_with_a_key_and_a_zone_the_bodies_name_the_disk_encryption_set_and_the_zone():
    # the stack's logs are refused with a customer-managed key (Log Analytics takes one only on a dedicated cluster)
    monitoring = {"notify": ["ops@example.com"]}
    keyed = plan_stack_with(STACK, encryption={"key": "auto"}, zone="1", monitoring=monitoring)
    body = json.loads(channel(keyed)["azure-launch-a100.json"])
    assert body["properties"]["storageProfile"]["osDisk"]["managedDisk"]["diskEncryptionSet"] == {
        "id": "<id of slurm-elastic-azure-cmk-des>"
    }
    assert body["zones"] == ["1"]
    assert by_name(keyed, "compute:VirtualMachineScaleSet")["slurm-elastic-azure-a100-vmss"]["zones"] == ["1"]
    assert not [v for v in keyed.violations() if v.level == "mandatory"]
    role = by_name(keyed, "authorization:RoleDefinition")["slurm-elastic-azure-head-power-role"]
    assert role["permissions"][0]["actions"] == [*POWER["headActions"], "Microsoft.Compute/diskEncryptionSets/read"]
