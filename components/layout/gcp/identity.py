"""The nodes' service account on GCP: created (id within GCP's length rule, roles on the project) or an existing one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ...catalog import monitoring as catalog_monitoring
from ...spec import ClusterSpec
from ..monitoring import login_hosted
from .data import capability, gke_data


@dataclass(frozen=True)
class NodeIdentity:
    """The service account of the nodes (and login node): created, or an existing one by email."""

    account_id: str | None  # the account to create; None with `existing`
    existing: str | None
    roles: tuple[str, ...]  # granted on the project to a created account (none to an existing one)
    scopes: tuple[str, ...]


def account_id(cluster: str, suffix: str = "-nodes") -> str:
    """A service-account id for the cluster within GCP's 6-30 character rule, stable per name (`suffix`: whose)."""
    low, high = capability()["identity"]["accountIdLength"]
    text = f"{cluster}{suffix}"
    if len(text) > high:  # keep it unique per name with a short hash of the whole name
        digest = hashlib.sha256(cluster.encode()).hexdigest()[:4]
        text = f"{cluster[: high - len(suffix) - 5].rstrip('-')}-{digest}{suffix}"
    return text.ljust(low, "0") if len(text) < low else text


def monitoring_roles(spec: ClusterSpec) -> tuple[str, ...]:
    """What the self-hosted Prometheus's gce_sd needs on the project (catalog/monitoring.yaml selfHosted.gcp): on
    the nodes' service account, which the login node carries; none unless monitoring.prometheus is selfHosted."""
    entry = catalog_monitoring.self_hosted("gcp")
    if not login_hosted(spec) or entry is None:
        return ()
    return tuple(entry["grant"])


def node_identity(spec: ClusterSpec) -> NodeIdentity:
    ident = capability()["identity"]
    scopes = tuple(ident["scopes"])
    if spec.identity.existing:
        return NodeIdentity(None, spec.identity.existing, tuple(spec.identity.policies), scopes)
    roles = list(ident["roles"])
    if spec.identity.read_storage:
        roles.append(ident["readStorageRole"])
    if spec.scheduler == "kubernetes":  # what GKE nodes also report (catalog/kubernetes/gcp.yaml nodes.roles)
        roles += [r for r in gke_data()["nodes"]["roles"] if r not in roles]
    roles += [r for r in monitoring_roles(spec) if r not in roles]
    roles += [r for r in spec.identity.policies if r not in roles]
    return NodeIdentity(account_id(spec.name), None, tuple(roles), scopes)
