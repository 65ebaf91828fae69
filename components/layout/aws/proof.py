"""The plan's proof on AWS: the fabric Gb/s per node counted back from the recorded launch-template inputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import placeholders
from ..kubernetes import GPU_TAINT

NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE_TYPE = "aws:ec2/launchTemplate:LaunchTemplate"


def _efa_count(template: Mapping[str, Any]) -> int:
    nics = template["inputs"].get("networkInterfaces") or []
    return sum(1 for n in nics if n.get("interfaceType") in ("efa", "efa-only"))


def _gpu_templates(resources: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The launch templates the GPU nodes launch from: with EKS, those the GPU-tainted node groups reference
    (the system pool's template carries no fabric and must not count); otherwise every template."""
    templates = [r for r in resources if r["type"] == LAUNCH_TEMPLATE_TYPE]
    gpu_groups = [
        r
        for r in resources
        if r["type"] == NODE_GROUP_TYPE
        and any(t.get("key") == GPU_TAINT["key"] for t in r["inputs"].get("taints") or [])
    ]
    if not gpu_groups:
        return templates
    names = {
        name
        for group in gpu_groups
        for name in placeholders.referenced(str((group["inputs"].get("launchTemplate") or {}).get("id", "")))
    }
    return [t for t in templates if t["name"] in names]


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from recorded launch-template inputs (the plan's proof)."""
    wired = max((_efa_count(t) for t in _gpu_templates(resources)), default=0)
    return wired * gbps_per_device
