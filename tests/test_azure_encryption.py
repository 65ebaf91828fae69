"""Azure customer-managed keys as registered with Pulumi's mocks: the cluster's Key Vault and key (encryption.key
auto) or the key named, the encryption identity's role on it, the disk encryption set, and its use on every managed
disk and the shared filesystem."""

from __future__ import annotations

import copy
import json

import pytest

from components.contract import contract
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors

from .conftest import one, plan_stack, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values as h100_values

DES = "<id of llm-cmk-azure-cmk-des>"
GIVEN = "https://sec-vault.vault.azure.net/keys/gpu-disks/0123456789abcdef0123456789abcdef"
ENCRYPTION_USER = "/providers/Microsoft.Authorization/roleDefinitions/e147488a-f6f5-4113-8e2d-b22465e65bf6"
READER = "/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"


def azure_values(**cluster):
    # one T4 node in an address space of its own
    return h100_values(**{"gpu": "T4:1", "nodes": 1, "network": {"cidr": "10.62.0.0/16"}, **cluster})


def by_name(plan, type_suffix):
    return {r["name"]: r for r in resources_of(plan, type_suffix)}


@pytest.fixture(scope="module")
def cmk():
    return plan_stack("azure-h100-cmk")


@pytest.fixture(scope="module")
def instances():
    """VMs with a scratch data disk, a Slurm head, a login node and an Azure Files share, all on a key."""
    return plan_values(
        azure_values(
            nodes=2,
            fabric="none",  # two T4 nodes: no type with a usable fabric (issue 26 defect 7)
            nodeGroup="instances",
            scheduler="slurm",
            encryption={"key": "auto"},
            storage={"scratch": "auto", "scratchGb": 256, "shared": {"kind": "nfs", "sizeGb": 1024}},
        )
    )


def test_auto_makes_a_protected_rbac_vault_with_purge_protection(cmk):
    vault = one(cmk, "keyvault:Vault")
    props = vault["inputs"]["properties"]
    assert props == {
        **props,
        "enableRbacAuthorization": True,
        "enablePurgeProtection": True,
        "softDeleteRetentionInDays": 90,
        "networkAcls": {"defaultAction": "Deny", "bypass": "AzureServices"},
        "sku": {"family": "A", "name": "standard"},
    }
    assert vault["protect"] is True and vault["retainOnDelete"] is True


def test_the_key_rotates_and_is_protected(cmk):
    key = one(cmk, "keyvault:Key")
    assert key["inputs"]["vaultName"] == "<name of llm-cmk-azure-cmk-vault>"
    assert key["inputs"]["properties"] == {
        "kty": "RSA",
        "keySize": 2048,
        "rotationPolicy": {
            "attributes": {"expiryTime": "P2Y"},
            "lifetimeActions": [
                {"action": {"type": "rotate"}, "trigger": {"timeAfterCreate": "P90D"}},
                {"action": {"type": "notify"}, "trigger": {"timeBeforeExpiry": "P30D"}},
            ],
        },
    }
    assert key["protect"] is True and key["retainOnDelete"] is True


def test_the_encryption_identity_may_use_the_key_and_the_set_follows_its_versions(cmk):
    role = by_name(cmk, "authorization:RoleAssignment")["llm-cmk-azure-cmk-role"]["inputs"]
    assert role["scope"] == "<id of llm-cmk-azure-cmk-key>"
    assert role["principalId"] == "<principal id of llm-cmk-azure-cmk-identity>"
    assert role["roleDefinitionId"].endswith(ENCRYPTION_USER)
    des = one(cmk, "compute:DiskEncryptionSet")["inputs"]
    assert des == {
        **des,
        "encryptionType": "EncryptionAtRestWithCustomerKey",
        "rotationToLatestKeyVersionEnabled": True,
        "activeKey": {
            "keyUrl": "<key uri with version of llm-cmk-azure-cmk-key>",
            "sourceVault": {"id": "<id of llm-cmk-azure-cmk-vault>"},
        },
        "identity": {"type": "UserAssigned", "userAssignedIdentities": ["<id of llm-cmk-azure-cmk-identity>"]},
    }


def test_the_scale_set_login_node_and_lustre_use_the_key(cmk):
    vmss = one(cmk, "compute:VirtualMachineScaleSet")["inputs"]
    assert vmss["virtualMachineProfile"]["storageProfile"]["osDisk"]["managedDisk"]["diskEncryptionSet"] == {"id": DES}
    login = by_name(cmk, "compute:VirtualMachine")["llm-cmk-azure-login"]["inputs"]
    assert login["storageProfile"]["osDisk"]["managedDisk"]["diskEncryptionSet"] == {"id": DES}
    fs = one(cmk, "storagecache:AmlFilesystem")["inputs"]
    assert fs["encryptionSettings"] == {
        "keyEncryptionKey": {
            "keyUrl": "<key uri with version of llm-cmk-azure-cmk-key>",
            "sourceVault": {"id": "<id of llm-cmk-azure-cmk-vault>"},
        }
    }
    assert fs["identity"] == {"type": "UserAssigned", "userAssignedIdentities": ["<id of llm-cmk-azure-cmk-identity>"]}
    assert cmk.as_json()["outputs"]["encryption"]["diskEncryptionSet"] == DES


def test_local_nvme_cannot_take_the_key_and_the_plan_says_so(cmk):
    assert any(w.startswith("encryption.key: local NVMe scratch") for w in cmk.warnings())


def test_every_vm_disk_and_the_files_account_use_the_key(instances):
    des = "<id of test-azure-cmk-des>"
    vms = by_name(instances, "compute:VirtualMachine")
    assert set(vms) == {"test-azure-node-0", "test-azure-node-1", "test-azure-head", "test-azure-login"}
    for vm in vms.values():
        storage = vm["inputs"]["storageProfile"]
        assert storage["osDisk"]["managedDisk"]["diskEncryptionSet"] == {"id": des}
        assert all(d["managedDisk"]["diskEncryptionSet"] == {"id": des} for d in storage.get("dataDisks") or [])
    assert all(vms[f"test-azure-node-{i}"]["inputs"]["storageProfile"]["dataDisks"] for i in (0, 1))
    account = one(instances, "storage:StorageAccount")["inputs"]
    assert account["identity"] == {
        "type": "UserAssigned",
        "userAssignedIdentities": ["<id of test-azure-cmk-identity>"],
    }
    vault = by_name(instances, "keyvault:Vault")["test-azure-cmk-vault"]["inputs"]["vaultName"]  # and Slurm's
    assert account["encryption"] == {
        "keySource": "Microsoft.Keyvault",
        # no version: Azure Storage follows the key's rotation
        "keyVaultProperties": {"keyVaultUri": f"https://{vault}.vault.azure.net", "keyName": "disks"},
        "encryptionIdentity": {"encryptionUserAssignedIdentity": "<id of test-azure-cmk-identity>"},
        "services": {"file": {"enabled": True, "keyType": "Account"}},
    }


def test_a_key_given_is_used_as_given_and_none_is_created():
    plan = plan_values(azure_values(encryption={"key": GIVEN}, storage={"shared": {"kind": "nfs"}}))
    assert not resources_of(plan, "keyvault:Vault") and not resources_of(plan, "keyvault:Key")
    assert "test-azure-cmk-role" not in by_name(plan, "authorization:RoleAssignment")
    des = one(plan, "compute:DiskEncryptionSet")["inputs"]
    assert des["activeKey"] == {"keyUrl": GIVEN}
    props = one(plan, "storage:StorageAccount")["inputs"]["encryption"]["keyVaultProperties"]
    assert props == {"keyVaultUri": "https://sec-vault.vault.azure.net", "keyName": "gpu-disks"}
    # no role can be assigned on a key id (no vault resource id): the plan says what to grant, to whom
    assert any("Key Vault Crypto Service Encryption User" in w and "test-cmk" in w for w in plan.warnings())
    assert plan.as_json()["outputs"]["encryption"]["created"] is False


def test_a_key_given_with_managed_lustre_is_refused_by_key():
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(azure_values(encryption={"key": GIVEN}, storage={"shared": {"kind": "lustre"}}))
    assert "gpu-cluster:cluster.encryption.key" in str(info.value)


def test_the_layout_refuses_a_key_id_with_managed_lustre():
    # the key is planned in the layout's plan(), so the contract's plan refuses it (it used to accept it and the
    # component refused while building resources)
    spec = spec_of(azure_values(encryption={"key": GIVEN}, storage={"shared": {"kind": "lustre"}}))
    with pytest.raises(ConfigError) as info:
        contract("azure").plan(spec)
    assert info.value.key == "gpu-cluster:cluster.encryption.key"
    assert "Azure Managed Lustre needs the key's vault resource id" in str(info.value)


def test_a_refused_key_registers_nothing(constructed):
    """The refusal comes before the first resource: no resource of the program (not even the GpuCluster
    component) is constructed (the runtime's Stack root aside). Counted at pulumi.Resource construction under the
    plan's mocks (it used to be three: the component, the Azure component and the resource group)."""
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(azure_values(encryption={"key": GIVEN}, storage={"shared": {"kind": "lustre"}}))
    assert "gpu-cluster:cluster.encryption.key" in str(info.value)
    assert constructed == []
    # the count sees what a plan registers: the same config with a key Lustre takes registers resources
    plan_values(azure_values(encryption={"key": "auto"}, storage={"shared": {"kind": "lustre"}}))
    assert len(constructed) > 3


def test_aks_node_disks_use_the_set_and_the_control_plane_may_read_it():
    plan = plan_values(
        azure_values(
            gpu="H100:8",
            nodes=2,
            scheduler="kubernetes",
            encryption={"key": "auto"},
            network={"cidr": "10.63.0.0/16"},
        )
    )
    cluster = one(plan, "containerservice:ManagedCluster")["inputs"]
    assert cluster["diskEncryptionSetID"] == "<id of test-azure-cmk-des>"
    reader = by_name(plan, "authorization:RoleAssignment")["test-azure-aks-role-des-reader"]["inputs"]
    assert reader["scope"] == "<id of test-azure-cmk-des>" and reader["roleDefinitionId"].endswith(READER)
    assert reader["principalId"] == "<principal id of test-azure-aks-identity>"


def test_deleting_the_key_is_data_loss_first(cmk):
    old = json.loads(json.dumps(cmk.as_json(), default=str))
    new = copy.deepcopy(old)
    new["resources"] = [r for r in new["resources"] if r["type"] != "azure-native:keyvault:Key"]
    first = diff_plans(old, new).warnings[0]
    assert first.startswith("DATA LOSS: deletes azure-native:keyvault:Key `llm-cmk-azure-cmk-key`")


def test_replacing_the_disk_encryption_set_is_data_loss(cmk):
    old = json.loads(json.dumps(cmk.as_json(), default=str))
    new = copy.deepcopy(old)
    des = next(r for r in new["resources"] if r["type"] == "azure-native:compute:DiskEncryptionSet")
    des["inputs"]["location"] = "westus3"
    warnings = diff_plans(old, new).warnings
    assert warnings[0].startswith("DATA LOSS")
    assert any(w.startswith("DATA LOSS: replaces azure-native:compute:DiskEncryptionSet") for w in warnings)


def test_provider_registers_no_key_and_names_none():
    plan = plan_values(azure_values(storage={"shared": {"kind": "nfs"}}))
    assert not resources_of(plan, "keyvault:") and not resources_of(plan, "compute:DiskEncryptionSet")
    vmss = one(plan, "compute:VirtualMachineScaleSet")["inputs"]
    assert "diskEncryptionSet" not in vmss["virtualMachineProfile"]["storageProfile"]["osDisk"]["managedDisk"]
    assert "encryption" not in one(plan, "storage:StorageAccount")["inputs"]
    assert "encryption" not in plan.as_json()["outputs"]


def test_a_malformed_key_id_is_refused_by_key():
    with pytest.raises(ConfigErrors) as info:
        spec_of(azure_values(encryption={"key": "https://vault.example.com/keys/k"}))
    assert "gpu-cluster:cluster.encryption.key" in {e.key for e in info.value.errors}
