"""What every Azure concern module needs from the component: names, tags, options, the resource group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pulumi

from ..layout.azure import AzureLayout

if TYPE_CHECKING:
    from .encryption import Key


@dataclass(frozen=True)
class Context:
    """The component's shared inputs. Every resource is parented to the component (`opts`), so its URN
    is the same whichever module registers it."""

    name: str  # the component's name: resource names are f"{name}-<suffix>"
    component: pulumi.Resource  # the parent of every resource and invoke
    layout: AzureLayout
    opts: pulumi.ResourceOptions  # parent=the component, plus the alias transformation
    resource_group_name: pulumi.Input[str]
    zones: list[str] | None
    key: Key | None = None  # encryption.key not provider: the disk encryption set and key (azure/encryption.py)

    @property
    def location(self) -> str:
        return self.layout.location

    def tagged(self, suffix: str) -> dict[str, str]:
        return {**self.layout.tags, "Name": f"{self.layout.spec.name}-{suffix}"}
