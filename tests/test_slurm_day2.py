"""Issue 28, day 2: growing or changing a Slurm cluster's GPU nodes never restarts or replaces its controller.

For every Slurm cloud, a base cluster and the same with nodes +2, maxNodes up (managed groups) and another instance
type are planned: the head's and the login node's registered inputs stay byte-identical (Azure: all but the head VM's
`userData`, which updates in place), the compute-side configuration reaches the head only through its channel (an
SSM parameter, a project metadata item, the head VM's userData, an OOS parameter), and `diff_plans` judges that an
in-place update."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from components.bootstrap.slurm_conf import compute_config_files
from components.catalog.slurm import cloud_data
from components.diff import diff_plans

from .conftest import aws_values, gcp_values, plan_json, plan_values
from .test_azure_resources import azure_values
from .test_huaweicloud_slurm import slurm_values as huawei_slurm_values
from .test_layout_alicloud import ali_values
from .test_tencentcloud_slurm import slurm_values as tencent_slurm_values

# cloud -> (base values, the channel's resource name, the input holding the text, the head's resource name)
BASES: dict[str, tuple[dict[str, Any], str, str, str]] = {
    "aws": (
        aws_values(scheduler="slurm", nodes=2, nodeGroup="managed"),
        "test-aws-slurm-compute-conf",
        "insecureValue",
        "test-aws-head",
    ),
    "gcp": (
        gcp_values(scheduler="slurm", nodes=2, nodeGroup="managed", fabric="none", placement="none"),
        "test-gcp-slurm-compute-conf",
        "value",
        "test-gcp-head",
    ),
    "azure": (azure_values(scheduler="slurm", nodeGroup="managed"), "test-azure-head", "userData", "test-azure-head"),
    "alicloud": (
        ali_values(scheduler="slurm", instanceType="ecs.gn7e-c16g1.32xlarge", nodeGroup="managed"),
        "test-alicloud-slurm-compute-conf",
        "value",
        "test-alicloud-head",
    ),
    # instances mode (Tencent builds no managed group yet): the new nodes are new instances, the head stays
    "tencentcloud": (
        tencent_slurm_values(nodes=2),
        "test-tencentcloud-slurm-compute-conf-v1",
        "secretString",
        "test-tencentcloud-head",
    ),
    # Huawei too: the configuration is a CSMS secret's text (a new version in place)
    "huaweicloud": (
        huawei_slurm_values(nodes=2),
        "test-huaweicloud-slurm-compute-conf",
        "secretText",
        "test-huaweicloud-head",
    ),
}
# another GPU type of the same cloud: what the GPU nodes are changes, the head does not
OTHER_TYPE = {
    "aws": "p4d.24xlarge",
    "gcp": "g2-standard-24",
    "azure": "Standard_ND96asr_v4",
    "alicloud": "ecs.gn7i-c32g1.32xlarge",
    "tencentcloud": "GN7.5XLARGE80",
    "huaweicloud": "pi2.3xlarge.4",
}
CHANGES = {
    "nodes+2": lambda base: {"nodes": base["nodes"] + 2},
    "maxNodes up": lambda base: {"maxNodes": base["nodes"] + 6},
    "instance type": lambda base: {"instanceType": None, "gpu": None},  # filled per cloud below
    "spot": lambda base: {"spot": True},
}


def with_cluster(values: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    cluster = {**values["gpu-cluster:cluster"], **change}
    return {**values, "gpu-cluster:cluster": {k: v for k, v in cluster.items() if v is not None}}


def changed_values(cloud: str, change: str) -> dict[str, Any]:
    base = BASES[cloud][0]
    cluster = base["gpu-cluster:cluster"]
    if change == "instance type":
        return with_cluster(base, {"gpu": None, "instanceType": OTHER_TYPE[cloud]})
    return with_cluster(base, CHANGES[change](cluster))


_PLANS: dict[tuple[str, str], dict[str, Any]] = {}


def planned(cloud: str, change: str | None) -> dict[str, Any]:
    key = (cloud, change or "base")
    if key not in _PLANS:
        values = BASES[cloud][0] if change is None else changed_values(cloud, change)
        _PLANS[key] = plan_json(plan_values(values))
    return _PLANS[key]


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in doc["resources"]}


def head_and_login(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every resource of the head and the login node (their VMs, disks, NICs, groups, rules), by name."""
    return {n: r["inputs"] for n, r in by_name(doc).items() if "-head" in n or "-login" in n}


def channel_text(cloud: str, doc: dict[str, Any]) -> str:
    _, name, key, _ = BASES[cloud]
    value = by_name(doc)[name]["inputs"][key]
    if cloud == "azure":
        return base64.b64decode(value).decode()
    return str(value)


# Tencent and Huawei run the GPU nodes as instances (no managed group yet): maxNodes does not apply, spot is a new
# instance per node on Tencent (spotMaxPrice is ForceNew, and needs maxHourlyUsd: the day-2 matrix) and refused on
# Huawei, and more nodes are more instances
INSTANCES_ONLY = {"tencentcloud", "huaweicloud"}
CELLS = [
    (cloud, change)
    for cloud in sorted(BASES)
    for change in sorted(CHANGES)
    if not (cloud in INSTANCES_ONLY and change in ("maxNodes up", "spot"))
]


@pytest.mark.parametrize(("cloud", "change"), CELLS)
def test_a_compute_side_change_leaves_the_head_and_login_alone_and_updates_the_channel_in_place(cloud, change):
    before, after = planned(cloud, None), planned(cloud, change)
    _, channel, _, head = BASES[cloud]
    old, new = head_and_login(before), head_and_login(after)
    assert old.keys() == new.keys()
    if cloud == "azure":  # the channel is the head VM's own userData: every other input stays
        for doc in (old, new):
            doc[head] = {k: v for k, v in doc[head].items() if k != "userData"}
    assert [n for n in old if old[n] != new[n]] == []
    diff = diff_plans(before, after)
    verdicts = {c.name: c.verdict for c in diff.changed}
    if change == "spot":  # nothing Slurm knows of: the channel stays as it was
        assert channel_text(cloud, before) == channel_text(cloud, after) and channel not in verdicts
    else:  # the change reached the channel: the nodes' part of slurm.conf differs
        assert channel_text(cloud, before) != channel_text(cloud, after)
        nodes_conf = compute_config_files(channel_text(cloud, after))["nodes.conf"]
        assert "MaxNodeCount=" in nodes_conf and "PartitionName=" in nodes_conf
        assert verdicts[channel] == "update"
    # nothing of the head or the login node is replaced, restarted or even updated (but the channel on Azure)
    assert [n for n in verdicts if ("-head" in n or "-login" in n) and n != channel] == []
    # instances mode: the added GPU nodes are the only new resources
    new_node = f"Instance::test-{cloud}-node-"
    added = [urn for urn in diff.created if not (cloud in INSTANCES_ONLY and new_node in urn)]
    assert added == [] and diff.deleted == []
    if cloud in INSTANCES_ONLY and change == "nodes+2":
        assert len(diff.created) == 2


@pytest.mark.parametrize("cloud", sorted(BASES))
def test_the_channel_holds_the_text_within_the_clouds_limit(cloud):
    """catalog/slurm.yaml computeConfig: SSM Standard 4 KB, a metadata value 256 KiB, userData 64 KB (base64), an OOS
    value 4096 characters with a name of 2-180 letters, digits, '-', '_' not starting with ALIYUN, ACS, ... (the
    provider's schema)."""
    doc = planned(cloud, "nodes+2" if cloud in INSTANCES_ONLY else "maxNodes up")
    _, name, key, _ = BASES[cloud]
    value = str(by_name(doc)[name]["inputs"][key])
    rule = cloud_data(cloud)["computeConfig"]
    limit = {
        "aws": "maxValueBytes",
        "gcp": "maxValueBytes",
        "azure": "maxUserDataBytes",
        "alicloud": "maxValueChars",
        "tencentcloud": "maxValueBytes",
        "huaweicloud": "maxValueBytes",
    }
    assert 0 < len(value.encode()) <= int(rule[limit[cloud]])
    if cloud == "alicloud":
        inputs = by_name(doc)[name]["inputs"]
        assert inputs["type"] == "String"
        assert re.fullmatch(r"[a-zA-Z0-9_/-]{2,180}", inputs["parameterName"])
        assert not re.match(r"ALIYUN|ACS|ALIBABA|ALICLOUD|OOS", inputs["parameterName"])
