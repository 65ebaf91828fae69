"""The pure Alibaba Cloud layout: ERI wiring, vSwitches, deployment sets, image, disks; no Pulumi involved."""

import base64
import gzip
import ipaddress
import json
import re
import subprocess

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components import bootstrap, catalog
from components.catalog.capabilities import capabilities
from components.errors import ConfigError
from components.layout import alicloud as ali
from components.layout.alicloud.access import PUBLIC_BANDWIDTH_MBPS
from components.layout.alicloud.data import alicloud_data
from components.layout.alicloud.fabric import ERDMA_ENV, MAX_ERIS_PER_INSTANCE, erdma_part, eri_interfaces
from components.layout.alicloud.network import VSWITCH_PREFIX, vswitch_cidrs
from components.layout.alicloud.nodes import DRIVER_BOOT_FILE

from .conftest import spec_of


def ali_values(**cluster):
    base = {"instanceType": "ecs.ebmgn8v.48xlarge", "nodes": 2, "nodeGroup": "instances", "zone": "cn-beijing-l"}
    base.update(cluster)
    return {"gpu-cluster:cloud": "alicloud", "alicloud:region": "cn-beijing", "gpu-cluster:cluster": base}


def layout_of(**cluster):
    return ali.plan(spec_of(ali_values(**cluster)))


@given(devices=st.integers(0, 8))
def test_eri_interfaces_one_per_card_primary_first(devices):
    nics = eri_interfaces(devices)
    eris = [n for n in nics if n.is_eri]
    assert len(eris) == min(devices, MAX_ERIS_PER_INSTANCE)
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
            assert row.fabricDevices <= MAX_ERIS_PER_INSTANCE, row.instanceType


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


def test_a_single_node_keeps_its_deployment_set_to_grow_back_in_place():
    # `placement: auto` is cluster at any count (docs/day2.md): shrunk to one node, the instance stays in its set
    # (an instance's deploymentSetId is ForceNew) and the cluster grows back into the same set
    for itype in ("ecs.gn6i-c4g1.xlarge", "ecs.gn7e-c16g1.32xlarge"):
        one, two = layout_of(instanceType=itype, nodes=1), layout_of(instanceType=itype, nodes=2)
        assert one.deployment_set_strategy == two.deployment_set_strategy == "LowLatency"
        assert one.placement_applied == "cluster"


def test_managed_group_on_an_erdma_type_wires_no_eri_and_says_so():
    # pulumi-alicloud refuses ESS interfaces without top-level groups; ESS refuses those beside a primary ENI
    layout = layout_of(nodeGroup="managed", placement="none")
    assert layout.eri_count == 0 and layout.fabric_gbps_wired == 0
    assert layout.interfaces == (ali.NetworkInterface(0, "Standard"),)
    warning = "gpu-cluster:cluster.nodeGroup: managed (an ESS scaling group) gets no eRDMA"
    assert any(w.startswith(warning) for w in layout.warnings)
    assert "gpu-cluster-erdma" not in layout.user_data  # nothing to bring up


@given(prefix=st.integers(16, 28))
def test_vswitches_are_two_halves_inside_the_vpc(prefix):
    vpc = ipaddress.IPv4Network(f"10.0.0.0/{prefix}")
    nodes, nat = (ipaddress.IPv4Network(c) for c in vswitch_cidrs(str(vpc)))
    assert nodes.subnet_of(vpc) and nat.subnet_of(vpc) and not nodes.overlaps(nat)
    assert VSWITCH_PREFIX[0] <= nodes.prefixlen == nat.prefixlen <= VSWITCH_PREFIX[1]


def test_nat_vswitch_only_with_nat_egress():
    assert layout_of().nat_vswitch_cidr == "10.42.128.0/17"
    assert layout_of(network={"egress": "none"}).nat_vswitch_cidr is None


def test_missing_zone_is_picked_at_deploy_with_a_warning():
    layout = layout_of(zone=None)
    assert layout.zone is None
    assert any(w.startswith("gpu-cluster:cluster.zone: not set") for w in layout.warnings)
    assert not any("zone" in w for w in layout_of().warnings)


def test_image_auto_is_ubuntu_with_the_driver_and_uefi_on_bare_metal():
    vm = layout_of(instanceType="ecs.gn7e-c16g1.32xlarge")  # auto: the pinned public image id
    assert (vm.image.image_id, vm.image.name_regex) == ("ubuntu_22_04_x64_20G_alibase_20260916.vhd", None)
    assert layout_of(instanceType="ecs.gn7e-c16g1.32xlarge", image="latest").image.name_regex == (
        "^ubuntu_22_04_x64_20G_alibase_"
    )
    metal = layout_of()  # the UEFI image has no sourced release: it tracks (and the plan warns)
    assert metal.image.name_regex == "^ubuntu_22_04_uefi_x64_20G_alibase_"
    assert metal.gpu_driver is not None and metal.gpu_driver.driver == "550.127.08"
    explicit = layout_of(image="m-bp1abcdef")
    assert (explicit.image.image_id, explicit.gpu_driver) == ("m-bp1abcdef", None)
    assert "auto_install" not in explicit.user_data
    assert "env_setup.sh --egs" in explicit.user_data  # still installs eRDMA when missing


def user_data_doc(layout):
    """The cloud-config the nodes get: Base64 of gzip (cloud-init uncompresses it)."""
    raw = gzip.decompress(base64.b64decode(layout.user_data_b64))
    assert raw.decode() == layout.user_data
    return yaml.safe_load(raw.decode().removeprefix("#cloud-config\n"))


def test_user_data_order_scratch_then_erdma_then_driver_and_under_16kb():
    for layout in (layout_of(storage={"scratch": "disk", "scratchGb": 500}), layout_of(placement="none")):
        assert len(base64.b64decode(layout.user_data_b64)) < 16 * 1024  # Alibaba's user data limit before Base64
        doc = user_data_doc(layout)
        runcmd = [" ".join(c) for c in doc["runcmd"]]
        scratch = next(i for i, c in enumerate(runcmd) if "gpu-cluster-scratch.service" in c)
        mark = next(i for i, c in enumerate(runcmd) if DRIVER_BOOT_FILE in c)
        erdma = runcmd.index("systemctl enable --now gpu-cluster-erdma.service")
        health = runcmd.index("systemctl enable --now --no-block gpu-cluster-health.service")
        driver = next(i for i, c in enumerate(runcmd) if "auto_install_v4.0.sh" in c)
        assert scratch < mark < erdma < health < driver == len(runcmd) - 1  # the driver installer reboots: last
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


def erdma_user_data(eris):
    return base64.b64encode(bootstrap.cloud_init([erdma_part(eris, 1400)]).encode()).decode()


def test_count_wired_gbps_counts_eris_that_are_up():
    inst = {"type": "alicloud:ecs/instance:Instance", "inputs": {"networkInterfaceTrafficMode": "HighPerformance"}}
    two = {
        "networkInterfaceTrafficMode": "HighPerformance",
        "networkCardIndex": 0,
        "networkInterfaces": {"networkInterfaceTrafficMode": "HighPerformance", "networkCardIndex": 1},
    }
    bare = {"type": "alicloud:ecs/instance:Instance", "inputs": two}
    booted = {"type": "alicloud:ecs/instance:Instance", "inputs": {**two, "userData": erdma_user_data(2)}}
    ess = {
        "type": "alicloud:ess/scalingConfiguration:ScalingConfiguration",
        "inputs": {"networkInterfaces": [{"networkInterfaceTrafficMode": "Standard"}]},
    }
    ess_two = {
        "type": "alicloud:ess/scalingConfiguration:ScalingConfiguration",
        "inputs": {
            "networkInterfaces": [{"networkInterfaceTrafficMode": "HighPerformance"}] * 2,
            "userData": erdma_user_data(2),
        },
    }
    assert ali.count_wired_gbps([inst], 100) == 100  # the primary ERI is configured by the image
    assert ali.count_wired_gbps([bare], 80) == 80  # a second ERI nobody brings up carries nothing
    assert ali.count_wired_gbps([booted], 80) == 160
    assert ali.count_wired_gbps([ess], 80) == 0
    # ESS takes no card index: both ERIs on one card, at Alibaba's one-card rating
    assert ali.count_wired_gbps([ess_two], 80) == alicloud_data()["erdma"]["maxGbpsOnOneCard"] == 100
    assert ali.count_wired_gbps([{**booted, "inputs": {**two, "userData": "not base64!"}}], 80) == 80


def test_erdma_part_brings_up_every_eri_at_every_boot_with_the_documented_mtu():
    layout = layout_of()
    assert layout.erdma_mtu == 1400  # no jumbo frames: Alibaba's value for NCCL without them
    doc = user_data_doc(layout)
    files = {f["path"]: f for f in doc["write_files"]}
    assert files[ERDMA_ENV]["content"] == (
        "ERI_COUNT=2\nMTU=1400\nERDMA_INSTALLER=http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh\n"
        f"DRIVER_BOOT_FILE={DRIVER_BOOT_FILE}\n"
    )
    shipped = files["/usr/local/sbin/gpu-cluster-erdma"]["content"]
    assert shipped == bootstrap.node_text(bootstrap.script("alicloud_erdma.sh"))  # GPU nodes: without comment lines
    assert files["/usr/local/sbin/gpu-cluster-erdma"]["permissions"] == "0755"
    unit_file = files["/etc/systemd/system/gpu-cluster-erdma.service"]["content"]
    assert "EnvironmentFile=/etc/gpu-cluster/erdma.env" in unit_file and "After=network-online.target" in unit_file
    # the health check counts eRDMA ports: ordered after the unit that brings them up
    drop_in = files["/etc/systemd/system/gpu-cluster-health.service.d/10-after-erdma.conf"]["content"]
    assert "After=gpu-cluster-erdma.service" in drop_in
    runcmd = [" ".join(c) for c in doc["runcmd"]]
    unit = runcmd.index("systemctl enable --now gpu-cluster-erdma.service")
    driver = next(i for i, c in enumerate(runcmd) if "auto_install_v4.0.sh" in c)
    assert unit < driver
    # the stack is installed by the unit (after the driver), never by a one-shot command before it
    assert not any("env_setup.sh" in c for c in runcmd)
    assert erdma_part(0, 1400).empty
    assert "gpu-cluster-erdma" not in layout_of(instanceType="ecs.gn7e-c16g1.32xlarge").user_data


def test_managed_limits_come_from_the_capabilities_data():
    caps = capabilities("alicloud")
    placement, fabric = caps.managed_limit("placement"), caps.managed_limit("fabric")
    assert placement is not None and fabric is not None
    layout = layout_of(nodeGroup="managed", placement="cluster")
    assert layout.placement_applied == placement.applied == "none"
    assert layout.deployment_set_strategy is None
    assert f"gpu-cluster:cluster.placement: cluster {placement.message}" in layout.warnings
    assert any(w.startswith(f"gpu-cluster:cluster.nodeGroup: managed {fabric.message}") for w in layout.warnings)
    # what ESS wires through pulumi-alicloud 4.0.0: no ERI at all, never 160
    assert fabric.applied == "not wired" and layout.fabric_gbps_wired == 0
    assert layout_of().placement_applied == "cluster" and layout_of().fabric_gbps_wired == 160


def test_spot_instances_get_no_deployment_set_and_the_plan_says_so():
    assert capabilities("alicloud").spot_with_placement is False
    layout = layout_of(spot=True, placement="cluster")
    assert (layout.deployment_set_strategy, layout.placement_applied) == (None, "none")
    assert any(w.startswith("gpu-cluster:cluster.spot: Alibaba cannot create spot") for w in layout.warnings)
    # placement auto resolves to none for spot here (the spec says why, as info), so the layout has nothing to drop
    auto = layout_of(spot=True)
    assert (auto.spec.placement, auto.deployment_set_strategy, auto.placement_applied) == ("none", None, "none")
    assert not any("deployment set" in w for w in auto.warnings)
    assert any(
        f.level == "info" and f.message.startswith("auto resolves to none for spot nodes: alicloud places no spot")
        for f in auto.spec.findings
    )
    assert layout_of(spot=True, placement="spread").deployment_set_strategy is None


@pytest.mark.parametrize("placement", ["cluster", "spread"])
def test_a_deployment_set_holds_at_most_20_nodes_in_one_zone(placement):
    assert layout_of(nodes=20, placement=placement).deployment_set_strategy is not None
    with pytest.raises(ConfigError) as info:
        layout_of(nodes=21, placement=placement)
    assert info.value.key == "gpu-cluster:cluster.placement"
    assert "at most 20 instances in one zone" in info.value.message and "placement: none" in info.value.message
    assert layout_of(nodes=21, placement="none").placement_applied == "none"


def test_identity_least_privilege_by_default():
    ident = layout_of().identity
    assert (ident.create, ident.policies) == (True, ())
    assert ident.role_name == "test-test-nodes"
    trust = json.loads(ident.assume_role_policy)
    assert trust["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}}
    ]
    asked = layout_of(identity={"policies": ["AliyunECSReadOnlyAccess"], "readStorage": True}).identity
    assert asked.policies == ("AliyunECSReadOnlyAccess", "AliyunOSSReadOnlyAccess")
    existing = layout_of(identity={"existing": "my-gpu-role"}).identity
    assert (existing.create, existing.role_name, existing.policies) == (False, "my-gpu-role", ())


def test_role_names_are_valid_ram_names():
    spec = spec_of(ali_values(name="n" * 31), stack="a_very.long_stack-name-" + "x" * 40)
    name = ali.plan(spec).identity.role_name
    assert len(name) <= 64 and re.fullmatch(r"[A-Za-z0-9.-]+", name)


def test_login_node_takes_the_ssh_cidrs_and_public_ip_from_the_nodes():
    layout = layout_of(network={"sshCidrs": ["203.0.113.0/24"], "publicIp": True}, login={"publicIp": True})
    assert layout.node_ssh_cidrs == () and layout.public_bandwidth_mbps == 0
    assert layout.login is not None
    assert (layout.login.instance_type, layout.login.ssh_cidrs) == ("ecs.g7.large", ("203.0.113.0/24",))
    assert layout.login.public_bandwidth_mbps == PUBLIC_BANDWIDTH_MBPS
    assert layout.login.image_name_regex == "^ubuntu_22_04_x64_20G_alibase_"
    # without a login node, today's behaviour on the nodes
    plain = layout_of(network={"sshCidrs": ["203.0.113.0/24"], "publicIp": True})
    assert plain.node_ssh_cidrs == ("203.0.113.0/24",) and plain.public_bandwidth_mbps == PUBLIC_BANDWIDTH_MBPS


# --- issue 12: fabric usability, NCCL environment, health hook ---------------------------------------------


def test_every_erdma_type_is_usable_by_nccl_on_its_default_image():
    for row in catalog.load("alicloud").types:
        if row.fabric != "erdma":
            continue
        usability = layout_of(instanceType=row.instanceType, nodeGroup="instances").fabric_usability
        assert usability.usable, (row.instanceType, usability.missing)
        assert any("env_setup.sh --egs" in p for p in usability.provides)
        # a managed (ESS) group carries no ERI (managedGroupLimits fabric): nothing is usable, and it says why
        managed = layout_of(instanceType=row.instanceType, nodeGroup="managed").fabric_usability
        assert managed.missing == ("no fabric wired",)


def test_fabric_usability_is_false_with_the_reason_otherwise():
    custom = layout_of(image="m-bp1abcdef").fabric_usability
    assert not custom.usable and "m-bp1abcdef" in custom.missing[0] and "cannot vouch" in custom.missing[0]
    assert layout_of(fabric="none").fabric_usability.missing == ("no fabric wired",)
    no_eri = layout_of(instanceType="ecs.gn7e-c16g1.32xlarge").fabric_usability
    assert (no_eri.usable, no_eri.missing) == (False, ("no fabric wired",))


def test_nccl_environment_is_alibabas_preset_for_erdma():
    files = {f["path"]: f["content"] for f in user_data_doc(layout_of())["write_files"]}
    env = dict(line.split("=", 1) for line in files["/etc/gpu-cluster/nccl.env"].splitlines() if "=" in line)
    assert env == {
        "NCCL_IB_GID_INDEX": "1",
        "NCCL_IB_HCA": "erdma",
        "NCCL_IB_QPS_PER_CONNECTION": "8",
        "NCCL_MIN_NCHANNELS": "16",
        "NCCL_NET_PLUGIN": "none",
        "NCCL_SOCKET_IFNAME": "eth0",
    }
    assert "PAI" in files["/etc/gpu-cluster/nccl.env"].splitlines()[0]  # the source is in the file
    assert "/etc/gpu-cluster/nccl.env" not in layout_of(instanceType="ecs.gn7e-c16g1.32xlarge").user_data


def test_the_bootstrap_is_node_parts_with_the_fabric_kind_and_eri_count():
    files = {f["path"]: f["content"] for f in user_data_doc(layout_of())["write_files"]}
    health = files["/etc/gpu-cluster/health.env"]
    assert 'FABRIC_KIND="erdma"' in health and 'EXPECTED_FABRIC_DEVICES="2"' in health
    assert 'EXPECTED_GPUS="8"' in health and 'EXPECTED_NVME="0"' in health
    assert "/etc/systemd/system/gpu-cluster-dcgm-exporter.service" in files
    vm = {
        f["path"]: f["content"] for f in user_data_doc(layout_of(instanceType="ecs.gn7e-c16g1.32xlarge"))["write_files"]
    }
    assert 'FABRIC_KIND="none"' in vm["/etc/gpu-cluster/health.env"]
    off = {
        f["path"]
        for f in user_data_doc(layout_of(health={"enabled": False}, monitoring={"dcgmExporter": False}))["write_files"]
    }
    assert "/etc/systemd/system/gpu-cluster-health.service" not in off
    assert "/etc/systemd/system/gpu-cluster-dcgm-exporter.service" not in off


def test_the_hook_replaces_only_managed_nodes_and_instances_report():
    managed = layout_of(nodeGroup="managed")
    files = {f["path"]: f for f in user_data_doc(managed)["write_files"]}
    assert managed.health_hook
    hook = files["/usr/local/sbin/gpu-cluster-unhealthy"]
    assert hook["content"] == bootstrap.node_text(bootstrap.script("alicloud_unhealthy.sh"))
    assert hook["permissions"] == "0755"
    assert 'ACTION="replace"' in files["/etc/gpu-cluster/health.env"]["content"]
    instances = layout_of()
    assert not instances.health_hook and "gpu-cluster-unhealthy\n" not in instances.user_data
    assert "/usr/local/sbin/gpu-cluster-unhealthy" not in {f["path"] for f in user_data_doc(instances)["write_files"]}
    asked = layout_of(health={"action": "replace"})
    assert not asked.health_hook
    assert any("replace acts as report on alicloud instances" in w for w in asked.warnings)
    assert not layout_of(nodeGroup="managed", health={"action": "report"}).health_hook


def test_every_rendered_script_is_valid_yaml_and_shellcheck_clean(tmp_path):
    for layout in (layout_of(), layout_of(nodeGroup="managed"), layout_of(image="m-bp1abcdef")):
        doc = user_data_doc(layout)  # valid YAML
        for item in doc["write_files"]:
            if item["content"].startswith("#!/bin/bash"):
                path = tmp_path / item["path"].rsplit("/", 1)[1]
                path.write_text(item["content"])
                proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
                assert proc.returncode == 0, (item["path"], proc.stdout)
        for cmd in doc["runcmd"]:
            if cmd[:2] in (["bash", "-c"], ["sh", "-c"]):
                proc = subprocess.run(["shellcheck", "-s", "bash", "-"], input=cmd[2], capture_output=True, text=True)
                assert proc.returncode == 0, (cmd[2][:80], proc.stdout)
