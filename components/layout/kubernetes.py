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
from typing import Any

from ..catalog import kubernetes as offers
from ..datafile import load_yaml
from ..spec import ClusterSpec
from ..text import one_line

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
    """Labels of the GPU pool: the model and the fabric, for node selectors (values as labels allow)."""
    row = spec.instance
    fabric = row.fabric if spec.fabric_wired else "none"
    return {
        f"{LABEL_PREFIX}/gpu": (row.gpu or "gpu").lower(),
        f"{LABEL_PREFIX}/gpus": str(row.gpus),
        f"{LABEL_PREFIX}/fabric": fabric,
    }


def _facts(spec: ClusterSpec) -> dict[str, Any]:
    """What a `when:` may test."""
    assert spec.kubernetes is not None
    return {
        "gpuSoftware": spec.kubernetes.gpu_software,
        "fabric": spec.instance.fabric if spec.fabric_wired else "none",
        "fabricWired": spec.fabric_wired,
        "serviceMonitor": spec.kubernetes.service_monitor,
        "autoscaling": autoscaled(spec),
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
    for entry in _selected(spec, "releases"):
        chart = charts()[entry["chart"]]
        out.append(
            Release(
                name=entry.get("name", entry["chart"]),
                chart=chart["chart"],
                repo=chart["repo"],
                version=str(chart["version"]),
                namespace=entry.get("namespace", chart["namespace"]),
                values=merge(chart.get("values") or {}, entry.get("values") or {}),
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
