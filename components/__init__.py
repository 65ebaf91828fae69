"""gpu-cluster: `from components import GpuCluster, GpuClusterArgs` (docs/component.md).

Lazy: the spec, catalog and CLI import this package without loading the Pulumi SDK.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .args import GpuClusterArgs, GpuClusterArgsError
    from .cluster import GpuCluster

__all__ = ["GpuCluster", "GpuClusterArgs", "GpuClusterArgsError"]


def __getattr__(name: str) -> Any:
    if name == "GpuCluster":
        from .cluster import GpuCluster

        return GpuCluster
    if name in ("GpuClusterArgs", "GpuClusterArgsError"):
        from . import args

        return getattr(args, name)
    raise AttributeError(f"module 'components' has no attribute {name!r}")
