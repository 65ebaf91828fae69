"""The update policy of every config key (`updates.yaml`): what changing it does to running nodes and jobs.

Pure: the data file, its typed form, the walk of the config model that names every key (dotted camelCase, as a stack
file writes it: `cluster.storage.shared.sizeGb`) and the written config of a stack (`config_document`), which the
plan carries and the diff compares key by key.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import CLUSTER_KEY
from .model import ClusterConfig, StackKeys
from .rules.identity import SECRET_KEY_STAND_IN

DATA = Path(__file__).resolve().parent / "updates.yaml"
Policy = Literal["in-place", "rolling", "replace", "refused"]
POLICIES: tuple[Policy, ...] = typing.get_args(Policy)
# what a `when:` may match, read from the new plan: its cloud and summary (components/plan)
MODE_KEYS = ("nodeGroup", "scheduler", "cloud", "sharedKind")
SECRET = "[secret]"  # as the plan masks a `secure:` value (components/placeholders.SECRET)


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Effect(_Data):
    """What a change of the key does."""

    policy: Policy
    jobs: str = Field(min_length=1)  # one sentence: what running jobs and nodes see
    source: str = Field(min_length=1)  # the provider rule, the cloud's doc or ParallelCluster's update policy
    how: str | None = None  # refused: the safe way


class Override(Effect):
    """An effect for one mode: every match key given must hold (a value or a list of values)."""

    nodeGroup: tuple[str, ...] | None = None  # the names the stack file uses
    scheduler: tuple[str, ...] | None = None
    cloud: tuple[str, ...] | None = None
    sharedKind: tuple[str, ...] | None = None

    @field_validator("nodeGroup", "scheduler", "cloud", "sharedKind", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else value

    def matches(self, mode: Mapping[str, str | None]) -> bool:
        wanted = {k: getattr(self, k) for k in MODE_KEYS if getattr(self, k) is not None}
        return bool(wanted) and all(mode.get(k) in values for k, values in wanted.items())

    def effect(self) -> Effect:
        return Effect(policy=self.policy, jobs=self.jobs, source=self.source, how=self.how)


class KeyPolicy(Effect):
    """One key's default effect and its overrides (`when:`, first match wins)."""

    when: tuple[Override, ...] = Field((), strict=False)

    def effect(self, mode: Mapping[str, str | None] | None = None) -> Effect:
        found = next((o for o in self.when if mode is not None and o.matches(mode)), None)
        if found is not None:
            return found.effect()
        return Effect(policy=self.policy, jobs=self.jobs, source=self.source, how=self.how)


class _UniqueKeys(yaml.SafeLoader):
    """A key given twice in the data file is an error, not the last one silently kept."""


def _mapping(loader: _UniqueKeys, node: yaml.MappingNode) -> dict[Any, Any]:
    keys = [loader.construct_object(k) for k, _ in node.value]
    twice = sorted({str(k) for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(f"{DATA.name}: key given twice: {', '.join(twice)}")
    return dict(loader.construct_mapping(node))


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


@cache
def update_policies() -> dict[str, KeyPolicy]:
    """The table, key -> policy, in the data file's order."""
    raw = yaml.load(DATA.read_text(), Loader=_UniqueKeys)  # a SafeLoader subclass
    return {str(key): KeyPolicy.model_validate(entry) for key, entry in raw["keys"].items()}


def _block(annotation: Any) -> type[BaseModel] | None:
    """The model of a block field (`StorageConfig | None` -> StorageConfig), else None."""
    candidates = typing.get_args(annotation) or (annotation,)
    return next((a for a in candidates if isinstance(a, type) and issubclass(a, BaseModel)), None)


def _walk(model: type[BaseModel], prefix: str, blocks: set[str]) -> list[str]:
    out: list[str] = []
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        out.append(key)
        block = _block(info.annotation)
        if block is not None:
            blocks.add(key)
            out += _walk(block, f"{key}.", blocks)
    return out


@cache
def _keys() -> tuple[tuple[str, ...], frozenset[str]]:
    blocks: set[str] = {"cluster"}  # gpu-cluster:cluster itself: every key under it is `cluster.<key>`
    keys = _walk(StackKeys, "", blocks) + _walk(ClusterConfig, "cluster.", blocks)
    return tuple(keys), frozenset(blocks)


def model_keys() -> tuple[str, ...]:
    """Every key of the config model, blocks too (`cluster.storage`, `cluster.storage.shared.sizeGb`)."""
    return _keys()[0]


def block_keys() -> frozenset[str]:
    """The keys that hold other keys (a change inside one is reported by the inner key)."""
    return _keys()[1]


def _secret_paths(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in _secret_paths(v, (*path, str(k)))]
    return [path] if value == SECRET else []


def config_document(
    values: Mapping[str, Any], region: str, gcp_project: str | None, secret_config: bool = False
) -> dict[str, Any]:
    """The config as the user wrote it, after validation (call it with values `build_spec` accepted): camelCase,
    defaults filled in (so a diff says `1 -> 2`, not `null -> 2`), and what the stack file holds as `secure:` shown
    as the plan masks it. `secret_config` (the spec's): the whole cluster config is `secure:`, so the SSH key is
    masked as the key pair masks it."""
    written = values.get(CLUSTER_KEY) or {}
    if isinstance(written, str):  # the engine's form: JSON text
        written = json.loads(written)
    raw = dict(written)
    if raw.get("sshPublicKey") == SECRET:  # as build_spec does: validated with a stand-in, shown as secret
        raw["sshPublicKey"] = SECRET_KEY_STAND_IN
    doc = ClusterConfig.model_validate(raw).model_dump(mode="json", by_alias=True)
    for path in _secret_paths(written):
        holder = doc
        for part in path[:-1]:
            holder = holder.get(part) if isinstance(holder, dict) else None  # type: ignore[assignment]
        if isinstance(holder, dict) and path[-1] in holder:
            holder[path[-1]] = SECRET
    if secret_config and doc.get("sshPublicKey"):
        doc["sshPublicKey"] = SECRET
    return {
        "cloud": values.get("gpu-cluster:cloud"),
        "region": region,
        "project": gcp_project,
        "maxHourlyUsd": values.get("gpu-cluster:maxHourlyUsd"),
        "cluster": doc,
    }
