"""Compact placement: a COLLOCATED resource policy the instance template names."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout


def build_placement(name: str, layout: GcpLayout, child: pulumi.ResourceOptions) -> gcp.compute.ResourcePolicy | None:
    if not layout.placement_vm_count:
        return None
    return gcp.compute.ResourcePolicy(
        f"{name}-placement",
        region=layout.spec.region,
        group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
            vm_count=layout.placement_vm_count, collocation="COLLOCATED"
        ),
        description=f"compact placement for gpu-cluster {layout.spec.name}",
        opts=child,
    )
