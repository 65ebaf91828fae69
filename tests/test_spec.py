"""The spec: one test per validation rule, each checking the key and the message; property tests."""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.errors import ConfigError
from components.spec import build_spec, parse_gpu

from .conftest import aws_values, spec_of


def error_of(values, stack="test"):
    with pytest.raises(ConfigError) as info:
        build_spec(values, stack)
    return info.value


def test_defaults_resolve_a_full_spec():
    spec = spec_of(aws_values())
    assert spec.instance.instanceType == "p5.48xlarge"
    assert spec.fabric_wired and spec.placement == "cluster" and spec.scratch == "nvme"
    assert spec.name == "test" and spec.max_nodes == 2 and spec.network.cidr == "10.42.0.0/16"
    assert spec.base_tags["gpu-cluster:cluster"] == "test"


@pytest.mark.parametrize(
    ("cluster", "key", "fragment"),
    [
        (
            {"storage": {"scratch": "ssd"}},
            "gpu-cluster:cluster.storage.scratch",
            "allowed: 'auto', 'nvme', 'disk' or 'none'",
        ),
        ({"nodes": -1}, "gpu-cluster:cluster.nodes", "greater than or equal to 0"),
        ({"nodes": 100000}, "gpu-cluster:cluster.nodes", "less than or equal to 5000"),
        ({"nodes": "4"}, "gpu-cluster:cluster.nodes", "valid integer"),
        ({"spot": "yes"}, "gpu-cluster:cluster.spot", "allowed: true, false or {enabled, onDemandBase, fallback}"),
        ({"colour": "red"}, "gpu-cluster:cluster.colour", "unknown key; allowed keys here: name, gpu"),
        ({"storage": {"scratchSize": 5}}, "gpu-cluster:cluster.storage.scratchSize", "allowed keys here: rootGb"),
        ({"name": "Bad_Name"}, "gpu-cluster:cluster.name", "lowercase letters"),
        ({"network": {"cidr": "10.42.0.0/33"}}, "gpu-cluster:cluster.network.cidr", "not an IPv4 CIDR"),
        ({"network": {"cidr": "8.8.0.0/16"}}, "gpu-cluster:cluster.network.cidr", "not a private range"),
        ({"network": {"sshCidrs": "10.0.0.0/8"}}, "gpu-cluster:cluster.network.sshCidrs", "must be a list"),
        ({"network": {"sshCidrs": ["nope"]}}, "gpu-cluster:cluster.network.sshCidrs", "not an IPv4 CIDR"),
        (
            {"storage": {"scratchPath": "relative/path"}},
            "gpu-cluster:cluster.storage.scratchPath",
            "must be an absolute path",
        ),
        ({"sshPublicKey": "hello"}, "gpu-cluster:cluster.sshPublicKey", "must be an OpenSSH public key"),
    ],
)
def test_field_errors_name_the_key(cluster, key, fragment):
    err = error_of(aws_values(**cluster))
    assert err.key == key
    assert fragment in err.message


@pytest.mark.parametrize(
    ("cluster", "key", "fragment"),
    [
        # one node: gpu resolution does not look for a fabric (two nodes would get g4dn.8xlarge, which has EFA)
        ({"gpu": "T4:1", "nodes": 1, "fabric": "required"}, "gpu-cluster:cluster.fabric", "has no HPC fabric"),
        (
            {"gpu": None, "instanceType": "p3.2xlarge", "storage": {"scratch": "nvme"}},
            "gpu-cluster:cluster.storage.scratch",
            "has no local NVMe",
        ),
        ({"gpu": "H100:8", "instanceType": "p4d.24xlarge"}, "gpu-cluster:cluster.gpu", "disagrees with instanceType"),
        ({"nodes": 5, "maxNodes": 4}, "gpu-cluster:cluster.nodes", "more than maxNodes 4"),
        ({"nodeGroup": "instances", "nodes": 0}, "gpu-cluster:cluster.nodes", "creates nothing"),
        ({"gpu": "H100:3"}, "gpu-cluster:cluster.gpu", "counts offered: 1, 8"),
        ({"gpu": "Z9000:1"}, "gpu-cluster:cluster.gpu", "unknown GPU model"),
        ({"gpu": None}, "gpu-cluster:cluster", "set gpu"),
        ({"gpu": None, "instanceType": "m5.large"}, "gpu-cluster:cluster.instanceType", "not a GPU type"),
        ({"zone": "us-west-2a"}, "gpu-cluster:cluster.zone", "must be a zone of us-east-1"),
        ({"spot": True, "reservation": "cr-0123456789abcdef0"}, "gpu-cluster:cluster.reservation", "exclusive"),
        ({"reservation": "res-1"}, "gpu-cluster:cluster.reservation", "not a reservation id for aws"),
        ({"network": {"cidr": "10.0.0.0/8"}}, "gpu-cluster:cluster.network.cidr", "between /16 and /27"),
        ({"image": "ubuntu"}, "gpu-cluster:cluster.image", "AMI id"),
        ({"azure": {"resourceGroup": "rg"}}, "gpu-cluster:cluster.azure", "gpu-cluster:cloud is aws"),
        ({"tags": {"aws:owner": "x"}}, "gpu-cluster:cluster.tags.aws:owner", "not starting with 'aws:'"),
    ],
)
def test_cross_field_rules(cluster, key, fragment):
    err = error_of(aws_values(**cluster))
    assert err.key == key
    assert fragment in err.message


def test_azure_reserved_range_is_refused():
    values = {
        "gpu-cluster:cloud": "azure",
        "azure-native:location": "eastus",
        "gpu-cluster:cluster": {"instanceType": "Standard_NC4as_T4_v3", "network": {"cidr": "172.16.0.0/20"}},
    }
    err = error_of(values)
    assert err.key == "gpu-cluster:cluster.network.cidr" and "172.16.0.0/16" in err.message


@pytest.mark.parametrize(
    ("values", "key", "fragment"),
    [
        ({}, "gpu-cluster:cloud", "allowed: aws, azure, gcp, alicloud"),
        ({"gpu-cluster:cloud": "oracle"}, "gpu-cluster:cloud", "got 'oracle'"),
        ({"gpu-cluster:cloud": "aws"}, "aws:region", "required when gpu-cluster:cloud is aws"),
        ({**aws_values(), "gcp:project": "p"}, "gcp:project", "is a gcp setting"),
        ({**aws_values(), "gpu-cluster:clustr": {}}, "gpu-cluster:clustr", "unknown key"),
        ({**aws_values(), "gpu-cluster:cluster": [1]}, "gpu-cluster:cluster", "must be a mapping"),
        ({**aws_values(), "gpu-cluster:cluster": "{not json"}, "gpu-cluster:cluster", "must be a mapping"),
        ({**aws_values(), "gpu-cluster:maxHourlyUsd": "cheap"}, "gpu-cluster:maxHourlyUsd", "a number"),
    ],
)
def test_top_level_keys(values, key, fragment):
    err = error_of(values)
    assert err.key == key and fragment in err.message


def test_name_defaults_to_stack_and_must_be_valid():
    assert spec_of(aws_values(), stack="train-1").name == "train-1"
    err = error_of(aws_values(), stack="Prod_Stack")
    assert err.key == "gpu-cluster:cluster.name" and "Prod_Stack" in err.message


def test_placement_auto_rules_and_warnings():
    # cluster at any count (docs/day2.md): a cluster shrunk to one node keeps its placement group
    assert spec_of(aws_values(gpu="T4:1", nodes=1)).placement == "cluster"
    assert spec_of(aws_values(gpu="T4:1", nodes=2)).placement == "cluster"
    with_reservation = spec_of(aws_values(reservation="cr-0123456789abcdef0"))
    assert with_reservation.placement == "none"
    assert any("breaks capacity reservations" in f.message for f in with_reservation.findings)
    forced = spec_of(aws_values(reservation="cr-0123456789abcdef0", placement="cluster"))
    assert any("may fail for capacity" in w for w in forced.warnings)
    unplaced = spec_of(aws_values(placement="none"))
    assert any("efa is wired but placement is none" in w for w in unplaced.warnings)


def test_max_nodes_default_and_scaling_range():
    assert spec_of(aws_values(nodes=2, maxNodes=8)).max_nodes == 8
    assert spec_of(aws_values(nodes=0, maxNodes=8)).nodes == 0


def test_secret_placeholder_value_is_accepted_for_keys():
    spec = spec_of(aws_values(sshPublicKey="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE user@host"))
    assert spec.ssh_public_key.startswith("ssh-ed25519")


@given(
    model=st.sampled_from(["h100", "H100", "a100-80gb", "A100_80GB", "t4", "L40S", "b200"]),
    count=st.integers(min_value=1, max_value=16),
    spaces=st.sampled_from(["", " "]),
)
def test_parse_gpu_accepts_usual_spellings(model, count, spaces):
    canonical, parsed = parse_gpu(f"{spaces}{model}{spaces}:{spaces}{count}")
    assert parsed == count and canonical.lower().replace("-", "") == model.lower().replace("_", "").replace("-", "")


@given(st.text(max_size=20))
def test_parse_gpu_never_crashes(text):
    try:
        model, count = parse_gpu(text)
    except ValueError as exc:
        assert str(exc)
    else:
        assert 1 <= count <= 16 and model


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=10,
)
_keys = st.sampled_from(
    [
        "gpu",
        "instanceType",
        "nodes",
        "maxNodes",
        "nodeGroup",
        "zone",
        "spot",
        "fabric",
        "placement",
        "storage",
        "network",
        "image",
        "tags",
        "name",
        "reservation",
        "bogus",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys, _json, max_size=6))
def test_any_cluster_mapping_is_accepted_or_refused_with_one_keyed_error(cluster):
    values = aws_values()
    values["gpu-cluster:cluster"] = {**values["gpu-cluster:cluster"], **copy.deepcopy(cluster)}
    try:
        spec = build_spec(values, "fuzz")
    except ConfigError as exc:
        assert exc.key.startswith(("gpu-cluster:", "aws:")) and exc.message and "\n" not in exc.message
    else:
        assert spec.nodes <= spec.max_nodes and spec.instance.cloud == "aws"
