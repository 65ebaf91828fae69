"""`encryption` and `compliance` in the spec: key id forms per cloud (capabilities data), SM4 only on Alibaba."""

from __future__ import annotations

import pytest

from components.catalog.capabilities import capability_data
from components.errors import ConfigErrors
from components.spec import build_spec

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


def _tencent(**encryption):
    return {"gpu-cluster:cloud": "tencentcloud", "tencentcloud:region": "ap-guangzhou",
            "gpu-cluster:cluster": {"instanceType": "HCCG5v.24XLARGE384", "nodes": 2, "nodeGroup": "instances",
                                    "zone": "ap-guangzhou-3", "encryption": encryption}}  # fmt: skip


def test_tencent_takes_auto_and_a_kms_key_id_and_refuses_another_form():
    # Tencent KMS key ids are UUIDs like Alibaba's (so it is not in KEYS' cross-cloud refusals)
    assert build_spec(_tencent(key="auto"), "t").encryption_key == "auto"
    given = "23e80852-1e38-11e9-b129-5cb9019b4b01"
    assert build_spec(_tencent(key=given), "t").encryption_key == given
    hint = capability_data("tencentcloud")["encryption"]["keyHint"]
    [(key, message)] = errors_of(_tencent(key=KEYS["aws"]))
    assert key == "gpu-cluster:cluster.encryption.key" and message.endswith(f"; allowed: provider, auto or {hint}")
    assert errors_of(_tencent(key="auto", algorithm="sm4")) == [
        ("gpu-cluster:cluster.encryption.algorithm", "sm4 is an Alibaba Cloud KMS key spec; tencentcloud has none")
    ]


def test_an_unknown_profile_names_the_allowed_ones():
    got = errors_of(aws_values(compliance="pci-dss"))
    assert got[0][0] == "gpu-cluster:cluster.compliance" and "'none', 'cis' or 'mlps3'" in got[0][1]


def test_a_key_of_no_known_form_is_quoted_in_the_message():
    got = errors_of(values("aws", encryption={"key": "my-key"}))
    hint = capability_data("aws")["encryption"]["keyHint"]
    assert got == [("gpu-cluster:cluster.encryption.key", f"got 'my-key'; allowed: provider, auto or {hint}")]


KST = "kst-bjj62f5ba3dnpb6v81234"  # the documented form (KMS GetKmsInstance example, last four unmasked)
SM4 = capability_data("alicloud")["encryption"]["sm4"]
ENC = "gpu-cluster:cluster.encryption"


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_sm4_with_key_auto_in_a_kms_instance_is_accepted():
    spec = build_spec(values("alicloud", encryption={"key": "auto", "algorithm": "sm4", "kmsInstance": KST},
                             storage={"scratch": "none"}), "test")  # fmt: skip
    assert (spec.encryption_key, spec.encryption_algorithm, spec.encryption_kms_instance) == ("auto", "sm4", KST)


def test_sm4_needs_a_key_the_stack_creates_in_a_kms_instance():
    got = errors_of(
        values("alicloud", encryption={"key": KEYS["alicloud"], "algorithm": "sm4"}, storage={"scratch": "none"})
    )
    assert got == [(f"{ENC}.algorithm", "sm4 applies to the key the stack creates: set key: auto")]
    got = errors_of(values("alicloud", encryption={"key": "auto", "algorithm": "sm4"}, storage={"scratch": "none"}))
    assert got == [
        (
            f"{ENC}.kmsInstance",
            f"sm4 keys live in a KMS instance: set kmsInstance to {SM4['instanceHint']} (a KMS default key is "
            "Aliyun_AES_256 only)",
        )
    ]


def test_a_kms_instance_is_an_existing_one_of_the_documented_form():
    got = errors_of(values("alicloud", encryption={"key": "auto", "kmsInstance": "create"}))
    assert got == [(f"{ENC}.kmsInstance", one_line(SM4["createRefusal"]))]
    got = errors_of(values("alicloud", encryption={"key": "auto", "kmsInstance": "kms-1"}))
    assert got == [(f"{ENC}.kmsInstance", f"got 'kms-1'; allowed: {SM4['instanceHint']}")]
    got = errors_of(values("alicloud", encryption={"key": KEYS["alicloud"], "kmsInstance": KST}))
    assert got == [(f"{ENC}.kmsInstance", "the stack creates its key in the KMS instance: set encryption.key: auto")]
    got = errors_of(values("aws", encryption={"key": "auto", "kmsInstance": KST}))
    assert got == [(f"{ENC}.kmsInstance", "KMS instances are Alibaba Cloud's; aws has none")]


def test_sm4_is_refused_where_pulumi_alicloud_sets_no_sm4_cipher():
    sm4 = {"key": "auto", "algorithm": "sm4", "kmsInstance": KST}
    got = errors_of(values("alicloud", encryption=sm4))
    assert got == [
        ("gpu-cluster:cluster.storage.scratch", f"sm4 has no scratch disk: {one_line(SM4['noPath']['scratchDisk'])}")
    ]
    got = errors_of(values("alicloud", encryption=sm4, storage={"scratch": "none"}, scheduler="kubernetes"))
    want = (f"{ENC}.algorithm", f"sm4 is not built with scheduler kubernetes: {one_line(SM4['noPath']['kubernetes'])}")
    assert want in got
