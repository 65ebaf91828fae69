"""The Azure plan's proof: the InfiniBand Gb/s per node counted back from the recorded resources.

Rule (setup-infiniband.md): "VMs must be in the same scale set or the same availability set", and a scale set must be
limited to a single placement group (`singlePlacementGroup: true`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import catalog

SCALE_SET_TYPE = "azure-native:compute:VirtualMachineScaleSet"
VM_TYPE = "azure-native:compute:VirtualMachine"
AGENT_POOL_TYPE = "azure-native:containerservice:AgentPool"
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
NIC_POLICY_TYPE = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"


def _ib_devices(size: Any) -> int:
    rows = catalog.find("azure", size) if isinstance(size, str) else []
    return rows[0].fabricDevices if rows and rows[0].fabric == "infiniband" else 0


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """InfiniBand Gb/s per node counted from the recorded resources (the plan's proof).

    Rule (setup-infiniband.md): a node's IB HCAs are usable by the cluster when it is in a Uniform scale set
    with `singlePlacementGroup: true`, or in an availability set shared by the cluster's VMs. The count is
    the HCAs of the recorded VM size (catalog) for such a scale set or VM, else 0; the per-device Gb/s comes
    from the catalog rating (ND H100 v5: 8 x 400).
    """
    wired = 0
    for res in resources:
        inputs = res["inputs"]
        if res["type"] == SCALE_SET_TYPE:
            uniform = inputs.get("orchestrationMode") == "Uniform"
            if uniform and inputs.get("singlePlacementGroup") is True:
                wired = max(wired, _ib_devices((inputs.get("sku") or {}).get("name")))
        elif res["type"] == VM_TYPE and (inputs.get("availabilitySet") or {}).get("id"):
            wired = max(wired, _ib_devices((inputs.get("hardwareProfile") or {}).get("vmSize")))
        elif res["type"] == AGENT_POOL_TYPE and _aks_ib_ready(inputs, resources):
            wired = max(wired, _ib_devices(inputs.get("vmSize")))
    return wired * gbps_per_device


def _aks_ib_ready(pool: Mapping[str, Any], resources: list[Mapping[str, Any]]) -> bool:
    """An AKS pool's HCAs carry RDMA when what AKS itself does not set up is there (the AKS RDMA guide,
    catalog/kubernetes/azure.yaml `infiniband`): an Ubuntu pool, the Network Operator release and a
    NicClusterPolicy with the DOCA driver. The subscription feature is not a resource (the plan warns)."""
    if pool.get("osSKU") != "Ubuntu":
        return False
    operator = any(r["type"] == HELM_RELEASE_TYPE and r["inputs"].get("chart") == "network-operator" for r in resources)
    policy = any(r["type"] == NIC_POLICY_TYPE and (r["inputs"].get("spec") or {}).get("ofedDriver") for r in resources)
    return operator and policy
