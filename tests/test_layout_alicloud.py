"""The pure Alibaba Cloud layout: ERI wiring, vSwitches, deployment sets, image, disks; no Pulumi involved."""

import base64
import ipaddress

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components import catalog
from components.errors import ConfigError
from components.layout import alicloud as ali

from .conftest import spec_of


def ali_values(**cluster):
    base = {"instanceType": "ecs.ebmgn8v.48xlarge", "nodes": 2, "nodeGroup": "instances", "zone": "cn-beijing-l"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-beijing", "gpu-cluster:cluster": base}


def layout_of(**cluster):
    return ali.plan(spec_of(ali_values(**cluster)))


@given(devices=st.integers(0, 8))
def test_eri_interfaces_one_per_card_primary_first(devices):
    nics = ali.eri_interfaces(devices)
    eris = [n for n in nics if n.is_eri]
    assert len(eris) == min(devices, ali.MAX_ERIS_PER_INSTANCE)
    assert nics[0].network_card_index == 0
    assert [n.network_card_index for n in nics] == list(range(len(nics)))  # never two ERIs on one card
    if devices == 0:
        assert nics == (ali.NetworkInterface(0, "Standard"),)


@pytest.mark.parametrize(
    ("itype", "eris", "gbps"),
    [
        ("ecs.ebmgn8v.48xlarge", 2, 160),
        ("ecs.ebmgn8is.32xlarge", 2, 160),
        ("ecs.ebmgn7ex.32xlarge", 2, 160),
        ("ecs.gn8is-8x.32xlarge", 1, 100),
        ("ecs.gn8is.2xlarge", 1, 8),
        ("ecs.gn8v-8x.48xlarge", 1, 100),
        ("ecs.gn6i-c4g1.xlarge", 0, 0),
        ("ecs.gn7e-c16g1.32xlarge", 0, 0),
    ],
)
def test_eris_per_type(itype, eris, gbps):
    layout = layout_of(instanceType=itype)
    assert layout.eri_count == eris
    assert layout.fabric_gbps_wired == gbps
    assert (layout.erdma_installer is not None) == (eris > 0)


def test_every_alicloud_fabric_type_is_wired_to_its_rating():
    for row in catalog.load("alicloud").types:
        if row.has_fabric:
            layout = layout_of(instanceType=row.instanceType)
            assert layout.fabric_gbps_wired == row.fabricGbps, row.instanceType
            assert row.fabricDevices <= ali.MAX_ERIS_PER_INSTANCE, row.instanceType


def test_fabric_none_keeps_standard_interfaces():
    layout = layout_of(fabric="none")
    assert layout.interfaces == (ali.NetworkInterface(0, "Standard"),)
    assert layout.erdma_installer is None


def test_unnamed_gpu_types_are_never_picked_by_model():
    # gn7e / ebmgn7e / gn8v / ebmgn8v have gpu: null; A100-80GB:8 must land on the one named row.
    assert catalog.resolve("alicloud", "A100-80GB", 8).type.instanceType == "ecs.ebmgn7ex.32xlarge"
    unnamed = {r.instanceType for r in catalog.load("alicloud").types if r.gpu is None}
    assert {"ecs.gn7e-c16g1.32xlarge", "ecs.ebmgn8v.48xlarge"} <= unnamed
    for model, count in (("A100", 8), ("A100-80GB", 8), ("L20", 8), ("T4", 1)):
        assert catalog.resolve("alicloud", model, count).type.instanceType not in unnamed


@pytest.mark.parametrize(
    ("placement", "group", "strategy"),
    [
        ("auto", "instances", "LowLatency"),
        ("cluster", "instances", "LowLatency"),
        ("spread", "instances", "Availability"),
        ("none", "instances", None),
        ("cluster", "managed", None),
    ],
)
def test_deployment_set_strategy(placement, group, strategy):
    layout = layout_of(placement=placement, nodeGroup=group)
    assert layout.deployment_set_strategy == strategy
    if group == "managed":
        assert any("no deployment set" in w for w in layout.warnings)


def test_single_node_without_fabric_gets_no_deployment_set():
    assert layout_of(instanceType="ecs.gn6i-c4g1.xlarge", nodes=1).deployment_set_strategy is None


def test_managed_group_with_two_eris_warns_about_card_indices():
    layout = layout_of(nodeGroup="managed", placement="none")
    assert layout.eri_count == 2
    assert any("networkCardIndex" in w for w in layout.warnings)


@given(prefix=st.integers(16, 28))
def test_vswitches_are_two_halves_inside_the_vpc(prefix):
    vpc = ipaddress.IPv4Network(f"10.0.0.0/{prefix}")
    nodes, nat = (ipaddress.IPv4Network(c) for c in ali.vswitch_cidrs(str(vpc)))
    assert nodes.subnet_of(vpc) and nat.subnet_of(vpc) and not nodes.overlaps(nat)
    assert ali.VSWITCH_PREFIX[0] <= nodes.prefixlen == nat.prefixlen <= ali.VSWITCH_PREFIX[1]


def test_nat_vswitch_only_with_nat_egress():
    assert layout_of().nat_vswitch_cidr == "10.42.128.0/17"
    assert layout_of(network={"egress": "none"}).nat_vswitch_cidr is None


def test_missing_zone_is_picked_at_deploy_with_a_warning():
    layout = layout_of(zone=None)
    assert layout.zone is None
    assert any(w.startswith("gpu-cluster:cluster.zone: not set") for w in layout.warnings)
    assert not any("zone" in w for w in layout_of().warnings)


def test_image_auto_is_ubuntu_with_the_driver_and_uefi_on_bare_metal():
    vm = layout_of(instanceType="ecs.gn7e-c16g1.32xlarge")
    assert vm.image.name_regex == "^ubuntu_22_04_x64_20G_alibase_"
    metal = layout_of()
    assert metal.image.name_regex == "^ubuntu_22_04_uefi_x64_20G_alibase_"
    assert metal.gpu_driver is not None and metal.gpu_driver.driver == "550.127.08"
    explicit = layout_of(image="m-bp1abcdef")
    assert (explicit.image.image_id, explicit.gpu_driver) == ("m-bp1abcdef", None)
    assert "auto_install" not in explicit.user_data
    assert "env_setup.sh --egs" in explicit.user_data  # still installs eRDMA when missing


def test_user_data_order_scratch_then_erdma_then_driver_and_under_16kb():
    layout = layout_of(storage={"scratch": "disk", "scratchGb": 500})
    text = base64.b64decode(layout.user_data_b64).decode()
    assert len(text.encode()) < 16 * 1024  # Alibaba's user data limit before Base64
    doc = yaml.safe_load(text.removeprefix("#cloud-config\n"))
    runcmd = [" ".join(c) for c in doc["runcmd"]]
    scratch = next(i for i, c in enumerate(runcmd) if "gpu-cluster-scratch.service" in c)
    erdma = next(i for i, c in enumerate(runcmd) if "env_setup.sh --egs" in c)
    driver = next(i for i, c in enumerate(runcmd) if "auto_install_v4.0.sh" in c)
    assert scratch < erdma < driver  # the driver installer reboots: it goes last
    assert 'DRIVER_VERSION="550.127.08"' in runcmd[driver]
    env = {f["path"]: f["content"] for f in doc["write_files"]}["/etc/gpu-cluster/scratch.env"]
    assert 'DEVICE_GLOBS="/dev/vd[b-z] /dev/nvme*n1"' in env and 'EXCLUDE_ROOT="1"' in env


def test_scratch_nvme_is_rejected_and_auto_means_disk():
    with pytest.raises(ConfigError) as info:
        spec_of(ali_values(storage={"scratch": "nvme"}))
    assert info.value.key == "gpu-cluster:cluster.storage.scratch"
    assert "no local NVMe" in info.value.message
    assert layout_of().scratch.kind == "disk"


def test_scratch_performance_level_needs_a_big_enough_disk():
    with pytest.raises(ConfigError) as info:
        layout_of(storage={"scratchGb": 400}, alicloud={"scratchPerformanceLevel": "PL2"})
    assert info.value.key == "gpu-cluster:cluster.alicloud.scratchPerformanceLevel"
    assert "461" in info.value.message
    assert layout_of(storage={"scratchGb": 461}, alicloud={"scratchPerformanceLevel": "PL2"}).scratch.device_gb == 461


@pytest.mark.parametrize(
    ("cluster", "key"),
    [
        ({"storage": {"rootGb": 4000}}, "gpu-cluster:cluster.storage.rootGb"),
        ({"storage": {"scratchGb": 40000}}, "gpu-cluster:cluster.storage.scratchGb"),
        ({"nodeGroup": "managed", "nodes": 1, "maxNodes": 2500}, "gpu-cluster:cluster.maxNodes"),
        ({"tags": {"aliyun-owner": "x"}}, "gpu-cluster:cluster.tags.aliyun-owner"),
        ({"tags": {"k" * 65: "x"}}, f"gpu-cluster:cluster.tags.{'k' * 65}"),
    ],
)
def test_alicloud_limits_are_config_errors(cluster, key):
    with pytest.raises(ConfigError) as info:
        layout_of(**cluster)
    assert info.value.key == key


def test_vpc_prefix_limits_follow_the_catalog_rules():
    with pytest.raises(ConfigError) as info:
        spec_of(ali_values(network={"cidr": "10.0.0.0/12"}))
    assert info.value.key == "gpu-cluster:cluster.network.cidr" and "/16 and /28" in info.value.message


def test_count_wired_gbps_counts_high_performance_enis():
    inst = {"type": "alicloud:ecs/instance:Instance", "inputs": {"networkInterfaceTrafficMode": "HighPerformance"}}
    two = {
        "type": "alicloud:ecs/instance:Instance",
        "inputs": {
            "networkInterfaceTrafficMode": "HighPerformance",
            "networkInterfaces": {"networkInterfaceTrafficMode": "HighPerformance"},
        },
    }
    ess = {
        "type": "alicloud:ess/scalingConfiguration:ScalingConfiguration",
        "inputs": {"networkInterfaces": [{"networkInterfaceTrafficMode": "Standard"}]},
    }
    assert ali.count_wired_gbps([inst], 100) == 100
    assert ali.count_wired_gbps([inst, two], 80) == 160
    assert ali.count_wired_gbps([ess], 80) == 0
