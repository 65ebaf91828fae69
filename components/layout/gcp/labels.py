"""GCP labels: the cluster's tags as labels within GCP's character set and count (cloud.google.com/compute/docs/
labeling-resources)."""

from __future__ import annotations

import re

from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .data import capability

LABEL_MAX = 63  # cloud.google.com/compute/docs/labeling-resources: keys and values at most 63 characters
LABELS_MAX = 64  # at most 64 labels per resource (same page)
# --- labels ---------------------------------------------------------------------------------


def label_key(key: str) -> str:
    """A GCP label key: lowercase letters, digits, '_' and '-', starting with a letter, <= 63 chars."""
    text = re.sub(r"[^a-z0-9_-]", "_", key.lower())
    if not text or not text[0].isalpha() or not text[0].isascii():
        text = "k" + text
    return text[:LABEL_MAX]


def label_value(value: str) -> str:
    """A GCP label value: lowercase letters, digits, '_' and '-' (may be empty), <= 63 chars."""
    return re.sub(r"[^a-z0-9_-]", "_", value.lower())[:LABEL_MAX]


def labels_for(spec: ClusterSpec) -> dict[str, str]:
    """`spec.base_tags` as GCP labels; two user tags that sanitise to one key are an error."""
    owned = {"gpu-cluster:cluster", "gpu-cluster:stack"}
    labels: dict[str, str] = {}
    origin: dict[str, str] = {}
    for key, value in spec.base_tags.items():
        name = label_key(key)
        if name in origin and key not in owned and origin[name] not in owned:
            raise ConfigError(
                f"{CLUSTER_KEY}.tags.{key}",
                f"becomes GCP label {name!r}, as does tag {origin[name]!r} (labels are lowercase "
                "letters, digits, '_' and '-'); rename one of them",
            )
        labels[name] = label_value(value)
        origin[name] = key
    added = [k for k in capability()["labelsAdded"] if k not in labels]
    if len(labels) + len(added) > LABELS_MAX:
        raise ConfigError(
            f"{CLUSTER_KEY}.tags",
            f"{len(labels)} labels, and {len(added)} more on some resources ({', '.join(added)}); GCP allows at most "
            f"{LABELS_MAX} per resource: remove {len(labels) + len(added) - LABELS_MAX} tag(s)",
        )
    return labels
