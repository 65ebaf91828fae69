"""Azure storage.shared as registered with Pulumi's mocks: Azure Managed Lustre in its own subnet, the mount."""

from __future__ import annotations

import base64
import copy
import ipaddress
import json
import re

import pytest
import yaml

from components.bootstrap.mounts import SOURCE_PLACEHOLDER
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout import azure as azure_layout

from .conftest import one, plan_values, resources_of, spec_of
from .test_azure_resources import azure_values

KEY = "gpu-cluster:cluster.storage.shared"
AMLFS = "azure-native:storagecache:AmlFilesystem"
SHARE = "azure-native:storage:FileShare"


@pytest.fixture(scope="module")
def h100(stack_plan):
    return stack_plan("azure-h100")


def test_amlfs_in_its_own_subnet_with_the_tier_and_size(h100):
    fs = one(h100, "storagecache:AmlFilesystem")
    inputs = fs["inputs"]
    assert inputs["sku"] == {"name": "AMLFS-Durable-Premium-500"} and inputs["storageCapacityTiB"] == 8
    assert inputs["filesystemSubnet"] == "<id of llm-train-azure-shared-subnet>"
    assert inputs["maintenanceWindow"] == {"dayOfWeek": "Sunday", "timeOfDayUTC": "02:00"}
    assert fs["protect"] is True and fs["retainOnDelete"] is True


def test_the_filesystem_subnet_moves_no_existing_subnet(h100, stack_plan):
    subnets = {r["name"]: r["inputs"]["addressPrefix"] for r in resources_of(h100, "network:Subnet")}
    assert subnets["llm-train-azure-shared-subnet"] == "10.44.255.0/24"
    assert subnets["llm-train-azure-nodes"] == "10.44.0.0/17"  # as deployed
    with_access = plan_values(azure_values(access="bastion", login={}, storage={"shared": {}}))
    prefixes = [r["inputs"]["addressPrefix"] for r in resources_of(with_access, "network:Subnet")]
    assert len(prefixes) == len(set(prefixes)) == 4  # nodes, bastion, login, filesystem: no overlap
    nets = [ipaddress.ip_network(p) for p in prefixes]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


def test_nsg_admits_lustre_only_from_the_node_subnet(h100):
    nsg = next(r for r in resources_of(h100, "NetworkSecurityGroup") if r["name"] == "llm-train-azure-shared-nsg")
    rules = {r["name"]: r for r in nsg["inputs"]["securityRules"]}
    lustre = [r for r in rules.values() if r["name"].startswith("allow-lustre")]
    assert {(r["destinationPortRange"], r["sourceAddressPrefix"]) for r in lustre} == {
        ("988", "10.44.0.0/17"),
        ("1019-1023", "10.44.0.0/17"),
    }
    assert rules["allow-within-filesystem"]["sourceAddressPrefix"] == "10.44.255.0/24"
    assert rules["deny-internet-inbound"]["access"] == "Deny"
    assert not [r for r in rules.values() if r["access"] == "Allow" and r["sourceAddressPrefix"] in ("*", "Internet")]


def test_custom_data_mounts_the_filesystem(h100):
    vmss = one(h100, "compute:VirtualMachineScaleSet")["inputs"]
    data = base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    doc = yaml.safe_load(data)
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    env = files["/etc/gpu-cluster/mounts.env"]
    assert 'MOUNT_SOURCE="<mgs address of llm-train-azure-shared>@tcp:/lustrefs"' in env
    assert 'MOUNT_OPTIONS="noatime,flock"' in env and 'CLIENT="amlfs-apt"' in env
    assert 'CLIENT_REPO="https://packages.microsoft.com/repos/amlfs-{codename}/"' in env
    assert SOURCE_PLACEHOLDER not in data
    assert 'EXPECTED_MOUNTS="/shared"' in files["/etc/gpu-cluster/health.env"]


def test_outputs_and_summary(h100):
    assert h100.run.outputs["sharedFilesystem"]["mount"] == "<mgs address of llm-train-azure-shared>@tcp:/lustrefs"
    s = h100.summary()["sharedStorage"]
    assert s["sizeGb"] == 8192 and s["throughput"] == 500 and s["monthlyUsd"] is None and s["priceSource"]


@pytest.mark.parametrize(
    ("cfg", "key", "fragment"),
    [
        ({"sizeGb": 6000}, "sizeGb", "multiples of 4096 up to 131072 GiB (nearest: 4096 or 8192)"),
        ({"throughput": 250, "sizeGb": 4096}, "sizeGb", "multiples of 8192"),
        ({"throughput": 1000}, "throughput", "takes 40, 125, 250, 500"),
        ({"kind": "nfs", "sizeGb": 50}, "sizeGb", "takes 100 to 102400 in steps of 1 GiB (nearest: 100)"),
        ({"kind": "nfs", "throughput": 250}, "throughput", "has no throughput tiers"),
    ],
)
def test_bad_input_names_the_key(cfg, key, fragment):
    with pytest.raises(ConfigErrors) as info:
        spec_of(azure_values(storage={"shared": cfg}))
    found = {e.key: e.message for e in info.value.errors}
    assert fragment in found[f"{KEY}.{key}"]


def test_defaults_to_the_smallest_filesystem():
    layout = azure_layout.plan(spec_of(azure_values(storage={"shared": {}})))
    assert layout.shared is not None and (layout.shared.size_gb, layout.shared.throughput) == (4096, 500)


def test_a_network_too_small_for_the_filesystem_subnet_is_refused():
    with pytest.raises(ConfigError) as info:
        azure_layout.plan(spec_of(azure_values(nodes=1, network={"cidr": "10.44.0.0/23"}, storage={"shared": {}})))
    assert info.value.key == "gpu-cluster:cluster.network.cidr" and "/24" in info.value.message


def test_a_size_change_replaces_the_filesystem_first_as_data_loss():
    old = json.loads(json.dumps(plan_values(azure_values(storage={"shared": {"sizeGb": 8192}})).as_json(), default=str))
    new = copy.deepcopy(old)
    fs = next(r for r in new["resources"] if r["type"] == AMLFS)
    fs["inputs"]["storageCapacityTiB"] = 4
    first = diff_plans(old, new).warnings[0]
    assert first.startswith(f"DATA LOSS: replaces {AMLFS} `test-azure-shared`, the shared filesystem (8,192 GiB")


# --- kind: nfs (Azure Files premium NFS share behind a private endpoint) ---------------------------------


@pytest.fixture(scope="module")
def nfs():
    return plan_values(azure_values(storage={"shared": {"kind": "nfs", "sizeGb": 1024}}))


def test_nfs_share_and_its_premium_account(nfs):
    share = one(nfs, "storage:FileShare")
    account = one(nfs, "storage:StorageAccount")
    name = account["inputs"]["accountName"]
    assert re.fullmatch(r"[a-z0-9]{3,24}", name)
    assert share["inputs"] == {
        "accountName": name,
        "resourceGroupName": "<autoname:test-azure-rg>",
        "shareName": "shared",
        "enabledProtocols": "NFS",
        "shareQuota": 1024,
    }
    inputs = account["inputs"]
    assert (inputs["kind"], inputs["sku"]) == ("FileStorage", {"name": "Premium_LRS"})
    assert inputs["enableHttpsTrafficOnly"] is False  # NFS: secure transfer off
    assert inputs["publicNetworkAccess"] == "Disabled"
    assert inputs["networkRuleSet"] == {"defaultAction": "Deny", "bypass": "None"}
    for res in (share, account):
        assert res["protect"] is True and res["retainOnDelete"] is True
    assert not resources_of(nfs, "storagecache:AmlFilesystem") and not resources_of(nfs, "NetworkSecurityGroup")[1:]


def test_nfs_private_endpoint_and_dns_in_the_cluster_vnet(nfs):
    endpoint = one(nfs, "network:PrivateEndpoint")["inputs"]
    assert endpoint["subnet"]["id"] == "<id of test-azure-nodes>"
    (conn,) = endpoint["privateLinkServiceConnections"]
    assert conn["privateLinkServiceId"] == "<id of test-azure-shared-account>" and conn["groupIds"] == ["file"]
    zone = one(nfs, "privatedns:PrivateZone")["inputs"]
    assert zone["privateZoneName"] == "privatelink.file.core.windows.net" and zone["location"] == "Global"
    link = one(nfs, "privatedns:VirtualNetworkLink")["inputs"]
    assert link["virtualNetwork"] == {"id": "<id of test-azure-vnet>"} and link["registrationEnabled"] is False
    assert link["privateZoneName"] == "privatelink.file.core.windows.net"
    group = one(nfs, "network:PrivateDnsZoneGroup")["inputs"]
    assert group["privateEndpointName"] == "<autoname:test-azure-shared-endpoint>"
    assert group["privateDnsZoneConfigs"] == [{"name": "file", "privateDnsZoneId": "<id of test-azure-shared-dns>"}]
    subnets = [r["name"] for r in resources_of(nfs, "network:Subnet")]
    assert "test-azure-shared-subnet" not in subnets  # no filesystem subnet for NFS


def test_nfs_custom_data_mounts_the_share(nfs):
    name = one(nfs, "storage:StorageAccount")["inputs"]["accountName"]
    vmss = one(nfs, "compute:VirtualMachineScaleSet")["inputs"]
    data = base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    files = {f["path"]: f["content"] for f in yaml.safe_load(data)["write_files"]}
    env = files["/etc/gpu-cluster/mounts.env"]
    assert f'MOUNT_SOURCE="{name}.file.core.windows.net:/{name}/shared"' in env
    # encryption in transit: Microsoft's AZNFS mount helper (TLS through stunnel), from packages.microsoft.com
    assert 'MOUNT_FSTYPE="aznfs"' in env and 'CLIENT="ms-config-apt"' in env and 'CLIENT_PACKAGES="aznfs"' in env
    assert 'MOUNT_OPTIONS="vers=4,minorversion=1,sec=sys,nconnect=4,' in env
    assert SOURCE_PLACEHOLDER not in data
    assert nfs.run.outputs["sharedFilesystem"]["mount"] == f"{name}.file.core.windows.net:/{name}/shared"
    s = nfs.summary()["sharedStorage"]
    assert (s["kind"], s["sizeGb"], s["throughput"], s["monthlyUsd"]) == ("nfs", 1024, None, None)


def test_nfs_defaults_to_the_smallest_share_and_retain_false_unprotects():
    layout = azure_layout.plan(spec_of(azure_values(storage={"shared": {"kind": "nfs"}})))
    assert layout.shared is not None and layout.shared.size_gb == 100 and layout.shared_subnet_cidr is None
    plan = plan_values(azure_values(storage={"shared": {"kind": "nfs", "retain": False}}))
    for kind in ("storage:FileShare", "storage:StorageAccount"):
        res = one(plan, kind)
        assert not res.get("protect") and not res.get("retainOnDelete")


def test_account_name_is_stable_and_valid():
    from components.azure.storage import account_name

    a = account_name("LLM-Train_Azure-cluster-with-a-long-name", "gpu-cluster", "azure-h100", "llm")
    assert a == account_name("LLM-Train_Azure-cluster-with-a-long-name", "gpu-cluster", "azure-h100", "llm")
    assert re.fullmatch(r"[a-z0-9]{3,24}", a) and a.startswith("llmtrainazureclu")
    assert a != account_name("LLM-Train_Azure-cluster-with-a-long-name", "gpu-cluster", "other", "llm")
    assert re.fullmatch(r"gpucluster[0-9a-f]{8}", account_name("--", "p", "s", "c"))


def test_nfs_protocol_change_replaces_the_share_first_as_data_loss(nfs):
    old = json.loads(json.dumps(nfs.as_json(), default=str))
    new = copy.deepcopy(old)
    share = next(r for r in new["resources"] if r["type"] == SHARE)
    share["inputs"]["enabledProtocols"] = "SMB"
    first = diff_plans(old, new).warnings[0]
    assert first.startswith(f"DATA LOSS: replaces {SHARE} `test-azure-shared`, the shared filesystem (1,024 GiB")


def test_nfs_size_increase_is_in_place(nfs):
    old = json.loads(json.dumps(nfs.as_json(), default=str))
    new = copy.deepcopy(old)
    next(r for r in new["resources"] if r["type"] == SHARE)["inputs"]["shareQuota"] = 2048
    assert not [w for w in diff_plans(old, new).warnings if "DATA LOSS" in w]


JOINED_VNET = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net/providers/Microsoft.Network/"
    "virtualNetworks/hub"
)
JOINED = {"existing": {"vpcId": JOINED_VNET, "subnetIds": [JOINED_VNET + "/subnets/gpu"]}}


def test_nfs_joins_an_existing_network_lustre_does_not():
    plan = plan_values(azure_values(access="ssh", network=JOINED, storage={"shared": {"kind": "nfs"}}))
    assert one(plan, "privatedns:VirtualNetworkLink")["inputs"]["virtualNetwork"] == {"id": JOINED_VNET}
    assert one(plan, "network:PrivateEndpoint")["inputs"]["subnet"]["id"] == JOINED_VNET + "/subnets/gpu"
    assert not resources_of(plan, "network:Subnet")
    for cfg in ({}, {"kind": "lustre"}):
        with pytest.raises(ConfigErrors) as info:
            spec_of(azure_values(access="ssh", network=JOINED, storage={"shared": cfg}))
        found = {e.key: e.message for e in info.value.errors}
        assert found[KEY].startswith("lustre: needs a subnet of its own") and "use kind: nfs or existing" in found[KEY]
    spec_of(azure_values(access="ssh", network=JOINED, storage={"shared": {"kind": "existing", "existing": "h:/x"}}))
