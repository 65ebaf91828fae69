"""Tencent Cloud's API 3.0 SDK models (tencentcloud-sdk-python-<product>), read as a consumer.

Every request is an `AbstractModel` whose `_deserialize(params)` reads the members the API declares and warns
"<names> fileds are useless." (sic) for every key it does not know, at every nesting level: that warning is the
unknown-parameter test. The member documentation is the class docstring (`:param _Name: text` and
`:type Name: str | list of X | :class:`...X``), parsed here per member so a constraint table can quote it.
"""

from __future__ import annotations

import functools
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Any

_PARAM = re.compile(r":param _(\w+): (.*?)\n\s*:type \1: ([^\n]*)", re.S)
_USELESS = re.compile(r"^(.*) fileds are useless\.$")


@dataclass(frozen=True)
class Member:
    name: str
    doc: str
    model: type | None  # a nested model, else None
    is_list: bool


@functools.cache
def members(cls: type) -> dict[str, Member]:
    """The model's members by API name, with their documentation (the __init__ docstring)."""
    doc = cls.__init__.__doc__ or ""
    module = sys.modules[cls.__module__]
    out: dict[str, Member] = {}
    for name, text, kind in _PARAM.findall(doc):
        kind = kind.strip()
        is_list = kind.startswith("list of ")
        target = kind.removeprefix("list of ").split(".")[-1].strip("`")
        nested = getattr(module, target, None) if target not in ("str", "int", "bool", "float") else None
        out[name] = Member(name, " ".join(text.split()), nested if isinstance(nested, type) else None, is_list)
    return out


def member(cls: type, path: str) -> Member:
    """The member at a dotted API path ("Placement.Zone", "DataDisks.DiskSize"), through nested models."""
    current: type | None = cls
    found: Member | None = None
    for part in path.split("."):
        if current is None:
            raise KeyError(path)
        found = members(current)[part]
        current = found.model
    assert found is not None
    return found


def useless(cls: type, request: dict[str, Any]) -> list[str]:
    """The SDK's own verdict: the names `_deserialize` warns about (every level), sorted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cls()._deserialize(request)
    names: list[str] = []
    for warning in caught:
        if m := _USELESS.match(str(warning.message)):
            names.extend(m.group(1).split(","))
    return sorted(names)


def unknown(cls: type, request: Any, path: str = "") -> list[str]:
    """Where the unknown keys are (dotted, 1-based list items): the same keys `useless` names, with their place."""
    if isinstance(request, list):
        return [p for i, item in enumerate(request) for p in unknown(cls, item, f"{path}.{i + 1}")]
    if not isinstance(request, dict):
        return []
    known = members(cls)
    out: list[str] = []
    for key, value in request.items():
        where = f"{path}.{key}" if path else key
        if key not in known:
            out.append(where)
        elif known[key].model is not None:
            out.extend(unknown(known[key].model, value, where))  # type: ignore[arg-type]
    return out
