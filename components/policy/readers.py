"""The rules' per-type facts that are data (resource_types.yaml, the sections after `budgets`): which input of a type
holds a disk's key, a password, a spot flag, an API endpoint or an inbound rule's sources and ports. The rules call
these readers for the types the data describes, so a cloud whose resources have these shapes adds YAML rows, not
branches in the rules."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .model import at, truthy
from .types import resource_type_data

Ports = tuple[int, int] | None  # None: every port

DISK_ENCRYPTION: dict[str, list[dict[str, Any]]] = resource_type_data("diskEncryption")
CUSTOMER_KEYS: dict[str, list[dict[str, Any]]] = resource_type_data("customerKeys")
KEY_UNREACHABLE_FIX: dict[str, str] = resource_type_data("keyUnreachableFix")
PASSWORD_LOGIN: dict[str, list[dict[str, Any]]] = resource_type_data("passwordLogin")
SPOT: dict[str, list[dict[str, Any]]] = resource_type_data("spot")
API_ENDPOINTS: dict[str, dict[str, dict[str, Any]]] = resource_type_data("apiEndpoints")
INGRESS_RULES: dict[str, dict[str, Any]] = resource_type_data("ingressRules")
CLUSTER_RANGES: dict[str, str] = resource_type_data("clusterRanges")


def is_set(row: Mapping[str, Any], value: Any) -> bool:
    """A check row's judgement of one value: `equals` that value, `bool` true or "true", else any non-empty value."""
    if "equals" in row:
        return bool(value == row["equals"])
    if row.get("bool"):
        return truthy(value)
    return bool(value)


def unset_checks(rows: list[dict[str, Any]] | None, props: Mapping[str, Any]) -> Iterator[str]:
    """The message of each check row whose input is not set, per item for a `list` row (`{name}`: the item's name)."""
    for row in rows or []:
        if "list" not in row:
            if not is_set(row, at(props, row["key"])):
                yield str(row["message"])
            continue
        for item in at(props, row["list"]) or []:
            if not _selects(row, item) or ("key" in row and is_set(row, item.get(row["key"]))):
                continue
            name = next((item.get(n) for n in row.get("name") or [] if item.get(n)), None) or ""
            yield str(row["message"]).format(name=name).replace("  ", " ")


def _selects(row: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    """A list row's items: those matching every `only` input and none of the `skip` inputs (both optional)."""
    only, skip = row.get("only") or {}, row.get("skip") or {}
    return all(item.get(k) == v for k, v in only.items()) and not any(item.get(k) == v for k, v in skip.items())


def any_set(rows: list[dict[str, Any]] | None, props: Mapping[str, Any]) -> bool:
    return any(is_set(row, at(props, row["key"])) for row in rows or [])


def api_endpoint(kind: str, props: Mapping[str, Any]) -> tuple[bool, list[str] | None, list[str]] | None:
    """(public, allowed CIDRs: None where no input holds them, findings) of an endpoint type the data describes."""
    entry = API_ENDPOINTS.get(kind)
    if entry is None:
        return None
    public = entry["public"]
    private = entry.get("private")
    found = [] if private is None or is_set(private, at(props, private["key"])) else [str(private["message"])]
    return is_set(public, at(props, public["key"])), None, found


def ports_of(spec: Any) -> Ports:
    """A port, a range `a-b` or `a/b`, or all (`*`, `all`, `-1`, `-1/-1`, missing): None means every port."""
    text = str(spec).strip().lower() if spec is not None else "all"
    if text in ("*", "all", "-1", "-1/-1", ""):
        return None
    for sep in ("-", "/"):
        if sep in text:
            low, high = text.split(sep, 1)
            return int(low), int(high)
    return int(text), int(text)


def _admits(row: Mapping[str, Any], rule: Mapping[str, Any]) -> bool:
    defaults = row.get("defaults") or {}
    for key, want in row["when"].items():
        value = rule[key] if key in rule else defaults.get(key, "" if row.get("upper") else None)
        if (str(value).upper() != str(want).upper()) if row.get("upper") else (value != want):
            return False
    return True


def _rule_ports(row: Mapping[str, Any], rule: Mapping[str, Any]) -> list[Ports]:
    if any(rule.get(k) == v for k, v in (row.get("allPortsWhen") or {}).items()) or "ports" not in row:
        return [None]
    given = rule.get(row["ports"], row["portsDefault"]) if "portsDefault" in row else rule.get(row["ports"])
    unless = row.get("allPortsUnless")
    if unless is not None and not (given and rule.get(unless)):
        return [None]
    split = row.get("portsSplit")
    return [ports_of(p) for p in str(given).split(split)] if split else [ports_of(given)]


def _admitting(kind: str, props: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any], list[Any]]]:
    """(the type's row, one inbound allow rule, its sources) for a type the data describes; group sources skipped."""
    row = INGRESS_RULES.get(kind)
    if row is None:
        return
    rules = (props.get(row["list"]) or []) if "list" in row else [props]
    for rule in rules:
        if not _admits(row, rule) or any(rule.get(k) for k in row.get("groupSources") or []):
            continue
        sources = [rule.get(k) for k in row["sources"] if rule.get(k)]
        if not sources and row.get("sourceUnsetIsEverywhere"):
            by = row["everywhereBy"]
            sources = [by.get(str(rule.get(by["key"])), by["default"])]
        yield row, rule, sources


def ingress_sources(kind: str, props: Mapping[str, Any]) -> Iterator[Any]:
    """The sources of each inbound allow rule (its ports not read: the open-ingress rule judges every port)."""
    for _, _, sources in _admitting(kind, props):
        yield from sources


def ingress_rules(kind: str, props: Mapping[str, Any]) -> Iterator[tuple[list[Ports], Any]]:
    """(port ranges, source) of each inbound allow rule of a type the data describes."""
    for row, rule, sources in _admitting(kind, props):
        ports = _rule_ports(row, rule)
        for source in sources:
            yield ports, source
