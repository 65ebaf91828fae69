"""The spec's cross-field rules: every problem reported at once, one line each, with the key named."""

from __future__ import annotations

from dataclasses import replace

import pytest

from components.errors import ConfigError, ConfigErrors
from components.spec import CROSS_RULES, build_spec, rsa_bits
from components.spec.rules import nodes as node_rules

from .conftest import aws_values, gcp_values, spec_of


def errors_of(values) -> list[ConfigError]:
    with pytest.raises(ConfigError) as info:
        build_spec(values, "test")
    return list(getattr(info.value, "errors", [info.value]))


def test_every_cross_field_problem_is_reported_at_once():
    values = aws_values(nodes=3, maxNodes=2, reservationType="capacity-block", image="not-an-ami")
    errors = errors_of(values)
    keys = [e.key for e in errors]
    assert keys == [
        "gpu-cluster:cluster.nodes",
        "gpu-cluster:cluster.reservationType",
        "gpu-cluster:cluster.image",
    ]
    assert isinstance(errors_of(values), list) and len(str(ConfigErrors(errors)).splitlines()) == 3


def test_every_schema_problem_is_reported_at_once():
    errors = errors_of(aws_values(nodes="two", spot="yes", fabric="fast"))
    assert {e.key for e in errors} == {
        "gpu-cluster:cluster.nodes",
        "gpu-cluster:cluster.spot",
        "gpu-cluster:cluster.fabric",
    }


def test_a_key_with_a_newline_still_gives_one_line():
    errors = errors_of(aws_values(storage={"a\nb": 1}))
    assert len(errors) == 1
    assert "\n" not in str(errors[0]) and "a\\nb" in str(errors[0])


def test_a_mistyped_key_gets_a_did_you_mean():
    (error,) = errors_of(aws_values(maxNode=4))
    assert error.key == "gpu-cluster:cluster.maxNode"
    assert "did you mean maxNodes?" in error.message


def test_rules_are_named_functions_in_one_table():
    assert all(callable(rule) and rule.__name__.startswith("_") for rule in CROSS_RULES)
    assert len({rule.__name__ for rule in CROSS_RULES}) == len(CROSS_RULES)


def test_auto_placement_says_why():
    spec = spec_of(aws_values(nodes=2))
    assert spec.placement == "cluster"
    assert any("auto resolves to cluster (maxNodes > 1)" in str(f) for f in spec.findings)


@pytest.mark.parametrize(
    ("key", "bits"),
    [
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl x", None),
        ("ssh-rsa !!!notbase64", None),
    ],
)
def test_rsa_bits_reads_only_rsa_keys(key, bits):
    assert rsa_bits(key) == bits


def test_rsa_bits_counts_the_modulus():
    import base64

    def key(modulus_bits: int) -> str:
        n = (1 << (modulus_bits - 1)) | 1
        n_bytes = b"\x00" + n.to_bytes((modulus_bits + 7) // 8, "big")  # mpint: leading zero for the sign
        parts = [b"ssh-rsa", b"\x01\x00\x01", n_bytes]
        blob = b"".join(len(p).to_bytes(4, "big") + p for p in parts)
        return "ssh-rsa " + base64.b64encode(blob).decode()

    assert rsa_bits(key(2048)) == 2048
    assert rsa_bits(key(1024)) == 1024


def test_aws_refuses_an_ecdsa_key_naming_the_key():
    ecdsa = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9 x"
    (error,) = errors_of(aws_values(sshPublicKey=ecdsa))
    assert error.key == "gpu-cluster:cluster.sshPublicKey"
    assert "ssh-rsa, ssh-ed25519" in error.message


@pytest.mark.parametrize(
    ("cluster", "key"),
    [
        ({"access": "iap"}, "gpu-cluster:cluster.access"),
        ({"access": "bastion"}, "gpu-cluster:cluster.access"),
        ({"identity": {"policies": ["AmazonS3ReadOnlyAccess"]}}, "gpu-cluster:cluster.identity.policies[0]"),
        ({"identity": {"existing": "a b"}}, "gpu-cluster:cluster.identity.existing"),
        ({"login": {"instanceType": "p5.48xlarge"}}, "gpu-cluster:cluster.login.instanceType"),
        ({"access": "teleport"}, "gpu-cluster:cluster.access"),
    ],
)
def test_bad_access_identity_or_login_exits_with_the_key(cluster, key):
    errors = errors_of(aws_values(**cluster))
    assert [e.key for e in errors] == [key]


def test_access_auto_resolves_per_cloud_and_ssh_without_a_path_warns():
    assert spec_of(aws_values()).access == "ssm"
    spec = spec_of(aws_values(access="ssh", network={"sshCidrs": ["203.0.113.0/24"]}))
    warnings = [str(f) for f in spec.findings if f.level == "warning"]
    assert any("no working login path" in w for w in warnings)
    assert any("sshPublicKey: not set" in w for w in warnings)


def test_a_login_node_gets_the_clouds_default_cpu_type():
    spec = spec_of(aws_values(login={}))
    assert spec.login is not None and spec.login.instance_type == "m7i.large"


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        (aws_values(spot=True), "two-minute notice"),
        (
            {
                "gpu-cluster:cloud": "gcp",
                "gcp:project": "p",
                "gcp:region": "us-central1",
                "gpu-cluster:cluster": {"gpu": "L4:1", "spot": True, "zone": "us-central1-a"},
            },
            "local SSD contents are lost",
        ),
        (
            {
                "gpu-cluster:cloud": "alicloud",
                "alicloud:region": "cn-beijing",
                "gpu-cluster:cluster": {"gpu": "T4:1", "spot": True},
            },
            "released",
        ),
    ],
)
def test_spot_says_what_an_eviction_does_on_each_cloud(values, needle):
    warnings = spec_of(values).warnings
    assert any(w.startswith("gpu-cluster:cluster.spot:") and needle in w for w in warnings), warnings
    values["gpu-cluster:cluster"]["spot"] = False
    assert not any(w.startswith("gpu-cluster:cluster.spot:") for w in spec_of(values).warnings)


def test_a_node_group_the_cloud_does_not_build_is_refused_not_replaced_by_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # every cloud builds a managed group now (Huawei: the CCE pool, refused by its layout without Kubernetes), so a
    # cloud with instances only is the capabilities' `nodeGroups: [instances]`
    real = node_rules.capabilities
    monkeypatch.setattr(
        node_rules,
        "capabilities",
        lambda cloud: replace(real(cloud), node_groups=("instances",), node_groups_why="no group is built yet"),
    )
    values = {
        "gpu-cluster:cloud": "huaweicloud",
        "huaweicloud:region": "cn-north-4",
        "gpu-cluster:cluster": {"gpu": "T4:1"},  # nodeGroup defaults to managed
    }
    errors = errors_of(values)
    assert [e.key for e in errors] == ["gpu-cluster:cluster.nodeGroup"]
    assert "allowed: instances" in errors[0].message
    values["gpu-cluster:cluster"]["nodeGroup"] = "instances"
    assert spec_of(values).node_group == "instances"


def test_issue_26_spec_rules_report_every_problem_at_once():
    """Paths, tags, names and capacity (issue 26, defects 2-5): a config that breaks all of them hears of each, one
    line per problem naming its key, in the table's order, before any resource."""
    k = "gpu-cluster:cluster."
    aws = aws_values(
        gpu=None,
        instanceType="g6e.12xlarge",
        reservation="cr-0123456789abcdef0",
        reservationType="capacity-block",
        storage={"scratchPath": "/scratch/../etc", "shared": {"path": "/opt"}},
        tags={"team": "ml's", **{f"t{i}": "v" for i in range(49)}},
        scheduler="slurm",
        slurm={"partition": "default"},
    )
    errors = errors_of(aws)
    assert [e.key for e in errors] == [
        f"{k}storage.scratchPath",
        f"{k}storage.shared.path",
        f"{k}reservationType",
        f"{k}tags.team",
        f"{k}tags",
        f"{k}slurm.partition",
    ]
    assert len(str(ConfigErrors(errors)).splitlines()) == 6
    gcp = gcp_values(
        name="train-",
        scheduler="kubernetes",
        gpu="H100:8",
        nodes=2,
        zone="us-central1-z",
        tags={f"t{i}": "v" for i in range(70)},
        storage={"scratchPath": "/usr/local"},
    )
    assert [e.key for e in errors_of(gcp)] == [f"{k}name", f"{k}zone", f"{k}storage.scratchPath", f"{k}tags"]
