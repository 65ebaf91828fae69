"""`scheduler` and its blocks: what each cloud offers (capabilities + catalog/kubernetes data), resolved defaults,
and every problem reported at once with its key."""

from __future__ import annotations

from dataclasses import replace

import pytest

from components.catalog import kubernetes as offers
from components.errors import ConfigErrors
from components.spec import build_spec
from components.spec.rules import scheduler as scheduler_rules

from .conftest import aws_values
from .test_tencentcloud_resources import tencent_values

OFFER = offers.KubernetesOffer(
    service="EKS",
    versions=("1.32", "1.33"),
    default="1.33",
    read="2026-11-30",
    source="test",
    systemInstanceType="m7i.xlarge",
    systemSource="test",
)


@pytest.fixture
def eks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed offer: these tests pin the rules, not the shipped version list."""
    monkeypatch.setattr(offers, "offer", lambda cloud: OFFER if cloud == "aws" else None)


def errors_of(values: dict) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(values, "test")
    return [(e.key, e.message) for e in info.value.errors]


def test_no_scheduler_is_todays_cluster():
    spec = build_spec(aws_values(), "test")
    assert (spec.scheduler, spec.kubernetes, spec.slurm, spec.login) == ("none", None, None, None)


def test_kubernetes_defaults_come_from_the_data(eks):
    spec = build_spec(aws_values(scheduler="kubernetes"), "test")
    assert spec.kubernetes is not None
    assert (spec.kubernetes.version, spec.kubernetes.system_instance_type) == ("1.33", "m7i.xlarge")
    assert (spec.kubernetes.public_endpoint, spec.kubernetes.public_cidrs) == (False, ())
    assert (spec.kubernetes.gpu_software, spec.kubernetes.system_nodes) == ("operator", 2)


def test_kubernetes_options_are_kept(eks):
    kube = {"version": "1.32", "publicEndpoint": True, "publicCidrs": ["203.0.113.7/32", "198.51.100.0/24"],
            "gpuSoftware": "device-plugin", "systemInstanceType": "m7i.2xlarge", "systemNodes": 3}  # fmt: skip
    spec = build_spec(aws_values(scheduler="kubernetes", kubernetes=kube), "test")
    assert spec.kubernetes is not None
    assert spec.kubernetes.version == "1.32"
    assert spec.kubernetes.public_cidrs == ("198.51.100.0/24", "203.0.113.7/32")  # sorted, normalised
    assert (spec.kubernetes.gpu_software, spec.kubernetes.system_instance_type) == ("device-plugin", "m7i.2xlarge")


def test_every_kubernetes_problem_is_reported_at_once(eks):
    kube = {"version": "1.20", "publicEndpoint": True, "systemInstanceType": "p5.48xlarge"}
    got = errors_of(aws_values(scheduler="kubernetes", nodeGroup="instances", kubernetes=kube))
    keys = [key for key, _ in got]
    assert keys == [
        "gpu-cluster:cluster.nodeGroup",
        "gpu-cluster:cluster.kubernetes.version",
        "gpu-cluster:cluster.kubernetes.publicCidrs",
        "gpu-cluster:cluster.kubernetes.systemInstanceType",
    ]
    messages = dict(got)
    assert "EKS offers 1.32, 1.33 (read 2026-11-30: test)" in messages["gpu-cluster:cluster.kubernetes.version"]
    assert "use managed" in messages["gpu-cluster:cluster.nodeGroup"]
    assert "such as m7i.xlarge" in messages["gpu-cluster:cluster.kubernetes.systemInstanceType"]


@pytest.mark.parametrize(
    ("kube", "message"),
    [
        ({"publicCidrs": ["203.0.113.0/24"]}, "publicEndpoint is false"),
        ({"publicEndpoint": True, "publicCidrs": ["0.0.0.0/0"]}, "0.0.0.0/0 opens the API server"),
        ({"publicEndpoint": True, "publicCidrs": ["10.0.0.0/7"]}, "opens the API server"),
    ],
)
def test_the_api_allow_list(eks, kube, message):
    got = errors_of(aws_values(scheduler="kubernetes", kubernetes=kube))
    assert [key for key, _ in got] == ["gpu-cluster:cluster.kubernetes.publicCidrs"]
    assert message in got[0][1]


def test_a_narrow_allow_list_is_accepted(eks):
    spec = build_spec(
        aws_values(scheduler="kubernetes", kubernetes={"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]}),
        "test",
    )
    assert spec.kubernetes is not None and spec.kubernetes.public_endpoint


def test_a_cloud_without_kubernetes_data_says_so(monkeypatch):
    monkeypatch.setattr(offers, "offer", lambda cloud: None)
    got = errors_of(aws_values(scheduler="kubernetes"))
    assert got == [("gpu-cluster:cluster.scheduler", "kubernetes has no catalog/kubernetes/aws.yaml")]


def test_slurm_gets_a_login_node_and_the_default_head_type():
    spec = build_spec(aws_values(scheduler="slurm"), "test")
    assert spec.slurm is not None and spec.login is not None
    assert spec.slurm.head_instance_type == "m7i.large"  # the capabilities' loginDefaultType
    assert spec.login.instance_type == "m7i.large" and not spec.login.public_ip
    assert (spec.slurm.partition, spec.slurm.accounting) == ("gpu", False)


def test_slurm_keeps_a_configured_login_node():
    spec = build_spec(
        aws_values(scheduler="slurm", login={"publicIp": True}, network={"sshCidrs": ["203.0.113.0/24"]}), "test"
    )
    assert spec.login is not None and spec.login.public_ip


def test_slurm_problems_at_once():
    got = errors_of(
        aws_values(scheduler="slurm", nodes=0, maxNodes=4, slurm={"headInstanceType": "p4d.24xlarge"}, kubernetes={})
    )
    assert [key for key, _ in got] == [
        "gpu-cluster:cluster.kubernetes",
        "gpu-cluster:cluster.nodes",
        "gpu-cluster:cluster.slurm.headInstanceType",
    ]


def test_a_slurm_block_without_the_scheduler():
    got = errors_of(aws_values(slurm={"partition": "train"}))
    assert got == [("gpu-cluster:cluster.slurm", "options for scheduler slurm, but scheduler is none")]


def test_a_cloud_that_does_not_build_a_scheduler_names_what_it_builds(monkeypatch):
    # Tencent builds TKE (and may build Slurm): a cloud with neither is the capabilities' `schedulers: [none]`
    real = scheduler_rules.capabilities
    monkeypatch.setattr(
        scheduler_rules,
        "capabilities",
        lambda cloud: replace(real(cloud), schedulers=("none",), schedulers_why="neither is built yet"),
    )
    values = {
        "gpu-cluster:cloud": "tencentcloud",
        "tencentcloud:region": "ap-guangzhou",
        "gpu-cluster:cluster": {"instanceType": "HCCG5v.24XLARGE384", "nodes": 2, "nodeGroup": "instances",
                                "zone": "ap-guangzhou-3", "scheduler": "kubernetes"},
    }  # fmt: skip
    got = errors_of(values)
    assert [key for key, _ in got] == ["gpu-cluster:cluster.scheduler"]
    assert got[0][1] == "kubernetes is not built on tencentcloud (neither is built yet); allowed: none"


def test_an_unquoted_version_is_explained(eks):
    got = errors_of(aws_values(scheduler="kubernetes", kubernetes={"version": 1.30}))
    assert got[0][0] == "gpu-cluster:cluster.kubernetes.version"
    assert "quote it" in got[0][1]


def test_a_scheduler_the_cloud_does_not_list_names_every_allowed_one(monkeypatch):
    # no shipped cloud lists two schedulers but not the third: the list's separator needs a cloud that does
    real = scheduler_rules.capabilities
    monkeypatch.setattr(
        scheduler_rules,
        "capabilities",
        lambda cloud: replace(real(cloud), schedulers=("none", "slurm"), schedulers_why="no EKS data yet"),
    )
    got = errors_of(aws_values(scheduler="kubernetes"))
    assert got == [
        ("gpu-cluster:cluster.scheduler", "kubernetes is not built on aws (no EKS data yet); allowed: none, slurm")
    ]


@pytest.mark.parametrize(
    ("kube", "message"),
    [
        ({"publicEndpoint": True}, "empty, but publicEndpoint is true: list the CIDRs allowed to reach the API server"),
        ({"publicCidrs": ["203.0.113.0/24"]}, "set, but publicEndpoint is false: the API stays private"),
    ],
)
def test_the_api_allow_list_messages(eks, kube, message):
    got = errors_of(aws_values(scheduler="kubernetes", kubernetes=kube))
    assert got == [("gpu-cluster:cluster.kubernetes.publicCidrs", message)]


@pytest.mark.parametrize("service_monitor", [False, True])
def test_the_service_monitor_is_resolved(eks, service_monitor):
    values = aws_values(scheduler="kubernetes", kubernetes={"serviceMonitor": service_monitor})
    spec = build_spec(values, "test")
    assert spec.kubernetes is not None and spec.kubernetes.service_monitor is service_monitor


def test_accounting_is_built_on_the_four_slurm_clouds_and_refused_with_the_data_s_reason_elsewhere():
    from components.catalog.accounting import refusal

    from .conftest import gcp_values
    from .test_alicloud_resources import alicloud_values
    from .test_azure_resources import azure_values

    # AWS, GCP, Azure and Alibaba build it (catalog/accounting.yaml has no notBuilt for them)
    for cloud, values in (
        ("aws", aws_values),
        ("gcp", gcp_values),
        ("azure", azure_values),
        ("alicloud", alicloud_values),
    ):
        assert refusal(cloud) is None
        spec = build_spec(values(scheduler="slurm", slurm={"accounting": True}), "test")
        assert spec.slurm is not None and spec.slurm.accounting
    # Tencent builds Slurm but no database for slurmdbd, and the data says so
    reason = refusal("tencentcloud")
    assert reason is not None and reason.startswith("no database for slurmdbd (TencentDB for MySQL)")
    got = errors_of(tencent_values(scheduler="slurm", slurm={"accounting": True}))
    assert got == [("gpu-cluster:cluster.slurm.accounting", f"true on tencentcloud, but {reason}")]


def test_every_slurm_problem_has_its_whole_message():
    got = errors_of(
        aws_values(
            scheduler="slurm", nodes=0, maxNodes=4, gpuPartition="1g.10gb", network={"egress": "none"},
            slurm={"accounting": True, "headInstanceType": "p4d.24xlarge"},
        )
    )  # fmt: skip
    assert got == [
        (
            "gpu-cluster:cluster.nodes",
            "0 with scheduler slurm: the partition would be empty (its nodes are the group's, always running); use 1 "
            "or more, or slurm.partitions for partitions that scale from zero",
        ),
        (
            "gpu-cluster:cluster.network.egress",
            "none with scheduler slurm: the head, GPU and login nodes install Slurm and MUNGE at boot from "
            "packages.microsoft.com and Ubuntu's archive (catalog/slurm.yaml); use nat",
        ),
        (
            "gpu-cluster:cluster.slurm.headInstanceType",
            "p4d.24xlarge is a GPU type; the head node is a small CPU VM such as m7i.large",
        ),
    ]


def test_a_cpu_head_type_is_kept():
    spec = build_spec(aws_values(scheduler="slurm", slurm={"headInstanceType": "m7i.xlarge"}), "test")
    assert spec.slurm is not None and spec.slurm.head_instance_type == "m7i.xlarge"
