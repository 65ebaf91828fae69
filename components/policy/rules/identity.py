"""The nodes' identity holds no administrator grant."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..model import CONFIG, Facts, Issue, Resource
from ..types import ADMIN_GRANTS, WILDCARD_POLICY_TYPES


def wildcard_statements(document: Any) -> bool:
    """An IAM policy document (JSON text or a mapping) allowing every action on every resource."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return False
    statements = document.get("Statement", []) if isinstance(document, Mapping) else []
    for st in statements if isinstance(statements, list) else [statements]:
        if not isinstance(st, Mapping) or st.get("Effect") != "Allow":
            continue
        actions = st.get("Action", [])
        resources = st.get("Resource", [])
        actions = [actions] if isinstance(actions, str) else actions
        resources = [resources] if isinstance(resources, str) else resources
        if "*" in actions and "*" in resources:
            return True
    return False


def no_admin_on_nodes(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    fix = f"grant the nodes only what they need in {CONFIG}.identity.policies"
    if res.type in ADMIN_GRANTS:
        key, admin = ADMIN_GRANTS[res.type]
        value = str(res.props.get(key) or "")
        if value in admin or value.rsplit("/", 1)[-1] in admin:
            yield Issue(
                f"grants the nodes {value}, an administrator role", "grant admin rights", "grants admin rights", fix
            )
    elif res.type in WILDCARD_POLICY_TYPES and wildcard_statements(res.props.get("policy")):
        yield Issue('allows "Action": "*" on "Resource": "*"', "allow every action", "allows every action", fix)
