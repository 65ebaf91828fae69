"""Placement: a COLLOCATED resource policy the instance template names (instances, and MIGs of types
without workload policies), or a HIGH_THROUGHPUT workload policy the MIG names (catalog/gcp.yaml
`workloadPolicyTypes`). One logical name for both, so switching kinds replaces the policy in place
of adding a second one (the diff says so: groupPlacementPolicy/workloadPolicy replace)."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout


def build_placement(name: str, layout: GcpLayout, child: pulumi.ResourceOptions) -> gcp.compute.ResourcePolicy | None:
    placement = layout.placement
    if placement is None:
        return None
    if placement.kind == "workload":
        return gcp.compute.ResourcePolicy(
            f"{name}-placement",
            region=layout.spec.region,
            workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(type="HIGH_THROUGHPUT"),
            description=f"workload policy (high throughput) for gpu-cluster {layout.spec.name}",
            opts=child,
        )
    return gcp.compute.ResourcePolicy(
        f"{name}-placement",
        region=layout.spec.region,
        group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
            vm_count=placement.vm_count, collocation="COLLOCATED", max_distance=placement.max_distance
        ),
        description=f"compact placement for gpu-cluster {layout.spec.name}",
        opts=child,
    )
