"""Where a node may not mount a filesystem: the data in `paths.yaml`, and the check the spec's `_mount_paths` runs.

A mount point (`storage.scratchPath`, `storage.shared.path`) is refused when it is not normalised (`.` or `..`
components: `/scratch/../etc` is `/etc`), or when mounting there would hide what the image, the OS or the
bootstrap keeps in that directory (paths.yaml, each entry with its source). Pure: no Pulumi.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ..datafile import load_yaml

_DATA = Path(__file__).parent / "paths.yaml"
_SCOPES = ("exact", "tree", "owned")


@dataclass(frozen=True)
class Reserved:
    """One reserved directory: where a mount is refused (`scope`), why, and the source keys."""

    path: str  # may hold `{adminUser}`
    scope: Literal["exact", "tree", "owned"]
    why: str
    source: str
    when: str | None = None  # "slurm": only with scheduler slurm

    def hides(self, mount: str, admin_user: str) -> bool:
        """Whether a mount at `mount` (normalised, absolute) would hide this directory's content."""
        path = self.path.replace("{adminUser}", admin_user)
        if mount == path:
            return True
        inside = mount.startswith(path.rstrip("/") + "/")
        above = path.startswith(mount + "/")
        return (self.scope in ("tree", "owned") and inside) or (self.scope == "owned" and above)


@dataclass(frozen=True)
class PathRules:
    sources: dict[str, str]
    reserved: tuple[Reserved, ...]


@cache
def load() -> PathRules:
    """paths.yaml, validated (a malformed entry is a packaging mistake, caught by the tests)."""
    data: dict[str, Any] = load_yaml(_DATA)
    sources = {str(k): " ".join(str(v).split()) for k, v in data["sources"].items()}
    reserved: list[Reserved] = []
    for entry in data["reserved"]:
        if set(entry) - {"path", "scope", "why", "source", "when"} or entry["scope"] not in _SCOPES:
            raise ValueError(f"paths.yaml: malformed entry {entry}")
        if any(key.strip() not in sources for key in str(entry["source"]).split(";")):
            raise ValueError(f"paths.yaml: {entry['path']}: unknown source {entry['source']!r}")
        if entry.get("when") not in (None, "slurm"):
            raise ValueError(f"paths.yaml: {entry['path']}: when must be slurm")
        reserved.append(
            Reserved(str(entry["path"]), entry["scope"], str(entry["why"]), str(entry["source"]), entry.get("when"))
        )
    return PathRules(sources, tuple(reserved))


def problems(path: str, *, admin_user: str, slurm: bool) -> list[str]:
    """Why `path` cannot be a mount point (one message each), or nothing. `path` has passed the schema's pattern:
    absolute, no empty component, no trailing slash."""
    parts = path.split("/")[1:]
    if "." in parts or ".." in parts:
        normal = posixpath.normpath(path)
        return [f"got {path!r}; '.' and '..' components are refused: it means {normal!r}, write that path itself"]
    found: list[str] = []
    for entry in load().reserved:
        if (entry.when == "slurm" and not slurm) or not entry.hides(path, admin_user):
            continue
        where = entry.path.replace("{adminUser}", admin_user)
        relation = "is" if path == where else ("is inside" if path.startswith(where + "/") else "holds")
        sources = "; ".join(key.strip() for key in entry.source.split(";"))
        found.append(
            f"got {path!r}; it {relation} {where}: {entry.why}, which a mount there would hide "
            f"(catalog/paths.yaml: {sources}); use a directory of its own such as /scratch, /data or /shared"
        )
    return found[:1]  # the first (most general) reason is enough for one path
