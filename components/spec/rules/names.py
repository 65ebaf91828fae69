"""Names and tags: the cluster name, every name the cloud builds from it (catalog/names.yaml) and the tags
(catalog/tags.yaml)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...catalog import names as derived_names
from ...catalog import tags as tag_rules
from ...errors import CLUSTER_KEY, ConfigError
from ..context import Context
from ..model import NAME_PATTERN
from ..resolved import base_tags_of


def _name(ctx: Context) -> Iterator[ConfigError]:
    if ctx.cfg.name is None and not re.fullmatch(NAME_PATTERN, ctx.stack):
        yield ConfigError(
            f"{CLUSTER_KEY}.name",
            f"not set, and the stack name {ctx.stack!r} is not a valid cluster name ([a-z][a-z0-9-]{{0,30}}); set name",
        )


def _derived_names(ctx: Context) -> Iterator[ConfigError]:
    """`name`: every name the cloud builds from it must be one the cloud takes (catalog/names.yaml)."""
    cfg = ctx.cfg
    name = cfg.name or ctx.stack
    if cfg.name is None and not re.fullmatch(NAME_PATTERN, ctx.stack):
        return  # `_name` said so
    login = cfg.login is not None or cfg.scheduler == "slurm"  # scheduler slurm always adds a login node
    for message in derived_names.name_problems(
        ctx.cloud, name, scheduler=cfg.scheduler, node_group=cfg.node_group, login=login, max_nodes=ctx.max_nodes
    ):
        given = f"{name!r}" if cfg.name is not None else f"not set, so the stack name {name!r}"
        yield ConfigError(f"{CLUSTER_KEY}.name", f"{given}: {message}")


def _tags(ctx: Context) -> Iterator[ConfigError]:
    """`tags` against the cloud's tag rules (catalog/tags.yaml): each tag's key and value, and how many tags a
    resource carries once the toolkit's own are added."""
    cfg = ctx.cfg
    shared = cfg.storage.shared
    carried = base_tags_of(cfg.tags, cfg.name or ctx.stack, ctx.stack)
    storage_account = ctx.cloud == "azure" and shared is not None and shared.kind == "nfs"
    for tag, message in tag_rules.problems(ctx.cloud, cfg.tags, carried, storage_account=storage_account):
        yield ConfigError(f"{CLUSTER_KEY}.tags" + ("" if tag is None else f".{tag}"), message)
