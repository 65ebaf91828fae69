"""Huawei Cloud's API models (huaweicloudsdk<service>), read as a consumer.

Every request body is a class with `openapi_types` (attribute -> type: `str`, `int`, `bool`, `list[X]`,
`dict(str, X)`, `object`, or a nested model class name) and `attribute_map` (attribute -> JSON member name). A
member the map does not hold is one the API does not know: the SDK could not even build that body. The member
documentation is the __init__ docstring (`:param attr: text` / `:type attr: ...`, HTML-escaped), parsed here per
member so a constraint table can quote it.
"""

from __future__ import annotations

import functools
import html
import importlib
import re
from dataclasses import dataclass
from typing import Any

from components.placeholders import SECRET

_PARAM = re.compile(r":param (\w+): (.*?)\n\s*:type \1: ([^\n]*)", re.S)
_LIST = re.compile(r"list\[(\w+)\]")
_DICT = re.compile(r"dict\(str, (\w+)\)")
_SCALARS = {"str": str, "int": int, "float": (int, float), "bool": bool}
_DEPLOY_TIME = re.compile(r"<[^<>]+>")


@dataclass(frozen=True)
class Member:
    name: str  # the JSON member name
    attr: str  # the Python attribute
    kind: str  # openapi_types' text
    doc: str


def _package(cls: type) -> Any:
    return importlib.import_module(cls.__module__.rsplit(".", 1)[0])


def _model(cls: type, name: str) -> type | None:
    found = getattr(_package(cls), name, None)
    return found if isinstance(found, type) and hasattr(found, "openapi_types") else None


@functools.cache
def members(cls: type) -> dict[str, Member]:
    """The model's members by JSON name, with their documentation."""
    docs = {attr: " ".join(html.unescape(text).split()) for attr, text, _ in _PARAM.findall(cls.__init__.__doc__ or "")}
    out: dict[str, Member] = {}
    for attr, kind in cls.openapi_types.items():  # type: ignore[attr-defined]
        name = cls.attribute_map[attr]  # type: ignore[attr-defined]
        out[name] = Member(name, attr, kind, docs.get(attr, ""))
    return out


def nested(cls: type, member: Member) -> type | None:
    """The model a member holds (itself, or its list items or map values), if it is a model."""
    kind = member.kind
    inner = m.group(1) if (m := _LIST.fullmatch(kind) or _DICT.fullmatch(kind)) else kind
    return None if inner in _SCALARS or inner == "object" else _model(cls, inner)


def member(cls: type, path: str) -> Member:
    """The member at a dotted JSON path ("root_volume.volumetype", "nics.subnet_id"), through nested models."""
    current: type | None = cls
    found: Member | None = None
    for part in path.split("."):
        if current is None:
            raise KeyError(path)
        found = members(current)[part]
        current = nested(current, found)
    assert found is not None
    return found


def _deploy_time(value: Any) -> bool:
    return isinstance(value, str) and (value == SECRET or bool(_DEPLOY_TIME.search(value)))


def _type_problem(kind: str, value: Any) -> str | None:
    if kind == "object" or _deploy_time(value):
        return None
    if _LIST.fullmatch(kind):
        return None if isinstance(value, list) else f"is {type(value).__name__}, the model says {kind}"
    if _DICT.fullmatch(kind):
        return None if isinstance(value, dict) else f"is {type(value).__name__}, the model says {kind}"
    expected = _SCALARS.get(kind)
    if expected is None:  # a nested model
        return None if isinstance(value, dict) else f"is {type(value).__name__}, the model says {kind}"
    if isinstance(value, bool) and kind != "bool":  # bool is an int in Python, not in JSON
        return f"is bool, the model says {kind}"
    return None if isinstance(value, expected) else f"is {type(value).__name__}, the model says {kind}"


def problems(cls: type, body: Any, path: str = "") -> list[str]:
    """Members the model does not know and values of the wrong JSON type, with their place (1-based items)."""
    if not isinstance(body, dict):
        return []
    known = members(cls)
    out: list[str] = []
    for key, value in body.items():
        where = f"{path}.{key}" if path else key
        if key not in known:
            out.append(f"{where}: not a member of {cls.__name__}")
            continue
        m = known[key]
        if value is None:
            continue
        if problem := _type_problem(m.kind, value):
            out.append(f"{where} {problem}")
            continue
        inner = nested(cls, m)
        if (items := _LIST.fullmatch(m.kind)) and isinstance(value, list):
            for i, item in enumerate(value):
                if problem := _type_problem(items.group(1), item):
                    out.append(f"{where}.{i + 1} {problem}")
                elif inner is not None:
                    out.extend(problems(inner, item, f"{where}.{i + 1}"))
        elif inner is not None and _DICT.fullmatch(m.kind):
            for k, item in value.items():
                out.extend(problems(inner, item, f"{where}.{k}"))
        elif inner is not None:
            out.extend(problems(inner, value, where))
    return out
