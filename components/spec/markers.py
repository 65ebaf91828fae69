"""Markers on spec/model.py's fields for the package schema, and the reader of their docstrings
(components/provider_gen.py reads both)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from functools import cache

from pydantic import BaseModel


@dataclass(frozen=True)
class Choice:
    """A closed set of values with a name and a description per value (an enum in the package schema)."""

    name: str
    description: str
    values: dict[str, str] = field(default_factory=dict)  # value -> what it means ("" where the value says it)


class Flatten:
    """Marks an object field that the package schema takes flat: its `enabled` as the field, the rest beside it as
    `<field><Key>` (schema inference has no unions, and `spot` is `true|false` or an object in a stack file)."""


class TakesOutput:
    """Marks a field a program may take from another resource (an existing network's id, a key, an image): an
    `Input` in the package schema, whose value the provider resolves before the spec is built
    (components/provider.py; every other key is plain: it decides what is built)."""


@cache
def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """The docstring under each field of `model` and of the models it inherits from, by field name (as pydantic's
    `use_attribute_docstrings` reads them, cleaned with `inspect.cleandoc`)."""
    docs: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if not issubclass(klass, BaseModel) or klass is BaseModel:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
        assert isinstance(body, ast.ClassDef)
        for field_stmt, doc in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(field_stmt, ast.AnnAssign)
                and isinstance(field_stmt.target, ast.Name)
                and isinstance(doc, ast.Expr)
                and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)
            ):
                docs[field_stmt.target.id] = inspect.cleandoc(doc.value.value)
    return docs
