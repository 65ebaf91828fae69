"""Azure conformance (issue 26): every shipped Azure stack and a set of feature-rich configs, their registered
inputs built into the ARM requests azure-native sends, checked against the Azure SDK models and the rules their
docstrings state (tests/conformance/azure.py); the checker fed known-bad bodies; the fixes it led to."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from components.errors import ConfigError
from components.layout.azure import names as azure_names

from .conformance import azure, azure_rules
from .conformance.azure_models import fields, operation
from .conftest import plan_stack, plan_values, shipped_stacks

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@example"
LONG_NAME = "a" * 25 + "-long1"  # the longest cluster name the spec takes (31)
FLEET = {"gpu": "T4:4", "instanceType": "Standard_NC64as_T4_v3", "nodes": 2, "minNodes": 1, "maxNodes": 10}
FLEET["placement"] = "none"
T4 = {"gpu": "T4:1", "nodes": 1}

# Feature-rich configs beside the shipped stacks: Slurm on a scale set and on VMs, CMEK, Azure Files, Managed
# Lustre, elastic fleets, AKS with spot, Bastion, and the longest cluster name.
FEATURES: dict[str, dict[str, Any]] = {
    # with a budget on the resource group: mapped to no SDK model (azure.UNCOVERED says why)
    "slurm-scale-set": {"scheduler": "slurm", "budget": {"monthly": 5000, "notify": ["ops@example.com"]}},
    "slurm-instances-cmk-files": {
        "nodeGroup": "instances",
        "scheduler": "slurm",
        "encryption": {"key": "auto"},
        "storage": {"scratch": "auto", "scratchGb": 256, "shared": {"kind": "nfs", "sizeGb": 1024}},
    },
    "fleet-gpu-utilisation": {**FLEET, "scaling": {"metric": "gpuUtilization", "target": 70}},
    # serve: the internal Standard Load Balancer, the scale set's NICs in its pool, the NSG's probe rule
    "fleet-serve-http": {**FLEET, "serve": {"port": 8000}},
    "fleet-serve-tcp-long-name": {**FLEET, "name": LONG_NAME, "serve": {"port": 9000, "protocol": "tcp"}},
    # public: a Standard public IP as the frontend, outbound SNAT off on the rule, the NSG's client rule
    "fleet-serve-public-tcp": {
        **FLEET,
        "serve": {"port": 9000, "protocol": "tcp", "public": True, "allowedCidrs": ["203.0.113.0/24"]},
    },
    "fleet-queue-depth": {
        **FLEET,
        "nodes": 0,
        "minNodes": 0,
        "scaling": {"metric": "queueDepth", "target": 5, "queue": "auto"},
    },
    "aks-spot-device-plugin": {
        **T4,
        "scheduler": "kubernetes",
        "kubernetes": {"gpuSoftware": "device-plugin", "publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]},
        "spot": True,
        "maxNodes": 4,
        "fabric": "none",
    },
    "files-share": {**T4, "network": {"cidr": "10.62.0.0/16"}, "storage": {"shared": {"kind": "nfs", "sizeGb": 1024}}},
    "bastion-login-lustre": {**T4, "access": "bastion", "login": {}, "storage": {"shared": {}}},
    "long-name-scale-set": {
        "name": LONG_NAME,
        "scheduler": "slurm",
        "login": {},
        "encryption": {"key": "auto"},
        "storage": {"shared": {"kind": "lustre", "sizeGb": 8192, "throughput": 500}},
    },
    "long-name-instances": {"name": LONG_NAME, "nodeGroup": "instances", "storage": {"shared": {"kind": "nfs"}}},
    "long-name-aks": {"name": LONG_NAME, "scheduler": "kubernetes"},
    # slurm.accounting: the MySQL Flexible Server, its delegated subnet, private DNS zone, database and parameter, the
    # password's secret and the head's own identity (with Bastion, a login node and Managed Lustre beside it)
    "slurm-accounting": {
        "scheduler": "slurm",
        "slurm": {"accounting": True},
        "login": {},
        "zone": "1",
        "storage": {"shared": {"kind": "lustre"}},
    },
    # monitoring.logs: the Azure Monitor Agent extension on every single VM (login, nodes) and the scale set's profile
    "logs-instances-login": {"nodeGroup": "instances", "login": {}, "monitoring": {"logs": {"enabled": True}}},
    "logs-slurm-scale-set": {"scheduler": "slurm", "monitoring": {"logs": {"enabled": True, "retentionDays": 730}}},
    # monitoring.notify: the action group, the Azure Monitor workspace and its rule group, the publisher grant
    "notify-login": {"nodeGroup": "instances", "login": {}, "monitoring": {"notify": ["ops@example.com"]}},
    # monitoring.prometheus managed: the workspace's reader grant, Azure Managed Grafana and its admin's grant
    "managed-grafana": {
        "scheduler": "slurm",
        "monitoring": {"prometheus": "managed", "grafanaAdmins": ["0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"]},
    },
    "long-name-logs-notify": {
        "name": LONG_NAME,
        "scheduler": "slurm",
        "monitoring": {"logs": {"enabled": True}, "notify": ["ops@example.com"]},
    },
    # GPU sharing: the GPU pool's gpuInstanceProfile (MIG1g on ND H100 v5)
    # monitoring.logs on AKS: the omsagent add-on profile, Container Insights' rule (extension and syslog data
    # sources) and its association with the cluster
    "aks-logs": {
        "scheduler": "kubernetes",
        "login": {},
        "monitoring": {"logs": {"enabled": True, "retentionDays": 60}},
    },
    "aks-mig": {"scheduler": "kubernetes", "kubernetes": {"gpuSharing": {"mode": "mig", "migProfile": "1g.10gb"}}},
}
_PLANNED: dict[str, list[dict[str, Any]]] = {}


def azure_values(**cluster: Any) -> dict[str, Any]:
    base = {"gpu": "H100:8", "nodes": 2, "sshPublicKey": KEY, **cluster}
    return {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus", "gpu-cluster:cluster": base}


def feature(name: str) -> list[dict[str, Any]]:
    if name not in _PLANNED:
        _PLANNED[name] = [r.as_json() for r in plan_values(azure_values(**FEATURES[name]), f"azure-{name}").resources]
    return _PLANNED[name]


def shipped(stack: str) -> list[dict[str, Any]]:
    return [r.as_json() for r in plan_stack(stack).resources]


# --- every shipped stack and feature config conforms ---------------------------------------------------------------


@pytest.mark.parametrize("stack", shipped_stacks("azure"))
def test_shipped_stack_conforms_to_the_sdk_models(stack):
    resources = shipped(stack)
    report = azure.check_resources(resources)
    assert not report.refusals, report.text()
    # nothing of a shipped stack goes unchecked (the private DNS zones and links too: azure-mgmt-privatedns), but a
    # type no Azure SDK for Python models, which its own test checks by hand (azure.NO_SDK_MODEL)
    assert set(report.uncovered) <= set(azure.NO_SDK_MODEL), report.uncovered
    assert sum(report.checked.values()) >= 10


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_feature_config_conforms(name):
    report = azure.check_resources(feature(name))
    assert not report.refusals, report.text()
    assert set(report.uncovered) <= set(azure.UNCOVERED), report.uncovered


def test_every_azure_type_a_plan_registers_is_mapped_or_said_uncovered():
    types = {r["type"] for s in shipped_stacks("azure") for r in shipped(s)} | {
        r["type"] for n in FEATURES for r in feature(n)
    }
    native = {t for t in types if t.startswith("azure-native:")}
    assert native <= set(azure.OPERATIONS) | set(azure.UNCOVERED), native - set(azure.OPERATIONS) - set(azure.UNCOVERED)


def test_the_most_tags_an_azure_plan_takes_still_fit_the_50_tags_of_every_resource():
    for count in range(64, 0, -1):
        try:
            plan = plan_values(azure_values(scheduler="slurm", login={}, tags={f"t{i}": "v" for i in range(count)}))
        except ConfigError:
            continue
        break
    report = azure.check_resources([r.as_json() for r in plan.resources])
    assert not report.refusals, report.text()


# --- the fix: a scale set's computer name prefix within the API's 15 characters ------------------------------------


def test_a_long_cluster_name_gives_a_scale_set_prefix_of_at_most_15_characters():
    vmss = next(r for r in feature("long-name-scale-set") if r["type"].endswith("compute:VirtualMachineScaleSet"))
    prefix = vmss["inputs"]["virtualMachineProfile"]["osProfile"]["computerNamePrefix"]
    assert prefix == azure_names.computer_name_prefix(LONG_NAME)
    assert len(prefix) <= 15 and prefix.startswith("aaaaaaaaa-") and prefix.endswith("-")


def test_computer_name_prefix_keeps_short_names_and_tells_long_ones_apart():
    assert azure_names.computer_name_prefix("llm-train") == "llm-train-"  # the shipped stacks keep theirs
    assert azure_names.computer_name_prefix("a" * 14) == "a" * 14 + "-"
    one, two = azure_names.computer_name_prefix("a" * 15), azure_names.computer_name_prefix("a" * 14 + "b")
    assert one != two and len(one) == len(two) == 15
    assert azure_names.computer_name_prefix("abcdefgh-ijklmnopq")[:9] == "abcdefgh-"  # no doubled hyphen
    assert "--" not in azure_names.computer_name_prefix("abcdefgh-ijklmnopq")


# --- the checker refuses what the SDK refuses ----------------------------------------------------------------------

VMSS = "azure-native:compute:VirtualMachineScaleSet"


def vmss(**over: Any) -> dict[str, Any]:
    profile = {"osProfile": {"computerNamePrefix": "node-", "adminUsername": "azureuser"}}
    inputs = {
        "resourceGroupName": "rg",
        "location": "eastus",
        "sku": {"name": "Standard_D2s_v5", "capacity": 1},
        "orchestrationMode": "Uniform",
        "virtualMachineProfile": profile,
        **over,
    }
    return {"type": VMSS, "name": "n", "inputs": inputs}


def refused(res: dict[str, Any]) -> list[tuple[str, str]]:
    return azure.request(res, {res["name"]: res})[1]


def text(found: list[tuple[str, str]]) -> str:
    return "\n".join(f"{w}: {m}" for w, m in found)


def test_a_conforming_body_passes_and_flattens_as_azure_native_does():
    req, found = azure.request(vmss(identity={"type": "UserAssigned", "userAssignedIdentities": ["/id/1"]}), {})
    assert found == []
    assert req.path == {"resourceGroupName": "rg", "vmScaleSetName": "n0a1b2c3d"}
    assert req.body["properties"]["orchestrationMode"] == "Uniform" and "orchestrationMode" not in req.body
    assert req.body["identity"]["userAssignedIdentities"] == {"/id/1": {}}


@pytest.mark.parametrize(
    ("over", "words"),
    [
        ({"orchestrationMode": "Sideways"}, "is not one of the known values"),
        ({"overprovisionn": False}, "unknown property"),
        ({"overprovision": "no"}, "expected bool"),
        ({"sku": {"name": "Standard_D2s_v5", "capacity": "two"}}, "expected int"),
        ({"provisioningState": "Succeeded"}, "read-only"),
        ({"uniqueId": "x"}, "read-only"),
        ({"location": None}, "required (VirtualMachineScaleSet.location)"),
        ({"virtualMachineProfile": {"osProfile": {"computerNamePrefix": "a" * 16}}}, "1-15"),
        ({"virtualMachineProfile": {"osProfile": {"adminUsername": "admin"}}}, "disallowed admin name"),
        (
            {"virtualMachineProfile": {"osProfile": {"customData": base64.b64encode(b"x" * 65536).decode()}}},
            "decodes to 65536 bytes; at most 65535",
        ),
    ],
)
def test_the_checker_refuses_a_bad_scale_set(over, words):
    found = refused(vmss(**over))
    assert any(words in m for _, m in found), text(found)


def test_the_checker_refuses_bad_names_and_rules_of_other_resources():
    nsg = {
        "type": "azure-native:network:NetworkSecurityGroup",
        "name": "nsg",
        "inputs": {
            "resourceGroupName": "rg",
            "location": "eastus",
            "securityRules": [
                {
                    "name": "r",
                    "priority": 99,
                    "protocol": "Tcp",
                    "access": "Allow",
                    "direction": "Inbound",
                    "sourcePortRange": "70000",
                    "description": "d" * 141,
                }
            ],
        },
    }
    found = text(refused(nsg))
    assert "99 is not between 100 and 4096" in found and "'70000' is not a port" in found and "at most 140" in found
    account = {
        "type": "azure-native:storage:StorageAccount",
        "name": "sa",
        "inputs": {
            "resourceGroupName": "rg",
            "accountName": "Shared_Files",
            "location": "eastus",
            "kind": "FileStorage",
            "sku": {"name": "Premium_LRS"},
        },
    }
    assert "is not a storage account name" in text(refused(account))
    for bad in ("shared--x", "shared-", "s" * 64):
        share = {
            "type": "azure-native:storage:FileShare",
            "name": "s",
            "inputs": {"resourceGroupName": "rg", "accountName": "acct", "shareName": bad},
        }
        assert "is not a file share name" in text(refused(share)), bad


def test_the_checker_refuses_a_bad_mysql_server_delegation_and_dns_link():
    server = {
        "type": "azure-native:dbformysql:Server",
        "name": "db",
        "inputs": {
            "resourceGroupName": "rg",
            "location": "eastus",
            "version": "8.4.9",
            "sku": {"name": "Standard_B1ms", "tier": "Cheap"},
            "storage": {"storageSizeGB": "20"},
            "network": {"publicNetworkAccess": "Off", "delegatedSubnet": "/subnets/db"},
        },
    }
    found = text(refused(server))
    assert "properties.version: '8.4.9' is not one of the known values ['5.7', '8.0.21']" in found
    assert "sku.tier: 'Cheap' is not one of the known values" in found
    assert "storageSizeGB: expected int" in found and "'Off' is not one of the known values" in found
    assert "Network has no 'delegatedSubnet'" in found
    subnet = {
        "type": "azure-native:network:Subnet",
        "name": "s",
        "inputs": {
            "resourceGroupName": "rg",
            "virtualNetworkName": "v",
            "addressPrefix": "10.0.0.0/28",
            "delegations": [{"name": "d", "service": "Microsoft.DBforMySQL/flexibleServers"}],
        },
    }
    assert "Delegation has no 'service'" in text(refused(subnet))
    link = {
        "type": "azure-native:privatedns:VirtualNetworkLink",
        "name": "l",
        "inputs": {
            "resourceGroupName": "rg",
            "privateZoneName": "z.private.mysql.database.azure.com",
            "location": "Global",
            "virtualNetwork": "/virtualNetworks/v",
            "registrationEnabled": "no",
        },
    }
    found = text(refused(link))
    assert "virtualNetwork: expected an object (SubResource)" in found and "registrationEnabled: expected bool" in found


def test_the_checker_refuses_what_the_other_models_state_in_prose():
    repairs = refused(vmss(automaticRepairsPolicy={"enabled": True, "gracePeriod": "PT5M"}))
    assert any("'PT5M' is not between 10 and 90 minutes" in m for _, m in repairs), text(repairs)
    account = {
        "type": "azure-native:storage:StorageAccount",
        "name": "sa",
        "inputs": {
            "resourceGroupName": "rg",
            "accountName": "acct01",
            "location": "eastus",
            "kind": "FileStorage",
            "sku": {"name": "Premium_LRS"},
            "tags": {"k" * 129: "v"},
            "identity": {"type": "UserAssigned", "userAssignedIdentities": ["/id/1", "/id/2"]},
        },
    }
    found = text(refused(account))
    assert "is longer than 128" in found and "2 entries; at most 1" in found
    share = {
        "type": "azure-native:storage:FileShare",
        "name": "s",
        "inputs": {"resourceGroupName": "rg", "accountName": "acct01", "shareName": "shared", "shareQuota": 0},
    }
    assert "0 is not between 1 and 102400" in text(refused(share))
    aks = {
        "type": "azure-native:containerservice:ManagedCluster",
        "name": "aks",
        "inputs": {
            "resourceGroupName": "rg",
            "location": "eastus",
            "networkProfile": {"serviceCidr": "10.0.0.0/16", "dnsServiceIP": "10.1.0.10"},
            "identityProfile": {"kubelet": {"resourceId": "/id/1"}},
        },
    }
    found = text(refused(aks))
    assert "dnsServiceIP 10.1.0.10 is outside serviceCidr 10.0.0.0/16" in found and "'kubelet'" in found


def test_the_checker_holds_every_resources_tags_to_azures_limits():
    found = text(refused(vmss(tags={f"t{i}": "v" for i in range(51)})))
    assert "51 tags; at most 50" in found
    found = text(refused(vmss(tags={"Microsoft.Owner": "me", "team": "ml"})))
    assert "tag name 'Microsoft.Owner' starts with a prefix reserved for Azure" in found and "'team'" not in found


def test_the_checker_reads_msrest_models_too():
    """azure-mgmt-authorization (msrest): `_validation` required and read-only, `properties.x` keys flattened."""
    res = {
        "type": "azure-native:authorization:RoleAssignment",
        "name": "ra",
        "inputs": {"scope": "/subscriptions/s", "principalType": "Robot", "roleDefinitionId": "/r", "createdBy": "me"},
    }
    req, found = azure.request(res, {})
    words = text(found)
    assert "required (RoleAssignmentCreateParameters.principal_id)" in words
    assert "read-only (RoleAssignmentCreateParameters.created_by)" in words
    assert "'Robot' is not one of the known values" in words
    assert req.path["roleAssignmentName"] == "00000000-0000-0000-0000-00000a1b2c3d"  # "It can be any valid GUID."
    assert req.body == {"properties": {"principalType": "Robot", "roleDefinitionId": "/r"}}


def test_the_sdk_operation_gives_the_url_parameters_and_the_body_model():
    op = operation(*azure.OPERATIONS["azure-native:containerservice:AgentPool"])
    assert op.path == ("resourceGroupName", "resourceName", "agentPoolName") and op.body.__name__ == "AgentPool"
    assert fields(op.body)["type"].readonly  # the resource type: the pool's own `type` is `properties.type`


def test_every_rule_is_stated_in_the_sdk_docstring_it_quotes():
    for rule in azure_rules.RULES:
        azure_rules.verified(rule)
