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


def secret_keys() -> set[str]:
    """Keys the engine marked secret (`pulumi config set --secret`, `secure:` in the stack file)."""
    keys = set(runtime_config.get_config_secret_keys_env())
    keys.update(runtime_config._SECRET_KEYS.get())
    return keys


def spec_from_pulumi() -> ClusterSpec:
    return build_spec(engine_config(), pulumi.get_stack(), pulumi.get_project(), secret_keys())
