"""IAM policy documents of inline role policies (PutRolePolicy's PolicyDocument), judged against botocore.

botocore's IAM model only says the document is a string; what it grants is judged here from the other service models:
every action `prefix:Name` names a botocore service (the IAM prefixes used here equal botocore's service names) and
one of its operations; every resource is `*` or an ARN of the action's service; and an action whose operation
requires an object key (S3 `GetObject`: `Key` required in its input shape) is granted on objects (`bucket/key`), not
on a bucket, where it would grant nothing. Mock placeholders (`<arn of x>`, `<partition of us-east-1>`) stand for
values known at deploy and are accepted in place.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import UnknownServiceError

from .aws_api import PLACEHOLDER, is_unknown, service_model

SOURCE = "IAM JSON policy reference (Version, Statement, Effect, Action, Resource); botocore service models"
# IAM prefixes that differ from botocore's service name (the value), read from the model's metadata
# (endpointPrefix and signingName "aps" for botocore's "amp")
PREFIX_SERVICES: dict[str, str] = {"aps": "amp"}
_AMP_HTTP = (
    "Amazon Managed Service for Prometheus User Guide, AMP-APIReference-Prometheus-Compatible-Apis: the workspace's "
    "Prometheus-compatible HTTP API (remote write, query, series, labels, metadata), signed with sigv4 and authorized "
    "by this permission; not an operation of the AWS SDK's amp model"
)
# Actions that are permissions without an operation of their name (the value: where AWS says so).
PERMISSION_ONLY: dict[str, str] = {
    "iam:PassRole": "IAM User Guide id_roles_use_passrole: the PassRole permission, checked when a role is passed to "
    "a service (EC2 RunInstances with an instance profile), not an API operation",
    **{
        f"aps:{name}": _AMP_HTTP
        for name in ("RemoteWrite", "QueryMetrics", "GetSeries", "GetLabels", "GetMetricMetadata")
    },
}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _action_problems(action: Any) -> list[str]:
    if not isinstance(action, str) or action.count(":") != 1:
        return [f"action {action!r} is not service:Action"]
    prefix, name = action.split(":")
    if action in PERMISSION_ONLY:
        return []
    try:
        model = service_model(PREFIX_SERVICES.get(prefix, prefix))
    except UnknownServiceError:
        return [f"action {action}: no AWS service {prefix!r}"]
    if "*" in name or name in model.operation_names:
        return []
    return [f"action {action}: {prefix} has no operation {name}"]


def _resource_problems(resource: Any, actions: list[str]) -> list[str]:
    if resource == "*" or (isinstance(resource, str) and PLACEHOLDER.match(resource)):
        return []  # an ARN known at deploy (`<arn of x>`, `<arn of x>/*`)
    parts = str(resource).split(":", 5)
    if len(parts) != 6 or parts[0] != "arn" or not parts[1] or not parts[5]:
        return [f"resource {resource!r} is not arn:partition:service:region:account:resource"]
    problems: list[str] = []
    services = {PREFIX_SERVICES.get(p, p) for p in (a.split(":")[0] for a in actions if ":" in a)} | {
        a.split(":")[0] for a in actions if ":" in a
    }
    if services and parts[2] not in services:
        problems.append(f"resource {resource} is of service {parts[2]}, the actions of {sorted(services)}")
    for action in actions:
        prefix, _, name = action.partition(":")
        if prefix != "s3" or prefix != parts[2] or name not in service_model("s3").operation_names:
            continue  # an unknown operation is refused by _action_problems
        shape = service_model("s3").operation_model(name).input_shape
        needs_key = shape is not None and "Key" in shape.required_members
        if needs_key and "/" not in parts[5]:
            problems.append(f"resource {resource}: {action} acts on objects (its Key is required): use bucket/key")
    return problems


def policy_problems(document: Any) -> list[str]:
    """Every problem of one IAM policy document (a JSON string); none where it is unknown until deploy."""
    if is_unknown(document) and not (isinstance(document, str) and document.lstrip().startswith("{")):
        return []
    try:
        policy = json.loads(document)
    except (TypeError, ValueError) as exc:
        return [f"not JSON: {exc}"]
    if policy.get("Version") != "2012-10-17":
        return [f"Version {policy.get('Version')!r}, not 2012-10-17 (the current policy language)"]
    statements = _listed(policy.get("Statement"))
    if not statements or statements == [None]:
        return ["no Statement"]
    problems: list[str] = []
    for n, statement in enumerate(statements):
        where = f"Statement[{n}]"
        if statement.get("Effect") not in ("Allow", "Deny"):
            problems.append(f"{where}: Effect {statement.get('Effect')!r}, not Allow or Deny")
        actions = _listed(statement.get("Action"))
        problems += [f"{where}: {p}" for a in actions for p in _action_problems(a)]
        resources = _listed(statement.get("Resource"))
        if resources == [None]:
            problems.append(f"{where}: no Resource")
            continue
        names = [a for a in actions if isinstance(a, str)]
        problems += [f"{where}: {p}" for r in resources for p in _resource_problems(r, names)]
    return problems
