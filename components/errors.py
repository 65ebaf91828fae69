"""Errors and findings shared by every layer.

`ConfigError` is a plain exception, so the spec and the layouts need no Pulumi; the program
(`__main__.py`) re-raises it as `pulumi.RunError`, which `pulumi up` prints as the message alone,
without the program text and stack trace it shows for other exceptions. It is raised before any
resource is registered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CLUSTER_KEY = "gpu-cluster:cluster"


class ConfigError(ValueError):
    """One invalid configuration value: the key path, what was given, what is allowed."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message
        super().__init__(f"{key}: {message}" if key else message)


@dataclass(frozen=True)
class Finding:
    """A validation result that does not stop the plan (ParallelCluster-style levels)."""

    level: Literal["warning", "info"]
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"
