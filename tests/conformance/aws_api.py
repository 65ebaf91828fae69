"""An AWS API request judged against botocore's service models: what the AWS APIs accept.

Three layers, each reported as one `Refusal` per problem:

1. botocore's own `ParamValidator` (the SDK's client-side check): types, required members, unknown members, minimums.
2. The rest of the model's constraints, which the services enforce server-side and botocore leaves to them: maximum
   lengths and values, list and map sizes, enums and `pattern`. A pattern is Java regex syntax matched against the
   whole value (the services reject `'` in an IAM tag value although `[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*` would find an
   empty match anywhere), so `\\p{L}`-style classes are expanded and `fullmatch` is used.
3. Constraints botocore states only in documentation text, where a model has no `pattern` (EC2 above all): parsed from
   each member's documentation (`DOC_RULES`), so a botocore update is followed, and the general tag restrictions
   parsed from one botocore text (`tag_rules`) applied to every tag collection.

A value known only at deploy (a placeholder of the offline plan such as `<id of llm-vpc>`, or `[secret]`) is present
but unknown: it passes everything except the required and type checks.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import botocore.session
from botocore.model import ServiceModel, Shape, StructureShape
from botocore.validate import ParamValidator

SECRET = "[secret]"
# any `<...>` the mocks write (a reference, an invoke answer, `<resolved at deploy: ...>`)
PLACEHOLDER = re.compile(r"<[^<>\n]+>")


def is_unknown(value: Any) -> bool:
    return isinstance(value, str) and (value == SECRET or PLACEHOLDER.search(value) is not None)


@dataclass(frozen=True)
class Request:
    """One AWS API call the provider makes for a registered resource."""

    service: str  # botocore's service name: "ec2", "autoscaling", ...
    operation: str  # "AuthorizeSecurityGroupIngress"
    params: dict[str, Any]
    urn: str  # the resource it is made for
    source: str  # the provider code that builds it
    phase: str = "create"  # or "delete": a request the provider makes when the resource is destroyed


@dataclass(frozen=True)
class Refusal:
    urn: str
    service: str
    operation: str
    path: str
    message: str
    source: str

    def __str__(self) -> str:
        return f"{self.urn}: {self.service} {self.operation} {self.path}: {self.message} [{self.source}]"


@functools.cache
def _session() -> botocore.session.Session:
    return botocore.session.get_session()


@functools.cache
def service_model(service: str) -> ServiceModel:
    """Loaded once per process: the models are large (EC2's JSON is ~6 MB)."""
    return _session().get_service_model(service)


def botocore_version() -> str:
    return str(botocore.__version__)


# ---------------------------------------------------------------------------------------------------------------
# Java regex (the models' dialect) as Python `re`


@functools.cache
def _categories() -> str:
    """The first letter of every code point's Unicode general category, one character per code point (~0.7 s)."""
    return "".join([c[0] for c in map(unicodedata.category, map(chr, range(0x110000)))])


@functools.cache
def _category_class(letter: str) -> str:
    """The code points whose Unicode general category starts with `letter` (`\\p{L}`), as a character-class body."""
    runs = re.finditer(f"{letter}+", _categories())
    return "".join(f"\\U{m.start():08x}-\\U{m.end() - 1:08x}" for m in runs)


@functools.cache
def python_pattern(pattern: str) -> re.Pattern[str]:
    translated = pattern.replace(r"\uD800\uDC00-\uDBFF\uDFFF", r"\U00010000-\U0010FFFF")  # a surrogate-pair range
    translated = re.sub(r"\\p\{(\w)\}", lambda m: _category_class(m.group(1)), translated)
    # Java's inline `(?i)` inside a group (budgets BudgetName: `(?![^:\\]*/action/|(?i).*<script>...`) applies to
    # the rest of that group; Python takes global flags only at the start: scope it as `(?i:...)` to the group's end
    translated = re.sub(r"\(\?i\)([^()]*)\)", r"(?i:\1))", translated)
    return re.compile(translated)


# ---------------------------------------------------------------------------------------------------------------
# Constraints stated in documentation text


@dataclass(frozen=True)
class DocRule:
    """One constraint read from a member's documentation: `text` is what it was read from."""

    text: str
    check: Callable[[Any], str | None]  # the problem with a value, or None


def _paragraphs(doc: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", " ", p)).strip() for p in re.split(r"</p>|</li>", doc or "")]


_WORDS = {
    "alphanumeric characters": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "spaces": " ",
    "space": " ",
}


def _charset(listing: str) -> str | None:
    """`a-z, A-Z, 0-9, spaces, and ._-:/()#,@[]+=&;{}!$*` (or `alphanumeric characters, hyphens ( - )`) as a set."""
    allowed = ""
    for raw in re.split(r",\s+", listing.strip()):
        token = re.sub(r"^and\s+", "", raw.strip())
        if re.fullmatch(r"\w-\w", token):
            allowed += "".join(chr(c) for c in range(ord(token[0]), ord(token[2]) + 1))
        elif token.rstrip(".") in _WORDS:
            allowed += _WORDS[token.rstrip(".")]
        elif m := re.fullmatch(r"[a-z ]+\(\s*(\S)\s*\)\.?", token):  # "hyphens ( - )"
            allowed += m.group(1)
        elif re.search(r"[A-Za-z0-9]", token):
            return None  # words this parser does not know: no rule rather than a wrong one
        else:
            allowed += token
    return allowed or None


def _rule_charset(doc: str) -> Iterator[DocRule]:
    for text in _paragraphs(doc):
        m = re.search(r"\b(?:Allowed|Valid) characters(?: are|:)\s+(.+)$", text) or re.search(
            r"\bValid values:\s+([^|]+)$", text
        )
        if m is None or (allowed := _charset(m.group(1))) is None:
            continue
        chars = frozenset(allowed)

        def check(value: Any, chars: frozenset[str] = chars) -> str | None:
            bad = sorted({c for c in str(value) if c not in chars})
            return f"characters {''.join(bad)!r} are not allowed" if bad else None

        yield DocRule(text, check)


def _rule_length(doc: str) -> Iterator[DocRule]:
    for text in _paragraphs(doc):
        for m in re.finditer(r"\b(?:[Uu]p to|maximum of|at most)\s+([\d,]+)\s+(ASCII\s+|Unicode\s+)?characters", text):
            limit, ascii_only = int(m.group(1).replace(",", "")), bool(m.group(2) and "ASCII" in m.group(2))

            def check(value: Any, limit: int = limit, ascii_only: bool = ascii_only) -> str | None:
                text_ = str(value)
                if len(text_) > limit:
                    return f"{len(text_)} characters, at most {limit} allowed"
                return "only ASCII characters are allowed" if ascii_only and not text_.isascii() else None

            yield DocRule(m.group(0), check)


def _rule_prefix(doc: str) -> Iterator[DocRule]:
    flat = html.unescape(doc or "")
    for m in re.finditer(
        r"(?:[Cc]an't|[Cc]annot|[Mm]ay not|must not)\s+(?:start|begin) with\s+<code>([^<]+)</code>", flat
    ):
        prefix = m.group(1)
        yield DocRule(m.group(0), lambda v, p=prefix: f"must not start with {p!r}" if str(v).startswith(p) else None)
    for m in re.finditer(r"must begin with\s+<code>([^<]+)</code>", flat):
        prefix = m.group(1)
        yield DocRule(m.group(0), lambda v, p=prefix: None if str(v).startswith(p) else f"must start with {p!r}")


def _rule_enum(doc: str) -> Iterator[DocRule]:
    flat = html.unescape(doc or "")
    for m in re.finditer(r"Valid values:\s*((?:<code>[^<]+</code>\s*\|?\s*){2,})", flat):
        values = tuple(re.findall(r"<code>([^<]+)</code>", m.group(1)))
        yield DocRule(m.group(0), lambda v, vs=values: None if v in vs else f"{v!r} is not one of {', '.join(vs)}")


def _rule_forbidden_char(doc: str) -> Iterator[DocRule]:
    for text in _paragraphs(doc):
        for m in re.finditer(r"cannot use an?\s+\w+\s+\(\s*(\S)\s*\)", text):
            char = m.group(1)
            yield DocRule(m.group(0), lambda v, c=char: f"{c!r} is not allowed" if c in str(v) else None)


def _rule_ascii_range(doc: str) -> Iterator[DocRule]:
    for text in _paragraphs(doc):
        for m in re.finditer(r"any ASCII character (\d+) to (\d+)", text):
            low, high = int(m.group(1)), int(m.group(2))

            def check(value: Any, low: int = low, high: int = high) -> str | None:
                bad = sorted({c for c in str(value) if not low <= ord(c) <= high})
                return f"characters {''.join(bad)!r} are outside ASCII {low}-{high}" if bad else None

            yield DocRule(m.group(0), check)


def _rule_value_range(doc: str) -> Iterator[DocRule]:
    for text in _paragraphs(doc):
        for m in re.finditer(r"Valid Range: Minimum value of ([\d,]+)\. Maximum value of ([\d,]+)", text):
            low, high = (int(g.replace(",", "")) for g in m.groups())
            yield DocRule(
                m.group(0),
                lambda v, lo=low, hi=high: None if lo <= int(v) <= hi else f"{v} is outside {lo}..{hi}",
            )


def _rule_user_data(doc: str) -> Iterator[DocRule]:
    text = " ".join(_paragraphs(doc))
    m = re.search(r"limited to (\d+) KB", text)
    if m is None or "base64" not in text:
        return
    limit = int(m.group(1)) * 1024

    def check(value: Any) -> str | None:
        try:
            raw = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            return "not base64-encoded"
        return f"{len(raw)} bytes decoded, at most {limit} allowed" if len(raw) > limit else None

    yield DocRule(m.group(0), check)


def _rule_doc_pattern(doc: str) -> Iterator[DocRule]:
    """ "Pattern: <code>^...$</code>" in a member's documentation (grafana User id, the Identity Center id form),
    where the shape itself carries no `pattern`; a pattern Python cannot compile gives no rule."""
    for m in re.finditer(r"Pattern:\s*<code>([^<]+)</code>", html.unescape(doc or "")):
        try:
            # the documentation doubles its backslashes; Java's \p{L} classes do not compile in Python: no rule
            pattern = re.compile(m.group(1).replace("\\\\", "\\"))
        except re.error:
            continue
        yield DocRule(m.group(0), lambda v, p=pattern: None if p.search(str(v)) else f"does not match {p.pattern}")


DOC_RULES: tuple[Callable[[str], Iterator[DocRule]], ...] = (
    _rule_charset,
    _rule_length,
    _rule_prefix,
    _rule_enum,
    _rule_forbidden_char,
    _rule_ascii_range,
    _rule_value_range,
    _rule_user_data,
    _rule_doc_pattern,
)

# Members whose own documentation omits a limit another member of the same model states for the same value.
# RunInstances' user data is the launch template's (both are an instance's user data; EC2 User Guide, "user-data":
# 16 KB), so ec2 RequestLaunchTemplateData.UserData's "User data is limited to 16 KB" applies to it too.
BORROWED_DOCS: dict[tuple[str, str, str], tuple[str, str]] = {
    ("ec2", "RunInstancesRequest", "UserData"): ("RequestLaunchTemplateData", "UserData"),
}


@functools.cache
def doc_rules(service: str, structure: str, member: str) -> tuple[DocRule, ...]:
    model = service_model(service)
    shape = model.shape_for(structure)
    assert isinstance(shape, StructureShape)
    docs = [shape.members[member].documentation]
    if (borrowed := BORROWED_DOCS.get((service, structure, member))) is not None:
        lender = model.shape_for(borrowed[0])
        assert isinstance(lender, StructureShape)
        docs.append(lender.members[borrowed[1]].documentation)
    return tuple(rule for doc in docs for parse in DOC_RULES for rule in parse(doc))


@dataclass(frozen=True)
class TagRules:
    """AWS's general tag restrictions as botocore states them (eks `TagMap`, "The following basic restrictions
    apply to tags"): the count per resource, key and value lengths, the reserved `aws:` prefix."""

    count: int
    key_length: int
    value_length: int
    reserved_prefix: str  # compared case-insensitively ("any upper or lowercase combination")


@functools.cache
def tag_rules() -> TagRules:
    text = " ".join(_paragraphs(service_model("eks").shape_for("TagMap").documentation))

    def number(label: str) -> int:
        m = re.search(label + r"\s*[\u2013-]\s*(\d+)", text)
        assert m is not None, f"botocore eks TagMap no longer states {label!r}"
        return int(m.group(1))

    prefix = re.search(r"Do not use\s+(\S+?)\s*,", text)
    assert prefix is not None, "botocore eks TagMap no longer states the reserved prefix"
    return TagRules(
        number("Maximum number of tags per resource"),
        number("Maximum key length"),
        number("Maximum value length"),
        prefix.group(1),
    )


# ---------------------------------------------------------------------------------------------------------------
# The walk


def _tag_pairs(shape: Shape, value: Any) -> list[tuple[Any, Any]] | None:
    """A tag collection's (key, value) pairs, or None when `value` is not one."""
    if shape.type_name == "map" and isinstance(value, dict):
        return list(value.items())
    if shape.type_name == "list" and isinstance(value, list):
        member = getattr(shape, "member", None)
        names = set(getattr(member, "members", {}) or {})
        for key, val in (("Key", "Value"), ("TagKey", "TagValue")):
            if key in names:
                return [(item.get(key), item.get(val)) for item in value if isinstance(item, dict)]
    return None


def _check_tags(pairs: list[tuple[Any, Any]], own_max: int | None) -> Iterator[str]:
    """`own_max`: the collection's own size limit in the model (then the model's check reports the count)."""
    rules = tag_rules()
    if own_max is None and len(pairs) > rules.count:
        yield f"{len(pairs)} tags, at most {rules.count} per resource (eks TagMap: Maximum number of tags per resource)"
    reserved = rules.reserved_prefix.lower()
    for key, val in pairs:
        for what, text, limit in (("key", key, rules.key_length), ("value", val, rules.value_length)):
            if not isinstance(text, str) or is_unknown(text):
                continue
            if len(text) > limit:
                yield f"tag {what} {text[:40]!r}: {len(text)} characters, at most {limit}"
            if text.lower().startswith(reserved):
                yield f"tag {what} {text!r}: the prefix {rules.reserved_prefix} is reserved for AWS"


class _Walk:
    def __init__(self, service: str) -> None:
        self.service = service
        self.problems: list[tuple[str, str]] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def value(self, shape: Shape, value: Any, path: str) -> None:
        if value is None:
            return
        meta = shape.metadata
        kind = shape.type_name
        if kind == "structure" and isinstance(value, dict):
            assert isinstance(shape, StructureShape)
            for name, member_value in value.items():
                member = shape.members.get(name)
                if member is None:
                    continue  # botocore's validator reports unknown members
                self.value(member, member_value, f"{path}.{name}")
                if isinstance(member_value, (str, int, float)) and not is_unknown(member_value):
                    for rule in doc_rules(self.service, shape.name, name):
                        if (problem := rule.check(member_value)) is not None:
                            self.add(f"{path}.{name}", f"{problem} (botocore documentation: {rule.text!r})")
                if name.lower() == "tags" and (pairs := _tag_pairs(member, member_value)) is not None:
                    for problem in _check_tags(pairs, member.metadata.get("max")):
                        self.add(f"{path}.{name}", problem)
        elif kind == "list" and isinstance(value, list):
            self._size(meta, len(value), path, "items")
            for i, item in enumerate(value):
                self.value(shape.member, item, f"{path}[{i}]")  # type: ignore[attr-defined]
        elif kind == "map" and isinstance(value, dict):
            self._size(meta, len(value), path, "entries")
            for key, item in value.items():
                self.value(shape.key, key, f"{path}.<key {key}>")  # type: ignore[attr-defined]
                self.value(shape.value, item, f"{path}[{key}]")  # type: ignore[attr-defined]
        elif kind == "string" and isinstance(value, str) and not is_unknown(value):
            self._string(shape, value, path)
        elif kind in ("integer", "long", "double", "float") and isinstance(value, (int, float)):
            if "min" in meta and value < meta["min"]:
                self.add(path, f"{value} is below the minimum {meta['min']} ({shape.name})")
            if "max" in meta and value > meta["max"]:
                self.add(path, f"{value} is above the maximum {meta['max']} ({shape.name})")

    def _size(self, meta: dict[str, Any], size: int, path: str, what: str) -> None:
        if "min" in meta and size < meta["min"]:
            self.add(path, f"{size} {what}, at least {meta['min']}")
        if "max" in meta and size > meta["max"]:
            self.add(path, f"{size} {what}, at most {meta['max']}")

    def _string(self, shape: Shape, value: str, path: str) -> None:
        meta = shape.metadata
        if "enum" in meta and value not in meta["enum"]:
            shown = ", ".join(meta["enum"][:12]) + (", ..." if len(meta["enum"]) > 12 else "")
            self.add(path, f"{value!r} is not a value of {shape.name} ({shown})")
        if "max" in meta and len(value) > meta["max"]:
            self.add(path, f"{len(value)} characters, at most {meta['max']} ({shape.name})")
        if "min" in meta and len(value) < meta["min"]:
            self.add(path, f"{len(value)} characters, at least {meta['min']} ({shape.name})")
        if "pattern" in meta and python_pattern(meta["pattern"]).fullmatch(value) is None:
            self.add(path, f"{value[:80]!r} does not match {shape.name}'s pattern {meta['pattern']}")


def _stand_ins(shape: Shape, value: Any) -> Any:
    """`value` for botocore's validator: an unknown string stands in as the shortest string the shape allows, so
    its length checks judge only what is known (a type mismatch is still reported)."""
    if isinstance(value, dict) and shape.type_name == "structure":
        members = shape.members  # type: ignore[attr-defined]
        return {k: _stand_ins(members[k], v) if k in members else v for k, v in value.items()}
    if isinstance(value, dict) and shape.type_name == "map":
        return {k: _stand_ins(shape.value, v) for k, v in value.items()}  # type: ignore[attr-defined]
    if isinstance(value, list) and shape.type_name == "list":
        return [_stand_ins(shape.member, v) for v in value]  # type: ignore[attr-defined]
    if shape.type_name == "string" and is_unknown(value):
        return "x" * max(int(shape.metadata.get("min", 1)), 1)
    return value


def validate(request: Request) -> list[Refusal]:
    """Every problem AWS would have with `request`, one `Refusal` each."""
    operation = service_model(request.service).operation_model(request.operation)
    shape = operation.input_shape
    assert shape is not None
    found: list[tuple[str, str]] = []
    report = ParamValidator().validate(_stand_ins(shape, request.params), shape)
    if report.has_errors():
        for line in report.generate_report().splitlines():
            found.append(("botocore", line.strip()))
    walk = _Walk(request.service)
    walk.value(shape, request.params, request.operation)
    found += walk.problems
    return [Refusal(request.urn, request.service, request.operation, p, m, request.source) for p, m in found]
