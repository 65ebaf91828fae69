"""What each cloud can do, as data (`catalog/capabilities/<cloud>.yaml`): identity, access, login, managed-group
limits, SSH keys, node groups and schedulers built, with the reasons for what is not."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from ..text import one_line
from . import Cloud

_CAPABILITIES = Path(__file__).parent / "capabilities"


@dataclass(frozen=True)
class Limitation:
    """Something a managed node group of this cloud cannot do: what is applied instead, and why."""

    feature: str  # "placement" | "fabric" | "hccCluster"
    applied: str
    message: str
    source: str


@dataclass(frozen=True)
class Identity:
    kind: str  # instance-profile | managed-identity | service-account | ram-role
    describe: str
    policy_pattern: str
    policy_hint: str
    existing_pattern: str
    existing_hint: str

    def policy_ok(self, value: str) -> bool:
        return re.fullmatch(self.policy_pattern, value) is not None

    def existing_ok(self, value: str) -> bool:
        return re.fullmatch(self.existing_pattern, value) is not None


@dataclass(frozen=True)
class Capabilities:
    cloud: Cloud
    identity: Identity
    access_default: str
    access_why: str
    access_methods: tuple[str, ...]
    login: bool
    login_default_type: str
    managed_group_limits: tuple[Limitation, ...]
    spot_with_placement: bool
    # SSH keys the cloud imports (`sshKeys:` in the data file; absent: every type the spec accepts)
    ssh_key_types: tuple[str, ...] = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                                      "ecdsa-sha2-nistp521")  # fmt: skip
    rsa_min_bits: int | None = None
    ssh_keys_source: str = ""
    forbidden_admin_users: tuple[str, ...] = ()  # `adminUser:` in the data file
    admin_users_source: str = ""
    spot_eviction: str = ""  # what a spot eviction does to a node (`spotEviction:`), with its source
    node_groups: tuple[str, ...] = ("managed", "instances")  # `nodeGroups: {kinds, why}` when fewer are built
    node_groups_why: str = ""
    schedulers: tuple[str, ...] = ("none", "kubernetes", "slurm")  # `schedulers: {kinds, why}` when fewer
    schedulers_why: str = ""

    def managed_limit(self, feature: str) -> Limitation | None:
        return next((lim for lim in self.managed_group_limits if lim.feature == feature), None)

    def resolve_access(self, method: str) -> str:
        return self.access_default if method == "auto" else method


@cache
def capability_data(cloud: str) -> dict[str, Any]:
    """The cloud's whole capabilities file: the keys `Capabilities` reads and the ones only its own
    layout reads (AWS `efa`, Alibaba `erdma`, GCP identity roles, ...); {} for a cloud without one."""
    path = _CAPABILITIES / f"{cloud}.yaml"
    data: dict[str, Any] = load_yaml(path) if path.exists() else {}
    return data


@cache
def capabilities(cloud: Cloud) -> Capabilities:
    data = capability_data(cloud)
    ident, access = data["identity"], data["access"]
    return Capabilities(
        cloud=cloud,
        identity=Identity(
            kind=ident["kind"],
            describe=ident["describe"],
            policy_pattern=ident["policyPattern"],
            policy_hint=ident["policyHint"],
            existing_pattern=ident["existingPattern"],
            existing_hint=ident["existingHint"],
        ),
        access_default=access["default"],
        access_why=one_line(access["why"]),
        access_methods=tuple(access["methods"]),
        login=bool(data["login"]),
        login_default_type=data["loginDefaultType"],
        managed_group_limits=tuple(
            Limitation(lim["feature"], str(lim["applied"]), one_line(lim["message"]), one_line(lim["source"]))
            for lim in data.get("managedGroupLimits") or []
        ),
        spot_with_placement=bool(data["spotWithPlacement"]),
        **_ssh_and_admin(data),
    )


def _ssh_and_admin(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    keys = data.get("sshKeys")
    if keys:
        out["ssh_key_types"] = tuple(keys["types"])
        out["rsa_min_bits"] = keys.get("rsaMinBits")
        out["ssh_keys_source"] = one_line(keys["source"])
    groups = data.get("nodeGroups")
    if groups:
        out["node_groups"] = tuple(groups["kinds"])
        out["node_groups_why"] = one_line(groups["why"])
    schedulers = data.get("schedulers")
    if schedulers:
        out["schedulers"] = tuple(schedulers["kinds"])
        out["schedulers_why"] = one_line(schedulers["why"])
    eviction = data.get("spotEviction")
    if eviction:
        out["spot_eviction"] = f"{one_line(eviction['message'])} ({one_line(eviction['source'])})"
    admin = data.get("adminUser")
    if admin:
        out["forbidden_admin_users"] = tuple(str(u).lower() for u in admin["forbidden"])
        out["admin_users_source"] = one_line(admin["source"])
    return out
