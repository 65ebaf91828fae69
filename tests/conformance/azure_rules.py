"""The rules the Azure SDK states only in docstrings, as checks keyed by where they are stated.

A `Rule` quotes the docstring of a model attribute (`Model.attr`), of a whole model (`Model`, its own rule
quoting the attribute it reads) or of an operation's URL parameter (`Ops.method.param`); the sentence is looked
up in the installed SDK at first use, so a rule that changes upstream fails the tests instead of going stale.
What is not stated in the installed SDKs is not checked here (the Key Vault name's 3-24 rule, for one: the
hybrid azure-mgmt-keyvault 14.1 states no URL constraints). Three statements are left out as stale, each
contradicted by Microsoft's current documentation: a data disk's "diskSizeGB ... cannot be larger than 1023"
(managed disks go far beyond), an SSH key "in ssh-rsa format" (Linux VMs take Ed25519 keys) and a storage account's
"maximum of 15 tags" (tag-resources.md: 50 per resource, the count held by `tags` below).
"""

from __future__ import annotations

import base64
import binascii
import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from azure.mgmt.compute import models as compute_models

from .azure_models import Operation, field_doc, operation, param_doc
from .gcp_schema import one_line, unknown

Check = Callable[[Any], list[str]]


@dataclass(frozen=True)
class Rule:
    at: str  # "Model.attr", "Model" (checked on the whole object; `quoted` names the attribute quoted) or
    # "Ops.method.param"
    quote: str
    check: Check
    quoted: str = ""  # for a whole-model rule: the attribute whose docstring holds the quote
    package: str = ""  # the SDK package: an operation's, or a model's whose class name other packages reuse


def length(low: int, high: int, what: str) -> Check:
    def check(value: Any) -> list[str]:
        if not isinstance(value, str) or unknown(value) or low <= len(value) <= high:
            return []
        return [f"{value!r} is {len(value)} characters; {what} {low}-{high}"]

    return check


def matches(regex: str, what: str) -> Check:
    return lambda v: [] if not isinstance(v, str) or unknown(v) or re.fullmatch(regex, v) else [f"{v!r} {what}"]


def in_range(low: int, high: int) -> Check:
    def check(value: Any) -> list[str]:
        if isinstance(value, bool) or not isinstance(value, int) or low <= value <= high:
            return []
        return [f"{value} is not between {low} and {high}"]

    return check


def custom_data(value: Any) -> list[str]:
    if not isinstance(value, str) or unknown(value):
        return []
    try:
        size = len(base64.b64decode(value, validate=True))
    except binascii.Error:
        return ["customData is not base-64"]
    return [f"customData decodes to {size} bytes; at most 65535"] if size > 65535 else []


@cache
def disallowed_admin_names() -> frozenset[str]:
    text = field_doc(compute_models.OSProfile, "admin_username")
    listed = text.split("**Disallowed values:**", 1)[1].split("<br>", 1)[0]
    return frozenset(re.findall(r'"([^"]+)"', listed))


def admin_username(value: Any) -> list[str]:
    if not isinstance(value, str) or unknown(value):
        return []
    out = [f"{value!r} is a disallowed admin name"] if value in disallowed_admin_names() else []
    return out + ([f"{value!r} is {len(value)} characters; Linux: 1-64"] if not 1 <= len(value) <= 64 else [])


def computer_name(profile: Any) -> list[str]:
    """compute OSProfile.computer_name: at most 64 characters on Linux, 15 on Windows."""
    if not isinstance(profile, dict) or not isinstance(profile.get("computerName"), str):
        return []
    name, limit = profile["computerName"], 64 if profile.get("linuxConfiguration") else 15
    return [] if unknown(name) or len(name) <= limit else [f"computerName {name!r} is {len(name)}; at most {limit}"]


def port_range(value: Any) -> list[str]:
    if not isinstance(value, str) or unknown(value) or value == "*":
        return []
    parts = value.split("-")
    ok = 1 <= len(parts) <= 2 and all(p.isdigit() and 0 <= int(p) <= 65535 for p in parts)
    return [] if ok else [f"{value!r} is not a port or a range of 0-65535, nor '*'"]


def pool_count(pool: Any) -> list[str]:
    """containerservice: 0-1000 agents in a user pool, 1-1000 in a system pool."""
    if not isinstance(pool, dict) or not isinstance(pool.get("count"), int):
        return []
    low = 1 if str(pool.get("mode", "")).lower() == "system" else 0
    return [] if low <= pool["count"] <= 1000 else [f"count {pool['count']} is not between {low} and 1000"]


def duration_minutes(low: int, high: int) -> Check:
    """An ISO 8601 duration (PT30M, PT1H) between `low` and `high` minutes."""

    def check(value: Any) -> list[str]:
        m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?", value) if isinstance(value, str) else None
        if m is None or not any(m.groups()):
            return [] if not isinstance(value, str) or unknown(value) else [f"{value!r} is not an ISO 8601 PTnHnM"]
        minutes = int(m.group(1) or 0) * 60 + int(m.group(2) or 0)
        return [] if low <= minutes <= high else [f"{value!r} is not between {low} and {high} minutes"]

    return check


def at_most_entries(limit: int) -> Check:
    return lambda v: [f"{len(v)} entries; at most {limit}"] if isinstance(v, dict) and len(v) > limit else []


def storage_tags(value: Any) -> list[str]:
    """storage StorageAccountCreateParameters.tags: keys of at most 128 characters, values of 256."""
    if not isinstance(value, dict):
        return []
    out = [f"tag name {k!r} is longer than 128" for k in value if isinstance(k, str) and len(k) > 128]
    return out + [
        f"tag {k!r} value is longer than 256" for k, v in value.items() if isinstance(v, str) and len(v) > 256
    ]


def dns_service_ip(profile: Any) -> list[str]:
    """containerservice ContainerServiceNetworkProfile: dnsServiceIP inside serviceCidr."""
    import ipaddress

    if not isinstance(profile, dict):
        return []
    ip, cidr = profile.get("dnsServiceIP"), profile.get("serviceCidr")
    if not isinstance(ip, str) or not isinstance(cidr, str) or unknown(ip) or unknown(cidr):
        return []
    inside = ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    return [] if inside else [f"dnsServiceIP {ip} is outside serviceCidr {cidr}"]


def kubelet_identity(profile: Any) -> list[str]:
    if not isinstance(profile, dict):
        return []
    return [
        f"identityProfile key {k!r}: the only accepted key is kubeletidentity"
        for k in profile
        if k != "kubeletidentity"
    ]


RFC_SHARE = r"(?=.{3,63}$)[a-z0-9]+(?:-[a-z0-9]+)*"
RULES: list[Rule] = [
    Rule(
        "VirtualMachineScaleSetOSProfile.computer_name_prefix",
        "Computer name prefixes must be 1 to 15 characters long.",
        length(1, 15, "a computer name prefix is"),
    ),
    Rule("OSProfile", "**Max-length (Linux):** 64 characters", computer_name, quoted="computer_name"),
    Rule("OSProfile.admin_username", "**Max-length (Linux):** 64 characters", admin_username),
    Rule("VirtualMachineScaleSetOSProfile.admin_username", "**Max-length (Linux):** 64 characters", admin_username),
    Rule("OSProfile.custom_data", "The maximum length of the binary array is 65535 bytes.", custom_data),
    Rule(
        "VirtualMachineScaleSetOSProfile.custom_data",
        "The maximum length of the binary array is 65535 bytes.",
        custom_data,
    ),
    Rule(
        "SecurityRulePropertiesFormat.priority",
        "The value can be between 100 and 4096.",
        in_range(100, 4096),
    ),
    Rule(
        "SecurityRulePropertiesFormat.source_port_range",
        "Integer or range between 0 and 65535. Asterisk '*' can also be used to match all ports.",
        port_range,
    ),
    Rule(
        "SecurityRulePropertiesFormat.destination_port_range",
        "Integer or range between 0 and 65535. Asterisk '*' can also be used to match all ports.",
        port_range,
    ),
    Rule(
        "SecurityRulePropertiesFormat.description",
        "Restricted to 140 chars.",
        lambda v: [f"{len(v)} characters; at most 140"] if isinstance(v, str) and len(v) > 140 else [],
    ),
    Rule("VaultProperties.soft_delete_retention_in_days", "It accepts >=7 and <=90.", in_range(7, 90)),
    Rule(
        "AutomaticRepairsPolicy.grace_period",
        "The minimum allowed grace period is 10 minutes (PT10M), which is also the default value. The maximum "
        "allowed grace period is 90 minutes (PT90M).",
        duration_minutes(10, 90),
    ),
    Rule(
        "StorageAccountCreateParameters.tags",
        "Each tag must have a key with a length no greater than 128 characters and a value with a length no greater "
        "than 256 characters.",
        storage_tags,
        package="azure.mgmt.storage",
    ),
    Rule(
        "FileShareProperties.share_quota",
        "Must be greater than 0, and less than or equal to 5TB (5120). For Large File Shares, the maximum size is "
        "102400.",
        in_range(1, 102400),  # an NFS share is on a premium FileStorage account: large file shares
    ),
    Rule(
        "Identity.user_assigned_identities",
        "Only 1 User Assigned identity is permitted here.",
        at_most_entries(1),
        package="azure.mgmt.storage",
    ),
    Rule(
        "ManagedClusterIdentity.user_assigned_identities",
        "Only one user assigned identity is allowed.",
        at_most_entries(1),
    ),
    Rule(
        "ManagedClusterProperties.identity_profile",
        'Only one user assigned identity is allowed. The only accepted key is "kubeletidentity"',
        kubelet_identity,
    ),
    Rule(
        "ContainerServiceNetworkProfile",
        "It must be within the Kubernetes service address range specified in serviceCidr.",
        dns_service_ip,
        quoted="dns_service_ip",
    ),
    Rule(
        "ManagedClusterAgentPoolProfileProperties",
        "Allowed values must be in the range of 0 to 1000 (inclusive) for user pools and in the range of 1 to 1000 "
        "(inclusive) for system pools.",
        pool_count,
        quoted="count",
    ),
    Rule(
        "StorageAccountsOperations.begin_create.accountName",
        "Storage account names must be between 3 and 24 characters in length and use numbers and lower-case "
        "letters only.",
        matches(r"[a-z0-9]{3,24}", "is not a storage account name"),
        package="azure.mgmt.storage",
    ),
    Rule(
        "FileSharesOperations.create.shareName",
        "File share names must be between 3 and 63 characters in length and use numbers, lower-case letters and "
        "dash (-) only. Every dash (-) character must be immediately preceded and followed by a letter or number.",
        matches(RFC_SHARE, "is not a file share name"),
        package="azure.mgmt.storage",
    ),
    Rule(
        "DiskEncryptionSetsOperations.begin_create_or_update.diskEncryptionSetName",
        "Supported characters for the name are a-z, A-Z, 0-9, _ and -. The maximum name length is 80 characters.",
        matches(r"[a-zA-Z0-9_-]{1,80}", "is not a disk encryption set name"),
        package="azure.mgmt.compute",
    ),
]
BY_PLACE = {r.at: r for r in RULES}


def _model_class(name: str, package: str = "") -> type:
    packages = (
        (package,) if package else ("compute", "network", "containerservice", "keyvault", "storage", "storagecache")
    )
    for pkg in packages:
        models = importlib.import_module(f"{pkg if '.' in pkg else 'azure.mgmt.' + pkg}.models")
        if hasattr(models, name):
            found: type = getattr(models, name)
            return found
    raise LookupError(name)


@cache
def stated(rule: Rule) -> bool:
    """The rule's sentence is in the SDK docstring it quotes."""
    parts = rule.at.split(".")
    if len(parts) == 3:
        text = param_doc(operation(rule.package, parts[0], parts[1]), parts[2])
    else:
        text = field_doc(_model_class(parts[0], rule.package), parts[1] if len(parts) == 2 else rule.quoted)
    return one_line(rule.quote) in one_line(text)


def verified(rule: Rule) -> None:
    if not stated(rule):
        raise AssertionError(f"the SDK docstring of {rule.at} no longer says: {rule.quote!r}")


def _messages(rule: Rule, value: Any) -> list[str]:
    verified(rule)
    found = rule.check(value)
    return [f"{m} ({rule.at}: {one_line(rule.quote)})" for m in found]


def apply(owner: type, attr: str, value: Any) -> list[str]:
    """The rules on `owner.attr` (the JSON value of that attribute), or on the whole `owner` object (attr "")."""
    rule = BY_PLACE.get(f"{owner.__name__}.{attr}" if attr else owner.__name__)
    if rule is None or not owner.__module__.startswith(rule.package):
        return []
    return _messages(rule, value)


# --- tags: what azure-mgmt-resource's TagsOperations state, held for every resource's `tags` -------------------------

TAG_RULES = (
    ("begin_create_or_update_at_scope", "The specified entity can have a maximum of 50 tags."),
    ("create_or_update", "names cannot have the following prefixes which are reserved for Azure use: 'microsoft',"),
)
TAG_PREFIXES = ("microsoft", "azure", "windows")  # the prefixes the second sentence goes on to list


@cache
def tag_rules_stated() -> None:
    from azure.mgmt.resource.resources.operations import TagsOperations

    for method, quote in TAG_RULES:
        text = one_line(inspect.getdoc(getattr(TagsOperations, method)) or "")
        if one_line(quote) not in text:
            raise AssertionError(f"TagsOperations.{method} no longer says: {quote!r}")
    text = one_line(inspect.getdoc(TagsOperations.create_or_update) or "")
    if "'microsoft', 'azure', 'windows'" not in text:
        raise AssertionError("TagsOperations.create_or_update no longer lists 'microsoft', 'azure', 'windows'")


def tags(value: Any) -> list[str]:
    """A resource's tags: at most 50, no name starting with a prefix Azure reserves (case-insensitively)."""
    if not isinstance(value, dict):
        return []
    tag_rules_stated()
    out = [f"{len(value)} tags; at most 50 (TagsOperations: {TAG_RULES[0][1]})"] if len(value) > 50 else []
    for name in value:
        if not unknown(name) and name.lower().startswith(TAG_PREFIXES):
            out.append(f"tag name {name!r} starts with a prefix reserved for Azure ({', '.join(TAG_PREFIXES)})")
    return out


def apply_param(op: Operation, name: str, value: Any) -> list[str]:
    rule = BY_PLACE.get(f"{op.ops_class}.{op.method}.{name}")
    return _messages(rule, value) if rule else []
