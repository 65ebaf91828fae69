"""Issue 17's x86 rows: AWS gr6, GCP a3-edgegpu-8g and g4 (RTX PRO 6000), and GCP g2/n1 availability.

Facts and their sources are in the rows (catalog/<cloud>.yaml) and catalog/availability/<cloud>.yaml; these tests
check what the plan makes of them: the resources registered with the mocks, the pick, the refusals.
"""

from __future__ import annotations

import pytest

from components import catalog
from components.catalog import availability
from components.errors import ConfigError

from .conftest import aws_values, gcp_values, one, plan_values, resources_of, spec_of


def row(cloud: str, itype: str) -> catalog.InstanceType:
    (found,) = catalog.find(cloud, itype)
    return found


def template(plan):
    return one(plan, "compute/instanceTemplate:InstanceTemplate")["inputs"]


# --- AWS gr6 (L4, 8 GiB per vCPU) ------------------------------------------------------------------------


def test_gr6_rows_are_the_describe_instance_types_figures():
    small, large = row("aws", "gr6.4xlarge"), row("aws", "gr6.8xlarge")
    assert (small.gpu, small.gpus, small.vcpus, small.memoryGiB) == ("L4", 1, 16, 128)
    assert (large.gpu, large.gpus, large.vcpus, large.memoryGiB) == ("L4", 1, 32, 256)
    assert (small.localNvmeCount, small.localNvmeGb, large.localNvmeCount, large.localNvmeGb) == (1, 600, 2, 450)
    assert (small.hourlyUsd, large.hourlyUsd) == (1.5392, 2.4464) and small.priceVerified and large.priceVerified
    assert small.extra["networkBaselineGbps"] == 10 and large.networkGbps == 25


def test_gr6_8xlarge_wires_its_one_efa_and_4xlarge_none():
    plan = plan_values(aws_values(gpu=None, instanceType="gr6.8xlarge", nodes=2))
    nics = one(plan, "LaunchTemplate")["inputs"]["networkInterfaces"]
    assert [(n["interfaceType"], n["networkCardIndex"]) for n in nics] == [("interface", 0), ("efa-only", 0)]
    assert plan.summary()["fabricGbpsPerNode"] == plan.summary()["fabricGbpsRated"] == 25
    small = plan_values(aws_values(gpu=None, instanceType="gr6.4xlarge", nodes=1))
    lt = one(small, "LaunchTemplate")["inputs"]
    assert lt["instanceType"] == "gr6.4xlarge" and [n["interfaceType"] for n in lt["networkInterfaces"]] == [
        "interface"
    ]
    assert small.summary()["hourlyUsdPerNode"] == 1.5392


def test_gr6_never_wins_l4_1_and_is_sold_where_vantage_lists_it():
    assert catalog.resolve("aws", "L4", 1).type.instanceType == "g6.xlarge"  # fewer vCPUs
    assert availability.sold_in("aws", "gr6.8xlarge", "eu-central-2") is True
    assert availability.sold_in("aws", "gr6.8xlarge", "eu-west-1") is False
    assert availability.offer("aws", "gr6.4xlarge") == availability.offer("aws", "gr6.8xlarge")


# --- GCP a3-edgegpu-8g (H100, GPUDirect-TCPX like A3 High) ----------------------------------------------


def test_a3_edge_plans_the_a3_high_nic_layout_wired_to_its_rating():
    plan = plan_values(gcp_values(instanceType="a3-edgegpu-8g", gpu="H100:8", nodes=2, zone=None))
    tpl = template(plan)
    assert tpl["machineType"] == "a3-edgegpu-8g"
    assert [n["nicType"] for n in tpl["networkInterfaces"]] == ["GVNIC"] * 5
    assert [n["subnetwork"] for n in tpl["networkInterfaces"][1:]] == [
        f"<id of test-gcp-gpu-{i}-subnet>" for i in range(4)
    ]
    nets = {r["name"]: r["inputs"] for r in resources_of(plan, "compute/network:Network")}
    assert set(nets) == {"test-gcp-host", *(f"test-gcp-gpu-{i}" for i in range(4))}
    assert {n["mtu"] for n in nets.values()} == {8244}
    summary = plan.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == row("gcp", "a3-edgegpu-8g").fabricGbps == 480
    # the same missing TCPX kernel as A3 High: wired, not vouched for
    assert summary["fabricUsable"] is False and "TCPX-capable kernel" in summary["fabricMissing"][0]
    assert summary["hourlyUsdPerNode"] is None  # no Google price found
    assert spec_of(gcp_values(instanceType="a3-edgegpu-8g", gpu="H100:8", nodes=2, zone=None)).zone == "us-central1-a"


def test_a3_edge_without_a_price_never_wins_h100_8_but_fills_a_region_without_a3_high():
    for region in (None, "us-central1", "us-east5"):
        assert catalog.resolve("gcp", "H100", 8, region=region).type.instanceType == "a3-highgpu-8g", region
    # europe-west2 sells neither A3 High nor A3 Mega (SkyPilot v9): A3 Edge is the H100:8 there
    picked = catalog.resolve("gcp", "H100", 8, region="europe-west2")
    assert picked.type.instanceType == "a3-edgegpu-8g" and "not sold in europe-west2" in picked.reason


# --- GCP g4 (RTX PRO 6000) ---------------------------------------------------------------------------


def test_g4_lists_whole_gpu_sizes_only():
    g4 = {r.instanceType: r for r in catalog.load("gcp").types if r.instanceType.startswith("g4-")}
    assert {k: (r.gpus, r.vcpus, r.memoryGiB) for k, r in g4.items()} == {
        "g4-standard-48": (1, 48, 180),
        "g4-standard-96": (2, 96, 360),
        "g4-standard-192": (4, 192, 720),
        "g4-standard-384": (8, 384, 1440),
    }
    assert all(r.gpu == "RTX-PRO-6000" and r.gpuMemoryGiB == 96 and r.localNvmeCount == 0 for r in g4.values())
    assert catalog.resolve("gcp", "RTX-PRO-6000", 8).type.instanceType == "g4-standard-384"


def test_g4_plans_a_hyperdisk_boot_disk_no_local_ssd_and_a_zone_that_sells_it():
    values = gcp_values(instanceType="g4-standard-48", gpu="RTX-PRO-6000:1", nodes=1, zone=None)
    plan = plan_values(values)
    tpl = template(plan)
    assert tpl["machineType"] == "g4-standard-48" and "guestAccelerators" not in tpl
    # boot and the scratch data disk: hyperdisk-balanced (G4 takes no pd-ssd), never a local SSD
    assert [d["diskType"] for d in tpl["disks"]] == ["hyperdisk-balanced", "hyperdisk-balanced"]
    assert not any(d.get("interface") == "NVME" or "local" in str(d.get("diskType")) for d in tpl["disks"])
    assert plan.summary()["hourlyUsdPerNode"] == 4.49993 and plan.summary()["hourlyUsdVerified"] is True
    assert spec_of(values).zone == "us-central1-b"  # us-central1's G4 zones: b, f


# --- GCP g2 and n1 availability ---------------------------------------------------------------------


def test_g2_availability_refuses_a_region_without_g2_and_names_where_it_is_sold():
    assert availability.zones_selling("gcp", "g2-standard-96", "us-east4") == ("us-east4-a", "us-east4-c")
    with pytest.raises(ConfigError) as info:
        spec_of({**gcp_values(zone=None), "gcp:region": "us-east5"})
    assert info.value.key == "gpu-cluster:cluster.gpu"
    assert "g2-standard-4 is not sold in us-east5" in info.value.message
    assert "us-central1, us-east1, us-east4, us-west1, us-west4" in info.value.message


def test_regions_only_other_families_list_are_covered_so_g2_is_refused_there():
    assert availability.sold_in("gcp", "g2-standard-4", "europe-west10") is False  # e2/n2d/t2d rows list it
    assert availability.sold_in("gcp", "g2-standard-4", "mars-north1") is None


def test_n1_types_take_their_gpus_zones():
    assert availability.zones_selling("gcp", "n1-standard-4", "asia-east1") == ("asia-east1-a", "asia-east1-c")  # T4
    assert availability.zones_selling("gcp", "n1-standard-8", "asia-east1") == ("asia-east1-c",)  # V100
    assert availability.offer("gcp", "n1-standard-16") == availability.offer("gcp", "n1-standard-8")
    spec = spec_of({**gcp_values(gpu="V100:1", instanceType="n1-standard-8", zone=None), "gcp:region": "asia-east1"})
    assert spec.zone == "asia-east1-c"


def test_every_gcp_availability_entry_names_one_gpu_model():
    # n1-standard-32 / -96 carry T4 or V100 (different zones), so their entries are per GPU (byGpu) and the type
    # alone is unknown: an entry keyed by the machine type alone must stand for one GPU model, or it would refuse
    # or default a zone wrongly for the other
    for name in availability.load("gcp").offers:
        assert len({r.gpu for r in catalog.find("gcp", name)}) == 1, name
    assert availability.offer("gcp", "n1-standard-32") is None and availability.offer("gcp", "n1-standard-96") is None
