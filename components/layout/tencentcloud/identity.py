"""The CAM role the nodes assume and the policies attached to it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...spec import ClusterSpec
from .data import tencent_data

CAM_ROLE_NAME = re.compile(r"[^A-Za-z0-9+=,.@_-]")


@dataclass(frozen=True)
class NodeIdentity:
    create: bool
    role_name: str
    policies: tuple[str, ...]
    trusted_service: str

    @property
    def document(self) -> str:
        statement = {
            "action": ["name/sts:AssumeRole"],
            "effect": "allow",
            "principal": {"service": [self.trusted_service]},
        }
        return json.dumps({"statement": [statement], "version": "2.0"}, sort_keys=True)


def node_identity(spec: ClusterSpec) -> NodeIdentity:
    data = tencent_data()["nodeIdentity"]
    wanted = [*data["defaultPolicies"], *spec.identity.policies]
    if spec.identity.read_storage:
        wanted.append(data["readStoragePolicy"])
    policies = tuple(dict.fromkeys(wanted))
    if spec.identity.existing:
        return NodeIdentity(False, spec.identity.existing, policies, data["trustedService"])
    name = CAM_ROLE_NAME.sub("-", f"{spec.name}-{spec.stack}-nodes")[:128]
    return NodeIdentity(True, name, policies, data["trustedService"])


def allow_document(actions: Sequence[str]) -> str:
    """A custom CAM policy allowing `actions` on "*" (for APIs without resource-level permissions: CVM's CAM guide,
    intl.cloud.tencent.com/document/product/213/10313), in the role document's syntax (version 2.0)."""
    statement = {"action": list(actions), "effect": "allow", "resource": ["*"]}
    return json.dumps({"statement": [statement], "version": "2.0"}, sort_keys=True)
