"""The pure Azure layout: InfiniBand scope, caps, NSG rules, image, scratch, spot; no Pulumi involved."""

import base64
import ipaddress
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from components import catalog
from components.errors import ConfigError
from components.layout import azure as azure_layout
from components.layout.azure.proof import SCALE_SET_TYPE, VM_TYPE

from .conftest import spec_of

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@example"


def azure_values(**cluster):
    base = {"gpu": "H100:8", "nodes": 2, "sshPublicKey": KEY}
    base.update(cluster)
    return {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus", "gpu-cluster:cluster": base}


def layout_of(**cluster):
    return azure_layout.plan(spec_of(azure_values(**cluster)))


def test_nd_h100_managed_is_one_uniform_scale_set_with_a_single_placement_group():
    layout = layout_of()
    assert layout.spec.instance.instanceType == "Standard_ND96isr_H100_v5"
    assert (layout.group, layout.single_placement_group, layout.ib_devices) == ("scale-set", True, 8)
    assert layout.fabric_gbps_wired == 3200
    assert layout.proximity_placement_group is True
    assert layout.image.ref == "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"  # auto: the pinned version
    assert layout.accelerated_networking is True
    assert layout.public_ip is False


def test_every_azure_fabric_type_is_wired_to_its_rating():
    fabric_rows = [r for r in catalog.load("azure").types if r.has_fabric]
    assert fabric_rows, "the catalog lists InfiniBand sizes"
    # an arm64 size has no `image: auto` (catalog/azure.yaml images.arch): it plans with a gallery image id
    gallery = "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Compute/galleries/g/images/i/versions/1"
    for row in fabric_rows:
        image = {"image": gallery} if row.arch == "arm64" else {}
        for group in ("managed", "instances"):
            layout = layout_of(gpu=None, instanceType=row.instanceType, nodeGroup=group, **image)
            assert layout.fabric_gbps_wired == row.fabricGbps, (row.instanceType, group)


@pytest.mark.parametrize("itype", ["Standard_NC4as_T4_v3", "Standard_NC96ads_A100_v4", "Standard_NC80adis_H100_v5"])
def test_nc_series_gets_no_infiniband_settings(itype):
    layout = layout_of(gpu=None, instanceType=itype)
    assert (layout.ib_devices, layout.fabric_gbps_wired, layout.single_placement_group) == (0, 0, None)
    instances = layout_of(gpu=None, instanceType=itype, nodeGroup="instances")
    assert instances.group == "vms"  # no availability set: nothing to span


def test_the_100_vm_cap_of_a_single_placement_group_is_refused_with_the_reason():
    with pytest.raises(ConfigError) as info:
        layout_of(nodes=101)
    assert info.value.key == "gpu-cluster:cluster.nodes"
    assert "singlePlacementGroup: true" in info.value.message and "100 VMs" in info.value.message
    with pytest.raises(ConfigError) as grow:
        layout_of(nodes=2, maxNodes=150)
    assert grow.value.key == "gpu-cluster:cluster.maxNodes"
    assert layout_of(nodes=100).single_placement_group is True


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 400))
def test_cap_applies_exactly_above_100_and_only_when_ib_is_wired(nodes):
    if nodes <= 100:
        assert layout_of(nodes=nodes).single_placement_group is True
    else:
        with pytest.raises(ConfigError):
            layout_of(nodes=nodes)
    # fabric: none on the same size lifts the cap and says plainly that IB does not span the set
    assert layout_of(nodes=nodes, fabric="none").single_placement_group is False


def test_availability_set_for_instances_with_its_own_limits():
    layout = layout_of(nodeGroup="instances", nodes=3)
    assert (layout.group, layout.single_placement_group, layout.fabric_gbps_wired) == ("availability-set", None, 3200)
    with pytest.raises(ConfigError) as cap:
        layout_of(nodeGroup="instances", nodes=201, network={"cidr": "10.0.0.0/16"})
    assert "200" in cap.value.message
    with pytest.raises(ConfigError) as spot:
        layout_of(nodeGroup="instances", spot=True)
    assert (
        spot.value.key == "gpu-cluster:cluster.spot"
        and "AzureSpotVMNotSupportedInAvailabilitySet" in spot.value.message
    )
    with pytest.raises(ConfigError) as zone:
        layout_of(nodeGroup="instances", zone="1")
    assert zone.value.key == "gpu-cluster:cluster.zone"


def test_cidr_overlapping_azure_rdma_range_is_refused():
    with pytest.raises(ConfigError) as info:
        spec_of(azure_values(network={"cidr": "172.16.0.0/16"}))
    assert info.value.key == "gpu-cluster:cluster.network.cidr"
    assert "172.16.0.0/16" in info.value.message and "InfiniBand" in info.value.message


@given(third=st.integers(0, 255), prefix=st.integers(16, 24), second=st.integers(16, 31))
def test_only_ranges_that_overlap_172_16_slash_16_are_refused(second, third, prefix):
    net = ipaddress.IPv4Network(f"172.{second}.{third}.0/{prefix}", strict=False)
    values = azure_values(network={"cidr": str(net)}, nodes=1)
    if net.overlaps(ipaddress.IPv4Network("172.16.0.0/16")):
        with pytest.raises(ConfigError, match=re.escape("172.16.0.0/16")):
            spec_of(values)
    else:
        assert layout_of(network={"cidr": str(net)}, nodes=1).vnet_cidr == str(net)


def test_node_subnet_is_the_first_half_and_must_hold_the_nodes():
    assert layout_of(network={"cidr": "10.8.0.0/20"}).node_subnet_cidr == "10.8.0.0/21"
    with pytest.raises(ConfigError) as info:
        layout_of(network={"cidr": "10.8.0.0/28"}, nodes=4)
    assert info.value.key == "gpu-cluster:cluster.network.cidr" and "3 usable" in info.value.message


def test_nsg_rules_ssh_only_from_ssh_cidrs_vnet_allowed_internet_denied():
    closed = {r.name: r for r in layout_of().security_rules}
    assert set(closed) == {"allow-vnet-inbound", "deny-internet-inbound"}
    assert (closed["deny-internet-inbound"].access, closed["deny-internet-inbound"].sources) == ("Deny", ("Internet",))
    rules = {r.name: r for r in layout_of(network={"sshCidrs": ["198.51.100.0/24", "203.0.113.0/24"]}).security_rules}
    ssh = rules["allow-ssh"]
    assert (ssh.port, ssh.protocol, ssh.sources) == ("22", "Tcp", ("198.51.100.0/24", "203.0.113.0/24"))
    assert ssh.priority < rules["deny-internet-inbound"].priority


def test_ssh_key_is_required_because_password_login_is_disabled():
    with pytest.raises(ConfigError) as info:
        layout_of(sshPublicKey=None)
    assert info.value.key == "gpu-cluster:cluster.sshPublicKey" and "password" in info.value.message


def test_images_auto_explicit_urn_and_id_and_no_auto_image_for_grid_sizes():
    urn = layout_of(image="Canonical:ubuntu-24_04-lts:server:latest").image
    assert (urn.publisher, urn.offer, urn.sku, urn.version, urn.id) == (
        "Canonical",
        "ubuntu-24_04-lts",
        "server",
        "latest",
        None,
    )
    image_id = "/subscriptions/0000/resourceGroups/img/providers/Microsoft.Compute/images/gpu"
    assert layout_of(image=image_id).image.ref == image_id
    with pytest.raises(ConfigError) as info:
        layout_of(gpu="A10:1", nodes=1)
    assert info.value.key == "gpu-cluster:cluster.image" and "GRID" in info.value.message
    assert layout_of(gpu="A10:1", nodes=1, image="Canonical:ubuntu-24_04-lts:server:latest").image.offer


def test_spot_eviction_policy_per_group_and_stated_as_a_warning():
    managed = layout_of(gpu="T4:1", nodes=1, spot=True)
    assert (managed.priority, managed.eviction_policy) == ("Spot", "Delete")
    assert any("evictionPolicy Delete" in w for w in managed.warnings)
    single = layout_of(gpu="T4:1", nodes=1, spot=True, nodeGroup="instances")
    assert (single.group, single.eviction_policy) == ("vms", "Deallocate")
    assert layout_of().priority == "Regular" and layout_of().eviction_policy is None


def _cloud_config(layout):
    text = base64.b64decode(layout.custom_data_b64).decode()
    assert text.startswith("#cloud-config\n")
    return yaml.safe_load(text)


def test_scratch_nvme_uses_azure_device_names_and_disk_uses_lun_zero():
    nvme = _cloud_config(layout_of())
    env = {f["path"]: f["content"] for f in nvme["write_files"]}["/etc/gpu-cluster/scratch.env"]
    assert "/dev/disk/by-id/nvme-Microsoft_NVMe_Direct_Disk_*" in env and 'EXPECTED_DEVICES="8"' in env
    disk = layout_of(gpu="T4:1", nodes=1, storage={"scratchGb": 300})
    assert disk.scratch_disk == azure_layout.DataDisk(0, 300, "Premium_LRS", True)
    assert "/dev/disk/azure/scsi1/lun0" in disk.custom_data
    retained = layout_of(gpu="T4:1", nodes=1, nodeGroup="instances", storage={"retainScratch": True})
    assert retained.scratch_disk is not None and retained.scratch_disk.delete_with_vm is False


def test_encryption_at_host_is_opt_in_and_warns_about_local_nvme():
    assert layout_of().encryption_at_host is False
    on = layout_of(azure={"encryptionAtHost": True})
    assert on.encryption_at_host is True
    assert any("not encrypted" in w for w in on.warnings)


def test_count_wired_gbps_reads_the_recorded_scale_set_and_vms():
    vmss = {
        "type": SCALE_SET_TYPE,
        "inputs": {
            "orchestrationMode": "Uniform",
            "singlePlacementGroup": True,
            "sku": {"name": "Standard_ND96isr_H100_v5"},
        },
    }
    assert azure_layout.count_wired_gbps([vmss], 400) == 3200
    spread = {**vmss, "inputs": {**vmss["inputs"], "singlePlacementGroup": False}}
    assert azure_layout.count_wired_gbps([spread], 400) == 0
    nc = {**vmss, "inputs": {**vmss["inputs"], "sku": {"name": "Standard_NC4as_T4_v3"}}}
    assert azure_layout.count_wired_gbps([nc], 400) == 0
    vm = {
        "type": VM_TYPE,
        "inputs": {"hardwareProfile": {"vmSize": "Standard_ND96asr_v4"}, "availabilitySet": {"id": "<id>"}},
    }
    assert azure_layout.count_wired_gbps([vm], 200) == 1600
    loose = {**vm, "inputs": {"hardwareProfile": {"vmSize": "Standard_ND96asr_v4"}}}
    assert azure_layout.count_wired_gbps([loose], 200) == 0
