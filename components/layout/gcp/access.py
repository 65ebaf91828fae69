"""Access on GCP: the SSH rules (sshCidrs, IAP's range) and the login node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ... import catalog
from ...errors import CLUSTER_KEY
from ...spec import ClusterSpec
from .data import capability


@dataclass(frozen=True)
class Login:
    instance_type: str
    public_ip: bool
    image: str  # projects/P/global/images/family/F
    tag: str  # network tag the sshCidrs rule targets


@dataclass(frozen=True)
class Access:
    method: str  # iap | ssh | none (spec.access, resolved)
    iap: bool  # IAP's range on the SSH rule (access: iap, or gcp.iap)
    node_ssh_ranges: tuple[str, ...]  # the `-ssh` rule, on every instance of the host VPC
    login_ssh_ranges: tuple[str, ...]  # the `-login-ssh` rule, on the login node's tag only
    login: Login | None
    user_roles: tuple[str, ...]


def access_of(spec: ClusterSpec, rules: Mapping[str, Any], warnings: list[str]) -> Access:
    """The SSH rules and the login node. Without a login node sshCidrs stay on the nodes, as before."""
    iap = spec.access == "iap" or spec.gcp.iap
    iap_ranges = (str(rules["iapRange"]),) if iap else ()
    cidrs = tuple(spec.network.ssh_cidrs)
    user_roles = tuple(capability()["access"]["userRoles"])
    if spec.login is None:
        return Access(spec.access, iap, tuple(sorted({*cidrs, *iap_ranges})), (), None, user_roles)
    entry = catalog.cpu_image("gcp", str(spec.login.instance_type))  # images.login of the login type's architecture
    login = Login(
        instance_type=str(spec.login.instance_type),
        public_ip=spec.login.public_ip,
        image=f"projects/{entry['project']}/global/images/family/{entry['family']}",
        tag=f"{spec.name}-login",
    )
    if spec.network.public_ip:
        warnings.append(
            f"{CLUSTER_KEY}.network.publicIp: a login node exists, so the nodes get no public IP; "
            "set login.publicIp to reach the login node from sshCidrs"
        )
    return Access(spec.access, iap, iap_ranges, cidrs, login, user_roles)
