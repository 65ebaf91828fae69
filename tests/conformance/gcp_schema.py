"""The GCP discovery documents google-api-python-client ships, as a request checker (`check_request`).

What a request is checked for, each against the document itself, never a copy of it:
- every body property exists in its schema (`properties`, inline object schemas included, or a map's
  `additionalProperties`), at every depth; none is output only (`readOnly: true`, or a description opening with
  "[Output Only]" / "Output only.");
- JSON types (`string`, `integer`, `number`, `boolean`, `array`, `object`; int64 and uint64 are strings that may
  travel as numbers), `enum` values, `pattern`s (of properties, of arrays' items, of path and query parameters,
  and the `@pattern` some compute descriptions carry), the `google-duration` and `google-datetime` formats;
- every property whose `annotations.required` names the request's method is present;
- the rules the documents state only in prose (`gcp_rules.RULES`: names, lengths, sizes, reserved keys, labels):
  each rule's sentence is looked up in its document at first use, so a rule that changes upstream fails here
  instead of going stale.

Values known only at deploy are placeholders (`<id of NAME>`): they pass type checks as strings and skip patterns,
enums and rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import googleapiclient

from components.placeholders import SECRET

DOCUMENTS = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents"
UNKNOWN = re.compile(r"<[^<>]+>")
AUTONAME = re.compile(r"<autoname:([^<>]+)>")
SAMPLE_SUFFIX = "0a1b2c3"  # what the bridge's 7 random hex digits stand for here
OUTPUT_ONLY = re.compile(r"^\s*(\[Output Only\]|Output only\.)")
DESCRIBED_PATTERN = re.compile(r"@pattern\s+(\S+)")
DURATION = re.compile(r"-?\d+(\.\d{1,9})?s")
DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


@dataclass(frozen=True)
class Request:
    """One REST call the provider makes for a resource: API document, method id, path/query parameters, body."""

    api: str  # the discovery document, e.g. "compute.beta"
    method: str  # its method id, e.g. "compute.instanceTemplates.insert"
    params: dict[str, Any]
    body: dict[str, Any] | None
    source: str  # the provider source that builds it (file: function)


@dataclass(frozen=True)
class Refusal:
    resource: str  # the logical name
    type: str
    where: str  # "body.properties.disks[0].diskSizeGb", "param zone"
    message: str

    def __str__(self) -> str:
        return f"{self.type} {self.resource}: {self.where}: {self.message}"


# --- the documents ------------------------------------------------------------------------------------------------


@cache
def document(api: str) -> dict[str, Any]:
    """A discovery document from google-api-python-client (read once per session)."""
    loaded: dict[str, Any] = json.loads((DOCUMENTS / f"{api}.json").read_text())
    return loaded


@cache
def methods(api: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}

    def walk(resources: dict[str, Any]) -> None:
        for res in resources.values():
            for m in res.get("methods", {}).values():
                found[m["id"]] = m
            walk(res.get("resources", {}))

    walk(document(api).get("resources", {}))
    return found


def one_line(text: str) -> str:
    return " ".join(text.split())


def described(api: str, at: str) -> str:
    """The description at `Schema.prop[.prop...]` (inline object schemas followed) or `method:<id>.<param>`."""
    if at.startswith("method:"):
        method, _, param = at.removeprefix("method:").rpartition(".")
        return one_line(methods(api)[method]["parameters"][param]["description"])
    ref, *path = at.split(".")
    node: dict[str, Any] = document(api)["schemas"][ref]
    for name in path:
        if "properties" not in node and "items" in node:
            node = node["items"]
        node = node["properties"][name]
    return one_line(node.get("description", ""))


def unknown(value: Any) -> bool:
    """A value known only at deploy (a placeholder in it), or a secret the plan never shows."""
    return isinstance(value, str) and (bool(UNKNOWN.search(value)) or value == SECRET)


def autoname(logical: str, lowercase: bool) -> str:
    """The name pulumi-gcp generates for logical name NAME (the bridge's AutoName: NAME, "-", 7 hex digits)."""
    return f"{logical.lower() if lowercase else logical}-{SAMPLE_SUFFIX}"


# --- the schema walk -----------------------------------------------------------------------------------------------


# The prose rules: (api, at, value) -> problems; `at` is `Schema.prop`, `Schema` or `method:<id>.<param>`.
Rules = Callable[[str, str, Any], list[str]]


def no_rules(api: str, at: str, value: Any) -> list[str]:
    return []


@dataclass
class Walk:
    api: str
    method: str
    apply: Rules
    problems: list[tuple[str, str]] = field(default_factory=list)

    def add(self, where: str, message: str) -> None:
        self.problems.append((where, message))

    def rules(self, where: str, at: str, value: Any) -> None:
        for message in self.apply(self.api, at, value):
            self.add(where, message)

    def value(self, where: str, prop: dict[str, Any], value: Any, at: str, ruled: bool = True) -> None:
        """`ruled`: the prose rules at `at` see this value (an array's items are not seen again one by one)."""
        if value is None:
            return  # an explicit null: the API reads it as unset
        if ruled:
            self.rules(where, at, value)
        if "$ref" in prop:
            if not isinstance(value, dict):
                self.add(where, f"expected an object ({prop['$ref']}), got {type(value).__name__}")
            else:
                self.object(where, prop["$ref"], document(self.api)["schemas"][prop["$ref"]], value)
            return
        kind = prop.get("type")
        if kind == "array":
            if not isinstance(value, list):
                self.add(where, f"expected an array, got {type(value).__name__}")
                return
            items = dict(prop.get("items", {}))
            if "pattern" in prop:  # a pattern on the array is its items' (compute `Tags.items`)
                items.setdefault("pattern", prop["pattern"])
            for i, item in enumerate(value):
                self.value(f"{where}[{i}]", items, item, at, ruled=False)
            return
        if kind == "object":
            if not isinstance(value, dict):
                self.add(where, f"expected an object, got {type(value).__name__}")
            elif "properties" in prop:  # an inline object schema (compute `Metadata.items`, `Firewall.allowed`)
                self.object(where, at, prop, value, ruled)
            elif "additionalProperties" in prop:
                for key, item in value.items():
                    self.value(f"{where}.{key}", prop["additionalProperties"], item, f"{at}.*")
            return
        self.scalar(where, prop, kind, value)

    def scalar(self, where: str, prop: dict[str, Any], kind: str | None, value: Any) -> None:
        fmt = prop.get("format")
        if kind == "string":
            if fmt in ("int64", "uint64") and isinstance(value, int) and not isinstance(value, bool):
                value = str(value)  # int64 travels as a JSON string or number
            if not isinstance(value, str):
                self.add(where, f"expected a string, got {type(value).__name__} {value!r}")
                return
            if unknown(value):
                return
            if fmt in ("int64", "uint64") and not re.fullmatch(r"-?\d+", value):
                self.add(where, f"{value!r} is not an {fmt}")
            if fmt == "google-duration" and not DURATION.fullmatch(value):
                self.add(where, f"{value!r} is not a duration (seconds with an 's' suffix, e.g. '3.5s')")
            if fmt == "google-datetime" and not DATETIME.fullmatch(value):
                self.add(where, f"{value!r} is not an RFC 3339 timestamp")
            if "enum" in prop and value not in prop["enum"]:
                self.add(where, f"{value!r} is not one of {prop['enum']}")
            pattern = prop.get("pattern")
            match = DESCRIBED_PATTERN.search(prop.get("description", ""))
            if pattern is None and match:  # compute states some patterns in the description, escaped once more
                pattern = match.group(1).replace("\\\\", "\\")
            if pattern and not re.fullmatch(pattern.removeprefix("^").removesuffix("$"), value):
                self.add(where, f"{value!r} does not match the pattern {pattern}")
        elif kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                self.add(where, f"expected an integer, got {type(value).__name__} {value!r}")
        elif kind == "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.add(where, f"expected a number, got {type(value).__name__} {value!r}")
        elif kind == "boolean" and not isinstance(value, bool):
            self.add(where, f"expected a boolean, got {type(value).__name__} {value!r}")

    def object(self, where: str, at: str, schema: dict[str, Any], body: dict[str, Any], ruled: bool = True) -> None:
        """`at`: the schema's name, or `Schema.prop` for an inline one (what `gcp_rules` keys its rules by; an
        array's inline items share their array's `at` and leave its rules to it)."""
        if ruled:
            self.rules(where, at, body)
        props = schema.get("properties", {})
        for key, value in body.items():
            prop = props.get(key)
            here = f"{where}.{key}"
            if prop is None:
                self.add(here, f"unknown property: {at} has no {key!r}")
                continue
            if prop.get("readOnly") or OUTPUT_ONLY.search(prop.get("description", "")):
                self.add(here, f"output only ({at}.{key}): the API does not take it")
                continue
            self.value(here, prop, value, f"{at}.{key}")
        for key, prop in props.items():
            if self.method in prop.get("annotations", {}).get("required", []) and body.get(key) in (None, "", []):
                self.add(f"{where}.{key}", f"required by {self.method} ({at}.{key})")


def check_request(req: Request, rules: Rules = no_rules) -> list[tuple[str, str]]:
    """(where, message) for everything the request's document refuses; empty when it conforms."""
    method = methods(req.api).get(req.method)
    if method is None:
        return [("method", f"{req.api} has no method {req.method}")]
    walk = Walk(req.api, req.method, rules)
    params = method.get("parameters", {})
    for key, value in req.params.items():
        spec = params.get(key)
        if spec is None:
            walk.add(f"param {key}", f"{req.method} has no parameter {key!r}")
            continue
        walk.rules(f"param {key}", f"method:{req.method}.{key}", value)
        walk.scalar(f"param {key}", spec, spec.get("type"), value)
    for key, spec in params.items():
        if spec.get("required") and key not in req.params:
            walk.add(f"param {key}", f"required by {req.method}")
    ref = method.get("request", {}).get("$ref")
    if ref is not None:
        if req.body is None:
            walk.add("body", f"{req.method} takes a {ref} body")
        else:
            walk.object("body", ref, document(req.api)["schemas"][ref], req.body)
    elif req.body:
        walk.add("body", f"{req.method} takes no body")
    return walk.problems
