"""The fabric counted back from the recorded resources (`count_wired_gbps`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import catalog


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from the recorded resources: HCC nodes that name an HPC cluster that exists.

    An HCC node's RDMA ports (intrinsic to its type: no NIC resource is registered) join the cluster's RDMA
    network only through `hpcClusterId`; ports x per-device rating is what such a node gets, else 0.
    """
    clusters = {r["name"] for r in resources if r["type"] == "tencentcloud:Cvm/hpcCluster:HpcCluster"}
    if not clusters:
        return 0.0
    wired = 0.0
    for res in resources:
        if res["type"] != "tencentcloud:Instance/instance:Instance":
            continue
        ref = str(res["inputs"].get("hpcClusterId") or "")
        if any(f" of {name}>" in ref for name in clusters):
            rows = catalog.find("tencentcloud", str(res["inputs"].get("instanceType")))
            devices = rows[0].fabricDevices if rows else 0
            wired = max(wired, devices * gbps_per_device)
    return wired
