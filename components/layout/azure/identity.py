"""Azure identity decisions: the nodes' user-assigned managed identity and its role assignments."""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog import monitoring as catalog_monitoring
from ...errors import CLUSTER_KEY
from ...spec import ClusterSpec
from .data import read_storage_role
from .monitoring import hosted


@dataclass(frozen=True)
class RoleGrant:
    """One role assignment to the node identity, on the cluster's resource group."""

    role_definition_id: str  # /providers/Microsoft.Authorization/roleDefinitions/GUID or the subscription form
    why: str  # "identity.readStorage" or "identity.policies[i]"


@dataclass(frozen=True)
class NodeIdentity:
    """A user-assigned managed identity on every VM of the cluster (nodes and login node)."""

    existing_id: str | None  # an existing identity's resource id; None = create one
    grants: tuple[RoleGrant, ...]  # nothing by default: least privilege


def node_identity(spec: ClusterSpec) -> NodeIdentity:
    """No role by default (least privilege): the nodes need none to boot, be reached through Bastion or
    run NCCL. `identity.policies` and `identity.readStorage` add role assignments on the resource group."""
    grants = [RoleGrant(role, f"{CLUSTER_KEY}.identity.policies[{i}]") for i, role in enumerate(spec.identity.policies)]
    if spec.identity.read_storage:
        grants.append(RoleGrant(read_storage_role(), f"{CLUSTER_KEY}.identity.readStorage"))
    entry = catalog_monitoring.self_hosted("azure")
    if hosted(spec) and entry is not None:  # azure_sd on the login node (server or agent) lists the VMs
        grants += [RoleGrant(role, f"{CLUSTER_KEY}.monitoring.prometheus") for role in entry["grant"]]
    unique = tuple({g.role_definition_id.lower(): g for g in grants}.values())  # one assignment per role
    return NodeIdentity(spec.identity.existing, unique)
