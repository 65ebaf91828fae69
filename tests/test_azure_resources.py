"""Azure resources as registered with Pulumi's mocks: the inputs the engine would receive (camelCase)."""

import base64

import pulumi
import pytest
import yaml

from components.cluster import GpuCluster

from .conftest import one, plan_values, resources_of, spec_of

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@example"
VMSS = "compute:VirtualMachineScaleSet"


def azure_values(**cluster):
    base = {"gpu": "H100:8", "nodes": 2, "sshPublicKey": KEY}
    base.update(cluster)
    return {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus", "gpu-cluster:cluster": base}


@pytest.fixture(scope="module")
def h100(stack_plan):
    return stack_plan("azure-h100")


@pytest.fixture(scope="module")
def dev(stack_plan):
    return stack_plan("azure-dev")


@pytest.fixture(scope="module")
def h100_instances():
    return plan_values(azure_values(nodeGroup="instances", storage={"scratch": "disk", "retainScratch": True}))


def test_nd_h100_scale_set_wires_infiniband_in_one_placement_group(h100):
    vmss = one(h100, VMSS)["inputs"]
    assert vmss["singlePlacementGroup"] is True
    assert vmss["orchestrationMode"] == "Uniform"
    assert vmss["sku"] == {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 2}
    assert vmss["overprovision"] is False
    ppg = one(h100, "compute:ProximityPlacementGroup")
    assert ppg["inputs"]["proximityPlacementGroupType"] == "Standard"
    assert ppg["inputs"]["intent"] == {"vmSizes": ["Standard_ND96isr_H100_v5"]}
    assert vmss["proximityPlacementGroup"] == {"id": "<id of llm-train-azure-ppg>"}


def test_nd_h100_uses_the_hpc_image_and_key_only_login(h100):
    profile = one(h100, VMSS)["inputs"]["virtualMachineProfile"]
    image = profile["storageProfile"]["imageReference"]
    # image: auto boots the catalog's pinned version, never the marketplace's moving `latest`
    assert image == {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "22.04.2026082801"}
    linux = profile["osProfile"]["linuxConfiguration"]
    assert linux["disablePasswordAuthentication"] is True
    key = linux["ssh"]["publicKeys"][0]
    assert key["path"] == "/home/azureuser/.ssh/authorized_keys" and key["keyData"].startswith("ssh-rsa ")
    assert "adminPassword" not in profile["osProfile"]
    os_disk = profile["storageProfile"]["osDisk"]
    assert os_disk["managedDisk"] == {"storageAccountType": "Premium_LRS"} and os_disk["diskSizeGB"] == 256
    assert h100.summary()["image"] == "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"


def test_nd_h100_has_no_public_ip_and_accelerated_networking(h100):
    nics = one(h100, VMSS)["inputs"]["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"]
    assert len(nics) == 1 and nics[0]["enableAcceleratedNetworking"] is True
    ip = nics[0]["ipConfigurations"][0]
    assert "publicIPAddressConfiguration" not in ip and "publicIpAddressConfiguration" not in ip
    assert ip["subnet"] == {"id": "<id of llm-train-azure-nodes>"}
    ips = {r["name"] for r in resources_of(h100, "network:PublicIPAddress")}
    assert ips == {"llm-train-azure-nat-ip", "llm-train-azure-bastion-ip"}  # egress and Bastion, none on a node


def test_nsg_denies_the_internet_allows_the_vnet_and_no_ssh_by_default(h100):
    nsg = next(r for r in resources_of(h100, "network:NetworkSecurityGroup") if r["name"] == "llm-train-azure-nsg")
    rules = {r["name"]: r for r in nsg["inputs"]["securityRules"]}  # the nodes' (the filesystem has its own)
    assert set(rules) == {"allow-vnet-inbound", "deny-internet-inbound"}
    deny = rules["deny-internet-inbound"]
    assert (deny["access"], deny["direction"], deny["sourceAddressPrefix"]) == ("Deny", "Inbound", "Internet")
    vnet = rules["allow-vnet-inbound"]
    assert (vnet["access"], vnet["sourceAddressPrefix"], vnet["destinationAddressPrefix"]) == (
        "Allow",
        "VirtualNetwork",
        "VirtualNetwork",
    )


def test_private_subnet_with_nat_egress(h100):
    subnet = next(r for r in resources_of(h100, "network:Subnet") if r["name"] == "llm-train-azure-nodes")["inputs"]
    assert subnet["addressPrefix"] == "10.44.0.0/17"
    assert subnet["defaultOutboundAccess"] is False
    assert subnet["natGateway"] == {"id": "<id of llm-train-azure-nat>"}
    assert subnet["networkSecurityGroup"] == {"id": "<id of llm-train-azure-nsg>"}
    assert one(h100, "network:VirtualNetwork")["inputs"]["addressSpace"] == {"addressPrefixes": ["10.44.0.0/16"]}
    nat = one(h100, "network:NatGateway")["inputs"]
    assert nat["publicIpAddresses"] == [{"id": "<id of llm-train-azure-nat-ip>"}]


def test_custom_data_stripes_the_eight_local_nvme(h100):
    data = one(h100, VMSS)["inputs"]["virtualMachineProfile"]["osProfile"]["customData"]
    doc = yaml.safe_load(base64.b64decode(data).decode())
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    assert "mdadm --create" in files["/usr/local/sbin/gpu-cluster-scratch"]
    env = files["/etc/gpu-cluster/scratch.env"]
    assert 'EXPECTED_DEVICES="8"' in env and "nvme-Microsoft_NVMe_Direct_Disk_" in env


def test_every_azure_resource_is_tagged(h100):
    for res in h100.resources:
        if res.custom and res.type != "azure-native:network:Subnet":  # subnets take no tags in Azure
            assert res.inputs["tags"]["gpu-cluster:cluster"] == "llm-train", res.name
            assert res.inputs["tags"]["team"] == "ml", res.name


def test_plan_summary_and_outputs(h100):
    summary = h100.summary()
    assert (summary["fabric"], summary["fabricGbpsPerNode"], summary["fabricGbpsRated"]) == ("infiniband", 3200, 3200)
    assert summary["totalGpus"] == 16 and summary["hourlyUsd"] == 196.64
    outputs = h100.run.outputs
    assert outputs["vpcId"] == "<id of llm-train-azure-vnet>"
    assert outputs["subnetIds"] == ["<id of llm-train-azure-nodes>"]
    assert outputs["securityGroupId"] == "<id of llm-train-azure-nsg>"
    assert outputs["placementGroup"] == "<id of llm-train-azure-ppg>"
    assert outputs["nodeGroup"] == "<autoname:llm-train-azure-vmss>"
    assert h100.warnings() == []


def test_nc_t4_dev_box_has_no_ib_settings_and_spot_delete(dev):
    vmss = one(dev, VMSS)["inputs"]
    assert "singlePlacementGroup" not in vmss
    assert not resources_of(dev, "AvailabilitySet")
    # one node keeps a proximity placement group (docs/day2.md "Placement at one node")
    ppg = one(dev, "ProximityPlacementGroup")
    assert vmss["proximityPlacementGroup"] == {"id": f"<id of {ppg['name']}>"}
    profile = vmss["virtualMachineProfile"]
    assert (profile["priority"], profile["evictionPolicy"], profile["billingProfile"]) == (
        "Spot",
        "Delete",
        {"maxPrice": -1},
    )
    disk = profile["storageProfile"]["dataDisks"]
    assert disk == [{**disk[0], "lun": 0, "createOption": "Empty", "diskSizeGB": 256}]
    assert disk[0]["managedDisk"] == {"storageAccountType": "Premium_LRS"}
    ssh = one(dev, "NetworkSecurityGroup")["inputs"]["securityRules"][0]
    assert (ssh["name"], ssh["sourceAddressPrefix"], ssh["destinationPortRange"]) == (
        "allow-ssh",
        "203.0.113.0/24",
        "22",
    )
    summary = dev.summary()
    assert (summary["fabric"], summary["fabricGbpsPerNode"], summary["fabricGbpsRated"]) == ("none", 0, 0)
    assert any("evictionPolicy Delete" in w for w in dev.warnings())


def test_instances_share_one_availability_set_so_ib_spans_them(h100_instances):
    avset = one(h100_instances, "compute:AvailabilitySet")["inputs"]
    assert avset["sku"] == {"name": "Aligned"}
    assert avset["proximityPlacementGroup"] == {"id": "<id of test-azure-ppg>"}
    vms = resources_of(h100_instances, "compute:VirtualMachine")
    assert [v["name"] for v in vms] == ["test-azure-node-0", "test-azure-node-1"]
    for vm in vms:
        inputs = vm["inputs"]
        assert inputs["availabilitySet"] == {"id": "<id of test-azure-avset>"}
        assert inputs["hardwareProfile"] == {"vmSize": "Standard_ND96isr_H100_v5"}
        assert inputs["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] is True
        assert inputs["storageProfile"]["dataDisks"][0]["deleteOption"] == "Detach"  # retainScratch
    nics = resources_of(h100_instances, "network:NetworkInterface")
    assert len(nics) == 2 and all(n["inputs"]["enableAcceleratedNetworking"] is True for n in nics)
    assert all("publicIPAddress" not in n["inputs"]["ipConfigurations"][0] for n in nics)
    assert not resources_of(h100_instances, VMSS)
    assert h100_instances.summary()["fabricGbpsPerNode"] == 3200
    assert h100_instances.run.outputs["instanceIds"] == ["<id of test-azure-node-0>", "<id of test-azure-node-1>"]


def test_public_ip_only_when_asked_and_existing_resource_group():
    plan = plan_values(azure_values(network={"publicIp": True}, azure={"resourceGroup": "ml-prod"}))
    ip = one(plan, VMSS)["inputs"]["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"][0]
    assert ip["ipConfigurations"][0]["publicIPAddressConfiguration"]["name"] == "public"
    assert not resources_of(plan, "resources:ResourceGroup")
    assert {r.inputs["resourceGroupName"] for r in plan.resources if r.custom} == {"ml-prod"}


def test_encryption_at_host_and_explicit_image_id():
    image_id = "/subscriptions/0000/resourceGroups/img/providers/Microsoft.Compute/images/gpu"
    plan = plan_values(azure_values(gpu="T4:1", nodes=1, image=image_id, azure={"encryptionAtHost": True}))
    profile = one(plan, VMSS)["inputs"]["virtualMachineProfile"]
    assert profile["securityProfile"] == {"encryptionAtHost": True}
    assert profile["storageProfile"]["imageReference"] == {"id": image_id}
    assert plan.run.outputs["imageId"] == image_id


def test_capacity_reservation_group_goes_into_the_vm_profile():
    group = "/subscriptions/0000/resourceGroups/cap/providers/Microsoft.Compute/capacityReservationGroups/h100"
    plan = plan_values(azure_values(reservation=group))
    profile = one(plan, VMSS)["inputs"]["virtualMachineProfile"]
    assert profile["capacityReservation"] == {"capacityReservationGroup": {"id": group}}
    assert not resources_of(plan, "ProximityPlacementGroup")  # auto placement resolves to none


def test_secure_ssh_key_stays_secret_in_the_plan():
    plan = plan_values(azure_values(gpu="T4:1", nodes=1, sshPublicKey="[secret]"))
    vmss = one(plan, VMSS)["inputs"]
    # The engine receives the key as a secret nested in the VM profile, so the whole profile is secret.
    assert vmss["virtualMachineProfile"] == "[secret]"
    assert vmss["sku"]["name"] == "Standard_NC4as_T4_v3"  # the rest stays reviewable
    assert "secretplaceholder" not in str([r.inputs for r in plan.resources])


def test_fabric_none_on_an_ib_size_is_counted_as_unwired():
    plan = plan_values(azure_values(fabric="none"))
    assert one(plan, VMSS)["inputs"]["singlePlacementGroup"] is False
    assert plan.summary()["fabricGbpsPerNode"] == 0 and plan.summary()["fabricGbpsRated"] == 3200


@pulumi.runtime.test
def test_component_outputs_under_plain_mocks():
    """The component used directly, as a user's own unit test would, with the Output returned."""

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            state = {**args.inputs, "name": args.name}
            if "identity" in state:  # azure-native: a list of ids as an input, a map keyed by id as an output
                state["identity"] = {"type": "UserAssigned", "userAssignedIdentities": {}}
            return f"{args.name}-id", state

        def call(self, args):
            return {}

    pulumi.runtime.set_mocks(Mocks(), preview=False)
    cluster = GpuCluster("unit", spec_of(azure_values()))

    def check(values):
        vnet_id, fabric, spg, ppg = values
        assert vnet_id == "unit-azure-vnet-id"
        assert fabric == 3200
        assert spg is True
        assert ppg == "unit-azure-ppg-id"

    scale_set = cluster.cloud.scale_set
    return pulumi.Output.all(
        cluster.outputs["vpcId"],
        cluster.outputs["fabricGbpsPerNode"],
        scale_set.single_placement_group,
        cluster.outputs["placementGroup"],
    ).apply(check)


def test_only_the_sdk_api_version_aliases_are_dropped():
    from components.azure import drop_api_version_aliases

    vm = "azure-native:compute:VirtualMachine"
    versioned = [pulumi.Alias(type_=f"azure-native:compute/{v}:VirtualMachine") for v in ("v20230301", "v20241101")]
    kept = [
        pulumi.Alias(name="old-node"),  # a rename
        pulumi.Alias(type_="azure-native:compute/v20230301:VirtualMachine", name="other"),  # also renamed
        pulumi.Alias(type_="azure-native:network/v20230301:NetworkInterface"),  # another kind
        "urn:pulumi:s::p::azure-native:compute:VirtualMachine::n",
    ]
    opts = pulumi.ResourceOptions(aliases=[*versioned, *kept])

    def args(opts, props=None):
        return pulumi.ResourceTransformationArgs(None, vm, "n", props or {}, opts)

    result = drop_api_version_aliases(args(opts, {"a": 1}))
    assert result is not None
    assert result.opts.aliases == kept
    assert result.props == {"a": 1}
    assert len(opts.aliases) == 6  # the caller's options are not modified
    only_versioned = pulumi.ResourceOptions(aliases=versioned)
    result = drop_api_version_aliases(args(only_versioned))
    assert result is not None and result.opts.aliases is None
    assert drop_api_version_aliases(args(pulumi.ResourceOptions())) is None


def test_generated_azure_native_vm_aliases_are_all_api_versions():
    """The SDK's own alias list for a VM and a NIC (read from the generated class) is dropped in full."""
    import inspect

    import pulumi_azure_native as azure

    from components.azure import _is_api_version_alias

    for cls, token in (
        (azure.compute.VirtualMachine, "azure-native:compute:VirtualMachine"),
        (azure.network.NetworkInterface, "azure-native:network:NetworkInterface"),
    ):
        source = inspect.getsource(cls._internal_init)
        types = source.split("aliases=[", 1)[1].split("])", 1)[0].split('type_="')[1:]
        aliases = [pulumi.Alias(type_=t.split('"', 1)[0]) for t in types]
        assert len(aliases) > 20
        assert all(_is_api_version_alias(a, token) for a in aliases)
