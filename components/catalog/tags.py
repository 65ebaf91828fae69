"""What each cloud accepts as tags (GCP: labels): the data in `tags.yaml`, and the check the spec's `_tags` runs.

Keys and values are checked as the user wrote them (GCP: in the label form the layout turns them into); the count
is checked on what a resource carries: the user's tags, the toolkit's own (`ClusterSpec.base_tags`) and the keys some
resources add (`addedKeys`). Pure: no Pulumi.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml

_DATA = Path(__file__).parent / "tags.yaml"
_KEYS = {
    "maxTags", "keyMax", "valueMax", "characters", "keyForbidden", "reservedPrefixes", "valueReservedPrefixes",
    "forbiddenText", "caseInsensitiveKeys", "labels", "addedKeys", "storageAccountKeyMax", "source",
}  # fmt: skip
_CATEGORY_WORDS = {"L": "letters", "Z": "spaces", "N": "digits"}
# GCP label form (components/layout/gcp/labels.py label_key / label_value, kept equal by tests/test_spec_names_tags.py)
_LABEL_DROP = re.compile(r"[^a-z0-9_-]")


@dataclass(frozen=True)
class TagRules:
    """One cloud's tag limits (tags.yaml)."""

    cloud: str
    max_tags: int
    key_max: int
    value_max: int
    categories: tuple[str, ...]  # Unicode general categories (first letter) keys and values may hold; () = any
    extra: str  # characters allowed beside the categories
    key_forbidden: str
    reserved_prefixes: tuple[str, ...]
    value_reserved_prefixes: tuple[str, ...]
    forbidden_text: tuple[str, ...]
    case_insensitive_keys: bool
    labels: bool
    added_keys: tuple[str, ...]
    storage_account_key_max: int | None
    source: str

    def allowed(self) -> str:
        """What a tag may be, in words (the end of every message)."""
        what = "any characters"
        if self.categories:
            words = ", ".join(_CATEGORY_WORDS.get(c, c) for c in self.categories)
            what = f"{words} and {' '.join(self.extra)}"
        if self.labels:
            what = "any text, turned into label form (lowercase a-z, 0-9, _ and -; docs/gcp.md)"
        text = f"{self.cloud} takes keys of 1-{self.key_max} and values of at most {self.value_max} characters: {what}"
        if self.key_forbidden:
            text += f"; keys without {' '.join(self.key_forbidden)}"
        if self.reserved_prefixes:
            text += f"; keys not starting with {', '.join(repr(p) for p in self.reserved_prefixes)}"
        if self.forbidden_text:
            text += f"; neither containing {' or '.join(repr(t) for t in self.forbidden_text)}"
        return text


@cache
def rules(cloud: str) -> TagRules:
    data: dict[str, Any] = load_yaml(_DATA)[cloud]
    if set(data) - _KEYS:
        raise ValueError(f"tags.yaml: {cloud}: unknown keys {sorted(set(data) - _KEYS)}")
    chars = data.get("characters") or {}
    return TagRules(
        cloud=cloud,
        max_tags=int(data["maxTags"]),
        key_max=int(data["keyMax"]),
        value_max=int(data["valueMax"]),
        categories=tuple(chars.get("categories") or ()),
        extra=str(chars.get("extra") or ""),
        key_forbidden=str(data.get("keyForbidden") or ""),
        reserved_prefixes=tuple(str(p) for p in data.get("reservedPrefixes") or ()),
        value_reserved_prefixes=tuple(str(p) for p in data.get("valueReservedPrefixes") or ()),
        forbidden_text=tuple(str(p) for p in data.get("forbiddenText") or ()),
        case_insensitive_keys=bool(data.get("caseInsensitiveKeys", False)),
        labels=bool(data.get("labels", False)),
        added_keys=tuple(str(k) for k in data.get("addedKeys") or ()),
        storage_account_key_max=data.get("storageAccountKeyMax"),
        source=" ".join(str(data["source"]).split()),
    )


def label_key(key: str) -> str:
    """A GCP label key: lowercase letters, digits, '_' and '-', starting with a letter, <= 63 chars."""
    text = _LABEL_DROP.sub("_", key.lower())
    if not text or not text[0].isalpha() or not text[0].isascii():
        text = "k" + text
    return text[: rules("gcp").key_max]


def label_value(value: str) -> str:
    """A GCP label value: lowercase letters, digits, '_' and '-' (may be empty), <= 63 chars."""
    return _LABEL_DROP.sub("_", value.lower())[: rules("gcp").value_max]


def _refused_characters(text: str, data: TagRules, forbidden: str = "") -> list[str]:
    bad = [
        ch
        for ch in text
        if ch in forbidden
        or (data.categories and unicodedata.category(ch)[0] not in data.categories and ch not in data.extra)
    ]
    return sorted(set(bad))


def _text_problems(
    what: str, text: str, limit: int, data: TagRules, prefixes: tuple[str, ...], forbidden: str
) -> list[str]:
    found: list[str] = []
    if len(text) > limit:
        found.append(f"{what} has {len(text)} characters (at most {limit})")
    if (bad := _refused_characters(text, data, forbidden)) and not data.labels:
        found.append(f"{what} holds {', '.join(repr(ch) for ch in bad)}")
    lowered = text.lower()
    if hit := next((p for p in prefixes if lowered.startswith(p.lower())), None):
        found.append(f"{what} starts with {hit!r}, reserved by {data.cloud}")
    if hit := next((t for t in data.forbidden_text if t in lowered), None):
        found.append(f"{what} contains {hit!r}")
    return found


def problems(
    cloud: str, user_tags: Mapping[str, str], carried: Mapping[str, str], *, storage_account: bool = False
) -> list[tuple[str | None, str]]:
    """(the user's tag key, or None for the whole map; message) for each problem. `carried`: the tags the cluster's
    resources carry (ClusterSpec.base_tags), before the cloud's `addedKeys`."""
    data = rules(cloud)
    allowed = f"{data.allowed()} (catalog/tags.yaml)"
    found: list[tuple[str | None, str]] = []
    key_max = data.storage_account_key_max if storage_account and data.storage_account_key_max else data.key_max
    form: dict[str, str] = {}  # what each user key becomes on the resource (GCP labels, case-folded keys)
    toolkit = {k.lower(): k for k in [*(k for k in carried if k not in user_tags), *data.added_keys]}
    for key, value in user_tags.items():
        issues = [] if key else ["the key is empty"]
        if data.labels:
            prefix = next((p for p in data.reserved_prefixes if key.lower().startswith(p)), None)
            issues += [f"the key starts with {prefix!r}, reserved by {cloud}"] if prefix else []
        else:
            issues += _text_problems("the key", key, key_max, data, data.reserved_prefixes, data.key_forbidden)
            issues += _text_problems("the value", value, data.value_max, data, data.value_reserved_prefixes, "")
        named = label_key(key) if data.labels else key.lower() if data.case_insensitive_keys else key
        if named in form and not issues:
            becomes = f"label {named!r}" if data.labels else "one tag (keys are case-insensitive)"
            issues.append(f"becomes {becomes}, as does tag {form[named]!r}; rename one of them")
        ours = toolkit.get(key.lower()) if data.case_insensitive_keys else None
        if ours is not None and ours != key:
            issues.append(f"is the toolkit's own tag {ours!r} (keys are case-insensitive on {cloud}); rename it")
        form.setdefault(named, key)
        if issues:
            found.append((key, f"{'; '.join(issues)}; {allowed}"))
    names = {label_key(k) if data.labels else k.lower() if data.case_insensitive_keys else k for k in carried}
    added = [k for k in data.added_keys if (k.lower() if data.case_insensitive_keys else k) not in names]
    total = len(names) + len(added)
    if total > data.max_tags:
        own = [k for k in carried if k not in user_tags] + added
        found.append(
            (
                None,
                f"{len(user_tags)} tags plus the {len(own)} the toolkit adds ({', '.join(own)}) make {total} on the "
                f"cluster's resources; {cloud} allows {data.max_tags} per resource (catalog/tags.yaml): remove "
                f"{total - data.max_tags}",
            )
        )
    return found
