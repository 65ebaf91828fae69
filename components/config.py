"""Reading the engine's stack config into a `ClusterSpec` (the only Pulumi-aware part of the spec)."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from .spec import ClusterSpec, build_spec


def engine_config() -> dict[str, Any]:
    """All `namespace:key` values the engine passed (objects arrive as JSON text)."""
    values = dict(runtime_config.get_config_env())
    values.update(runtime_config.CONFIG.get())
    return values


def spec_from_pulumi() -> ClusterSpec:
    return build_spec(engine_config(), pulumi.get_stack(), pulumi.get_project())
