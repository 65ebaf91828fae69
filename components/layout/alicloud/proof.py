"""The fabric counted back from the recorded resources (`count_wired_gbps`): ERIs that are up on ECS instances
and ESS configurations, on the nodes of elastic Slurm partitions (the channel's launch lines, with their templates'
user data), and ACK GPU pools served by the eRDMA Controller add-on.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
from collections.abc import Mapping
from typing import Any

import yaml

from ... import catalog
from ...bootstrap.slurm_conf import LAUNCH_ENV, compute_config_files
from .data import ack_offer
from .fabric import ERDMA_ENV, wired_gbps
from .kubernetes import ACK_ADDON, ACK_NODE_POOL, ack_eri_count


def _eris_brought_up(user_data: Any) -> int:
    """ERI_COUNT of the erdma part in a node's user data (Base64 cloud-config), 0 when there is none."""
    if not isinstance(user_data, str):
        return 0
    try:
        raw = base64.b64decode(user_data, validate=True)
        doc = yaml.safe_load((gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode())
    except (binascii.Error, UnicodeDecodeError, yaml.YAMLError, OSError, EOFError):
        return 0
    files = doc.get("write_files") if isinstance(doc, dict) else None
    for item in files or []:
        if isinstance(item, dict) and item.get("path") == ERDMA_ENV:
            found = re.search(r"^ERI_COUNT=(\d+)$", str(item.get("content", "")), re.M)
            return int(found.group(1)) if found else 0
    return 0


def count_wired_gbps(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Fabric Gb/s per node counted from the recorded nodes: ENIs with traffic mode HighPerformance that are up.

    The primary ERI is configured by the image; a further ERI counts only when the node's user data
    brings it up (the erdma part). ERIs on one network card index (always so in ESS, whose interfaces
    take no card index) are capped at Alibaba's one-card rating.
    """
    wired = 0.0
    for res in resources:
        inputs = res["inputs"]
        if res["type"] == "alicloud:ecs/instance:Instance":
            nics = [inputs, inputs.get("networkInterfaces") or {}]
        elif res["type"] == "alicloud:ess/scalingConfiguration:ScalingConfiguration":
            nics = [{**n, "networkCardIndex": 0} for n in inputs.get("networkInterfaces") or []]
        else:
            continue
        eris = [n for n in nics if n.get("networkInterfaceTrafficMode") == "HighPerformance"]
        if not eris:
            continue
        up = min(len(eris), max(1, _eris_brought_up(inputs.get("userData"))))
        cards = {n.get("networkCardIndex", 0) for n in eris}
        wired = max(wired, wired_gbps(up, len(cards), gbps_per_device))
    return max(wired, _count_partitions(resources, gbps_per_device), _count_ack_pools(resources, gbps_per_device))


OOS_PARAMETER = "alicloud:oos/parameter:Parameter"
LAUNCH_TEMPLATE = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"


def _count_partitions(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """Elastic partitions: the ERIs the resume program adds to RunInstances are the card indices on the partition's
    launch line in the channel (`<template> <vswitch> <groups> <cards>`, layout/alicloud/partitions.py
    launch_target); beyond the primary they count when the partition's template's user data brings them up."""
    lines: dict[str, list[int]] = {}
    for res in resources:
        value = res["inputs"].get("value") if res["type"] == OOS_PARAMETER else None
        try:
            launch = compute_config_files(value).get(LAUNCH_ENV, "") if isinstance(value, str) else ""
        except ValueError:
            continue
        for found in re.finditer(r"^LAUNCH_([^=]+)=.+ ([0-9]+(?:,[0-9]+)*)$", launch, re.M):
            lines[found.group(1)] = [int(card) for card in found.group(2).split(",")]
    wired = 0.0
    for res in resources:
        if res["type"] != LAUNCH_TEMPLATE:
            continue
        name = str(res["inputs"].get("launchTemplateName", ""))
        cards = next((c for part, c in lines.items() if name.endswith(f"-{part}")), None)
        if not cards:
            continue
        up = min(len(cards), max(1, _eris_brought_up(res["inputs"].get("userData"))))
        wired = max(wired, wired_gbps(up, len(set(cards)), gbps_per_device))
    return wired


def _count_ack_pools(resources: list[Mapping[str, Any]], gbps_per_device: float) -> float:
    """The GPU pools' fabric: ERIs per node from the pool's instance type, when its cluster has the eRDMA add-on."""
    served = {
        str(r["inputs"].get("clusterId"))
        for r in resources
        if r["type"] == ACK_ADDON and r["inputs"].get("name") == ack_offer()["erdmaController"]["addon"]
    }
    wired = 0.0
    for res in resources:
        if res["type"] != ACK_NODE_POOL or str(res["inputs"].get("clusterId")) not in served:
            continue
        for instance_type in (res["inputs"].get("instanceTypes") or [])[:1]:
            rows = catalog.find("alicloud", str(instance_type))
            if rows and rows[0].fabric == "erdma":
                eris = ack_eri_count(rows[0])
                wired = max(wired, wired_gbps(eris, eris, gbps_per_device))
    return wired
