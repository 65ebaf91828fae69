"""Reads of the AWS-only keys of the capabilities file (catalog/capabilities/aws.yaml), typed where a value is read
as one; `contract.py` reads the cloud-neutral keys itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...catalog.capabilities import capability_data


def capabilities() -> dict[str, Any]:
    """The whole file (cached by capability_data)."""
    return capability_data("aws")


def efa() -> dict[str, Any]:
    """`efa:` what the boot check verifies and the NCCL/libfabric environment per family."""
    data: dict[str, Any] = capabilities()["efa"]
    return data


def encryption() -> dict[str, Any]:
    """`encryption:` the facts `key: auto` builds on, and what no key covers (instance store)."""
    data: dict[str, Any] = capabilities()["encryption"]
    return data


@dataclass(frozen=True)
class NodeRole:
    """`nodeRole:` the IAM role EC2 assumes for the nodes and its managed policies."""

    trust_service: str
    policies: tuple[str, ...]  # ARNs, in the file's order
    read_storage: str  # the ARN identity.readStorage adds


def node_role() -> NodeRole:
    role = capabilities()["nodeRole"]
    return NodeRole(
        trust_service=role["trustService"],
        policies=tuple(p["arn"] for p in role["policies"]),
        read_storage=role["readStorage"]["arn"],
    )


@dataclass(frozen=True)
class SsmEndpoints:
    """`ssmEndpoints:` the VPC interface endpoints SSM needs without a way out, and their port."""

    services: tuple[str, ...]
    port: int


def ssm_endpoints() -> SsmEndpoints:
    endpoints = capabilities()["ssmEndpoints"]
    return SsmEndpoints(tuple(endpoints["services"]), int(endpoints["port"]))


def health_hook_action() -> str:
    """The one IAM action the self-removal hook needs (`healthHook`)."""
    return str(capabilities()["healthHook"]["action"])
