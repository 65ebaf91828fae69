"""The rules GCP's discovery documents state only in prose, as checks keyed by where they are stated.

Each `Rule` quotes its document's sentence; `apply` looks the sentence up in the document at first use
(`verified`), so a rule that changes upstream fails the tests instead of going stale. The regex or limit of a rule
is the sentence, nothing added. Label rules apply to every `labels`/`resourceLabels` map the walk meets
(`LABELS`), Kubernetes' rules to GKE's node labels. Managed Lustre's rules come from the provider's schema
(`PROVIDER_RULES`, no discovery document ships for it), quoted from the pulumi_gcp SDK's docstrings.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .gcp_schema import described, one_line, unknown

Check = Callable[[Any], list[str]]
RFC1035 = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"  # as compute's `name` patterns spell RFC 1035's 1-63


@dataclass(frozen=True)
class Rule:
    api: str  # the API family ("container"): a rule holds in each of its documents (v1beta1 and v1), verified in each
    at: str  # "Schema.prop", "Schema" (the whole object) or "method:<id>.<param>"
    quote: str  # the document's words
    check: Check


def matches(regex: str, what: str) -> Check:
    def check(value: Any) -> list[str]:
        if not isinstance(value, str) or unknown(value) or re.fullmatch(regex, value):
            return []
        return [f"{value!r} {what}"]

    return check


def max_bytes(limit: int) -> Check:
    def check(value: Any) -> list[str]:
        if not isinstance(value, str) or unknown(value) or len(value.encode()) <= limit:
            return []
        return [f"{len(value.encode())} bytes; at most {limit}"]

    return check


def at_least(low: int, high: int | None = None) -> Check:
    def check(value: Any) -> list[str]:
        try:
            number = int(value)
        except (TypeError, ValueError):
            return []
        return [] if low <= number and (high is None or number <= high) else [f"{number} is out of range"]

    return check


def each(check: Check) -> Check:
    return lambda values: [m for v in (values if isinstance(values, list) else []) for m in check(v)]


def segment(check: Check) -> Check:
    """The check on a resource path's last part (`projects/P/topics/NAME`)."""
    return lambda value: check(value.rsplit("/", 1)[-1]) if isinstance(value, str) and not unknown(value) else []


def seconds(value: Any) -> int | None:
    text = str(value)
    return int(float(text[:-1])) if re.fullmatch(r"\d+(\.\d+)?s", text) else None


def rotation(key: Any) -> list[str]:
    """cloudkms.v1 CryptoKey: a rotation period of 24 h to 876,000 h, and a next rotation time beside it."""
    if not isinstance(key, dict) or "rotationPeriod" not in key:
        return []
    out = []
    period = seconds(key["rotationPeriod"])
    if period is not None and not 24 * 3600 <= period <= 876000 * 3600:
        out.append(f"rotationPeriod {key['rotationPeriod']!r} is not between 24 hours and 876,000 hours")
    if "nextRotationTime" not in key:
        out.append("rotationPeriod is set without nextRotationTime")
    return out


def metadata_total(items: Any) -> list[str]:
    """compute Metadata.items: keys and values together under 512 KB."""
    total = sum(len(str(i.get("key", "")).encode()) + len(str(i.get("value", "")).encode()) for i in items or [])
    return [f"metadata keys and values are {total} bytes; under {512 * 1024}"] if total >= 512 * 1024 else []


@cache
def gke_reserved_metadata() -> frozenset[str]:
    """The reserved keys container.v1beta1 lists in `NodeConfig.metadata`'s description."""
    text = described("container.v1beta1", "NodeConfig.metadata")
    listed = text.split("reserved keys:", 1)[1].split("Values are", 1)[0]
    return frozenset(re.findall(r'"([^"]+)"', listed))


def gke_metadata(meta: Any) -> list[str]:
    if not isinstance(meta, dict):
        return []
    out = []
    for key, value in meta.items():
        if not re.fullmatch(r"[a-zA-Z0-9-_]+", key) or len(key.encode()) >= 128:
            out.append(f"metadata key {key!r} does not match [a-zA-Z0-9-_]+ under 128 bytes")
        if key in gke_reserved_metadata():
            out.append(f"metadata key {key!r} is reserved")
        if isinstance(value, str) and not unknown(value) and len(value.encode()) > 32 * 1024:
            out.append(f"metadata {key!r} is {len(value.encode())} bytes; at most 32 KB")
    total = sum(len(k.encode()) + len(str(v).encode()) for k, v in meta.items())
    return out + ([f"metadata is {total} bytes; under 512 KB"] if total >= 512 * 1024 else [])


def file_shares(instance: Any) -> list[str]:
    """file.v1beta1 FileShareConfig.name: [a-z0-9_] from a letter, 1-16 on the basic tiers, 1-63 on the others."""
    if not isinstance(instance, dict):
        return []
    basic = str(instance.get("tier", "")).startswith("BASIC_")
    limit = 16 if basic else 63
    out = []
    for share in instance.get("fileShares") or []:
        name = share.get("name") if isinstance(share, dict) else None
        if isinstance(name, str) and not re.fullmatch(rf"[a-z][a-z0-9_]{{0,{limit - 1}}}", name):
            out.append(
                f"file share name {name!r}: 1-{limit} of [a-z0-9_], from a letter, on tier {instance.get('tier')}"
            )
    return out


def payload(data: Any) -> list[str]:
    if not isinstance(data, str) or unknown(data):
        return []
    try:
        size = len(base64.b64decode(data, validate=True))
    except binascii.Error:
        return ["payload data is not base64"]
    return [f"secret payload is {size} bytes; at most 64 KiB"] if size > 64 * 1024 else []


RULES: list[Rule] = [
    Rule(
        "container",
        "Cluster.name",
        "can be up to 40 characters with the following restrictions: * Lowercase letters, numbers, and hyphens only. "
        "* Must start with a letter. * Must end with a number or a letter.",
        matches(r"[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?", "is not a GKE cluster name"),
    ),
    Rule(
        "container",
        "DailyMaintenanceWindow.startTime",
        'format "HH:MM", where HH : [00-23] and MM : [00-59] GMT.',
        matches(r"([01]\d|2[0-3]):[0-5]\d", "is not HH:MM"),
    ),
    Rule(
        "container",
        "NodeConfig.metadata",
        "Keys must conform to the regexp `[a-zA-Z0-9-_]+` and be less than 128 bytes in length.",
        gke_metadata,
    ),
    Rule(
        "file",
        "method:file.projects.locations.instances.create.instanceId",
        "This value must start with a lowercase letter followed by up to 62 lowercase letters, numbers, or hyphens, "
        "and cannot end with a hyphen.",
        matches(RFC1035, "is not a Filestore instance id"),
    ),
    Rule(
        "file",
        "FileShareConfig.name",
        "Must use 1-16 characters for the basic service tier and 1-63 characters for all other service tiers. Must "
        "use lowercase letters, numbers, or underscores `[a-z0-9_]`. Must start with a letter.",
        lambda instance: [],  # checked with the tier, on the instance (below)
    ),
    Rule("file", "Instance", "", file_shares),
    Rule(
        "file",
        "Instance.description",
        "The description of the instance (2048 characters or less).",
        lambda v: [f"{len(v)} characters; at most 2048"] if isinstance(v, str) and len(v) > 2048 else [],
    ),
    Rule(
        "iam",
        "CreateServiceAccountRequest.accountId",
        "must be 6-30 characters long, and match the regular expression `[a-z]([-a-z0-9]*[a-z0-9])`",
        matches(r"(?=.{6,30}$)[a-z](?:[-a-z0-9]*[a-z0-9])", "is not a service account id"),
    ),
    Rule("iam", "ServiceAccount.displayName", "The maximum length is 100 UTF-8 bytes.", max_bytes(100)),
    Rule("iam", "ServiceAccount.description", "The maximum length is 256 UTF-8 bytes.", max_bytes(256)),
    Rule(
        "cloudkms",
        "method:cloudkms.projects.locations.keyRings.create.keyRingId",
        "match the regular expression `[a-zA-Z0-9_-]{1,63}`",
        matches(r"[a-zA-Z0-9_-]{1,63}", "is not a key ring id"),
    ),
    Rule(
        "cloudkms",
        "method:cloudkms.projects.locations.keyRings.cryptoKeys.create.cryptoKeyId",
        "match the regular expression `[a-zA-Z0-9_-]{1,63}`",
        matches(r"[a-zA-Z0-9_-]{1,63}", "is not a crypto key id"),
    ),
    Rule(
        "cloudkms",
        "CryptoKey.rotationPeriod",
        "Must be at least 24 hours and at most 876,000 hours. If rotation_period is set, next_rotation_time must "
        "also be set.",
        lambda v: [],  # checked on the key (below): it needs nextRotationTime beside it
    ),
    Rule("cloudkms", "CryptoKey", "", rotation),
    Rule(
        "secretmanager",
        "method:secretmanager.projects.secrets.create.secretId",
        "A secret ID is a string with a maximum length of 255 characters and can contain uppercase and lowercase "
        "letters, numerals, and the hyphen (`-`) and underscore (`_`) characters.",
        matches(r"[A-Za-z0-9_-]{1,255}", "is not a secret id"),
    ),
    Rule("secretmanager", "SecretPayload.data", "The secret data. Must be no larger than 64KiB.", payload),
    Rule(
        "compute",
        "Metadata.items",
        "The total size of all keys and values must be less than 512 KB.",
        metadata_total,
    ),
    Rule(
        "compute",
        "Metadata.items.value",
        "The only restriction placed on values is that their size must be less than or equal to 262144 bytes",
        max_bytes(262144),
    ),
    Rule(
        "compute",
        "SubnetworkSecondaryRange.rangeName",
        "The name must be 1-63 characters long, and comply withRFC1035.",
        matches(RFC1035, "is not an RFC 1035 name of 1-63 characters"),
    ),
    Rule(
        "compute",
        "AttachedDiskInitializeParams.diskSizeGb",
        "The size must be at least 10 GB.",
        at_least(10),
    ),
]
for _kind in ("topic", "subscription"):
    _method = f"method:pubsub.projects.{_kind}s.create.name"
    _quote = (
        f"`{{{_kind}}}` must start with a letter, and contain only letters (`[A-Za-z]`), numbers (`[0-9]`), dashes "
        "(`-`), underscores (`_`), periods (`.`), tildes (`~`), plus (`+`) or percent signs (`%`). It must be "
        'between 3 and 255 characters in length, and it must not start with `"goog"`.'
    )
    _check = segment(matches(r"(?!goog)[A-Za-z][-A-Za-z0-9_.~+%]{2,254}", f"is not a Pub/Sub {_kind} name"))
    RULES += [Rule("pubsub", _method, _quote, _check), Rule("pubsub", f"{_kind.title()}.name", _quote, _check)]

BY_PLACE: dict[tuple[str, str], list[Rule]] = {}
for _rule in RULES:
    BY_PLACE.setdefault((_rule.api, _rule.at), []).append(_rule)


# The documents the provider sends to, per family: every rule is stated there (tests check it); a GA document
# that does not state a rule (file.v1 says nothing of the instance id) is not held to it.
SENT = {
    "compute": "compute.beta",
    "container": "container.v1beta1",
    "file": "file.v1beta1",
    "iam": "iam.v1",
    "cloudkms": "cloudkms.v1",
    "secretmanager": "secretmanager.v1",
    "pubsub": "pubsub.v1",
}


@cache
def stated(rule: Rule, api: str) -> bool:
    """The rule's sentence is in document `api` (a rule on a whole object quotes its property's rule)."""
    return not rule.quote or one_line(rule.quote) in described(api, rule.at)


def verified(rule: Rule, api: str) -> None:
    if not stated(rule, api):
        raise AssertionError(f"{api} {rule.at} no longer says: {rule.quote!r}")


# --- labels --------------------------------------------------------------------------------------------------------

# GCP resource labels, as secretmanager.v1 `Secret.labels` states them (Resource Manager states the same limits).
# Its key expression reads `\p{Ll}\p{Lo}{0,62}` in the document: the brackets of the source proto comment,
# `[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}`, were lost to markdown; the value expression kept them. A key is
# checked as a lowercase or other letter followed by what a value may hold.
LABEL_RULE = Rule(
    "secretmanager.v1",  # one document: the rule is quoted from it for every API
    "Secret.labels",
    "Label keys must be between 1 and 63 characters long, have a UTF-8 encoding of maximum 128 bytes, and must "
    "conform to the following PCRE regular expression: `\\p{Ll}\\p{Lo}{0,62}` Label values must be between 0 and "
    "63 characters long, have a UTF-8 encoding of maximum 128 bytes, and must conform to the following PCRE regular "
    "expression: `[\\p{Ll}\\p{Lo}\\p{N}_-]{0,63}` No more than 64 labels can be assigned to a given resource.",
    lambda v: [],
)
MAX_LABELS = 64
# GKE's node labels: container.v1beta1 `NodeConfig.labels` defers to Kubernetes' label syntax
# (kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set): an optional DNS
# subdomain prefix (at most 253) and "/", a name of at most 63 alphanumerics with -_. inside; values likewise.
K8S_LABEL_RULE = Rule(
    "container",
    "NodeConfig.labels",
    "Labels must use a valid Kubernetes syntax and character set",
    lambda v: [],
)
K8S_NAME = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
K8S_PREFIX = re.compile(r"(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")


def _label_char(ch: str) -> bool:
    return unicodedata.category(ch) in ("Ll", "Lo", "Nd", "Nl", "No") or ch in "_-"


def gcp_labels(labels: dict[str, Any]) -> list[str]:
    verified(LABEL_RULE, LABEL_RULE.api)
    out = [f"{len(labels)} labels; at most {MAX_LABELS}"] if len(labels) > MAX_LABELS else []
    for key, value in labels.items():
        if unknown(key) or unknown(value):
            continue
        first = unicodedata.category(key[0]) in ("Ll", "Lo") if key else False
        if not (len(key) <= 63 and len(key.encode()) <= 128 and first and all(_label_char(c) for c in key)):
            out.append(f"label key {key!r}: 1-63 lowercase letters, digits, '_' or '-', from a lowercase letter")
        if not (isinstance(value, str) and len(value) <= 63 and len(value.encode()) <= 128):
            out.append(f"label {key!r} value {value!r}: at most 63 characters")
        elif not all(_label_char(c) for c in value):
            out.append(f"label {key!r} value {value!r}: only lowercase letters, digits, '_' or '-'")
    return out


def k8s_labels(labels: dict[str, Any]) -> list[str]:
    out = []
    for key, value in labels.items():
        if unknown(key) or unknown(value):
            continue
        prefix, _, name = key.rpartition("/")
        if not K8S_NAME.fullmatch(name) or (prefix and not K8S_PREFIX.fullmatch(prefix)):
            out.append(f"Kubernetes label key {key!r} is not [prefix/]name")
        if value and not (isinstance(value, str) and K8S_NAME.fullmatch(value)):
            out.append(f"Kubernetes label {key!r} value {value!r} is not valid")
    return out


# Maps named `labels` that are not a resource's labels, so the label rules do not apply (each states its own form).
NOT_RESOURCE_LABELS = {
    # billingbudgets v1 Filter.labels: "A single label and value pair ... An object containing a single "key": value
    # pair": the usage filter, each value a list (the label it names is a resource label, checked where it is set)
    ("billingbudgets", "GoogleCloudBillingBudgetsV1Filter.labels"),
    # monitoring v3 NotificationChannel.labels: "Configuration fields that define the channel" (email_address)
    ("monitoring", "NotificationChannel.labels"),
}


def apply(api: str, at: str, value: Any) -> list[str]:
    """The prose rules stated at `at` in `api`, on `value` (see `gcp_schema.Rules`)."""
    family = api.split(".")[0]
    out = []
    for rule in BY_PLACE.get((family, at), []):
        if api == SENT[family]:
            verified(rule, api)
        elif not stated(rule, api):
            continue
        out += [f"{m} ({api} {rule.at.removeprefix('method:')}: {one_line(rule.quote)})" for m in rule.check(value)]
    if (family, at) in NOT_RESOURCE_LABELS:
        return out
    if isinstance(value, dict) and at.rsplit(".", 1)[-1] in ("labels", "resourceLabels") and "." in at:
        if (family, at) == (K8S_LABEL_RULE.api, K8S_LABEL_RULE.at):
            verified(K8S_LABEL_RULE, api)
            out += [f"{m} ({K8S_LABEL_RULE.quote})" for m in k8s_labels(value)]
        else:
            out += [f"{m} ({LABEL_RULE.api} {LABEL_RULE.at})" for m in gcp_labels(value)]
    return out


# --- Managed Lustre: the provider's schema, no discovery document ---------------------------------------------------

PROVIDER_RULES: dict[str, Rule] = {
    "instanceId": Rule(
        "pulumi_gcp/lustre/instance.py",
        "Instance.instanceId",
        "* Must contain only lowercase letters, numbers, and hyphens. * Must start with a letter. "
        "* Must be between 1-63 characters. * Must end with a number or a letter.",
        matches(RFC1035, "is not a Managed Lustre instance id"),
    ),
    "filesystem": Rule(
        "pulumi_gcp/lustre/instance.py",
        "Instance.filesystem",
        "Must be eight characters or less and can only contain letters and numbers.",
        matches(r"[A-Za-z0-9]{1,8}", "is not a Managed Lustre filesystem name"),
    ),
}


@cache
def provider_text(path: str) -> str:
    import pulumi_gcp

    return one_line((Path(pulumi_gcp.__file__).parent / path.removeprefix("pulumi_gcp/")).read_text())


def apply_provider_rule(key: str, value: Any) -> list[str]:
    rule = PROVIDER_RULES[key]
    if one_line(rule.quote) not in provider_text(rule.api):
        raise AssertionError(f"{rule.api} no longer says: {rule.quote!r}")
    return [f"{m} ({rule.api} {rule.at}: {one_line(rule.quote)})" for m in rule.check(value)]
