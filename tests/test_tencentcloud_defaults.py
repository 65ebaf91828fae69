"""Tencent Cloud with its defaults (issue 33): a stack with only cloud, gpu and sshPublicKey either plans a cluster
someone can log in to or is refused with one keyed line saying what to set; the way in that works."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.errors import ConfigError
from components.layout import tencentcloud as tc

from .conftest import ROOT, plan_json, plan_values, spec_of
from .test_tencentcloud_resources import nodes

KEY = next(
    line.split("sshPublicKey: ", 1)[1]
    for line in Path(ROOT / "stacks" / "Pulumi.tencentcloud-dev.yaml").read_text().splitlines()
    if "sshPublicKey: " in line
)


def defaults(**cluster: Any) -> dict[str, Any]:
    """Only what a user must set: the cloud and its region, the GPU and the key (plus `cluster`)."""
    return {
        "gpu-cluster:cloud": "tencentcloud",
        "tencentcloud:region": "ap-guangzhou",
        "gpu-cluster:cluster": {"name": "tc-defaults", "gpu": "T4:1", "sshPublicKey": KEY, **cluster},
    }


def test_defaults_without_an_address_are_refused_saying_what_to_set():
    with pytest.raises(ConfigError) as err:
        tc.plan(spec_of(defaults(nodeGroup="instances")))
    assert err.value.key == "gpu-cluster:cluster.network.sshCidrs"
    assert "set network.sshCidrs" in str(err.value) and "login: {publicIp: true}" in str(err.value)


def test_the_way_in_the_refusal_names_plans_a_reachable_login_node():
    plan = plan_values(
        defaults(nodeGroup="instances", network={"sshCidrs": ["203.0.113.0/24"]}, login={"publicIp": True})
    )
    resources = plan.as_json()["resources"]
    login = next(r for r in resources if r["type"].endswith("Instance/instance:Instance") and "-login" in r["name"])
    assert login["inputs"]["allocatePublicIp"] is True
    rules = next(r for r in resources if r["name"].endswith("-login-sg-rules"))
    assert [(i["cidrBlock"], i["port"]) for i in rules["inputs"]["ingresses"] if i.get("cidrBlock")] == [
        ("203.0.113.0/24", "22")
    ]
    (node,) = nodes(plan)
    assert node["inputs"].get("allocatePublicIp") in (None, False)
    doc = plan_json(plan)
    assert doc["outputs"]["access"]["command"].startswith("ssh -i <private key> ubuntu@<public ip of")
    assert doc["outputs"]["gpuDriver"].startswith("NVIDIA 580-server")


@pytest.mark.parametrize(
    "cluster",
    [
        {"access": "none"},  # no way in asked for
        {"sshPublicKey": None},  # no key: the spec warns that nobody can log in
        {"network": {"sshCidrs": ["10.0.0.0/8"]}},  # a private path (VPN, peering): warned, not refused
    ],
)
def test_what_is_not_refused(cluster):
    values = defaults(nodeGroup="instances", **cluster)
    if cluster.get("sshPublicKey", KEY) is None:
        del values["gpu-cluster:cluster"]["sshPublicKey"]
    assert tc.plan(spec_of(values)).spec.cloud == "tencentcloud"
