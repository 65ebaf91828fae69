"""The cloud contract: what every cloud package provides, and what each cloud can do, as data.

It sits above the layouts and below the component: nothing under it imports it. A cloud is two halves behind one
registry (`CLOUD_CONTRACTS`):
- pure (no provider SDK): its `Capabilities` (`catalog/capabilities.py`), its layout
  function (`layout.<cloud>.plan`, spec -> frozen dataclasses) and the counter that proves from
  the registered resources how much fabric is wired;
- Pulumi: its `CloudCluster` component class, imported only when that cloud is built, so a plan
  for AWS never loads the Azure, GCP or Alibaba SDKs (each costs seconds and hundreds of MB).

Adding a cloud: a capabilities file, a layout module, a package with `CloudCluster`, and one
entry in `CLOUD_CONTRACTS` (docs/architecture.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .bootstrap.fabric import FabricUsability
from .bootstrap.scratch import Scratch
from .catalog import Cloud
from .catalog.capabilities import Capabilities, capabilities
from .spec import ClusterSpec

if TYPE_CHECKING:  # the SDK is loaded by the cloud packages; a catalog or recommend run needs none
    import pulumi


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


# One entry per cloud. Lazy for cost only: a plan imports its own cloud's layout, not the other four.
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


def _huaweicloud() -> CloudContract:
    from .layout import huaweicloud as layout

    return CloudContract("huaweicloud", layout.plan, layout.count_wired_gbps, _component("huaweicloud"))


CLOUD_CONTRACTS: dict[Cloud, Callable[[], CloudContract]] = {
    "aws": _aws,
    "azure": _azure,
    "gcp": _gcp,
    "alicloud": _alicloud,
    "tencentcloud": _tencentcloud,
    "huaweicloud": _huaweicloud,
}


@cache
def contract(cloud: Cloud) -> CloudContract:
    return CLOUD_CONTRACTS[cloud]()
