"""Wrapping the pure rules of `components.policy` as pulumi-policy stack validation policies."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.policy import RULES, Resource, Rule, check_rule, facts_from

LEVELS = {
    "mandatory": EnforcementLevel.MANDATORY,
    "advisory": EnforcementLevel.ADVISORY,
    "disabled": EnforcementLevel.DISABLED,
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "spot-nodes": {"allowSpot": {"type": "boolean", "default": True}},
    "cost-ceiling": {"maxHourlyUsd": {"type": "number"}},
    # the pack hands each policy only its own config: a ceiling set in the policy config goes here too
    "cost-ceiling-unchecked": {"maxHourlyUsd": {"type": "number"}},
}


def _validator(rule: Rule) -> Any:
    def validate(args: StackValidationArgs, report_violation: Any) -> None:
        resources = [Resource(r.resource_type, r.props, r.urn, r.name) for r in args.resources]
        config = {rule.name: args.get_config() or {}}
        for violation in check_rule(rule, resources, facts_from(resources, config), rule.level):
            report_violation(violation.message, violation.urn)

    return validate


def stack_policies() -> list[StackValidationPolicy]:
    return [
        StackValidationPolicy(
            name=rule.name,
            description=rule.description,
            validate=_validator(rule),
            enforcement_level=LEVELS[rule.level],
            config_schema=PolicyConfigSchema(properties=SCHEMAS[rule.name]) if rule.name in SCHEMAS else None,
        )
        for rule in RULES
    ]
