"""The RAM role the nodes assume and the policies attached to it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ...spec import ClusterSpec
from .data import alicloud_data

RAM_ROLE_NAME = re.compile(r"[^A-Za-z0-9.-]")  # RAM role names: letters, digits, '.', '-'; 1 to 64


@dataclass(frozen=True)
class NodeIdentity:
    """The RAM role the nodes assume: created here (`create`) or an existing one by name."""

    create: bool
    role_name: str
    policies: tuple[str, ...]  # RAM system policies attached to it by this stack
    trusted_service: str

    @property
    def assume_role_policy(self) -> str:
        statement = {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": [self.trusted_service]}}
        return json.dumps({"Statement": [statement], "Version": "1"}, sort_keys=True)


def node_identity(spec: ClusterSpec) -> NodeIdentity:
    data = alicloud_data()["nodeIdentity"]
    wanted = [*data["defaultPolicies"], *spec.identity.policies]
    if spec.identity.read_storage:
        wanted.append(data["readStoragePolicy"])
    policies = tuple(dict.fromkeys(wanted))  # in order, once
    if spec.identity.existing:
        return NodeIdentity(False, spec.identity.existing, policies, data["trustedService"])
    name = RAM_ROLE_NAME.sub("-", f"{spec.name}-{spec.stack}-nodes")[:64]
    return NodeIdentity(True, name, policies, data["trustedService"])
