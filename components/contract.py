"""The cloud contract: what every cloud package provides, and what each cloud can do, as data.

A cloud is two halves behind one registry (`CLOUD_CONTRACTS`):
- pure (no provider SDK): its `Capabilities` (`catalog/capabilities/<cloud>.yaml`), its layout
  function (`layout.<cloud>.plan`, spec -> frozen dataclasses) and the counter that proves from
  the registered resources how much fabric is wired;
- Pulumi: its `CloudCluster` component class, imported only when that cloud is built, so a plan
  for AWS never loads the Azure, GCP or Alibaba SDKs (each costs seconds and hundreds of MB).

Adding a cloud: a capabilities file, a layout module, a package with `CloudCluster`, and one
entry in `CLOUD_CONTRACTS` (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import yaml

from .catalog import Cloud

if TYPE_CHECKING:  # the spec imports this module: only types from it here
    import pulumi

    from .bootstrap.fabric import FabricUsability
    from .bootstrap.scratch import Scratch
    from .spec import ClusterSpec

_CAPABILITIES = Path(__file__).parent / "catalog" / "capabilities"
ACCESS_METHODS = ("auto", "ssm", "iap", "bastion", "session-manager", "ssh", "none")


@dataclass(frozen=True)
class Limitation:
    """Something a managed node group of this cloud cannot do: what is applied instead, and why."""

    feature: str  # "placement" | "fabricCards"
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


def one_line(text: Any) -> str:
    """A data file's folded text (`>-`, several spaces, line breaks) as one line, for messages and the plan."""
    return " ".join(str(text).split())


@cache
def capability_data(cloud: str) -> dict[str, Any]:
    """The cloud's whole capabilities file: the keys `Capabilities` reads and the ones only its own
    layout reads (AWS `efa`, Alibaba `erdma`, GCP identity roles, ...); {} for a cloud without one."""
    path = _CAPABILITIES / f"{cloud}.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text()) if path.exists() else {}
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


class Layout(Protocol):
    """What every cloud's layout offers the layers above (each adds its own fields)."""

    @property
    def spec(self) -> ClusterSpec: ...

    @property
    def scratch(self) -> Scratch: ...

    @property
    def fabric_gbps_wired(self) -> float: ...

    # what the resources apply, which a cloud's limits may make less than `spec.placement`
    @property
    def placement_applied(self) -> Literal["cluster", "spread", "none"]: ...

    # whether the bootstrap gives NCCL everything the wired fabric needs on this image
    @property
    def fabric_usability(self) -> FabricUsability: ...


class CloudCluster(Protocol):
    """The cloud half of `GpuCluster`: a ComponentResource whose outputs the parent re-exports."""

    outputs: dict[str, Any]


class CloudClusterClass(Protocol):
    def __call__(self, name: str, layout: Any, opts: pulumi.ResourceOptions | None = None) -> CloudCluster: ...


@dataclass(frozen=True)
class CloudContract:
    cloud: Cloud
    plan: Callable[[ClusterSpec], Layout]
    count_wired_gbps: Callable[[list[Mapping[str, Any]], float], float]
    component: Callable[[], CloudClusterClass]  # imports the provider SDK: call only to build

    @property
    def capabilities(self) -> Capabilities:
        return capabilities(self.cloud)


def _component(cloud: Cloud) -> Callable[[], CloudClusterClass]:
    """Imports `components.<cloud>`, and so its provider SDK, only when that cloud is built."""

    def load() -> CloudClusterClass:
        built: CloudClusterClass = importlib.import_module(f"{__package__}.{cloud}").CloudCluster
        return built

    return load


# One entry per cloud. Lazy: the layout modules import the spec, which reads capabilities from here.
def _aws() -> CloudContract:
    from .layout import aws as layout

    return CloudContract("aws", layout.plan, layout.count_wired_gbps, _component("aws"))


def _azure() -> CloudContract:
    from .layout import azure as layout

    return CloudContract("azure", layout.plan, layout.count_wired_gbps, _component("azure"))


def _gcp() -> CloudContract:
    from .layout import gcp as layout

    return CloudContract("gcp", layout.plan, layout.count_wired_gbps, _component("gcp"))


def _alicloud() -> CloudContract:
    from .layout import alicloud as layout

    return CloudContract("alicloud", layout.plan, layout.count_wired_gbps, _component("alicloud"))


def _tencentcloud() -> CloudContract:
    from .layout import tencentcloud as layout

    return CloudContract("tencentcloud", layout.plan, layout.count_wired_gbps, _component("tencentcloud"))


CLOUD_CONTRACTS: dict[Cloud, Callable[[], CloudContract]] = {
    "aws": _aws,
    "azure": _azure,
    "gcp": _gcp,
    "alicloud": _alicloud,
    "tencentcloud": _tencentcloud,
}


@cache
def contract(cloud: Cloud) -> CloudContract:
    return CLOUD_CONTRACTS[cloud]()
