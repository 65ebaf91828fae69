"""The cloud contract: what every cloud package provides, and what each cloud can do, as data.

It sits above the layouts and below the component: nothing under it imports it. A cloud is two halves behind one
registry (`contract(cloud)`, from the cloud's row in catalog/clouds.yaml):
- pure (no provider SDK): its `Capabilities` (`catalog/capabilities.py`), its layout
  function (`layout.<cloud>.plan`, spec -> frozen dataclasses) and the counter that proves from
  the registered resources how much fabric is wired;
- Pulumi: its `CloudCluster` component class, imported only when that cloud is built, so a plan
  for one cloud never loads another cloud's SDK (each costs seconds and hundreds of MB).

Adding a cloud: a capabilities file, a layout package, a package with `CloudCluster`, and its row in
catalog/clouds.yaml (docs/architecture.md); this module names no cloud.
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
from .catalog.clouds import cloud_entry
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


def _component(package: str) -> Callable[[], CloudClusterClass]:
    """Imports `components.<package>`, and so its provider SDK, only when that cloud is built."""

    def load() -> CloudClusterClass:
        built: CloudClusterClass = importlib.import_module(f"{__package__}.{package}").CloudCluster
        return built

    return load


@cache
def contract(cloud: Cloud) -> CloudContract:
    """The cloud's contract from its row in catalog/clouds.yaml. Lazy for cost only: a plan imports its own cloud's
    layout, not the others' (the layouts sit below this module, so importing one by name goes down, not up)."""
    package = cloud_entry(cloud).package
    layout = importlib.import_module(f"{__package__}.layout.{package}")
    return CloudContract(cloud, layout.plan, layout.count_wired_gbps, _component(package))
