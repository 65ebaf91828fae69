"""The resource type tokens the rules read, by role (resource_types.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml  # a dependency of the pulumi SDK, so the pack's own environment has it too

_DATA: dict[str, Any] = yaml.safe_load((Path(__file__).resolve().parent / "resource_types.yaml").read_text())

K8S_POOL_TYPES = frozenset(_DATA["kubernetesPools"])
NODE_TYPES = frozenset(_DATA["nodes"]) | K8S_POOL_TYPES
NIC_TYPES = frozenset(_DATA["nics"])
RELEASE_TYPE = str(_DATA["helmRelease"])
K8S_UNCHECKABLE_TYPES = frozenset(_DATA["kubernetesUncheckable"])
DATA_TYPES = frozenset(_DATA["data"])
ADMIN_GRANTS = {kind: (str(g["key"]), frozenset(g["admin"])) for kind, g in _DATA["adminGrants"].items()}
WILDCARD_POLICY_TYPES = frozenset(_DATA["wildcardPolicies"])
