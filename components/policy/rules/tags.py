"""The tags every taggable resource carries."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from ..model import CONFIG, Facts, Issue, Resource
from ..types import NODE_TYPES, TAG_PROPS

REQUIRED_TAGS = ("gpu-cluster:cluster", "environment")
OWNED_TAGS = {"gpu-cluster:cluster"}  # set by the toolkit itself; a user cannot (and need not) set it


def normal(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def tag_keys(res: Resource) -> set[str] | None:
    # GCP keeps key/value metadata in `labels`; its `tags` are network tags (a list of strings).
    # GKE: `labels` of a node pool are Kubernetes node labels; the GCP labels are `resourceLabels`
    # (the cluster's) and `nodeConfig.resourceLabels` (a pool's).
    if res.type == "gcp:container/cluster:Cluster":
        labels = res.props.get("resourceLabels")
        return {normal(k) for k in labels} if isinstance(labels, Mapping) else None
    if res.type == "gcp:container/nodePool:NodePool":
        labels = (res.props.get("nodeConfig") or {}).get("resourceLabels")
        return {normal(k) for k in labels} if isinstance(labels, Mapping) else None
    if res.type in TAG_PROPS:  # tags under another input (resource_types.yaml tagProps)
        found = res.props.get(TAG_PROPS[res.type])
        return {normal(k) for k in found} if isinstance(found, Mapping) else None
    if res.type == "aws:eks/nodeGroup:NodeGroup":  # `labels` are Kubernetes node labels; AWS tags are `tags`
        tags = res.props.get("tags")
        return {normal(k) for k in tags} if isinstance(tags, Mapping) else None
    labels = res.props.get("labels")
    if isinstance(labels, Mapping):
        return {normal(k) for k in labels}
    tags = res.props.get("tags")
    if isinstance(tags, Mapping):
        return {normal(k) for k in tags}
    if isinstance(tags, list) and all(isinstance(t, Mapping) for t in tags) and tags:
        return {normal(t.get("key", "")) for t in tags}  # AWS Auto Scaling group: [{key, value, propagateAtLaunch}]
    return None


def required_tags(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    keys = tag_keys(res)
    if keys is None:
        if res.type in NODE_TYPES:
            yield Issue("has no tags/labels", "have no tags/labels", "has no tags/labels")
        return
    # GCP label keys cannot hold ':' and are lowercase: compare normalised keys.
    missing = [tag for tag in REQUIRED_TAGS if normal(tag) not in keys]
    if missing:
        names = ", ".join(missing)
        settable = [tag for tag in missing if tag not in OWNED_TAGS]
        fix = "set " + ", ".join(f"{CONFIG}.tags.{tag}" for tag in settable) if settable else ""
        yield Issue(f"is missing required tag(s): {names}", f"lack {names}", f"lacks {names}", fix)
