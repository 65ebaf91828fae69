"""`scheduler: slurm` on Azure: the MUNGE key's Key Vault, its one-secret grant, the head node and the rendered Slurm
configuration for ND H100 v5, as registered with Pulumi's mocks; the key hook run against stubbed commands."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from components.bootstrap import script
from components.bootstrap.mounts import SOURCE_PLACEHOLDER
from components.bootstrap.slurm_conf import HEAD_PLACEHOLDER, compute_config_files
from components.catalog.slurm import cloud_data
from components.errors import ConfigError
from components.layout import azure as layout_azure
from components.layout.azure import slurm as azure_slurm
from components.plan.render import render_json, render_markdown

from .conftest import one, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean, rendered_hook, stub_bin
from .hook_helpers import run_hook as run_hook_on_stubs
from .test_azure_resources import azure_values

HOOK = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "azure_munge_key.sh"
DATA = cloud_data("azure")
# what the offline plan's random provider answers for the key: it must appear nowhere
KEY_PLACEHOLDER = "<base64 of test-azure-munge-key-bytes>"


def slurm_values(**cluster):
    return azure_values(**{"scheduler": "slurm", **cluster})


@pytest.fixture(scope="module")
def slurm():
    return plan_values(slurm_values())


def cloud_config(b64: str) -> dict:
    text = base64.b64decode(b64).decode()
    assert text.startswith("#cloud-config")
    return yaml.safe_load(text)


def files_of(b64: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in cloud_config(b64).get("write_files", [])}


def vm(plan, name):
    return next(r for r in resources_of(plan, "compute:VirtualMachine") if r["name"] == name)["inputs"]


# --- the key: generated, stored, never in clear ----------------------------------------------------------


def test_the_munge_key_is_in_clear_nowhere(slurm):
    secret = one(slurm, "keyvault:Secret")["inputs"]
    assert secret["properties"] == "[secret]"  # the value makes the whole object secret
    assert secret["secretName"] == DATA["keyVault"]["secretName"]
    inputs = json.dumps([r.as_json() for r in slurm.resources])
    outputs = json.dumps(slurm.run.outputs)
    for text in (inputs, outputs, render_markdown(slurm), render_json(slurm)):
        assert KEY_PLACEHOLDER not in text
    # nor in any node's custom data: the nodes fetch it, the custom data only says where from
    datas = [
        vm(slurm, "test-azure-head")["osProfile"]["customData"],
        vm(slurm, "test-azure-login")["osProfile"]["customData"],
        one(slurm, "VirtualMachineScaleSet")["inputs"]["virtualMachineProfile"]["osProfile"]["customData"],
    ]
    for data in datas:
        text = base64.b64decode(data).decode()
        assert KEY_PLACEHOLDER not in text and "MUNGE_VAULT_URI" in text
    key_bytes = one(slurm, "randomBytes:RandomBytes")["inputs"]
    assert key_bytes["length"] == 128


def test_only_the_nodes_identity_reads_only_that_secret(slurm):
    grants = {g["name"]: g["inputs"] for g in resources_of(slurm, "authorization:RoleAssignment")}
    # besides the key's: Reader on the group for the login node's Prometheus (monitoring.prometheus auto)
    assert sorted(grants) == ["test-azure-role-acdd72a7", "test-azure-role-munge-key"]
    assert grants["test-azure-role-acdd72a7"]["scope"].endswith("/resourceGroups/<autoname:test-azure-rg>")
    grant = grants["test-azure-role-munge-key"]
    assert grant["scope"] == "<id of test-azure-munge-key>"  # the secret, not the vault or the group
    assert grant["roleDefinitionId"].endswith("/roleDefinitions/4633458b-17de-408a-b874-0445c86b69e6")
    assert grant["roleDefinitionId"].endswith(DATA["secretsUserRole"])
    assert grant["principalId"] == "<principal id of test-azure-identity>"
    assert grant["principalType"] == "ServicePrincipal"
    # head, login and GPU nodes carry exactly that identity
    ids = {"type": "UserAssigned", "userAssignedIdentities": ["<id of test-azure-identity>"]}
    assert vm(slurm, "test-azure-head")["identity"] == ids == vm(slurm, "test-azure-login")["identity"]
    assert one(slurm, "VirtualMachineScaleSet")["inputs"]["identity"] == ids


def test_the_vault_is_private_and_rbac(slurm):
    vault = one(slurm, "keyvault:Vault")["inputs"]
    props = vault["properties"]
    assert props["enableRbacAuthorization"] is True and props["publicNetworkAccess"] == "Disabled"
    assert props["networkAcls"] == {"defaultAction": "Deny", "bypass": "None"}
    assert props["enablePurgeProtection"] is True and props["softDeleteRetentionInDays"] == 7
    assert vault["vaultName"] == azure_slurm.vault_name(spec_of(slurm_values()))
    assert 3 <= len(vault["vaultName"]) <= 24
    endpoint = one(slurm, "network:PrivateEndpoint")["inputs"]
    assert endpoint["subnet"]["id"] == "<id of test-azure-nodes>"
    (conn,) = endpoint["privateLinkServiceConnections"]
    assert conn["groupIds"] == ["vault"] and conn["privateLinkServiceId"] == "<id of test-azure-slurm-vault>"
    zone = one(slurm, "privatedns:PrivateZone")["inputs"]
    assert zone["privateZoneName"] == "privatelink.vaultcore.azure.net"
    link = one(slurm, "privatedns:VirtualNetworkLink")["inputs"]
    assert link["virtualNetwork"] == {"id": "<id of test-azure-vnet>"}


def test_the_hook_env_names_the_vault_and_secret_only(slurm):
    head = files_of(vm(slurm, "test-azure-head")["osProfile"]["customData"])
    env = head["/etc/gpu-cluster/munge-key.env"]
    spec = spec_of(slurm_values())
    assert f'MUNGE_VAULT_URI="https://{azure_slurm.vault_name(spec)}.vault.azure.net/"' in env
    assert 'MUNGE_SECRET_NAME="munge-key"' in env and 'KEYVAULT_API_VERSION="2025-07-01"' in env
    assert head["/usr/local/sbin/gpu-cluster-munge-key"] == script(HOOK.name)


# --- the head node and the rendered configuration ----------------------------------------------------------


def test_head_node_is_a_private_cpu_vm_in_the_node_subnet(slurm):
    head = vm(slurm, "test-azure-head")
    assert head["hardwareProfile"] == {"vmSize": "Standard_D2s_v5"}  # loginDefaultType
    nic = next(r for r in resources_of(slurm, "NetworkInterface") if r["name"] == "test-azure-head-nic")["inputs"]
    (ip,) = nic["ipConfigurations"]
    assert ip["subnet"]["id"] == "<id of test-azure-nodes>" and "publicIPAddress" not in ip
    assert head["networkProfile"]["networkInterfaces"] == [{"id": "<id of test-azure-head-nic>", "primary": True}]
    assert head["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] is True
    custom = plan_values(slurm_values(slurm={"headInstanceType": "Standard_D4s_v5"}))
    assert vm(custom, "test-azure-head")["hardwareProfile"] == {"vmSize": "Standard_D4s_v5"}


def test_rendered_slurm_conf_for_nd_h100_v5(slurm):
    head = vm(slurm, "test-azure-head")
    files = files_of(head["osProfile"]["customData"])
    # the GPU nodes: in the head VM's userData (updated in place), not in its custom data (issue 28)
    assert files["/etc/gpu-cluster/slurm/slurm.conf"].endswith("Include nodes.conf\n")
    assert "Gres=" not in files["/etc/gpu-cluster/slurm/slurm.conf"]
    user_data = compute_config_files(base64.b64decode(head["userData"]).decode())
    conf = files["/etc/gpu-cluster/slurm/slurm.conf"] + user_data["nodes.conf"]
    for line in ("SlurmctldParameters=enable_configless", "SelectType=select/cons_tres", "GresTypes=gpu",
                 "AuthType=auth/munge", "PartitionName=gpu Nodes=gpu_nodes", "MaxNodeCount=4",
                 "MailProg=/usr/bin/logger"):  # fmt: skip
        assert line in conf.splitlines() or any(x.startswith(line) for x in conf.splitlines()), line
    # 8 x H100, 1900 GiB less 5% (1,848,320 MiB): the catalog row of Standard_ND96isr_H100_v5
    assert "Gres=gpu:h100:8" in conf and "RealMemory=1848320" in conf
    assert files["/etc/gpu-cluster/slurm/gres.conf"].strip() == "AutoDetect=nvml"
    # a GPU's share: 1848320 // 8 MiB, 96 // 8 vCPUs
    partition = "PartitionName=gpu Nodes=gpu_nodes Default=YES MaxTime=INFINITE State=UP"
    assert f"{partition} DefCpuPerGPU=12 DefMemPerGPU=231040\n" in conf
    # one proximity placement group is no topology (docs/slurm.md, Topology)
    assert "/etc/gpu-cluster/slurm/topology.yaml" not in files


def test_gpu_nodes_and_login_get_the_heads_address_at_deploy(slurm):
    vmss = one(slurm, "VirtualMachineScaleSet")["inputs"]
    nodes = base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    login = base64.b64decode(vm(slurm, "test-azure-login")["osProfile"]["customData"]).decode()
    for text in (nodes, login):
        assert HEAD_PLACEHOLDER not in text
        assert 'HEAD_ADDRESS="<private ip, known after deploy>"' in text
    assert len(base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"])) < 65535
    node_files = files_of(vmss["virtualMachineProfile"]["osProfile"]["customData"])
    compute_env = node_files["/etc/gpu-cluster/slurm-compute.env"]
    assert "Gres=gpu:h100:8" in compute_env and "RealMemory=1848320" in compute_env
    assert "/etc/gpu-cluster/slurm-login.env" in files_of(vm(slurm, "test-azure-login")["osProfile"]["customData"])


def test_outputs_name_the_head_and_the_secret_not_the_key(slurm):
    out = slurm.run.outputs["slurm"]
    assert out["headNode"] == {"id": "<id of test-azure-head>", "privateIp": "<private ip, known after deploy>"}
    assert out["mungeKeySecret"] == "<id of test-azure-munge-key>"
    assert out["partition"] == "gpu" and out["check"] == "sinfo -N -l"
    assert out["login"].startswith("az network bastion ssh")


def test_egress_none_is_refused_with_the_key():
    with pytest.raises(ConfigError) as info:
        layout_azure.plan(spec_of(slurm_values(network={"egress": "none"})))
    assert info.value.key == "gpu-cluster:cluster.network.egress"


def test_with_managed_lustre_home_and_state_live_on_it():
    shared = {"kind": "lustre", "sizeGb": 8192, "throughput": 500, "path": "/shared"}
    plan = plan_values(slurm_values(storage={"shared": shared}))
    head = base64.b64decode(vm(plan, "test-azure-head")["osProfile"]["customData"]).decode()
    login = base64.b64decode(vm(plan, "test-azure-login")["osProfile"]["customData"]).decode()
    for text in (head, login):
        assert SOURCE_PLACEHOLDER not in text and HEAD_PLACEHOLDER not in text
        assert "<mgs address of test-azure-shared>" in text  # the filesystem's address, filled in at deploy
        assert 'SHARED_PATH="/shared"' in text
    assert "StateSaveLocation=/shared/slurm/state" in head


def test_scheduler_none_builds_no_slurm():
    values = slurm_values()
    del values["gpu-cluster:cluster"]["scheduler"]
    layout = layout_azure.plan(spec_of(values))
    text = base64.b64decode(layout.custom_data_b64).decode()
    # no Slurm part (the drain, on every GPU node, handles both modes: here it is told there is no scheduler)
    assert layout.slurm is None and "gpu-cluster-slurm" not in text and "slurmd" not in text
    assert 'SCHEDULER="none"' in text


# --- the key hook, against stubs ------------------------------------------------------------------------


def run_hook(
    tmp_path: Path, imds: str, vault: str, env: dict | None = None, hook: Path = HOOK
) -> tuple[subprocess.CompletedProcess, str]:
    calls = tmp_path / "calls"
    # curl: the metadata service or the vault by URL; records argv and stdin (the Authorization header)
    curl = (
        f'printf "ARGS %s\\n" "$*" >>"{calls}"\n'
        f'if [[ " $* " == *" -H @- "* ]]; then printf "STDIN %s\\n" "$(cat)" >>"{calls}"; fi\n'
        'case "$*" in\n'
        f"  *169.254.169.254*) {imds} ;;\n"
        f"  *) {vault} ;;\n"
        "esac\n"
    )
    env_file = tmp_path / "munge-key.env"
    settings = {k: v for k, v in azure_slurm.hook_env(spec_of(slurm_values())).items()}
    env_file.write_text("".join(f'{k}="{v}"\n' for k, v in {**settings, **(env or {})}.items()))
    proc = run_hook_on_stubs(hook, stub_bin(tmp_path, {"curl": curl}), {"ENV_FILE": str(env_file)})
    return proc, calls.read_text() if calls.exists() else ""


TOKEN = "eyJ0eXAiOiJKV1QifQ.payload.signature"
SECRET_B64 = base64.b64encode(b"k" * 128).decode()


def test_hook_is_shellcheck_clean():
    assert_shellcheck_clean(HOOK)


@pytest.mark.parametrize("rendered", [False, True], ids=["beside-its-library", "as-a-node-gets-it"])
def test_hook_prints_the_key_and_keeps_the_token_off_argv(tmp_path, rendered):
    imds = f"""echo '{{"access_token":"{TOKEN}","expires_in":"86399","resource":"https://vault.azure.net"}}'"""
    vault = f"""echo '{{"value":"{SECRET_B64}","id":"https://v.vault.azure.net/secrets/munge-key/1"}}'"""
    hook = rendered_hook(tmp_path, HOOK.name, "munge_key_bearer.sh", "secret_field") if rendered else HOOK
    proc, calls = run_hook(tmp_path, imds, vault, hook=hook)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == SECRET_B64 + "\n"
    assert SECRET_B64 not in proc.stderr and TOKEN not in proc.stderr
    args = [line for line in calls.splitlines() if line.startswith("ARGS")]
    assert "Metadata: true" in args[0]
    assert "api-version=2018-02-01&resource=https://vault.azure.net" in args[0]
    vault_name = azure_slurm.vault_name(spec_of(slurm_values()))
    assert f"https://{vault_name}.vault.azure.net/secrets/munge-key?api-version=2025-07-01" in args[1]
    assert all(TOKEN not in a for a in args)  # the bearer token went on stdin
    assert f"STDIN Authorization: Bearer {TOKEN}" in calls


@pytest.mark.parametrize(
    ("imds", "vault", "message"),
    [
        ("exit 7", "exit 0", "no token from the Instance Metadata Service"),
        ("""echo '{"expires_in":"1"}'""", "exit 0", "without an access_token"),
        (f"""echo '{{"access_token":"{TOKEN}"}}'""", "exit 22", "reading secret munge-key"),
        (f"""echo '{{"access_token":"{TOKEN}"}}'""", """echo '{"id":"x"}'""", "has no value"),
    ],
)
def test_hook_fails_loudly_without_leaking(tmp_path, imds, vault, message):
    proc, _ = run_hook(tmp_path, imds, vault)
    assert proc.returncode == 1 and proc.stdout == ""
    assert message in proc.stderr and TOKEN not in proc.stderr


def test_hook_needs_its_settings(tmp_path):
    proc, calls = run_hook(tmp_path, "exit 0", "exit 0", env={"MUNGE_SECRET_NAME": ""})
    assert proc.returncode == 1 and "MUNGE_SECRET_NAME is not set" in proc.stderr and calls == ""


def test_the_slurm_plan_passes_every_policy(slurm):
    assert slurm.violations() == []


def test_instances_mode_vms_run_slurmd_too():
    plan = plan_values(slurm_values(nodeGroup="instances"))
    nodes = [r for r in resources_of(plan, "compute:VirtualMachine") if r["name"].startswith("test-azure-node-")]
    assert len(nodes) == 2
    for node in nodes:
        files = files_of(node["inputs"]["osProfile"]["customData"])
        env = files["/etc/gpu-cluster/slurm-compute.env"]
        assert 'HEAD_ADDRESS="<private ip, known after deploy>"' in env and "Gres=gpu:h100:8" in env
        # "The maximum length of the binary array is 65535 bytes" (azure-native compute OSProfileArgs.custom_data)
        assert len(base64.b64decode(node["inputs"]["osProfile"]["customData"])) < 65535
