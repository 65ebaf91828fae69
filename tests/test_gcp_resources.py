"""GCP resources as registered with Pulumi's mocks: the inputs the engine would receive (camelCase)."""

import pulumi
import pytest

from components import catalog
from components.cluster import GpuCluster

from .conftest import one, plan_values, resources_of, spec_of
from .test_layout_gcp import gcp_values

LABEL_KEYS = {"gpu-cluster_cluster", "gpu-cluster_stack"}


def template(plan):
    return one(plan, "compute/instanceTemplate:InstanceTemplate")["inputs"]


def networks(plan):
    return {r["name"]: r["inputs"] for r in resources_of(plan, "compute/network:Network")}


def subnets(plan):
    return {r["name"]: r["inputs"] for r in resources_of(plan, "compute/subnetwork:Subnetwork")}


def firewalls(plan):
    return {r["name"]: r["inputs"] for r in resources_of(plan, "compute/firewall:Firewall")}


@pytest.fixture(scope="module")
def a3mega(stack_plan):
    return stack_plan("gcp-a3mega")


def test_a3mega_wires_8_gpu_nics_on_8_gpu_vpcs(a3mega):
    nics = template(a3mega)["networkInterfaces"]
    assert len(nics) == 1 + 8
    assert all(n["nicType"] == "GVNIC" for n in nics)
    assert nics[0]["subnetwork"] == "<id of a3mega-gcp-nodes>"
    assert [n["subnetwork"] for n in nics[1:]] == [f"<id of a3mega-gcp-gpu-{i}-subnet>" for i in range(8)]
    nets = networks(a3mega)
    assert set(nets) == {"a3mega-gcp-host", *(f"a3mega-gcp-gpu-{i}" for i in range(8))}
    assert {n["mtu"] for n in nets.values()} == {8244}
    assert all(n["autoCreateSubnetworks"] is False and "networkProfile" not in n for n in nets.values())
    summary = a3mega.summary()
    assert summary["fabricGbpsPerNode"] == summary["fabricGbpsRated"] == 1600


def test_a3mega_ranges_subnets_and_internal_firewalls(a3mega):
    subs = subnets(a3mega)
    assert subs["a3mega-gcp-nodes"]["ipCidrRange"] == "10.42.0.0/16"
    assert subs["a3mega-gcp-nodes"]["privateIpGoogleAccess"] is True
    assert [subs[f"a3mega-gcp-gpu-{i}-subnet"]["ipCidrRange"] for i in range(8)] == [
        f"10.43.{16 * i}.0/20" for i in range(8)
    ]
    fw = firewalls(a3mega)
    for role in ["host", *(f"gpu-{i}" for i in range(8))]:
        rule = fw[f"a3mega-gcp-{role}-internal"]
        assert rule["network"] == f"<id of a3mega-gcp-{role}>"
        assert rule["allows"] == [{"protocol": "all"}] and rule["direction"] == "INGRESS"
    # SSH only from IAP's range (gcp.iap: true, no sshCidrs)
    assert fw["a3mega-gcp-ssh"]["sourceRanges"] == ["35.235.240.0/20"]
    assert fw["a3mega-gcp-ssh"]["allows"] == [{"protocol": "tcp", "ports": ["22"]}]


def test_placement_policy_kinds_are_in_test_gcp_identity_access(a3mega):
    # MIG of A3/A4: a workload policy on the group; instances: a compact policy on the template
    assert a3mega.run.outputs["placementGroup"] == "<self link of a3mega-gcp-placement>"


def test_template_scheduling_security_and_no_external_ip(a3mega):
    tpl = template(a3mega)
    assert tpl["machineType"] == "a3-megagpu-8g"
    assert tpl["scheduling"] == {
        "provisioningModel": "STANDARD",
        "preemptible": False,
        "automaticRestart": True,
        "onHostMaintenance": "TERMINATE",
    }
    assert all("accessConfigs" not in n for n in tpl["networkInterfaces"])
    assert tpl["metadata"]["enable-oslogin"] == "TRUE" and tpl["metadata"]["block-project-ssh-keys"] == "TRUE"
    assert "ssh-keys" not in tpl["metadata"]
    assert tpl["shieldedInstanceConfig"] == {
        "enableSecureBoot": False,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }
    assert "guestAccelerators" not in tpl  # A3: the GPUs come with the machine type
    boot = tpl["disks"][0]
    assert boot == {**boot, "boot": True, "diskType": "pd-ssd", "diskSizeGb": 200, "autoDelete": True}
    # image: auto boots the family's pinned release: an image name, not a family resolved at deploy
    assert boot["sourceImage"] == (
        "projects/ubuntu-os-accelerator-images/global/images/ubuntu-accelerator-2204-amd64-with-nvidia-570-v20260108"
    )
    assert len(tpl["disks"]) == 1  # the 16 local SSDs come with a3-megagpu-8g
    assert 'EXPECTED_DEVICES="16"' in tpl["metadata"]["startup-script"]


def test_mig_nat_and_outputs(a3mega):
    mig = one(a3mega, "compute/instanceGroupManager:InstanceGroupManager")["inputs"]
    assert (mig["targetSize"], mig["zone"], mig["baseInstanceName"]) == (2, "us-central1-a", "a3mega-node")
    assert mig["versions"] == [
        {"name": "primary", "instanceTemplate": "<self link (unique id) of a3mega-gcp-template>"}
    ]
    nat = one(a3mega, "compute/routerNat:RouterNat")["inputs"]
    assert nat["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    assert nat["subnetworks"] == [
        {"name": "<self link of a3mega-gcp-nodes>", "sourceIpRangesToNats": ["ALL_IP_RANGES"]}
    ]
    out = a3mega.run.outputs
    assert out["vpcId"] == "<id of a3mega-gcp-host>"
    assert out["subnetIds"] == ["<id of a3mega-gcp-nodes>"]
    assert out["securityGroupId"] == "<id of a3mega-gcp-host-internal>"
    assert out["nodeGroup"] == "<instance group of a3mega-gcp-mig>"
    assert len(out["gpuNetworkIds"]) == 8
    assert not a3mega.run.warnings  # TCPXO is enabled by the bootstrap on the default image: no warning


def test_labels_everywhere_are_valid_gcp_labels(a3mega, stack_plan):
    h100 = stack_plan("gcp-h100")
    for plan in (a3mega, h100):
        tpl = template(plan)
        for labels in [tpl["labels"], *(d["labels"] for d in tpl["disks"])]:
            assert set(labels) >= LABEL_KEYS
            assert all(k == k.lower() and ":" not in k and len(k) <= 63 for k in labels)
    assert template(h100)["labels"]["cost-center"] == "gpu_training"
    for inst in resources_of(h100, "InstanceFromTemplate"):
        assert inst["inputs"]["labels"]["gpu-cluster_cluster"] == "h100"


def test_h100_instances_from_one_template(stack_plan):
    h100 = stack_plan("gcp-h100")
    nodes = resources_of(h100, "compute/instanceFromTemplate:InstanceFromTemplate")
    assert [r["name"] for r in nodes] == ["h100-gcp-node-0", "h100-gcp-node-1"]
    assert all(r["inputs"]["sourceInstanceTemplate"] == "<self link (unique id) of h100-gcp-template>" for r in nodes)
    assert all(r["inputs"]["zone"] == "us-east5-a" for r in nodes)
    assert not resources_of(h100, "InstanceGroupManager")
    assert len(template(h100)["networkInterfaces"]) == 9
    # sshCidrs as before, plus IAP's range: access auto resolves to iap
    assert firewalls(h100)["h100-gcp-ssh"]["sourceRanges"] == ["203.0.113.0/24", "35.235.240.0/20"]
    assert h100.summary()["fabricGbpsPerNode"] == 1600
    assert len(h100.run.outputs["instanceIds"]) == 2


def test_dev_stack_g2_spot_with_a_scratch_disk(stack_plan):
    dev = stack_plan("gcp-dev")
    tpl = template(dev)
    assert tpl["machineType"] == "g2-standard-4"
    assert tpl["networkInterfaces"] == [{"nicType": "GVNIC", "subnetwork": "<id of dev-gcp-nodes>"}]
    assert tpl["scheduling"] == {
        "provisioningModel": "SPOT",
        "preemptible": True,
        "automaticRestart": False,
        "onHostMaintenance": "TERMINATE",
        "instanceTerminationAction": "STOP",
    }
    scratch = tpl["disks"][1]
    assert scratch == {**scratch, "deviceName": "scratch", "diskType": "pd-ssd", "diskSizeGb": 500, "boot": False}
    assert "google-scratch" in tpl["metadata"]["startup-script"]
    assert tpl["disks"][0]["sourceImage"] == (  # the family's pinned release (image: auto), not the family
        "projects/deeplearning-platform-release/global/images/common-cu128-ubuntu-2204-nvidia-570-v20260320"
    )
    assert not resources_of(dev, "ResourcePolicy") and "resourcePolicies" not in tpl
    assert dev.summary()["fabricGbpsPerNode"] == 0


def test_a3_high_gets_4_gpu_vpcs():
    plan = plan_values(gcp_values(instanceType="a3-highgpu-8g"))
    nics = template(plan)["networkInterfaces"]
    assert len(nics) == 1 + 4 and all(n["nicType"] == "GVNIC" for n in nics)
    assert len(networks(plan)) == 1 + 4
    assert plan.summary()["fabricGbpsPerNode"] == 800


@pytest.mark.parametrize(("itype", "gpu"), [("a3-ultragpu-8g", "H200:8"), ("a4-highgpu-8g", "B200:8")])
def test_rdma_types_two_gvnic_and_8_mrdma_on_the_roce_vpc(itype, gpu):
    # not sold on demand: bought as spot here (consumption rules in test_gcp_identity_access)
    plan = plan_values(gcp_values(instanceType=itype, gpu=gpu, zone="us-central1-b", spot=True))
    nics = template(plan)["networkInterfaces"]
    assert [n["nicType"] for n in nics] == ["GVNIC", "GVNIC", *["MRDMA"] * 8]
    assert [n["subnetwork"] for n in nics[2:]] == [f"<id of test-gcp-roce-{i}>" for i in range(8)]
    nets = networks(plan)
    assert set(nets) == {"test-gcp-host", "test-gcp-gvnic-1", "test-gcp-roce"}
    assert (
        nets["test-gcp-roce"]["networkProfile"] == "projects/my-project/global/networkProfiles/us-central1-b-vpc-roce"
    )
    assert {n["mtu"] for n in nets.values()} == {8896}
    assert not [f for f in firewalls(plan).values() if f["network"] == "<id of test-gcp-roce>"]
    assert len([s for s in subnets(plan).values() if s["network"] == "<id of test-gcp-roce>"]) == 8
    assert template(plan)["disks"][0]["diskType"] == "hyperdisk-balanced"
    assert plan.summary()["fabricGbpsPerNode"] == plan.summary()["fabricGbpsRated"] == 3200


def test_every_gcp_fabric_type_is_wired_to_its_rating_in_the_plan():
    for row in catalog.load("gcp").types:
        if row.has_fabric:
            spot = row.instanceType.startswith(("a3-ultragpu", "a4-highgpu"))  # not sold on demand
            # a4x: reservation-bound only (no spot either)
            bought = {"reservation": "a4x-block"} if row.instanceType.startswith("a4x-") else {"spot": spot}
            plan = plan_values(gcp_values(instanceType=row.instanceType, gpu=f"{row.gpu}:{row.gpus}", **bought))
            assert plan.summary()["fabricGbpsPerNode"] == row.fabricGbps, row.instanceType


def test_n1_t4_gets_guest_accelerators():
    plan = plan_values(gcp_values(instanceType=None, gpu="T4:4", nodes=1))
    tpl = template(plan)
    assert tpl["machineType"] == "n1-standard-96"
    assert tpl["guestAccelerators"] == [{"type": "nvidia-tesla-t4", "count": 4}]
    assert tpl["scheduling"]["onHostMaintenance"] == "TERMINATE"


def test_public_ip_only_on_the_host_nic_and_no_nat_without_egress():
    plan = plan_values(gcp_values(network={"publicIp": True, "egress": "none"}))
    nics = template(plan)["networkInterfaces"]
    assert nics[0]["accessConfigs"] == [{}]
    assert all("accessConfigs" not in n for n in nics[1:])
    assert not resources_of(plan, "Router") and not resources_of(plan, "RouterNat")


def test_reservation_goes_into_the_template_without_placement():
    plan = plan_values(gcp_values(reservation="a3-block-1"))
    tpl = template(plan)
    assert tpl["reservationAffinity"] == {
        "type": "SPECIFIC_RESERVATION",
        "specificReservation": {"key": "compute.googleapis.com/reservation-name", "values": ["a3-block-1"]},
    }
    assert not resources_of(plan, "ResourcePolicy")


def test_retained_scratch_disk_is_not_auto_deleted():
    plan = plan_values(gcp_values(storage={"scratch": "disk", "retainScratch": True}))
    assert template(plan)["disks"][1]["autoDelete"] is False


@pulumi.runtime.test
def test_component_outputs_under_plain_mocks():
    """The component used directly, as a user's own unit test would, with the Output returned."""

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            return f"{args.name}-id", {
                **args.inputs,
                "selfLink": f"sl/{args.name}",
                "selfLinkUnique": f"slu/{args.name}",
            }

        def call(self, args):
            return {"selfLink": "projects/x/global/images/img-1"}

    pulumi.runtime.set_mocks(Mocks(), preview=False)
    cluster = GpuCluster("unit", spec_of(gcp_values(image="latest")))  # latest: the family, resolved by an invoke

    def check(values):
        vpc_id, fabric, image, template_link, placement = values
        assert vpc_id == "unit-gcp-host-id"
        assert fabric == 1600
        assert image == "projects/x/global/images/img-1"
        assert template_link == "slu/unit-gcp-template"
        assert placement == "sl/unit-gcp-placement"

    return pulumi.Output.all(
        cluster.outputs["vpcId"],
        cluster.outputs["fabricGbpsPerNode"],
        cluster.outputs["imageId"],
        cluster.cloud.template.self_link_unique,
        cluster.outputs["placementGroup"],
    ).apply(check)
