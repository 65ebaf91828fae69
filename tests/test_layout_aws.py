"""The pure AWS layout: EFA wiring per type, placement, image, scratch; no Pulumi involved."""

import base64
import gzip

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components import catalog
from components.errors import ConfigError, ConfigErrors
from components.layout import aws as aws_layout

from .conftest import aws_values, spec_of


@given(cards=st.integers(1, 64), devices=st.integers(0, 64))
def test_efa_interfaces_one_per_card_primary_ena_first(cards, devices):
    nics = aws_layout.efa_interfaces(cards, devices)
    efas = [n for n in nics if n.is_efa]
    assert len(efas) == min(cards, devices)
    assert nics[0] == aws_layout.NetworkInterface(0, 0, "interface")
    assert all(n.interface_type == "efa-only" for n in efas)
    assert len({n.network_card_index for n in efas}) == len(efas)  # never two EFAs on one card
    assert len({(n.network_card_index, n.device_index) for n in nics}) == len(nics)
    for n in efas:
        assert n.device_index == (1 if n.network_card_index == 0 else 0)


@pytest.mark.parametrize(
    ("itype", "efa", "gbps"),
    [
        ("p5.48xlarge", 32, 3200),
        ("p5en.48xlarge", 16, 3200),
        ("p4d.24xlarge", 4, 400),
        ("g6e.48xlarge", 4, 400),
        ("p6-b200.48xlarge", 8, 3200),
        ("g5.48xlarge", 1, 100),
        ("g4dn.xlarge", 0, 0),
    ],
)
def test_every_card_gets_its_efa(itype, efa, gbps):
    layout = aws_layout.plan(spec_of(aws_values(gpu=None, instanceType=itype)))
    assert layout.efa_count == efa
    assert layout.fabric_gbps_wired == gbps


def test_every_aws_fabric_type_is_wired_to_its_rating():
    for row in catalog.load("aws").types:
        if row.has_fabric:
            values = aws_values(gpu=None, instanceType=row.instanceType, nodes=2)
            try:
                spec = spec_of(values)
            except ConfigErrors:  # not sold in us-east-1 (catalog availability): plan it where it is
                values["aws:region"] = "us-east-2"
                del values["gpu-cluster:cluster"]["zone"]
                spec = spec_of(values)
            assert aws_layout.plan(spec).fabric_gbps_wired == row.fabricGbps, row.instanceType


def test_fabric_none_wires_only_the_primary_interface():
    layout = aws_layout.plan(spec_of(aws_values(fabric="none")))
    assert layout.interfaces == (aws_layout.NetworkInterface(0, 0, "interface"),)


def test_public_ip_with_multiple_interfaces_is_refused():
    with pytest.raises(ConfigError) as info:
        aws_layout.plan(spec_of(aws_values(network={"publicIp": True})))
    assert info.value.key == "gpu-cluster:cluster.network.publicIp"
    assert "single-interface" in info.value.message


def test_subnets_are_halves_of_the_vpc():
    layout = aws_layout.plan(spec_of(aws_values(network={"cidr": "10.8.0.0/20"})))
    assert (layout.node_subnet_cidr, layout.public_subnet_cidr) == ("10.8.0.0/21", "10.8.8.0/21")
    no_nat = aws_layout.plan(spec_of(aws_values(network={"egress": "none"})))
    assert no_nat.public_subnet_cidr is None


def test_image_auto_uses_the_pinned_dlami_and_explicit_ids_pass_through():
    auto = aws_layout.plan(spec_of(aws_values()))
    assert (auto.image.ami_name, auto.image.ami_owner, auto.image.ssm_parameter) == (
        "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20260619",
        "898082745236",
        None,
    )
    latest = aws_layout.plan(spec_of(aws_values(image="latest")))
    assert latest.image.ssm_parameter.startswith("/aws/service/deeplearning/ami/x86_64/")
    explicit = aws_layout.plan(spec_of(aws_values(image="ami-0123456789abcdef0")))
    assert (explicit.image.ami_id, explicit.image.ssm_parameter) == ("ami-0123456789abcdef0", None)
    via_ssm = aws_layout.plan(spec_of(aws_values(image="ssm:/my/ami")))
    assert via_ssm.image.ssm_parameter == "/my/ami"


def test_market_follows_spot_and_capacity_blocks():
    assert aws_layout.plan(spec_of(aws_values(spot=True))).market == "spot"
    block = aws_layout.plan(spec_of(aws_values(reservation="cr-0123456789abcdef0", reservationType="capacity-block")))
    assert (block.market, block.capacity_reservation_id, block.placement_strategy) == (
        "capacity-block",
        "cr-0123456789abcdef0",
        None,
    )


def test_user_data_installs_the_scratch_unit_with_the_right_device_count():
    layout = aws_layout.plan(spec_of(aws_values()))
    text = gzip.decompress(base64.b64decode(layout.user_data_b64)).decode()
    doc = yaml.safe_load(text.removeprefix("#cloud-config\n"))
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    env = files["/etc/gpu-cluster/scratch.env"]
    assert 'EXPECTED_DEVICES="8"' in env and 'SCRATCH_PATH="/scratch"' in env
    assert "Amazon_EC2_NVMe_Instance_Storage" in env
    assert ["systemctl", "enable", "--now", "gpu-cluster-scratch.service"] in doc["runcmd"]
    disk = aws_layout.plan(spec_of(aws_values(storage={"scratch": "disk", "scratchGb": 500})))
    assert disk.scratch.kind == "disk" and disk.scratch.device_gb == 500
    assert "Amazon_Elastic_Block_Store" in disk.user_data
    none = aws_layout.plan(spec_of(aws_values(storage={"scratch": "none"})))
    assert "/etc/gpu-cluster/scratch.env" not in none.user_data
