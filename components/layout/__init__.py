"""Pure, cloud-specific layouts: what each cloud's resources must look like, as frozen dataclasses.

A layout is computed from a `ClusterSpec` without Pulumi; each cloud package only maps its layout
onto resources. Pieces every cloud shares live here: the scratch plan and the cloud-init bootstrap.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from .. import bootstrap, catalog
from ..bootstrap.scratch import Scratch, scratch_part, scratch_script

__all__ = ["Scratch", "cloud_init", "image_for", "scratch_for", "scratch_script", "split_cidr"]
from ..catalog import Cloud
from ..spec import ClusterSpec


def scratch_for(spec: ClusterSpec, nvme_globs: tuple[str, ...], disk_globs: tuple[str, ...]) -> Scratch:
    row, storage = spec.instance, spec.storage
    if spec.scratch == "nvme":
        return Scratch("nvme", storage.scratch_path, row.localNvmeCount, row.localNvmeGb, nvme_globs)
    if spec.scratch == "disk":
        return Scratch("disk", storage.scratch_path, 1, storage.scratch_gb, disk_globs, storage.retain_scratch)
    return Scratch("none", storage.scratch_path, 0, None, ())


def image_for(cloud: Cloud, instance_type: str) -> dict[str, Any]:
    """The `image: auto` entry for a type: the longest matching family prefix, else the default."""
    section = catalog.load(cloud).images
    families: dict[str, Any] = section.get("families") or {}
    match = max((p for p in families if instance_type.startswith(p)), key=len, default=None)
    entry: dict[str, Any] = families[match] if match else section["default"]
    return entry


def cloud_init(scratch: Scratch, extra_runcmd: tuple[tuple[str, ...], ...] = ()) -> str:
    """The user data of a node whose bootstrap is the scratch part plus commands (see `components.bootstrap`)."""
    return bootstrap.cloud_init([scratch_part(scratch), bootstrap.commands_part("extra", extra_runcmd)])


def split_cidr(cidr: str, extra_bits: int, count: int) -> tuple[str, ...]:
    """The first `count` subnets of `cidr`, each `extra_bits` longer (stable: same input, same ranges)."""
    subnets = ipaddress.IPv4Network(cidr).subnets(prefixlen_diff=extra_bits)
    return tuple(str(next(subnets)) for _ in range(count))
