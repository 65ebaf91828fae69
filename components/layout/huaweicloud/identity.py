"""The IAM agency the nodes act as (delegated to ECS) and the roles granted to it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...spec import ClusterSpec
from .data import huawei_data
from .logs import data as logs_data

AGENCY_NAME = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class NodeIdentity:
    create: bool
    agency_name: str
    roles: tuple[str, ...]
    delegated_service: str


def node_identity(spec: ClusterSpec) -> NodeIdentity:
    data = huawei_data()["nodeIdentity"]
    wanted = [*data["defaultPolicies"], *spec.identity.policies]
    if spec.identity.read_storage:
        wanted.append(data["readStoragePolicy"])
    # ICAgent takes the agency's credentials (catalog/logs/huaweicloud.yaml); CCE's own ICAgent does not
    if spec.monitoring.logs.enabled and spec.scheduler != "kubernetes":
        wanted.append(logs_data()["credentials"]["role"])
    roles = tuple(dict.fromkeys(wanted))
    service = str(data["delegatedService"])
    if spec.identity.existing:
        return NodeIdentity(False, spec.identity.existing, roles, service)
    # iam.Agency name: 1 to 64 characters
    return NodeIdentity(True, AGENCY_NAME.sub("-", f"{spec.name}-{spec.stack}-nodes")[:64], roles, service)
