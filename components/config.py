"""Reading the engine's stack config into `GpuClusterArgs` (the only Pulumi-aware part of the spec)."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from .args import GpuClusterArgs
from .spec import ClusterSpec


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


def args_from_pulumi() -> GpuClusterArgs:
    """The stack config as typed args (losslessly: what the typed fields do not cover is validated as written)."""
    return GpuClusterArgs.from_config(engine_config(), secret_keys())


def spec_from_pulumi() -> ClusterSpec:
    """The stack config validated: the same `build_spec` path typed args take; errors name config keys."""
    return args_from_pulumi().to_spec(pulumi.get_stack(), pulumi.get_project())
