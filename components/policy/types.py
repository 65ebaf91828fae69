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
# per type: (the input, the value that keeps it private) or (the list of frontends, the key that makes one public)
LOAD_BALANCERS: dict[str, dict[str, Any]] = dict(_DATA["loadBalancers"])
WILDCARD_POLICY_TYPES = frozenset(_DATA["wildcardPolicies"])
TAG_PROPS = {kind: str(prop) for kind, prop in _DATA["tagProps"].items()}
BUDGET_TYPES = frozenset(_DATA["budgets"])


def resource_type_data(section: str) -> Any:
    """One section of resource_types.yaml as written (the per-type facts policy/readers.py reads)."""
    return _DATA[section]
