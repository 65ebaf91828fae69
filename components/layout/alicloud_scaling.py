"""Elastic fleets on Alibaba Cloud (pure): the ESS group's floor and its Spot mix; what is not built is refused.

Facts and the reasons for each refusal are in `catalog/scaling/alicloud.yaml`. A cluster that uses none of
minNodes, scaling, spot.onDemandBase or spot.fallback gets no `AlicloudFleet`, and its group plans as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..errors import CLUSTER_KEY, ConfigError
from ..spec import ClusterSpec
from .aws_scaling import elastic


@cache
def data() -> dict[str, Any]:
    path = Path(__file__).resolve().parent.parent / "catalog" / "scaling" / "alicloud.yaml"
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


@dataclass(frozen=True)
class SpotMix:
    multi_az_policy: str
    on_demand_base: int
    on_demand_percentage_above_base: int
    compensate_with_on_demand: bool  # spot.fallback onDemand


@dataclass(frozen=True)
class AlicloudFleet:
    min_size: int
    spot: SpotMix | None  # None: pay-as-you-go, or `spot: true` as before


def plan(spec: ClusterSpec) -> AlicloudFleet | None:
    if not elastic(spec):
        return None
    if spec.scaling is not None:
        metric = spec.scaling.metric
        why = data()["notBuilt"][metric]["why"]
        raise ConfigError(
            f"{CLUSTER_KEY}.scaling.metric",
            f"{metric} is not built on Alibaba Cloud: {why} (catalog/scaling/alicloud.yaml notBuilt); remove "
            "scaling and size the group between minNodes and maxNodes yourself",
        )
    if spec.kubernetes is not None:
        raise ConfigError(
            f"{CLUSTER_KEY}.spot"
            if spec.spot_on_demand_base or spec.spot_fallback != "none"
            else f"{CLUSTER_KEY}.minNodes",
            "not built for scheduler kubernetes on Alibaba Cloud (the ACK node pool sizes itself); remove it",
        )
    s = data()["spot"]
    spot = (
        SpotMix(
            s["multiAzPolicy"],
            spec.spot_on_demand_base,
            int(s["onDemandPercentageAboveBase"]),
            spec.spot_fallback == "onDemand",
        )
        if spec.spot and (spec.spot_on_demand_base or spec.spot_fallback != "none")
        else None
    )
    return AlicloudFleet(min_size=spec.min_nodes, spot=spot)
