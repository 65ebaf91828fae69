"""What a Kubernetes GPU cluster runs in-cluster, and how its GPU nodes are marked: pure, no Pulumi.

Every cloud's node pool carries the same taint and labels, so one set of tolerations and node
selectors fits all clouds. The Helm releases come from data: the charts and their pinned versions
in `catalog/kubernetes/charts.yaml`, the cloud's choice of them (and its values) in `releases:` of
`catalog/kubernetes/<cloud>.yaml`, each entry kept when its `when:` matches the spec.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from .. import catalog
from ..catalog import kubernetes as offers
from ..catalog import monitoring as monitoring_data
from ..datafile import load_yaml
from ..spec import ClusterSpec
from ..text import one_line
from .kubernetes_monitoring import stack_values

CHARTS = Path(offers.__file__).parent / "charts.yaml"
# GPU nodes repel everything that does not tolerate this: system pods stay on the system pool.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
LABEL_PREFIX = "gpu-cluster.dev"


@dataclass(frozen=True)
class Release:
    """One Helm release (`helm.v3.Release`): chart, pinned version, values; `why` says what it is for."""

    name: str
    chart: str
    repo: str
    version: str
    namespace: str
    values: Mapping[str, Any]
    why: str
    source: str

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "chart": self.chart, "version": self.version, "repo": self.repo, "why": self.why}


@cache
def charts() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = load_yaml(CHARTS)["charts"]
    return data


def gpu_labels(spec: ClusterSpec) -> dict[str, str]:
    """Labels of the GPU pool: the model and the fabric, for node selectors (values as labels allow); with GPU
    sharing, its mode and the pods per GPU, and the MIG manager's layout where it splits the GPUs."""
    row = spec.instance
    fabric = row.fabric if spec.fabric_wired else "none"
    labels = {
        f"{LABEL_PREFIX}/gpu": (row.gpu or "gpu").lower(),
        f"{LABEL_PREFIX}/gpus": str(row.gpus),
        f"{LABEL_PREFIX}/fabric": fabric,
    }
    sharing = gpu_sharing(spec)
    if sharing is not None:
        labels[f"{LABEL_PREFIX}/gpu-sharing"] = sharing.mode
        labels[f"{LABEL_PREFIX}/pods-per-gpu"] = str(sharing.per_gpu)
        if sharing.mechanism == "migManager":
            labels.update(sharing.mig_manager_label)
    return labels


# --- GPU sharing (kubernetes.gpuSharing; catalog/kubernetes/sharing.yaml) --------------------------------------------
# The device plugin's config: NVIDIA/k8s-device-plugin api/config/v1 (version v1; sharing.timeSlicing / sharing.mps,
# each {resources: [{name, replicas}]}), one named entry of the ConfigMap the chart renders from its values.
PLUGIN_CONFIG_MAP = "gpu-cluster-device-plugin"
PLUGIN_CONFIG = "gpu-cluster"
# The operator's MIG manager splits a node's GPUs by the layout this label names; its default ConfigMap has one
# all-<profile> layout per profile (gpu-operator v26.7.0 assets/state-mig-manager/0400_configmap.yaml).
MIG_CONFIG_LABEL = "nvidia.com/mig.config"


@dataclass(frozen=True)
class GpuSharing:
    """How pods share the GPU pool's GPUs, and the cloud's mechanism for it (sharing.yaml)."""

    mode: Literal["timeSlicing", "mps", "mig"]
    mechanism: Literal["nodePool", "devicePlugin", "migManager", "nodeLabel"]
    per_gpu: int  # pods per GPU: replicas, or the MIG profile's instances per GPU
    gpus: int  # GPUs per node
    mig_profile: str | None = None
    node_pool: Mapping[str, Any] | None = None  # the cloud's own pool setting (sharing.yaml: strategy, profiles)

    @property
    def per_node(self) -> int:
        """The workloads one node runs at once, each on a share of a GPU."""
        return self.per_gpu * self.gpus

    @property
    def mig_manager_label(self) -> dict[str, str]:
        return {MIG_CONFIG_LABEL: f"all-{self.mig_profile}"}

    def plugin_config(self) -> str:
        """The device plugin's config document (timeSlicing / mps): each GPU advertised per_gpu times."""
        resources = [{"name": "nvidia.com/gpu", "replicas": self.per_gpu}]
        body = {"version": "v1", "sharing": {self.mode: {"resources": resources}}}  # the plugin's keys are our modes
        return yaml.safe_dump(body, sort_keys=False)

    def chart_values(self, chart: str) -> dict[str, Any]:
        """What the NVIDIA chart (gpu-operator, nvidia-device-plugin) takes for this sharing, {} for other charts."""
        if self.mechanism == "devicePlugin":
            if chart == "gpu-operator":  # values.yaml devicePlugin.config: create, name, default, data
                config = {"create": True, "name": PLUGIN_CONFIG_MAP, "default": PLUGIN_CONFIG}
                return {"devicePlugin": {"config": {**config, "data": {PLUGIN_CONFIG: self.plugin_config()}}}}
            if chart == "nvidia-device-plugin":  # values.yaml config.map / config.default
                return {"config": {"map": {PLUGIN_CONFIG: self.plugin_config()}, "default": PLUGIN_CONFIG}}
            return {}
        if self.mode != "mig":
            return {}
        # One profile on every GPU: strategy single advertises each instance as nvidia.com/gpu (values.yaml mig)
        if chart == "gpu-operator":
            if self.mechanism == "migManager":
                return {"mig": {"strategy": "single"}, "migManager": {"enabled": True}}
            # the cloud splits the GPUs (AKS gpuInstanceProfile): the MIG manager, whose default layout is
            # all-disabled (values.yaml migManager.config.default), must not split them again
            return {"mig": {"strategy": "single"}, "migManager": {"enabled": False}}
        if chart == "nvidia-device-plugin":
            return {"migStrategy": "single"}
        return {}


def gpu_sharing(spec: ClusterSpec) -> GpuSharing | None:
    """kubernetes.gpuSharing resolved against the cloud's mechanism; None when pods take whole GPUs."""
    kube = spec.kubernetes
    wanted = kube.gpu_sharing if kube is not None else None
    if wanted is None or wanted.mode == "none":
        return None
    mode = offers.sharing(spec.cloud)[wanted.mode]  # the spec's rules refused what the cloud does not build
    if wanted.mode == "mig":
        assert wanted.mig_profile is not None
        per_gpu = (catalog.mig_profiles(spec.instance) or {})[wanted.mig_profile]
    else:
        assert wanted.replicas is not None
        per_gpu = wanted.replicas
    return GpuSharing(
        mode=wanted.mode,  # narrowed: not none
        mechanism=mode["mechanism"],
        per_gpu=per_gpu,
        gpus=spec.instance.gpus,
        mig_profile=wanted.mig_profile,
        node_pool=mode if mode["mechanism"] in ("nodePool", "nodeLabel") else None,
    )


def _facts(spec: ClusterSpec) -> dict[str, Any]:
    """What a `when:` may test."""
    assert spec.kubernetes is not None
    return {
        "gpuSoftware": spec.kubernetes.gpu_software,
        "fabric": spec.instance.fabric if spec.fabric_wired else "none",
        "fabricWired": spec.fabric_wired,
        "serviceMonitor": spec.kubernetes.service_monitor,
        "autoscaling": autoscaled(spec),
        "prometheus": spec.prometheus,
    }


def autoscaled(spec: ClusterSpec) -> bool:
    """Whether the GPU pool moves by itself: it may grow (maxNodes > nodes) or shrink (minNodes < nodes)."""
    return spec.max_nodes > spec.nodes or spec.min_nodes < spec.nodes


def _matches(when: Mapping[str, Any], facts: Mapping[str, Any]) -> bool:
    """Every key must match; a list means any of its values."""
    for key, wanted in when.items():
        if key not in facts:
            raise KeyError(f"releases: unknown when: key {key!r}; known: {', '.join(facts)}")
        options = wanted if isinstance(wanted, list) else [wanted]
        if facts[key] not in options:
            return False
    return True


def merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's own rule for values: mappings merge key by key, anything else is replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _selected(spec: ClusterSpec, key: str) -> list[dict[str, Any]]:
    """The entries of the cloud's `releases:` / `manifests:` whose `when:` matches the spec, in the data's order."""
    offer = offers.offer(spec.cloud)
    if offer is None or spec.kubernetes is None:
        return []
    facts = _facts(spec)
    return [entry for entry in offer.extra.get(key) or [] if _matches(entry.get("when") or {}, facts)]


def releases(spec: ClusterSpec) -> tuple[Release, ...]:
    """The cloud's releases for the spec, each chart's shared values under the cloud's own."""
    out = []
    sharing = gpu_sharing(spec)
    for entry in _selected(spec, "releases"):
        chart = charts()[entry["chart"]]
        values = merge(chart.get("values") or {}, entry.get("values") or {})
        if sharing is not None:
            values = merge(values, sharing.chart_values(entry["chart"]))
        if entry["chart"] == monitoring_data.kubernetes_chart():
            values = merge(values, stack_values(spec))
        out.append(
            Release(
                name=entry.get("name", entry["chart"]),
                chart=chart["chart"],
                repo=chart["repo"],
                version=str(chart["version"]),
                namespace=entry.get("namespace", chart["namespace"]),
                values=values,
                why=one_line(entry["why"]),
                source=one_line(chart["source"]),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Manifest:
    """One custom resource of the cloud's `manifests:` (e.g. the Network Operator's NicClusterPolicy), applied
    through the cluster's provider once the release named `after` (whose chart brings its CRD) is installed."""

    api_version: str
    kind: str
    name: str
    namespace: str | None
    spec: Mapping[str, Any]
    after: str | None
    why: str


def manifests(spec: ClusterSpec) -> tuple[Manifest, ...]:
    """The cloud's custom resources for the spec."""
    out = []
    for entry in _selected(spec, "manifests"):
        body = entry["manifest"]
        meta = body.get("metadata") or {}
        out.append(
            Manifest(
                api_version=body["apiVersion"],
                kind=body["kind"],
                name=meta["name"],
                namespace=meta.get("namespace"),
                spec=copy.deepcopy(body.get("spec") or {}),
                after=entry.get("after"),
                why=one_line(entry["why"]),
            )
        )
    return tuple(out)
