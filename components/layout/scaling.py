"""Elastic fleets, the cloud-neutral part (pure): the data files' reader, and the refusals a GPU-utilisation metric
brings on every cloud whose nodes publish it themselves. Each cloud's `<cloud>_scaling.py` says what its nodes
reach and what stops at zero."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from ..errors import CLUSTER_KEY, ConfigError
from ..spec import ClusterSpec

K = f"{CLUSTER_KEY}."
_DATA = Path(__file__).resolve().parent.parent / "catalog" / "scaling"


@cache
def scaling_data(cloud: str) -> dict[str, Any]:
    """The cloud's `catalog/scaling/<cloud>.yaml`: its scaling facts and refusals, with their sources."""
    loaded: dict[str, Any] = load_yaml(_DATA / f"{cloud}.yaml")
    return loaded


def gpu_metric_problems(spec: ClusterSpec, *, reaches: str, at_zero: str) -> Iterator[ConfigError]:
    """With scaling.metric gpuUtilization: the DCGM exporter the metric is read from, a way out for the nodes
    (`reaches`: what they fetch or post outside, with egress none and no public IP), and a way back from zero nodes
    (`at_zero`: why nothing scales out when no node runs, unless a schedule entry brings nodes back)."""
    scaling = spec.scaling
    if scaling is None or scaling.metric != "gpuUtilization":
        return
    if not spec.dcgm_exporter:
        yield ConfigError(
            f"{K}scaling.metric", "gpuUtilization reads the DCGM exporter: set monitoring.dcgmExporter: true"
        )
    if spec.network.egress == "none" and not spec.network.public_ip:
        yield ConfigError(
            f"{K}network.egress",
            f"none with metric gpuUtilization: {reaches} and nothing else reaches the internet; use egress nat or "
            "another scaling.metric",
        )
    wakes = any(entry.nodes > 0 for entry in scaling.schedule)  # a schedule entry brings nodes (and samples) back
    if spec.min_nodes == 0 and not wakes:
        yield ConfigError(
            f"{K}minNodes",
            f"0 with metric gpuUtilization and no schedule entry above 0: at zero nodes {at_zero}; set minNodes 1, "
            "add a schedule entry above 0, or use queueDepth to scale to zero",
        )


def elastic(spec: ClusterSpec) -> bool:
    """Whether the cluster asks for anything of the elastic fleet (else nothing changes)."""
    return (
        spec.scaling is not None
        or spec.min_nodes != spec.nodes
        or spec.spot_on_demand_base > 0
        or spec.spot_fallback != "none"
    )
