"""The health check's action: the ESS unhealthy hook in a managed group, report elsewhere (said in a warning)."""

from __future__ import annotations

from ... import bootstrap
from ...errors import CLUSTER_KEY
from ...spec import ClusterSpec


def unhealthy_hook() -> str:
    """The ESS hook: mark this instance Unhealthy in its scaling group (shellcheck-clean, tested on stubs)."""
    return bootstrap.script("alicloud_unhealthy.sh")


def health_hook(spec: ClusterSpec, warnings: list[str]) -> bool:
    if spec.health_action != "replace":
        return False
    if spec.scheduler == "kubernetes":
        warnings.append(
            f"{CLUSTER_KEY}.health.action: replace acts as report on ACK: the node pool's scaling group belongs to "
            "ACK, so the health check does not mark instances Unhealthy; it writes /var/lib/gpu-cluster/health.json "
            "and the journal"
        )
        return False
    if spec.node_group == "managed":
        return True
    warnings.append(
        f"{CLUSTER_KEY}.health.action: replace acts as report on alicloud instances: nothing replaces an ECS "
        "instance outside a scaling group; the health check writes /var/lib/gpu-cluster/health.json and the journal"
    )
    return False
