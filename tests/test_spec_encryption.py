"""`encryption` and `compliance` in the spec: key id forms per cloud (capabilities data), SM4 only on Alibaba."""

from __future__ import annotations

import pytest

from components.catalog.capabilities import capability_data
from components.errors import ConfigErrors
from components.spec import build_spec
from components.spec.rules import encryption as encryption_rules

from .conftest import aws_values

KEYS = {
    "aws": "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "gcp": "projects/ml-project/locations/us-central1/keyRings/gpu/cryptoKeys/disks",
    "azure": "https://my-vault.vault.azure.net/keys/gpu-disks/0123456789abcdef0123456789abcdef",
    "alicloud": "0b30658a-ed1a-4922-b8f7-a673ca9c1234",
}
BASE = {
    "aws": {"aws:region": "us-east-1", "cluster": {"gpu": "H100:8", "nodes": 2, "zone": "us-east-1a"}},
    "gcp": {"gcp:project": "ml-project", "gcp:region": "us-central1",
            "cluster": {"instanceType": "a3-megagpu-8g", "nodes": 2, "zone": "us-central1-a"}},
    "azure": {"azure-native:location": "eastus", "cluster": {"instanceType": "Standard_ND96isr_H100_v5", "nodes": 2}},
    "alicloud": {"alicloud:region": "cn-beijing",
                 "cluster": {"instanceType": "ecs.gn6i-c4g1.xlarge", "nodes": 1, "zone": "cn-beijing-h"}},
}  # fmt: skip


def values(cloud: str, **cluster):
    base = dict(BASE[cloud])
    return {"gpu-cluster:cloud": cloud, **{k: v for k, v in base.items() if k != "cluster"},
            "gpu-cluster:cluster": {**base["cluster"], **cluster}}  # fmt: skip


def errors_of(vals) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(vals, "test")
    return [(e.key, e.message) for e in info.value.errors]


def test_provider_keys_are_the_default():
    spec = build_spec(aws_values(), "test")
    assert (spec.encryption_key, spec.encryption_algorithm, spec.compliance) == ("provider", "aes256", "none")


@pytest.mark.parametrize("cloud", sorted(KEYS))
def test_each_cloud_takes_auto_and_its_own_key_form(cloud):
    assert build_spec(values(cloud, encryption={"key": "auto"}), "t").encryption_key == "auto"
    assert build_spec(values(cloud, encryption={"key": KEYS[cloud]}), "t").encryption_key == KEYS[cloud]


@pytest.mark.parametrize("cloud", sorted(KEYS))
@pytest.mark.parametrize("other", sorted(KEYS))
def test_another_clouds_key_form_is_refused_with_the_form_wanted(cloud, other):
    if cloud == other:
        return
    got = errors_of(values(cloud, encryption={"key": KEYS[other]}))
    assert [k for k, _ in got] == ["gpu-cluster:cluster.encryption.key"]
    assert capability_data(cloud)["encryption"]["keyHint"] in got[0][1]


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_sm4_is_alibabas(cloud):
    got = errors_of(values(cloud, encryption={"key": "auto", "algorithm": "sm4"}))
    assert got == [
        ("gpu-cluster:cluster.encryption.algorithm", f"sm4 is an Alibaba Cloud KMS key spec; {cloud} has none")
    ]


def test_sm4_needs_a_key_the_stack_creates():
    data = capability_data("alicloud")["encryption"]
    if "sm4Regions" not in data:
        pytest.skip("no sourced SM4 regions yet")
    got = errors_of(values("alicloud", encryption={"key": KEYS["alicloud"], "algorithm": "sm4"}))
    assert got == [
        ("gpu-cluster:cluster.encryption.algorithm", "sm4 applies to the key the stack creates: set key: auto")
    ]


def test_tencent_keeps_provider_keys():
    vals = {"gpu-cluster:cloud": "tencentcloud", "tencentcloud:region": "ap-guangzhou",
            "gpu-cluster:cluster": {"instanceType": "HCCG5v.24XLARGE384", "nodes": 2, "nodeGroup": "instances",
                                    "zone": "ap-guangzhou-3", "encryption": {"key": "auto"}}}  # fmt: skip
    assert errors_of(vals) == [
        ("gpu-cluster:cluster.encryption.key", "customer-managed keys are not built on tencentcloud; allowed: provider")
    ]


def test_an_unknown_profile_names_the_allowed_ones():
    got = errors_of(aws_values(compliance="pci-dss"))
    assert got[0][0] == "gpu-cluster:cluster.compliance" and "'none', 'cis' or 'mlps3'" in got[0][1]


def test_a_key_of_no_known_form_is_quoted_in_the_message():
    got = errors_of(values("aws", encryption={"key": "my-key"}))
    hint = capability_data("aws")["encryption"]["keyHint"]
    assert got == [("gpu-cluster:cluster.encryption.key", f"got 'my-key'; allowed: provider, auto or {hint}")]


def test_sm4_is_refused_in_every_region_while_none_is_listed():
    data = capability_data("alicloud")["encryption"]
    assert data["sm4Regions"] == []  # the shipped data: no region sells SM4 default keys
    source = " ".join(data["sm4Source"].split())
    got = errors_of(values("alicloud", encryption={"key": "auto", "algorithm": "sm4"}))
    assert got == [("gpu-cluster:cluster.encryption.algorithm", f"sm4 keys are not built in any region: {source}")]


@pytest.fixture
def sm4_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Alibaba's data with two SM4 regions and no sourced note: the rule, not today's (empty) list."""
    real = encryption_rules.capability_data

    def data(cloud: str) -> dict:
        out = real(cloud)
        if cloud == "alicloud":
            enc = {k: v for k, v in out["encryption"].items() if k != "sm4Source"}
            out = {**out, "encryption": {**enc, "sm4Regions": ["cn-hangzhou", "cn-shanghai"]}}
        return out

    monkeypatch.setattr(encryption_rules, "capability_data", data)


def test_sm4_outside_the_listed_regions_names_them(sm4_regions):
    got = errors_of(values("alicloud", encryption={"key": "auto", "algorithm": "sm4"}))
    assert got == [
        (
            "gpu-cluster:cluster.encryption.algorithm",
            "sm4 keys are not built in cn-beijing (only in cn-hangzhou, cn-shanghai): ",
        )
    ]


def test_sm4_with_key_auto_in_a_listed_region_is_accepted(sm4_regions):
    vals = {**values("alicloud", encryption={"key": "auto", "algorithm": "sm4"}), "alicloud:region": "cn-hangzhou"}
    vals["gpu-cluster:cluster"] = {**vals["gpu-cluster:cluster"], "zone": "cn-hangzhou-k"}
    spec = build_spec(vals, "test")
    assert (spec.encryption_key, spec.encryption_algorithm) == ("auto", "sm4")
