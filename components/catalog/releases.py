"""Pinned image releases: what `image: auto` boots, reproducibly.

An image entry of a cloud's catalog (`images.default`, `families`, `arch`, `vendors`) names a tracking reference (an
SSM `latest` parameter, an image family, a marketplace `latest`, a name pattern) and, where a release was sourced,
`release`: the one image `auto` boots. A newer image is then a reviewed change to the catalog (visible in the offline
diff), never a surprise at the next `pulumi up`. `image: latest` keeps tracking. `gpu-cluster image pin` writes the
release into a stack file in the cloud's image form (`rules.imageReleaseRef`), so upgrading gpu-cluster does not move
that stack either; that form is recognised as a release of the entry (same series, another date) and treated as the
catalog's image, not a custom one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .rows import Cloud, load

AUTO = "auto"
LATEST = "latest"
_DATE = re.compile(r"\d{8,10}")  # the date (or date + build) that tells releases of one series apart


@dataclass(frozen=True)
class Choice:
    """How a node boots a catalog image: `release` pinned (the catalog's, or one configured in its form), or tracking
    (`release` None: `image: latest`, or an entry with no sourced release) with `why` for the plan's warning."""

    release: str | None
    why: str = ""


def _fields(entry: dict[str, Any], release: str) -> dict[str, str]:
    urn = str(entry.get("urn") or "")
    return {
        "release": release,
        "owner": str(entry.get("owner") or ""),
        "project": str(entry.get("project") or ""),
        "urnBase": urn.rsplit(":", 1)[0],
    }


def release_ref(cloud: Cloud, entry: dict[str, Any], release: str | None = None) -> str | None:
    """The stack-file form of an entry's release (what `image pin` writes); None when the cloud has no such form or
    the entry pins no release."""
    template: str | None = load(cloud).rules.get("imageReleaseRef")
    release = release or entry.get("release")
    if not template or not release:
        return None
    return template.format(**_fields(entry, str(release)))


def _series(cloud: Cloud, entry: dict[str, Any]) -> re.Pattern[str] | None:
    """The stack-file forms of every release of the entry's series: its release with the date left open."""
    release = entry.get("release")
    ref = release_ref(cloud, entry, "\0")
    if not release or ref is None:
        return None
    open_release = _DATE.sub(lambda _: "\1", re.escape(str(release)))
    if "\1" not in open_release:
        return None
    head, tail = (re.escape(part) for part in ref.split("\0"))
    return re.compile(head + open_release.replace("\1", r"\d{8,10}") + tail)


def _entries(cloud: Cloud) -> Iterator[dict[str, Any]]:
    images = load(cloud).images
    yield images["default"]
    for group in ("families", "arch", "vendors"):
        yield from (e for e in (images.get(group) or {}).values() if isinstance(e, dict))


def release_in(cloud: Cloud, entry: dict[str, Any], image: str) -> str | None:
    """The release `image` names when it is the stack-file form of a release of the entry's series, else None."""
    series = _series(cloud, entry)
    if series is None or not series.fullmatch(image):
        return None
    head = str(release_ref(cloud, entry, "\0")).split("\0")
    return image[len(head[0]) : len(image) - len(head[1])]


def is_catalog_image(cloud: Cloud, image: str) -> bool:
    """`auto`, `latest`, or the stack-file form of a release of one of the catalog's images."""
    return image in (AUTO, LATEST) or any(release_in(cloud, e, image) is not None for e in _entries(cloud))


def choice(cloud: Cloud, entry: dict[str, Any], image: str) -> Choice | None:
    """How `image` boots the entry's image; None for a custom image (neither auto, latest nor a release of it)."""
    if image == AUTO:
        if entry.get("release"):
            return Choice(str(entry["release"]))
        return Choice(None, f"catalog/{cloud}.yaml pins no release of it: none sourced")
    if image == LATEST:
        return Choice(None)
    release = release_in(cloud, entry, image)
    return None if release is None else Choice(release)


def tracking_warning(image: str, what: str, chosen: Choice, held: bool = False) -> str:
    """The plan's warning for a tracking image: a later `pulumi up` may replace nodes the diff shows unchanged, or,
    where each node keeps the image it was created with (`held`), the nodes may differ."""
    fix = (
        "to pin one, set image to an image id"
        if chosen.why
        else "use auto (the catalog's pinned release) or `gpu-cluster image pin --stack NAME`"
    )
    effect = (
        "each node keeps the image it was created with, so nodes created later (a larger count, a replacement) may "
        "boot a newer one than the others"
        if held
        else "a later `pulumi up` may replace the nodes when a newer one is published, a change the offline diff "
        "cannot show"
    )
    when = "at each node's creation" if held else "at each deploy"
    why = f" ({chosen.why})" if chosen.why else ""
    return f"{image} tracks the newest image of {what}, resolved {when}{why}: {effect}; {fix}"
