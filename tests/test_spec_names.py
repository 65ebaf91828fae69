"""Names (issue 26, defect 4): a cluster name that would give a cloud a name it refuses, and a Slurm partition named
after slurm.conf's defaults record, are refused naming the key (catalog/names.yaml)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.catalog import names
from components.plan import load_stack
from components.spec import build_spec
from components.spec.model import NAME_PATTERN

from .conftest import ROOT, aws_values, gcp_values, plan_stack, spec_of
from .test_spec_rules import errors_of
from .test_spec_tags import alicloud_values, tencent_values

NAME = "gpu-cluster:cluster.name"


def keyed(values, stack: str = "test") -> dict[str, str]:
    with pytest.raises(Exception) as info:
        build_spec(copy.deepcopy(values), stack)
    return {e.key: e.message for e in getattr(info.value, "errors", [info.value])}


def gke(**cluster):
    return gcp_values(scheduler="kubernetes", gpu="H100:8", nodes=2, **cluster)


def test_a_gke_cluster_name_ending_with_a_hyphen_is_refused():
    message = keyed(gke(name="train-"))[NAME]
    assert "the GKE cluster's name would be 'train-'" in message and "ending with a letter or digit" in message


def test_the_stack_name_is_judged_when_the_name_is_unset():
    message = keyed(gke(), stack="train-")[NAME]
    assert message.startswith("not set, so the stack name 'train-'")


def test_a_name_that_breaks_nothing_on_the_cloud_is_kept():
    # GCP VM mode: every name derived from it carries a suffix (`train--node`), which GCP takes
    assert spec_of(gcp_values(name="train-")).name == "train-"
    assert spec_of(gke(name="train-2")).name == "train-2"
    assert spec_of(aws_values(name="train-")).name == "train-"


@pytest.mark.parametrize("name", ["corpus-", "a--b"])
def test_alicloud_and_tencent_host_names_take_no_double_or_trailing_hyphen(name):
    node = f"host name (nodeGroup instances) would be '{name}-node-0'"
    assert node in keyed(alicloud_values(name=name, nodeGroup="instances"))[NAME]
    assert f"a node's host name would be '{name}-node-0'" in keyed(tencent_values(name=name))[NAME]
    # an Alibaba managed group without a login node sets no host name from the cluster name
    assert spec_of(alicloud_values(name=name)).name == name
    assert "login node's host name" in keyed(alicloud_values(name=name, login={}))[NAME]


def test_slurm_partition_default_is_refused():
    message = keyed(aws_values(scheduler="slurm", slurm={"partition": "default"}))[
        "gpu-cluster:cluster.slurm.partition"
    ]
    assert "PartitionName=DEFAULT is slurm.conf's defaults record" in message
    assert spec_of(aws_values(scheduler="slurm", slurm={"partition": "defaults"})).slurm.partition == "defaults"


@pytest.mark.parametrize(("word", "reserved"), [("DEFAULT", "DEFAULT"), ("Default", "DEFAULT"), ("gpu", None)])
def test_reserved_partition_words_compare_without_case(word, reserved):
    assert names.reserved_partition(word) == reserved


@given(st.from_regex(NAME_PATTERN.strip("^$"), fullmatch=True))
def test_no_node_name_derived_from_a_valid_cluster_name_is_a_slurm_reserved_word(name):
    reserved = {w.upper() for w in names.slurm_reserved("node")}
    for cloud in ("alicloud", "tencentcloud"):
        for entry in names.derived(cloud):
            assert entry.render(name, 0).upper() not in reserved


# Which shipped stack builds each derived name (its `when` holds there).
WHERE = {
    ("gcp", "{name}"): "gcp-gke-a3mega",
    ("alicloud", "{name}-node-{index}"): "alicloud-erdma",
    ("alicloud", "{name}-login"): "alicloud-a100-cmk",
    ("alicloud", "{name}-head"): "alicloud-a100-cmk",
    ("tencentcloud", "{name}-node-{index}"): "tencentcloud-hcc",
    ("tencentcloud", "{name}-login"): "tencentcloud-hcc",
}


@pytest.mark.parametrize(("cloud", "template"), sorted(WHERE))
def test_every_derived_name_in_the_data_is_one_the_plan_registers(cloud, template):
    """names.yaml describes names the code really builds: each, rendered with the stack's cluster name, is an input
    of a registered resource."""
    stack = WHERE[(cloud, template)]
    (entry,) = [e for e in names.derived(cloud) if e.template == template]
    cluster = load_stack(ROOT, stack).values["gpu-cluster:cluster"]
    name = cluster.get("name") or stack
    plan = plan_stack(stack)
    registered = {v for r in plan.resources for v in r.inputs.values() if isinstance(v, str)}
    assert entry.render(name, 0) in registered, sorted(registered)[:40]


def test_every_cloud_with_derived_names_has_sources():
    for cloud in ("gcp", "alicloud", "tencentcloud"):
        assert names.derived(cloud)
        assert all(len(e.source) > 60 and e.rule for e in names.derived(cloud))
    assert "read_config.c" in names.slurm_source()


def test_errors_are_one_per_problem_with_the_key():
    errors = errors_of(gke(name="train-"))
    assert [e.key for e in errors] == [NAME]
