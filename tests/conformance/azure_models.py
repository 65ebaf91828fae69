"""What the Azure SDK packages declare about an ARM request, read from their models and operations at run time.

Two generations of model are installed: the TypeSpec-generated "hybrid" models (azure-mgmt-compute, -network,
-containerservice, -keyvault, -storage, -storagecache, -resource: `rest_field(name=..., visibility=[...])` with
type annotations, `Union[str, SomeEnum]` for an extensible enum, "Required." in the class docstring) and the
msrest models (azure-mgmt-msi, -authorization, -mysqlflexibleservers, -privatedns: `_attribute_map` with
`properties.x` keys for flattened properties, `_validation` with required/readonly/length/pattern). `fields(cls)`
reads either into one `Field` per JSON property; `operation(...)` reads an operation's signature: its path parameters
and its body model.
"""

from __future__ import annotations

import datetime as dt
import enum
import importlib
import inspect
import re
import sys
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

# An enum whose docstring says this is not one (compute `HardwareProfile.vm_size`: "The enum data type is
# currently deprecated"; the sizes are listed by an API, not the model): its values are not checked.
DEPRECATED_ENUM = "The enum data type is currently deprecated"


@dataclass(frozen=True)
class Kind:
    """A JSON value's declared type: `name` is str, int, float, bool, any, enum, list, dict or model."""

    name: str
    item: Kind | None = None  # list and dict items
    model: type | None = None
    values: tuple[str, ...] = ()  # an enum's known values


@dataclass(frozen=True)
class Field:
    attr: str  # the SDK attribute (its docstring's `:ivar` name)
    rest: str  # the JSON name
    container: tuple[str, ...]  # ("properties",) for a property flattened out of `properties` (msrest keys)
    kind: Kind
    readonly: bool
    required: bool
    validation: dict[str, Any]  # msrest `_validation` (max_length, min_length, pattern, minimum, maximum)


def models_package(cls: type) -> Any:
    """The `models` package a model class belongs to (`_models` in its annotations)."""
    module = cls.__module__
    return importlib.import_module(module.rsplit(".", 1)[0] if module.rsplit(".", 1)[-1].startswith("_") else module)


def _ivars(cls: type) -> dict[str, str]:
    """`:ivar name: text` and `:keyword name: text` from a model's docstrings, one line each."""
    text = (cls.__doc__ or "") + "\n" + (getattr(cls.__init__, "__doc__", None) or "")
    found: dict[str, str] = {}
    for m in re.finditer(
        r":(?:ivar|keyword) (\w+):(.*?)(?=\n\s*:(?:ivar|vartype|keyword|paramtype|param|type)\b|\Z)", text, re.S
    ):
        found.setdefault(m.group(1), " ".join(m.group(2).split()))
    return found


def known_values(text: str) -> tuple[str, ...]:
    """An msrest enum's values, from "Known values are: "A", "B", and "C"." in its docstring."""
    m = re.search(r"Known values are: (.*?)(?:\.\s|\.$)", text)
    return tuple(re.findall(r'"([^"]+)"', m.group(1))) if m else ()


def _kind(hint: Any, doc: str = "") -> Kind:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        members = [a for a in args if a is not type(None)]
        enums = [a for a in members if isinstance(a, type) and issubclass(a, enum.Enum)]
        if enums and DEPRECATED_ENUM not in doc:
            return Kind("enum", values=tuple(str(e.value) for e in enums[0]))
        if enums:
            return Kind("str")
        if len(members) == 1:
            return _kind(members[0])
        return Kind("any")
    if origin is list:
        return Kind("list", item=_kind(args[0]) if args else Kind("any"))
    if origin is dict:
        return Kind("dict", item=_kind(args[1]) if len(args) > 1 else Kind("any"))
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return Kind("enum", values=tuple(str(e.value) for e in hint))
        if hint is bool:
            return Kind("bool")
        if hint is int:
            return Kind("int")
        if hint is float:
            return Kind("float")
        if hint in (str, dt.datetime, dt.date, dt.timedelta, bytes):
            return Kind("str")
        if hasattr(hint, "_attribute_map") or _rest_fields(hint):
            return Kind("model", model=hint)
    return Kind("any")


def _msrest_kind(spec: str, cls: type, doc: str) -> Kind:
    if spec.startswith("[") and spec.endswith("]"):
        return Kind("list", item=_msrest_kind(spec[1:-1], cls, ""))
    if spec.startswith("{") and spec.endswith("}"):
        return Kind("dict", item=_msrest_kind(spec[1:-1], cls, ""))
    if spec == "str":
        values = known_values(doc)
        return Kind("enum", values=values) if values else Kind("str")
    simple = {"int": "int", "long": "int", "float": "float", "bool": "bool", "object": "any"}
    if spec in simple:
        return Kind(simple[spec])
    if spec in ("iso-8601", "rfc-1123", "duration", "date", "bytearray", "base64"):
        return Kind("str")
    model = getattr(sys.modules[cls.__module__], spec, None)
    return Kind("model", model=model) if isinstance(model, type) else Kind("any")


def _rest_fields(cls: type) -> dict[str, tuple[Any, type]]:
    """A hybrid model's `rest_field`s by attribute, with the class that declares each (as the model's `__new__`)."""
    found: dict[str, tuple[Any, type]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if not name.startswith("_") and type(value).__name__ == "_RestField":
                found[name] = (value, klass)
    return found


@cache
def fields(cls: type) -> dict[str, Field]:
    """A model's JSON properties by JSON name (a flattened msrest property under its last key part)."""
    out: dict[str, Field] = {}
    docs = _ivars(cls)
    if hasattr(cls, "_attribute_map"):  # msrest
        validation: dict[str, dict[str, Any]] = getattr(cls, "_validation", {})
        for attr, spec in cls._attribute_map.items():
            *container, rest = spec["key"].replace("\\.", "\x00").split(".")
            rules = validation.get(attr, {})
            kind = _msrest_kind(spec["type"], cls, docs.get(attr, ""))
            out[rest.replace("\x00", ".")] = Field(
                attr,
                rest.replace("\x00", "."),
                tuple(container),
                kind,
                bool(rules.get("readonly")),
                bool(rules.get("required")),
                {k: v for k, v in rules.items() if k not in ("readonly", "required")},
            )
        return out
    hints = typing.get_type_hints(cls, localns={"_models": models_package(cls)})
    for attr, (rf, _klass) in _rest_fields(cls).items():
        rest = rf._rest_name_input or attr
        readonly = rf._visibility == ["read"]
        required = bool(re.search(r"(?:^|\. )Required\.", docs.get(attr, "")))
        out[rest] = Field(attr, rest, (), _kind(hints.get(attr), docs.get(attr, "")), readonly, required, {})
    return out


@cache
def by_input_name(cls: type) -> dict[str, list[Field]]:
    """A model's fields by the names an azure-native input may carry: the JSON name, or the SDK's client name
    in camelCase where the two differ (`x-ms-client-name`: azure-native's `SdkName`, e.g. a storage account's
    `networkRuleSet` is `networkAcls` on the wire)."""
    found: dict[str, list[Field]] = {}
    for f in fields(cls).values():
        for name in dict.fromkeys((f.rest, camel(f.attr))):
            found.setdefault(name, []).append(f)
    return found


def field_doc(cls: type, attr: str) -> str:
    return _ivars(cls).get(attr, "")


@dataclass(frozen=True)
class Operation:
    """An SDK operation: its path parameters (JSON-cased as azure-native names them) and its body model."""

    package: str
    ops_class: str
    method: str
    path: tuple[str, ...]  # camelCase: resourceGroupName, vmScaleSetName
    body: type
    doc: str


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@cache
def operation(package: str, ops_class: str, method: str) -> Operation:
    """Read an operation's signature: positional parameters before the body are the URL's, the body's annotation
    names the model (`Union[Model, IO[bytes]]`)."""
    ops = importlib.import_module(f"{package}.operations")
    func = getattr(getattr(ops, ops_class), method)
    models = importlib.import_module(f"{package}.models")
    hints = typing.get_type_hints(func, localns={"_models": models, **vars(sys.modules[func.__module__])})
    params = [p for p in inspect.signature(func).parameters.values() if p.name != "self"]
    positional = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    body_name = positional[-1]
    body = next(
        a
        for a in typing.get_args(hints[body_name])
        if isinstance(a, type) and hasattr(a, "__mro__") and (hasattr(a, "_attribute_map") or _rest_fields(a))
    )
    return Operation(
        package, ops_class, method, tuple(camel(p) for p in positional[:-1]), body, inspect.getdoc(func) or ""
    )


def param_doc(op: Operation, name: str) -> str:
    """An operation's `:param name:` text (snake_case name), one line."""
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()
    m = re.search(rf":param {snake}:(.*?)(?=\n:(?:type|param|keyword|return)\b|\Z)", op.doc, re.S)
    return " ".join(m.group(1).split()) if m else ""
