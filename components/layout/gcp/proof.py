"""The plan's proof on GCP: the fabric Gb/s per node counted back from the recorded resources."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import placeholders

_NETWORK_TYPE = "gcp:compute/network:Network"
_NODE_POOL_TYPE = "gcp:container/nodePool:NodePool"
_TEMPLATE_TYPES = (
    "gcp:compute/instanceTemplate:InstanceTemplate",
    "gcp:compute/instance:Instance",
    "gcp:compute/instanceFromTemplate:InstanceFromTemplate",
)


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from the recorded templates/instances (the plan's proof).

    GPU NICs are the MRDMA NICs when there are any (A3 Ultra, A4: the second gVNIC carries no GPU
    traffic); otherwise every NIC after the first (A3 High/Mega: nic0 is the host NIC, nic1.. the
    GPU NICs). A template wired with one GPU NIC counts as one device.

    A GKE node pool counts its own extra node networks (`networkConfig.additionalNodeNetworkConfigs`)
    the same way: the ones on a RoCE network (a recorded network with a `networkProfile`) when there
    are any, else all of them.
    """
    wired = 0
    roce = {r["name"] for r in resources if r["type"] == _NETWORK_TYPE and r["inputs"].get("networkProfile")}
    for res in resources:
        if res["type"] == _NODE_POOL_TYPE:
            extra = (res["inputs"].get("networkConfig") or {}).get("additionalNodeNetworkConfigs") or []
            rdma = sum(1 for n in extra if roce & set(placeholders.referenced(str(n.get("network") or ""))))
            wired = max(wired, rdma if rdma else len(extra))
            continue
        if res["type"] not in _TEMPLATE_TYPES:
            continue
        nics = res["inputs"].get("networkInterfaces") or []
        mrdma = sum(1 for n in nics if n.get("nicType") == "MRDMA")
        wired = max(wired, mrdma if mrdma else max(len(nics) - 1, 0))
    return wired * gbps_per_device
