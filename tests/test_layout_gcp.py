"""The pure GCP layout: GPU VPCs and NICs per type, ranges, placement, image, scheduling, labels; no Pulumi."""

import ipaddress
import re
import subprocess
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components import bootstrap, catalog
from components.errors import ConfigError
from components.layout import gcp as gcp_layout
from components.layout import scratch_script
from components.layout.gcp import labels as gcp_labels
from components.layout.gcp import network as gcp_network
from components.layout.gcp import nodes as gcp_nodes
from components.layout.gcp import placement as gcp_placement

from .conftest import spec_of


def gcp_values(**cluster: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"gpu": "H100:8", "instanceType": "a3-megagpu-8g", "nodes": 2, "zone": "us-central1-a"}
    base.update(cluster)
    return {
        "gpu-cluster:cloud": "gcp",
        "gcp:project": "my-project",
        "gcp:region": "us-central1",
        "gpu-cluster:cluster": {k: v for k, v in base.items() if v is not None},
    }


def layout_of(**cluster: Any) -> gcp_layout.GcpLayout:
    return gcp_layout.plan(spec_of(gcp_values(**cluster)))


NO_ON_DEMAND = {"a3-ultragpu-8g", "a4-highgpu-8g"}  # catalog/gcp.yaml rules.consumption.noOnDemand
RESERVATION_ONLY = {"a4x-highgpu-4g"}  # rules.consumption.noOnDemand and noSpot: a reservation is the only way


def typed(itype: str, **cluster: Any) -> gcp_layout.GcpLayout:
    """A layout of `itype`; types not sold on demand are bought as spot (from a reservation where there is no spot)
    unless told otherwise."""
    row = catalog.find("gcp", itype)[0]
    if itype in RESERVATION_ONLY:
        cluster.setdefault("reservation", "test-reservation")
    if itype in NO_ON_DEMAND and not {"spot", "reservation", "gcp"} & set(cluster):
        cluster["spot"] = True
    if itype in NO_ON_DEMAND:
        cluster.setdefault("zone", "us-central1-b")  # the us-central1 zone that sells A3 Ultra / A4
    return layout_of(instanceType=itype, gpu=f"{row.gpu}:{row.gpus}", **cluster)


# --- GPU networks per machine type ------------------------------------------------------------


@pytest.mark.parametrize(
    ("itype", "vpcs", "gvnic", "gpu_nics", "mtu"),
    [
        ("a3-highgpu-8g", 1 + 4, 1 + 4, 4, 8244),
        ("a3-megagpu-8g", 1 + 8, 1 + 8, 8, 8244),
        ("a3-ultragpu-8g", 2 + 1, 2, 8, 8896),
        ("a4-highgpu-8g", 2 + 1, 2, 8, 8896),
    ],
)
def test_gpu_networks_per_type(itype, vpcs, gvnic, gpu_nics, mtu):
    layout = typed(itype)
    assert len(layout.vpcs) == vpcs
    assert sum(n.nic_type == "GVNIC" for n in layout.nics) == gvnic
    assert layout.gpu_nic_count == gpu_nics
    assert layout.nics[0] == gcp_layout.Nic("host", "nodes", "GVNIC", gpu=False)
    assert {v.mtu for v in layout.vpcs} == {mtu}
    # one NIC per subnet, never two on the same one
    assert len({n.subnet for n in layout.nics}) == len(layout.nics)


@pytest.mark.parametrize("itype", ["a3-ultragpu-8g", "a4-highgpu-8g"])
def test_rdma_types_get_one_roce_vpc_with_8_subnets_and_no_firewall(itype):
    layout = typed(itype, zone="us-central1-b")
    roce = [v for v in layout.vpcs if v.is_roce]
    assert len(roce) == 1
    assert roce[0].network_profile == "projects/my-project/global/networkProfiles/us-central1-b-vpc-roce"
    assert len(roce[0].subnets) == 8 and roce[0].internal_firewall is False
    assert [n.nic_type for n in layout.nics if n.vpc == "roce"] == ["MRDMA"] * 8
    assert all(n.gpu for n in layout.nics if n.nic_type == "MRDMA")
    # the second gVNIC is not a GPU NIC and sits on its own firewalled VPC
    assert [(n.vpc, n.gpu) for n in layout.nics[:2]] == [("host", False), ("gvnic-1", False)]
    assert all(v.internal_firewall for v in layout.vpcs if not v.is_roce)


def test_tcpx_types_have_no_roce_vpc_and_gpu_nics_on_their_own_vpcs():
    layout = typed("a3-megagpu-8g")
    assert not any(v.is_roce for v in layout.vpcs)
    assert [n.vpc for n in layout.nics if n.gpu] == [f"gpu-{i}" for i in range(8)]


def test_every_gcp_fabric_type_is_wired_to_its_rating():
    rows = [r for r in catalog.load("gcp").types if r.has_fabric]
    assert {r.instanceType for r in rows} == {
        "a3-highgpu-8g",
        "a3-edgegpu-8g",
        "a3-megagpu-8g",
        "a3-ultragpu-8g",
        "a4-highgpu-8g",
        "a4x-highgpu-4g",
    }
    for row in rows:
        layout = typed(row.instanceType)
        assert layout.gpu_nic_count == row.fabricDevices, row.instanceType
        assert layout.fabric_gbps_wired == row.fabricGbps, row.instanceType


def test_fabric_none_wires_only_the_host_nic():
    layout = layout_of(fabric="none")
    assert layout.nics == (gcp_layout.Nic("host", "nodes", "GVNIC", gpu=False),)
    assert [v.role for v in layout.vpcs] == ["host"]
    assert layout.fabric_gbps_wired == 0


def test_non_fabric_types_use_gvnic_and_the_default_mtu():
    layout = layout_of(instanceType="g2-standard-4", gpu="L4:1", nodes=1)
    assert [(n.nic_type, n.gpu) for n in layout.nics] == [("GVNIC", False)]
    assert layout.host.mtu is None


# --- ranges -----------------------------------------------------------------------------------


def test_gpu_ranges_come_from_the_buddy_block():
    assert str(gcp_network.buddy_block("10.42.0.0/16")) == "10.43.0.0/16"
    assert str(gcp_network.buddy_block("10.43.0.0/16")) == "10.42.0.0/16"
    assert gcp_network.gpu_subnet_cidrs("10.42.0.0/16", 3) == ("10.43.0.0/20", "10.43.16.0/20", "10.43.32.0/20")
    layout = typed("a3-ultragpu-8g", network={"cidr": "192.168.64.0/20"})
    cidrs = [s.cidr for v in layout.vpcs[1:] for s in v.subnets]
    assert cidrs[0] == "192.168.80.0/24" and len(cidrs) == 9


_private_cidrs = st.one_of(
    st.builds(
        lambda a, p: ipaddress.ip_network(f"10.{a}.0.0/{p}", strict=False), st.integers(0, 255), st.integers(9, 25)
    ),
    st.builds(
        lambda a, p: ipaddress.ip_network(f"172.{16 + a}.0.0/{p}", strict=False),
        st.integers(0, 15),
        st.integers(13, 25),
    ),
    st.builds(
        lambda a, p: ipaddress.ip_network(f"192.168.{a}.0/{p}", strict=False), st.integers(0, 255), st.integers(17, 25)
    ),
)


@given(net=_private_cidrs, count=st.integers(1, 16))
def test_gpu_ranges_never_overlap_the_host_range_or_each_other(net, count):
    cidrs = gcp_network.gpu_subnet_cidrs(str(net), count)
    assert cidrs == gcp_network.gpu_subnet_cidrs(str(net), count)  # deterministic
    nets = [ipaddress.ip_network(c) for c in cidrs]
    assert len(nets) == count
    assert not any(n.overlaps(net) for n in nets)
    assert all(a == b or not a.overlaps(b) for a in nets for b in nets)
    assert all(any(n.subnet_of(r) for r in gcp_network.PRIVATE_RANGES) for n in nets)
    assert all(n.prefixlen == net.prefixlen + gcp_network.GPU_SUBNET_BITS <= 29 for n in nets)


@pytest.mark.parametrize(("cidr", "why"), [("10.0.0.0/8", "no private block"), ("10.42.0.0/26", "too small")])
def test_ranges_without_room_for_gpu_networks_are_refused(cidr, why):
    with pytest.raises(ConfigError) as info:
        layout_of(network={"cidr": cidr})
    assert info.value.key == "gpu-cluster:cluster.network.cidr"
    assert why in info.value.message
    assert layout_of(network={"cidr": cidr}, fabric="none").host.subnets[0].cidr == cidr  # fine without GPU VPCs


# --- zone, placement, n1 ----------------------------------------------------------------------


def test_zone_is_required_and_named_where_the_types_zones_are_unknown():
    # a4x-highgpu-4g: no source lists its zones (catalog/availability/gcp.yaml); reservation-bound only
    unknown = {"gpu": "GB200:4", "instanceType": "a4x-highgpu-4g", "reservation": "a4x-block", "nodes": 1}
    with pytest.raises(ConfigError) as info:
        layout_of(zone=None, **unknown)
    assert info.value.key == "gpu-cluster:cluster.zone"
    assert "gcp:zone" in info.value.message
    values = gcp_values(zone=None, **unknown)
    values["gcp:zone"] = "us-central1-c"
    assert gcp_layout.plan(spec_of(values)).zone == "us-central1-c"


def test_zone_defaults_to_the_first_that_sells_the_type_where_zones_are_known():
    assert layout_of(zone=None).zone == "us-central1-a"  # a3-megagpu-8g: us-central1-a, -b, -c
    assert layout_of(zone=None, gpu="H200:8", instanceType="a3-ultragpu-8g", spot=True).zone == "us-central1-b"


def test_a_one_node_mig_keeps_its_workload_policy_and_a_one_vm_compact_placement_says_it_is_not_applied():
    # a workload policy has no VM count (compute discovery doc ResourcePolicyWorkloadPolicy): a MIG shrunk to one
    # node keeps it, so it grows back in place (docs/day2.md "Placement at one node")
    one, two = layout_of(nodes=1, nodeGroup="managed"), layout_of(nodes=2, nodeGroup="managed")
    assert one.placement == two.placement == gcp_placement.Placement("workload", None, None)
    assert one.placement_applied == "cluster"
    # GKE: COMPACT at one node too
    gke = layout_of(nodes=1, scheduler="kubernetes")
    assert gke.kubernetes is not None and gke.kubernetes.gpu.compact and gke.placement_applied == "cluster"
    # an explicit cluster on one VM of a compact kind: nothing applied, and the plan says why
    single = layout_of(nodes=1, nodeGroup="instances", placement="cluster")
    assert single.placement is None and single.placement_applied == "none"
    assert any(w.startswith("gpu-cluster:cluster.placement: cluster is not applied to one VM") for w in single.warnings)
    assert not any("is not applied to one VM" in w for w in layout_of(nodes=1, nodeGroup="instances").warnings)


def test_compact_placement_vm_count_and_limits():
    inst = {"nodeGroup": "instances"}
    assert layout_of(nodes=4, **inst).placement_vm_count == 4
    assert layout_of(nodes=1, **inst).placement_vm_count is None  # nothing to place next to
    assert layout_of(nodes=4, placement="none", **inst).placement is None
    # no maxDistance: 1,500 per policy (slurm-gcp PLACEMENT_MAX_CNT), no longer the old flat 150
    assert layout_of(nodes=200, **inst).placement_vm_count == 200
    g2 = {"instanceType": "g2-standard-8", "gpu": "L4:1", "placement": "cluster"}
    with pytest.raises(ConfigError) as info:
        layout_of(nodes=2, maxNodes=4, **g2)  # a MIG of a type without workload policies: compact on the template
    assert info.value.key == "gpu-cluster:cluster.maxNodes" and "vmCount" in info.value.message


@pytest.mark.parametrize(
    ("itype", "distance", "cap"),
    [
        ("a3-megagpu-8g", None, 1500),
        ("g2-standard-8", None, 1500),
        ("a3-megagpu-8g", 1, 22),
        ("a3-megagpu-8g", 2, 256),
        ("a2-highgpu-8g", 2, 150),
        ("a4-highgpu-8g", 2, 150),
        ("a3-highgpu-8g", 3, 1500),
    ],
)
def test_compact_cap_depends_on_type_and_max_distance(itype, distance, cap):
    rules = catalog.load("gcp").rules
    assert gcp_placement.compact_cap(rules, itype, distance) == cap


def test_compact_cap_is_enforced_with_the_key_named(monkeypatch):
    rules = catalog.load("gcp").rules
    monkeypatch.setitem(rules["compactPlacementMaxVms"], "none", {"default": 3})
    with pytest.raises(ConfigError) as info:
        layout_of(nodes=4, nodeGroup="instances")
    assert info.value.key == "gpu-cluster:cluster.nodes" and "at most 3" in info.value.message


def test_managed_groups_of_a3_a4_get_a_workload_policy_and_no_vm_count():
    for itype in ("a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g"):
        layout = typed(itype, nodes=2, maxNodes=6)  # resizable: a workload policy has no vmCount
        assert layout.placement == gcp_layout.Placement("workload", None, None), itype
        assert layout.placement_vm_count is None
        assert layout.scheduling.automatic_restart is (itype not in NO_ON_DEMAND), itype  # spot: false
    g2 = layout_of(instanceType="g2-standard-8", gpu="L4:1", nodes=2, placement="cluster")
    assert g2.placement is not None and g2.placement.kind == "compact"


def test_compact_placement_turns_automatic_restart_off():
    compact = layout_of(nodeGroup="instances")
    assert compact.placement is not None and compact.placement.kind == "compact"
    assert compact.scheduling.automatic_restart is False  # Cluster Toolkit vm-instance main.tf
    assert layout_of(nodeGroup="instances", placement="none").scheduling.automatic_restart is True


def test_max_nodes_without_placement_warns_there_is_no_autoscaler():
    layout = layout_of(instanceType="g2-standard-4", gpu="L4:1", nodes=1, maxNodes=3, placement="none")
    assert any("no autoscaler" in w for w in layout.warnings)


def test_n1_gets_its_guest_accelerator_and_every_n1_row_is_within_googles_limits():
    layout = layout_of(instanceType=None, gpu="T4:2", nodes=1)
    assert layout.spec.instance.instanceType.startswith("n1-")
    assert layout.guest_accelerator == ("nvidia-tesla-t4", 2)
    assert layout_of(nodes=1).guest_accelerator is None  # A3: the GPUs come with the machine type
    for row in catalog.load("gcp").types:
        if row.extra.get("guestAccelerator"):
            lay = layout_of(instanceType=row.instanceType, gpu=f"{row.gpu}:{row.gpus}", nodes=1)
            assert lay.guest_accelerator == (row.extra["acceleratorType"], row.gpus)
            assert row.vcpus <= gcp_nodes.MAX_N1_GPU[row.gpu][row.gpus]


def test_eight_t4_is_rejected_clearly():
    with pytest.raises(ConfigError) as info:
        spec_of(gcp_values(instanceType=None, gpu="T4:8"))
    assert info.value.key == "gpu-cluster:cluster.gpu"
    assert "counts offered: 1, 2, 4" in info.value.message


# --- scheduling, image, disks -----------------------------------------------------------------


def test_scheduling_terminates_on_maintenance_and_spot_stops():
    standard = layout_of().scheduling
    assert standard == gcp_layout.Scheduling("STANDARD", False, True, "TERMINATE", None)
    spot = layout_of(spot=True).scheduling
    assert spot == gcp_layout.Scheduling("SPOT", True, False, "TERMINATE", "STOP")


def test_image_auto_per_family_and_explicit_images():
    assert layout_of().image.ref == (  # auto: the family's pinned release
        "projects/ubuntu-os-accelerator-images/global/images/ubuntu-accelerator-2204-amd64-with-nvidia-570-v20260108"
    )
    assert layout_of(image="latest").image.ref == (  # latest: the family, resolved at deploy
        "projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accelerator-2204-amd64-with-nvidia-570"
    )
    dev = layout_of(instanceType="g2-standard-4", gpu="L4:1", nodes=1).image
    assert (dev.project, dev.family) == ("deeplearning-platform-release", "common-cu128-ubuntu-2204-nvidia-570")
    assert dev.release == "common-cu128-ubuntu-2204-nvidia-570-v20260320"
    fam = layout_of(image="projects/my-images/global/images/family/gpu").image
    assert (fam.project, fam.family) == ("my-images", "gpu")
    fixed = layout_of(image="my-images/gpu-v1").image
    assert (fixed.family, fixed.ref) == (None, "my-images/gpu-v1")
    for entry in [catalog.load("gcp").images["default"], *catalog.load("gcp").images["families"].values()]:
        assert entry["source"] and entry["project"] and entry["family"]


@pytest.mark.parametrize(
    ("itype", "disk"),
    [("a3-ultragpu-8g", "hyperdisk-balanced"), ("a4-highgpu-8g", "hyperdisk-balanced"), ("a3-megagpu-8g", "pd-ssd")],
)
def test_disk_types_per_family(itype, disk):
    layout = typed(itype, storage={"scratch": "disk"})
    assert (layout.boot_disk_type, layout.scratch_disk_type) == (disk, disk)


def test_scratch_uses_local_ssd_globs_or_the_named_disk():
    nvme = layout_of().scratch
    assert (nvme.kind, nvme.devices, nvme.device_globs) == ("nvme", 16, gcp_nodes.LOCAL_SSD_GLOBS)
    disk = layout_of(storage={"scratch": "disk", "scratchGb": 700}).scratch
    assert (disk.kind, disk.device_gb, disk.device_globs) == ("disk", 700, ("/dev/disk/by-id/google-scratch",))
    no_scratch = layout_of(storage={"scratch": "none"}).startup_script
    assert no_scratch is not None and "enable --now gpu-cluster-scratch" not in no_scratch  # the other parts stay


def test_startup_script_installs_the_scratch_unit_and_is_valid_bash():
    layout = layout_of()
    script = layout.metadata["startup-script"]
    assert script.startswith("#!/bin/bash\n")
    body = re.search(r"<<'GPU_CLUSTER_EOF_0'\n(.*?)\nGPU_CLUSTER_EOF_0\n", script, re.S)
    assert body is not None and body.group(1) == bootstrap.node_text(scratch_script()).rstrip("\n")
    assert 'EXPECTED_DEVICES="16"' in script and "google-local-nvme-ssd-" in script
    assert "\nsystemctl enable --now gpu-cluster-scratch.service\n" in script  # first of the boot commands
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_os_login_and_ssh_sources():
    layout = layout_of()
    assert layout.metadata["enable-oslogin"] == "TRUE" and layout.metadata["block-project-ssh-keys"] == "TRUE"
    # access: auto resolves to iap: IAP's range only, nothing else from outside
    assert layout.access.method == "iap" and layout.ssh_source_ranges == ("35.235.240.0/20",)
    assert layout_of(access="none").ssh_source_ranges == ()
    iap = layout_of(access="none", gcp={"iap": True}, network={"sshCidrs": ["203.0.113.0/24"]})
    assert iap.ssh_source_ranges == ("203.0.113.0/24", "35.235.240.0/20")  # gcp.iap as before
    ssh = layout_of(access="ssh", network={"sshCidrs": ["203.0.113.0/24"], "publicIp": True})
    assert ssh.ssh_source_ranges == ("203.0.113.0/24",)
    keyed = layout_of(sshPublicKey="ssh-ed25519 AAAAC3Nza user@host")
    assert any("OS Login" in w for w in keyed.warnings)


# --- labels -----------------------------------------------------------------------------------


def test_labels_are_sanitised():
    layout = layout_of(tags={"Cost-Center": "GPU/Training", "team": "ML"})
    # (the spec may add defaulted tags such as environment; these must be there as given)
    assert (
        layout.labels.items()
        >= {
            "cost-center": "gpu_training",
            "team": "ml",
            "gpu-cluster_cluster": "test",
            "gpu-cluster_stack": "test",
        }.items()
    )


@given(st.text(min_size=1, max_size=200))
def test_any_text_becomes_a_valid_label(text):
    assert re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", gcp_labels.label_key(text))
    assert re.fullmatch(r"[a-z0-9_-]{0,63}", gcp_labels.label_value(text))


def test_colliding_and_too_many_labels_are_refused():
    with pytest.raises(ConfigError) as info:
        layout_of(tags={"Team": "a", "team": "b"})
    assert info.value.key.startswith("gpu-cluster:cluster.tags.")
    with pytest.raises(ConfigError) as info:
        layout_of(tags={f"k{i}": "v" for i in range(63)})
    assert info.value.key == "gpu-cluster:cluster.tags" and "64" in info.value.message


# --- counting from recorded resources -----------------------------------------------------------


def _template(*nic_types: str) -> dict[str, Any]:
    return {
        "type": "gcp:compute/instanceTemplate:InstanceTemplate",
        "inputs": {"networkInterfaces": [{"nicType": t} for t in nic_types]},
    }


def test_count_wired_gbps_counts_gpu_nics():
    count = gcp_layout.count_wired_gbps
    assert count([_template("GVNIC", *["GVNIC"] * 8)], 200) == 1600  # a3-mega: nic0 + 8 GPU NICs
    assert count([_template("GVNIC", "GVNIC")], 200) == 200  # the naive answer: one GPU NIC
    assert count([_template("GVNIC", "GVNIC", *["MRDMA"] * 8)], 400) == 3200  # the 2nd gVNIC is not a GPU NIC
    assert count([_template("GVNIC")], 200) == 0
    assert count([{"type": "gcp:compute/network:Network", "inputs": {}}], 200) == 0
