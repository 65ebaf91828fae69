"""Alibaba Cloud's Tea (darabonba) request models, read as a consumer: which parameters a request class names, what
its comments say about each, and what a request loses in the model's own `from_map`/`to_map` round trip.

Every Alibaba OpenAPI SDK (alibabacloud_<product><version>) generates one `DaraModel` class per request. Its
`from_map` reads only the parameters the API declares (anything else is silently dropped: the round trip finds
it), `validate()` recurses into nested models, and the `__init__` carries the API reference text of each member as
comments ("This parameter is required.", lengths, valid values). Those comments are parsed here, per member, so a
constraint table can quote them.
"""

from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass
from typing import Any

REQUIRED = "This parameter is required."


@dataclass(frozen=True)
class Member:
    wire: str  # the API parameter name (the to_map / from_map key)
    attr: str  # the Python attribute
    doc: str  # the member's comment in __init__, whitespace-folded
    model: type | None  # a nested request model, else None
    is_list: bool

    @property
    def required(self) -> bool:
        return REQUIRED in self.doc


_ASSIGN = re.compile(r"^\s*self\.(\w+) = (\w+)\s*$")
_COMMENT = re.compile(r"^\s*#\s?(.*)$")
_FROM = re.compile(r"if m\.get\('([^']+)'\) is not None:")


def _module_models(cls: type) -> Any:
    package = cls.__module__.split(".")[0]
    return __import__(f"{package}.models", fromlist=["models"])


@functools.cache
def members(cls: type) -> dict[str, Member]:
    """The request class's members by API name, with their comments (parsed from the generated source)."""
    source = inspect.getsource(cls)
    init = source.split("def __init__(", 1)[1].split("def validate(", 1)[0]
    docs: dict[str, str] = {}
    pending: list[str] = []
    for line in init.splitlines():
        if m := _COMMENT.match(line):
            pending.append(m.group(1))
        elif (m := _ASSIGN.match(line)) and m.group(1) == m.group(2):
            docs[m.group(1)] = " ".join(" ".join(pending).split())
            pending = []
    body = source.split("def from_map(", 1)[1]
    models = _module_models(cls)
    out: dict[str, Member] = {}
    blocks = _FROM.split(body)[1:]
    for wire, block in zip(blocks[::2], blocks[1::2], strict=True):
        attr = re.search(r"self\.(\w+)", block)
        nested = re.search(r"main_models\.(\w+)\(\)", block)
        if attr is None:
            continue
        name = attr.group(1)
        out[wire] = Member(
            wire,
            name,
            docs.get(name, ""),
            getattr(models, nested.group(1)) if nested else None,
            ".append(" in block or "for k1 in" in block,
        )
    return out


def lost(cls: type, request: dict[str, Any], path: str = "") -> list[str]:
    """The parameters of `request` the model does not keep through its own from_map -> to_map (unknown to it)."""
    kept = cls().from_map(request).to_map()
    return _missing(request, kept, path)


def canonical(cls: type, request: Any) -> Any:
    """`request` with each key spelled as the model spells it when they differ only in case (nested too)."""
    if isinstance(request, list):
        return [canonical(cls, item) for item in request]
    if not isinstance(request, dict):
        return request
    known = members(cls)
    by_case = {wire.lower(): wire for wire in known}
    out: dict[str, Any] = {}
    for key, value in request.items():
        wire = key if key in known else by_case.get(key.lower(), key)
        nested = known[wire].model if wire in known else None
        out[wire] = canonical(nested, value) if nested is not None else value
    return out


def _missing(sent: Any, kept: Any, path: str) -> list[str]:
    if isinstance(sent, dict):
        if not isinstance(kept, dict):
            return [path or "<root>"]
        out: list[str] = []
        for key, value in sent.items():
            where = f"{path}.{key}" if path else key
            if key not in kept:
                out.append(where)
            else:
                out.extend(_missing(value, kept[key], where))
        return out
    if isinstance(sent, list) and isinstance(kept, list):
        return [p for i, (s, k) in enumerate(zip(sent, kept, strict=False)) for p in _missing(s, k, f"{path}.{i + 1}")]
    return []


def validate(cls: type, request: dict[str, Any]) -> str | None:
    """What the model's own validate() raises for `request` (None: it passes)."""
    try:
        cls().from_map(request).validate()
    except Exception as exc:  # the Tea exceptions have no common base worth naming
        return f"{type(exc).__name__}: {exc}"
    return None


def missing_required(cls: type, request: dict[str, Any], path: str = "") -> list[str]:
    """Members whose comment says "This parameter is required." that `request` leaves out (nested ones included)."""
    out: list[str] = []
    for wire, member in members(cls).items():
        where = f"{path}.{wire}" if path else wire
        value = request.get(wire)
        if value is None:
            if member.required:
                out.append(where)
            continue
        if member.model is not None:
            items = value if isinstance(value, list) else [value]
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    sub = f"{where}.{i + 1}" if isinstance(value, list) else where
                    out.extend(missing_required(member.model, item, sub))
    return out


def member(cls: type, path: str) -> Member:
    """The member at a dotted API path ("SystemDisk.Category", "DataDisk.Size"), through nested models."""
    current: type | None = cls
    found: Member | None = None
    for part in path.split("."):
        if current is None:
            raise KeyError(path)
        found = members(current)[part]
        current = found.model
    assert found is not None
    return found
