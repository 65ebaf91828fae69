"""The in-cluster release set (`layout.kubernetes`): chosen by `when:` from data, values merged as Helm merges."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.catalog import kubernetes as offers
from components.layout import kubernetes as kube
from components.spec import build_spec

from .conftest import aws_values

RELEASES = [
    {"chart": "gpu-operator", "when": {"gpuSoftware": "operator"}, "values": {"driver": {"enabled": False}},
     "why": "GPU operator"},
    {"chart": "nvidia-device-plugin", "when": {"gpuSoftware": "device-plugin"}, "why": "plugin alone"},
    {"chart": "aws-efa-k8s-device-plugin", "when": {"fabric": "efa"}, "why": "EFA",
     "values": {"tolerations": [kube.GPU_TOLERATION]}},
    {"chart": "dcgm-exporter", "name": "dcgm", "namespace": "monitoring",
     "when": {"gpuSoftware": "device-plugin", "serviceMonitor": [True]}, "why": "metrics"},
]  # fmt: skip


@pytest.fixture
def offer(monkeypatch: pytest.MonkeyPatch) -> None:
    data = offers.KubernetesOffer(
        service="EKS", versions=("1.33",), default="1.33", read="2026-11-30", source="t",
        systemInstanceType="m7i.xlarge", systemSource="t", releases=RELEASES,
    )  # fmt: skip
    monkeypatch.setattr(offers, "offer", lambda cloud: data)


def spec(**cluster):
    return build_spec(aws_values(scheduler="kubernetes", **cluster), "test")


def test_the_operator_and_the_fabric_plugin_with_pinned_versions(offer):
    got = kube.releases(spec())
    assert [r.name for r in got] == ["gpu-operator", "aws-efa-k8s-device-plugin"]
    operator, efa = got
    charts = kube.charts()
    assert (operator.chart, operator.version, operator.repo) == (
        "gpu-operator", charts["gpu-operator"]["version"], "https://helm.ngc.nvidia.com/nvidia"
    )  # fmt: skip
    # the chart's shared values, then the cloud's on top
    assert operator.values == {"dcgmExporter": {"enabled": True}, "driver": {"enabled": False}}
    assert efa.values == {"tolerations": [kube.GPU_TOLERATION]} and efa.namespace == "kube-system"
    assert efa.source.startswith("aws/eks-charts")


def test_the_device_plugin_alone_and_a_service_monitor_when_asked(offer):
    plain = kube.releases(spec(kubernetes={"gpuSoftware": "device-plugin"}))
    assert [r.name for r in plain] == ["nvidia-device-plugin", "aws-efa-k8s-device-plugin"]
    monitored = kube.releases(spec(kubernetes={"gpuSoftware": "device-plugin", "serviceMonitor": True}))
    assert [(r.name, r.namespace) for r in monitored][-1] == ("dcgm", "monitoring")


def test_no_fabric_no_fabric_plugin(offer):
    assert [r.name for r in kube.releases(spec(fabric="none"))] == ["gpu-operator"]


def test_an_unknown_when_key_is_a_data_error():
    with pytest.raises(KeyError, match="unknown when: key 'gpus'"):
        kube._matches({"gpus": 8}, {"fabric": "efa"})


def test_no_releases_without_kubernetes():
    assert kube.releases(build_spec(aws_values(), "test")) == ()


def test_labels_name_model_count_and_fabric():
    assert kube.gpu_labels(spec_of_vm := build_spec(aws_values(), "test")) == {
        "gpu-cluster.dev/gpu": "h100",
        "gpu-cluster.dev/gpus": "8",
        "gpu-cluster.dev/fabric": "efa",
    }
    assert kube.gpu_labels(build_spec(aws_values(fabric="none"), "test"))["gpu-cluster.dev/fabric"] == "none"
    assert spec_of_vm.fabric_wired


def test_every_chart_is_pinned_and_sourced():
    for key, chart in kube.charts().items():
        assert chart["chart"] and chart["repo"].startswith("https://"), key
        assert str(chart["version"]).lstrip("v")[0].isdigit(), key
        assert chart["source"] and chart["read"], key


_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=3)
_values = st.recursive(_leaf, lambda inner: st.dictionaries(st.text(max_size=2), inner, max_size=3), max_leaves=6)
_maps = st.dictionaries(st.text(max_size=2), _values, max_size=4)


@given(_maps, _maps)
def test_merge_keeps_every_key_and_the_override_wins(base, extra):
    merged = kube.merge(base, extra)
    assert set(merged) == set(base) | set(extra)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            assert merged[key] == kube.merge(base[key], value)
        else:
            assert merged[key] == value
    for key in set(base) - set(extra):
        assert merged[key] == base[key]


@given(_maps)
def test_merge_copies(base):
    merged = kube.merge(base, {})
    assert merged == base
    merged["new"] = 1
    assert "new" not in base
