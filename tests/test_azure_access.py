"""Azure node identity, Bastion, the login node and the key / admin-name rules (issue 11, issue 13 items 4, 5, 10)."""

from __future__ import annotations

import base64
import copy
import ipaddress
import json

import pytest
from typer.testing import CliRunner

from components.cli import app
from components.diff import diff_plans
from components.errors import ConfigError
from components.layout import azure as azure_layout
from components.layout.azure.data import access_data

from .conftest import one, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

VMSS = "compute:VirtualMachineScaleSet"
READER = "/providers/Microsoft.Authorization/roleDefinitions/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
CONTRIBUTOR = "/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
# Reader: with a login node, monitoring.prometheus auto runs Prometheus there and azure_sd lists the VMs
MONITORING = "/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"
EXISTING = "/subscriptions/0000/resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ml"


def values(**cluster):
    return azure_values(**{"tags": {"environment": "t"}, **cluster})


def rsa_key(bits: int) -> str:
    """An ssh-rsa public key line with a modulus of exactly `bits` bits (RFC 4253 wire format)."""

    def mpint(n: int) -> bytes:
        raw = n.to_bytes((n.bit_length() + 8) // 8, "big")  # leading zero byte keeps it positive
        return len(raw).to_bytes(4, "big") + raw

    kind = b"ssh-rsa"
    blob = len(kind).to_bytes(4, "big") + kind + mpint(65537) + mpint((1 << (bits - 1)) | 1)
    return f"ssh-rsa {base64.b64encode(blob).decode()} k@host"


@pytest.fixture(scope="module")
def h100(stack_plan):
    return stack_plan("azure-h100")


@pytest.fixture(scope="module")
def login_instances():
    cluster = {
        "nodeGroup": "instances",
        "network": {"sshCidrs": ["203.0.113.0/24"], "publicIp": True},
        "login": {"publicIp": True},
        "identity": {"policies": [CONTRIBUTOR], "readStorage": True},
    }
    return plan_values(values(**cluster))


# --- identity ---------------------------------------------------------------------------------


def test_a_managed_identity_is_created_and_attached_with_no_role_by_default(h100):
    ident = one(h100, "managedidentity:UserAssignedIdentity")
    assert ident["name"] == "llm-train-azure-identity"
    vmss = one(h100, VMSS)["inputs"]
    assert vmss["identity"] == {"type": "UserAssigned", "userAssignedIdentities": ["<id of llm-train-azure-identity>"]}
    assert not resources_of(h100, "authorization:RoleAssignment")  # least privilege: nothing granted
    out = h100.run.outputs["identity"]
    assert out == {"kind": "managed-identity", "name": "<autoname:llm-train-azure-identity>", "grants": []}


def test_policies_and_read_storage_become_role_assignments_on_the_resource_group(login_instances):
    roles = {r["inputs"]["roleDefinitionId"]: r["inputs"] for r in resources_of(login_instances, "RoleAssignment")}
    sub = "/subscriptions/<resolved at deploy: subscription id>"
    assert set(roles) == {sub + READER, sub + CONTRIBUTOR, sub + MONITORING}
    for role in roles.values():
        assert role["principalId"] == "<principal id of test-azure-identity>"
        assert role["principalType"] == "ServicePrincipal"
        assert role["scope"] == f"{sub}/resourceGroups/<autoname:test-azure-rg>"
    assert login_instances.run.outputs["identity"]["grants"] == [CONTRIBUTOR, READER, MONITORING]
    for vm in resources_of(login_instances, "compute:VirtualMachine"):  # the nodes and the login node
        assert vm["inputs"]["identity"]["userAssignedIdentities"] == ["<id of test-azure-identity>"]


def test_an_existing_identity_is_used_instead_of_creating_one():
    plan = plan_values(values(gpu="T4:1", nodes=1, identity={"existing": EXISTING, "readStorage": True}))
    assert not resources_of(plan, "UserAssignedIdentity")
    assert one(plan, VMSS)["inputs"]["identity"]["userAssignedIdentities"] == [EXISTING]
    role = one(plan, "RoleAssignment")["inputs"]
    assert role["principalId"] == "<resolved at deploy: principal id of ml>"
    assert plan.run.outputs["identity"] == {"kind": "managed-identity", "name": EXISTING, "grants": [READER]}


# --- access: Bastion by default ------------------------------------------------------------------


def test_bastion_standard_with_tunnelling_in_its_own_subnet(h100):
    subnets = {r["name"]: r["inputs"] for r in resources_of(h100, "network:Subnet")}
    assert subnets["llm-train-azure-nodes"]["addressPrefix"] == "10.44.0.0/17"  # unchanged
    bastion_subnet = subnets["llm-train-azure-bastion-subnet"]
    assert bastion_subnet["subnetName"] == "AzureBastionSubnet"
    assert bastion_subnet["addressPrefix"] == "10.44.128.0/26"
    host = one(h100, "network:BastionHost")["inputs"]
    assert host["sku"] == {"name": "Standard"} and host["enableTunneling"] is True
    assert host["ipConfigurations"] == [
        {
            "name": "bastion",
            "subnet": {"id": "<id of llm-train-azure-bastion-subnet>"},
            "publicIPAddress": {"id": "<id of llm-train-azure-bastion-ip>"},
        }
    ]
    ip = next(r for r in resources_of(h100, "PublicIPAddress") if r["name"] == "llm-train-azure-bastion-ip")
    assert ip["inputs"]["sku"]["name"] == "Standard" and ip["inputs"]["publicIPAllocationMethod"] == "Static"


VNET = ipaddress.ip_network("10.44.0.0/16")  # azure-h100's network.cidr


def test_no_inbound_rule_from_outside_the_network_for_the_default(h100):
    for nsg in resources_of(h100, "NetworkSecurityGroup"):
        for rule in nsg["inputs"]["securityRules"]:
            if rule["direction"] == "Inbound" and rule["access"] == "Allow":
                # the shared filesystem's NSG names the cluster's own subnets (inside 10.44.0.0/16) instead
                source = rule.get("sourceAddressPrefix")
                inside = source != "VirtualNetwork" and ipaddress.ip_network(source).subnet_of(VNET)
                assert source == "VirtualNetwork" or inside, rule


def test_access_outputs_say_how_to_log_in_and_list_nodes(h100):
    out = h100.run.outputs
    access = out["access"]
    assert access["method"] == "bastion"
    assert access["command"] == (
        "az network bastion ssh --name <autoname:llm-train-azure-bastion> --resource-group "
        "<autoname:llm-train-azure-rg> --target-resource-id <vm id> --auth-type ssh-key --username azureuser "
        "--ssh-key ~/.ssh/id_rsa"
    )
    assert access["nodes"].startswith("az vmss nic list --resource-group <autoname:llm-train-azure-rg>")
    assert access["targets"].startswith("az vmss list-instances")
    assert "accessHourlyUsd" in out and out["accessHourlyUsd"] is None  # not priced: the data file says why
    assert "not priced" in access_data()["bastion"]["price"]


def test_access_ssh_builds_no_bastion_and_keeps_todays_nsg():
    plan = plan_values(values(gpu="T4:1", nodes=1, access="ssh", network={"sshCidrs": ["203.0.113.0/24"]}))
    assert not resources_of(plan, "BastionHost") and len(resources_of(plan, "network:Subnet")) == 1
    rules = {r["name"] for r in one(plan, "NetworkSecurityGroup")["inputs"]["securityRules"]}
    assert "allow-ssh" in rules
    assert plan.run.outputs["accessHourlyUsd"] is None


# --- the login node -------------------------------------------------------------------------------


def test_login_node_takes_the_ssh_cidrs_and_the_public_ip(login_instances):
    nsgs = {r["name"]: r["inputs"]["securityRules"] for r in resources_of(login_instances, "NetworkSecurityGroup")}
    assert "allow-ssh" not in {r["name"] for r in nsgs["test-azure-nsg"]}  # nothing on the GPU nodes
    ssh = next(r for r in nsgs["test-azure-login-nsg"] if r["name"] == "allow-ssh")
    assert (ssh["sourceAddressPrefix"], ssh["destinationPortRange"]) == ("203.0.113.0/24", "22")
    subnet = next(r for r in resources_of(login_instances, "network:Subnet") if r["name"] == "test-azure-login-subnet")
    assert subnet["inputs"]["addressPrefix"] == "10.42.128.64/26"
    assert subnet["inputs"]["networkSecurityGroup"] == {"id": "<id of test-azure-login-nsg>"}
    vm = next(r for r in resources_of(login_instances, "compute:VirtualMachine") if r["name"] == "test-azure-login")
    assert vm["inputs"]["hardwareProfile"] == {"vmSize": "Standard_D2s_v5"}
    assert vm["inputs"]["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] is True
    ips = {r["name"] for r in resources_of(login_instances, "PublicIPAddress")}
    assert "test-azure-login-ip" in ips and not [n for n in ips if "-node-" in n]  # network.publicIp moved
    nics = {r["name"]: r["inputs"] for r in resources_of(login_instances, "NetworkInterface")}
    assert "publicIPAddress" in nics["test-azure-login-nic"]["ipConfigurations"][0]
    assert any("login node exists" in w for w in login_instances.warnings())
    access = login_instances.run.outputs["access"]
    assert "--target-resource-id <id of test-azure-login>" in access["command"]


def test_instances_mode_exports_the_private_ips(login_instances):
    out = login_instances.run.outputs
    assert out["privateIps"] == ["<private ip, known after deploy>"] * 2
    assert "az vm list-ip-addresses" in out["access"]["nodes"] and "test-azure-node-" in out["access"]["nodes"]


def test_access_subnets_never_move_the_node_subnet_and_small_vnets_are_refused():
    for cidr in ("10.0.0.0/16", "10.0.0.0/24"):
        spec_values = values(network={"cidr": cidr}, login={})
        layout = azure_layout.plan(spec_of(spec_values))
        plain = azure_layout.plan(spec_of(values(network={"cidr": cidr}, access="none")))
        assert layout.node_subnet_cidr == plain.node_subnet_cidr
        assert layout.bastion is not None and layout.login is not None
        nets = [layout.node_subnet_cidr, layout.bastion.subnet_cidr, layout.login.subnet_cidr]
        assert len({str(n) for n in nets}) == 3
    with pytest.raises(ConfigError) as info:
        azure_layout.plan(spec_of(values(gpu="T4:1", nodes=1, network={"cidr": "10.0.0.0/26"})))
    assert info.value.key == "gpu-cluster:cluster.network.cidr" and "AzureBastionSubnet" in info.value.message


# --- issue 13 item 10: one fault domain on the HPC scale set -----------------------------------------


def test_the_ib_scale_set_has_one_fault_domain_and_others_keep_the_default(h100):
    assert one(h100, VMSS)["inputs"]["platformFaultDomainCount"] == 1
    t4 = azure_layout.plan(spec_of(values(gpu="T4:1", nodes=1)))
    assert t4.platform_fault_domain_count is None


def test_a_deployed_h100_stack_is_warned_that_the_fault_domain_change_replaces_its_nodes(h100):
    new = json.loads(json.dumps(h100.as_json(), default=str))
    old = copy.deepcopy(new)
    old["resources"] = [r for r in old["resources"] if r["name"] != "llm-train-azure-identity"]
    for res in old["resources"]:
        if res["type"] == "azure-native:compute:VirtualMachineScaleSet":
            del res["inputs"]["platformFaultDomainCount"]  # as deployed before this change
            del res["inputs"]["identity"]
    diff = diff_plans(old, new)
    vmss = next(c for c in diff.changed if c.name == "llm-train-azure-vmss")
    assert vmss.verdict == "replace"
    assert any("llm-train-azure-vmss" in w and w.startswith(("DATA LOSS", "DISRUPTION")) for w in diff.warnings)
    # the identity alone is an in-place update
    for res in old["resources"]:
        if res["type"] == "azure-native:compute:VirtualMachineScaleSet":
            res["inputs"]["platformFaultDomainCount"] = 1
    assert next(c for c in diff_plans(old, new).changed if c.name == "llm-train-azure-vmss").verdict == "update"


# --- issue 13 items 4 and 5: what Azure refuses ------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "key", "words"),
    [
        ({"sshPublicKey": "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY= k@h"}, "sshPublicKey", "ssh-rsa"),
        ({"sshPublicKey": rsa_key(1024)}, "sshPublicKey", "2048"),
        ({"adminUser": "admin"}, "adminUser", "refuses"),
        ({"adminUser": "root"}, "adminUser", "refuses"),
    ],
)
def test_keys_and_admin_names_azure_refuses_are_refused(cluster, key, words):
    with pytest.raises(ConfigError) as info:
        spec_of(values(**cluster))
    assert info.value.key == f"gpu-cluster:cluster.{key}" and words in info.value.message


def test_a_2048_bit_rsa_key_is_accepted_and_the_cli_exits_2_on_ecdsa(tmp_path):
    assert spec_of(values(sshPublicKey=rsa_key(2048))).ssh_public_key.startswith("ssh-rsa")
    import yaml

    config = values(sshPublicKey="ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY= k@h")
    path = tmp_path / "Pulumi.ecdsa.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    result = CliRunner().invoke(app, ["plan", "--config", str(path)])
    assert result.exit_code == 2 and "gpu-cluster:cluster.sshPublicKey" in result.stderr
