"""The in-cluster release set (`layout.kubernetes`): chosen by `when:` from data, values merged as Helm merges."""

from __future__ import annotations

from dataclasses import replace

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


MANIFESTS = [
    {"when": {"fabricWired": True}, "after": "gpu-operator", "why": " a  policy ",
     "manifest": {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                  "metadata": {"name": "nic-cluster-policy", "namespace": "network-operator"},
                  "spec": {"ofedDriver": {"version": "1"}}}},
    {"when": {"fabric": "none"}, "why": "only without a fabric",
     "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}}},
]  # fmt: skip


@pytest.fixture
def offer(monkeypatch: pytest.MonkeyPatch) -> None:
    data = offers.KubernetesOffer(
        service="EKS", versions=("1.33",), default="1.33", read="2026-11-30", source="t",
        systemInstanceType="m7i.xlarge", systemSource="t", releases=RELEASES, manifests=MANIFESTS,
    )  # fmt: skip
    monkeypatch.setattr(offers, "offer", lambda cloud: data if cloud == "aws" else None)


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
        # an HTTPS chart repository, or an OCI chart that is its own reference (no repository)
        assert chart["chart"] and (chart["repo"].startswith("https://") or chart["chart"].startswith("oci://")), key
        assert not (chart["repo"] and chart["chart"].startswith("oci://")), key
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


def test_manifests_are_chosen_by_when_and_carry_their_order_and_reason(offer):
    wired = kube.manifests(spec())
    assert wired == (
        kube.Manifest(
            api_version="mellanox.com/v1alpha1", kind="NicClusterPolicy", name="nic-cluster-policy",
            namespace="network-operator", spec={"ofedDriver": {"version": "1"}}, after="gpu-operator", why="a policy",
        ),
    )  # fmt: skip
    plain = kube.manifests(spec(fabric="none"))
    assert [(m.kind, m.name, m.namespace, m.spec, m.after) for m in plain] == [("ConfigMap", "plain", None, {}, None)]
    assert kube.releases(spec())[0].why == "GPU operator"


def test_a_cloud_without_data_installs_nothing(offer):
    gcp = build_spec(
        {"gpu-cluster:cloud": "gcp", "gcp:project": "p", "gcp:region": "us-central1",
         "gpu-cluster:cluster": {"instanceType": "g2-standard-4", "zone": "us-central1-a"}}, "test",
    )  # fmt: skip
    assert kube.releases(gcp) == () and kube.manifests(gcp) == ()


def test_a_scalar_when_is_one_value_not_a_substring():
    assert kube._matches({"gpuSoftware": "operator"}, {"gpuSoftware": "operator"})
    assert not kube._matches({"gpuSoftware": "operator"}, {"gpuSoftware": "opera"})
    assert kube._matches({"fabric": ["efa", "infiniband"]}, {"fabric": "infiniband"})


def test_an_unknown_when_key_names_the_known_ones():
    with pytest.raises(KeyError) as info:
        kube._matches({"gpus": 8}, {"fabric": "efa", "fabricWired": True})
    assert info.value.args[0] == "releases: unknown when: key 'gpus'; known: fabric, fabricWired"


def test_the_facts_a_when_may_test(offer):
    wired = kube._facts(spec())
    assert wired == {
        "gpuSoftware": "operator",
        "fabric": "efa",
        "fabricWired": True,
        "serviceMonitor": False,
        "autoscaling": False,
        "prometheus": "none",  # the fixture's offer installs no kube-prometheus-stack: auto resolves to none
    }
    assert kube._facts(spec(fabric="none"))["fabric"] == "none"


@pytest.mark.parametrize(
    ("sizes", "moves"),
    [
        ({"nodes": 2}, False),
        ({"nodes": 2, "maxNodes": 2, "minNodes": 2}, False),
        ({"nodes": 2, "maxNodes": 4}, True),  # may grow
        ({"nodes": 2, "minNodes": 0}, True),  # may shrink (to zero)
    ],
)
def test_the_pool_autoscales_when_it_may_grow_or_shrink(offer, sizes, moves):
    assert kube._facts(spec(**sizes))["autoscaling"] is moves


def test_a_type_without_a_named_gpu_is_labelled_gpu():
    row = build_spec(aws_values(), "test").instance.model_copy(update={"gpu": None})
    labels = kube.gpu_labels(replace(build_spec(aws_values(), "test"), instance=row))
    assert labels["gpu-cluster.dev/gpu"] == "gpu"


def test_merge_copies_nested_values():
    base = {"a": {"b": {"c": 1}}, "l": [1]}
    extra = {"a": {"d": [2]}, "n": {"m": 1}}
    merged = kube.merge(base, extra)
    merged["a"]["b"]["c"] = 9
    merged["a"]["d"].append(3)
    merged["n"]["m"] = 2
    merged["l"].append(2)
    assert base == {"a": {"b": {"c": 1}}, "l": [1]} and extra == {"a": {"d": [2]}, "n": {"m": 1}}


def test_merge_and_manifests_copy_deeply(offer):
    extra = {"x": [[1]], "y": {"z": [1]}}
    merged = kube.merge({}, extra)
    merged["x"][0].append(2)
    merged["y"]["z"].append(2)
    assert extra == {"x": [[1]], "y": {"z": [1]}}
    first = kube.manifests(spec())[0]
    first.spec["ofedDriver"]["version"] = "changed"  # type: ignore[index]
    assert kube.manifests(spec())[0].spec == {"ofedDriver": {"version": "1"}}
