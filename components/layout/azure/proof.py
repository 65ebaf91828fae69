"""The Azure plan's proof: the InfiniBand Gb/s per node counted back from the recorded resources.

Rule (setup-infiniband.md): "VMs must be in the same scale set or the same availability set", and a scale set must be
limited to a single placement group (`singlePlacementGroup: true`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping
from typing import Any

from ... import catalog
from ...bootstrap.slurm_conf import compute_config_files
from .partitions import BODY_PREFIX

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
        elif res["type"] == VM_TYPE:
            # elastic Slurm partitions: the VMs the head creates, from the bodies in its channel (userData); one that
            # joins a scale set (virtualMachineScaleSet.id, a Flexible one: setup-infiniband.md "Applies to: ...
            # Flexible scale sets") has its size's HCAs in that set's fabric
            for body in _channel_bodies(inputs.get("userData")):
                props = body.get("properties") or {}
                if (props.get("virtualMachineScaleSet") or {}).get("id"):
                    wired = max(wired, _ib_devices((props.get("hardwareProfile") or {}).get("vmSize")))
        elif res["type"] == AGENT_POOL_TYPE and _aks_ib_ready(inputs, resources):
            wired = max(wired, _ib_devices(inputs.get("vmSize")))
    return wired * gbps_per_device


def _channel_bodies(user_data: Any) -> Iterator[dict[str, Any]]:
    """The VM bodies (components/layout/azure/partitions.py) in a Slurm head's userData, if it is one."""
    if not isinstance(user_data, str):
        return
    try:
        files = compute_config_files(base64.b64decode(user_data, validate=True).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return
    for name, text in files.items():
        if name.startswith(BODY_PREFIX) and name.endswith(".json"):
            body = json.loads(text)
            if isinstance(body, dict):
                yield body


def _aks_ib_ready(pool: Mapping[str, Any], resources: list[Mapping[str, Any]]) -> bool:
    """An AKS pool's HCAs carry RDMA when what AKS itself does not set up is there (the AKS RDMA guide,
    catalog/kubernetes/azure.yaml `infiniband`): an Ubuntu pool, the Network Operator release and a
    NicClusterPolicy with the DOCA driver. The subscription feature is not a resource (the plan warns)."""
    if pool.get("osSKU") != "Ubuntu":
        return False
    operator = any(r["type"] == HELM_RELEASE_TYPE and r["inputs"].get("chart") == "network-operator" for r in resources)
    policy = any(r["type"] == NIC_POLICY_TYPE and (r["inputs"].get("spec") or {}).get("ofedDriver") for r in resources)
    return operator and policy
