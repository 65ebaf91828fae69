"""Storage: local scratch, the shared filesystem, and where both are mounted (catalog/storage, catalog/paths.yaml)."""

from __future__ import annotations

from collections.abc import Iterator

from ...catalog import paths as mount_paths
from ...catalog import storage as shared_storage
from ...errors import CLUSTER_KEY, ConfigError
from ..context import Context


def _scratch(ctx: Context) -> Iterator[ConfigError]:
    row = ctx.row
    if row is not None and ctx.cfg.storage.scratch == "nvme" and row.localNvmeCount == 0:
        yield ConfigError(
            f"{CLUSTER_KEY}.storage.scratch",
            f"nvme, but {row.instanceType} has no local NVMe; allowed here: auto, disk, none",
        )


def _shared_storage(ctx: Context) -> Iterator[ConfigError]:
    shared, k = ctx.cfg.storage.shared, f"{CLUSTER_KEY}.storage.shared"
    if shared is None:
        return
    for key, message in shared_storage.problems(
        ctx.cloud, ctx.region, shared.kind, shared.size_gb, shared.throughput, shared.existing
    ):
        yield ConfigError(f"{k}.{key}", message)
    scratch = ctx.cfg.storage.scratch_path
    if ctx.cfg.storage.scratch != "none" and (
        shared.path == scratch or shared.path.startswith(scratch + "/") or scratch.startswith(shared.path + "/")
    ):
        yield ConfigError(
            f"{k}.path", f"got {shared.path!r}; it clashes with scratchPath {scratch!r}: use another path"
        )


def _mount_paths(ctx: Context) -> Iterator[ConfigError]:
    """`storage.scratchPath` and `storage.shared.path`: normalised, and not where a mount would hide what the OS, the
    image or the bootstrap keeps (catalog/paths.yaml). Scratch and shared inside each other: `_shared_storage`."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}.storage"
    paths = {"scratchPath": cfg.storage.scratch_path} if cfg.storage.scratch != "none" else {}
    if cfg.storage.shared is not None:
        paths["shared.path"] = cfg.storage.shared.path
    for key, path in paths.items():
        for message in mount_paths.problems(path, admin_user=cfg.admin_user, slurm=cfg.scheduler == "slurm"):
            yield ConfigError(f"{k}.{key}", message)
