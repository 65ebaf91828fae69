"""Placement on GCP: a compact (COLLOCATED) policy on the template, or a workload (HIGH_THROUGHPUT) policy on the MIG,
within the VM caps of catalog/gcp.yaml."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec


@dataclass(frozen=True)
class Placement:
    """compact: a COLLOCATED policy on the template; workload: a HIGH_THROUGHPUT policy on the MIG."""

    kind: Literal["compact", "workload"]
    vm_count: int | None  # compact only
    max_vms: int | None  # the cap applied (compact only)
    max_distance: int | None = None  # compact only: gcp.placementMaxDistance


def by_prefix(table: Mapping[Any, Any], instance_type: str) -> Any:
    """The entry of the longest key that prefixes `instance_type`, else `default`."""
    match = max((p for p in table if p != "default" and instance_type.startswith(p)), key=len, default="default")
    return table[match]


def compact_cap(rules: Mapping[str, Any], instance_type: str, max_distance: int | None) -> int:
    """VMs one compact placement policy may hold, for a type and a maxDistance (None: not set)."""
    table: Mapping[Any, Any] = rules["compactPlacementMaxVms"]
    row = table["none" if max_distance is None else max_distance]
    return int(by_prefix(row, instance_type))


def placement_of(spec: ClusterSpec, rules: Mapping[str, Any]) -> Placement | None:
    """The placement policy, or None. Kinds, limits and sources in docs/gcp.md and catalog/gcp.yaml."""
    if spec.placement != "cluster":
        return None
    itype = spec.instance.instanceType
    if spec.node_group == "managed" and itype in rules["workloadPolicyTypes"]:
        # A workload policy has no VM count: the group may be resized within it, down to one VM and back, so it is
        # kept at one node (compute discovery doc ResourcePolicyWorkloadPolicy: type, maxTopologyDistance,
        # acceleratorTopology; no count; docs/day2.md)
        return Placement("workload", None, None)
    max_distance = spec.gcp.placement_max_distance
    limit = compact_cap(rules, itype, max_distance)
    distance = "no maxDistance" if max_distance is None else f"maxDistance {max_distance}"
    if spec.max_nodes > limit:
        key = "nodes" if spec.max_nodes == spec.nodes else "maxNodes"
        raise ConfigError(
            f"{CLUSTER_KEY}.{key}",
            f"{spec.max_nodes} nodes in one compact placement policy; {itype} with {distance} allows at most "
            f"{limit} (Cluster Toolkit slurm-gcp limits, catalog/gcp.yaml); use several clusters or placement: none",
        )
    if spec.node_group == "managed" and spec.max_nodes != spec.nodes:
        raise ConfigError(
            f"{CLUSTER_KEY}.maxNodes",
            f"{spec.max_nodes} with nodes {spec.nodes}: a COLLOCATED placement policy fixes its VM count "
            "(vmCount) and all of them are created together; set maxNodes equal to nodes, or placement: none",
        )
    if spec.nodes < 2:
        # one VM has no neighbour to be placed close to, and the policy's vmCount is fixed: a count change recreates
        # it and the nodes anyway (updates.yaml cluster.nodes); `placement: auto` resolves to none here (spec)
        return None
    return Placement("compact", spec.nodes, limit, max_distance)
