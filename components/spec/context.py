"""What the cross-field rules read (`Context`) and what a rule is (`Check`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import catalog
from ..catalog import Cloud, InstanceType
from ..errors import CLUSTER_KEY, ConfigError, Finding
from .model import ClusterConfig


@dataclass
class Context:
    """What the cross-field rules read; `row` is None when the type could not be resolved."""

    cloud: Cloud
    region: str
    cfg: ClusterConfig
    values: Mapping[str, Any]
    stack: str
    rules: Mapping[str, Any]
    resolution: catalog.Resolution | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def row(self) -> InstanceType | None:
        return None if self.resolution is None else self.resolution.type

    @property
    def max_nodes(self) -> int:
        return self.cfg.max_nodes if self.cfg.max_nodes is not None else self.cfg.nodes

    @property
    def fabric_wired(self) -> bool:
        return self.row is not None and self.row.has_fabric and self.cfg.fabric != "none"

    def warn(self, key: str, message: str, level: Literal["warning", "info"] = "warning") -> None:
        self.findings.append(Finding(level, f"{CLUSTER_KEY}.{key}", message))


Check = Callable[[Context], Iterator[ConfigError]]
