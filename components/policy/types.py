"""The resource type tokens the rules read, by role (resource_types.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..datafile import load_yaml

_DATA: dict[str, Any] = load_yaml(Path(__file__).resolve().parent / "resource_types.yaml")

K8S_POOL_TYPES = frozenset(_DATA["kubernetesPools"])
NODE_TYPES = frozenset(_DATA["nodes"]) | K8S_POOL_TYPES
NIC_TYPES = frozenset(_DATA["nics"])
RELEASE_TYPE = str(_DATA["helmRelease"])
K8S_UNCHECKABLE_TYPES = frozenset(_DATA["kubernetesUncheckable"])
DATA_TYPES = frozenset(_DATA["data"])
ADMIN_GRANTS = {kind: (str(g["key"]), frozenset(g["admin"])) for kind, g in _DATA["adminGrants"].items()}
LOAD_BALANCERS = {kind: (str(lb["key"]), lb["private"]) for kind, lb in _DATA["loadBalancers"].items()}
WILDCARD_POLICY_TYPES = frozenset(_DATA["wildcardPolicies"])
