"""Wrapping the pure rules of `components.policy` as pulumi-policy stack validation policies."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.policy import (
    PROFILE_ONLY,
    RULES,
    Level,
    Resource,
    Rule,
    check_rule,
    facts_from,
    profile_variants,
    variant_levels,
)

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


def _validator(rule: Rule, level: Level | None) -> Any:
    """`level` None: the rule's own policy, which reports unless the stack's profile gives the rule another level;
    a level: the rule's policy for the stacks whose profile gives it that level (`<rule>-<level>`)."""

    def validate(args: StackValidationArgs, report_violation: Any) -> None:
        resources = [
            Resource(r.resource_type, r.props, r.urn, r.name, bool(r.opts and r.opts.protect)) for r in args.resources
        ]
        config = {rule.name: args.get_config() or {}}
        facts = facts_from(resources, config)
        profiled = profile_variants(facts.compliance).get(rule.name)
        if profiled != level:
            return  # the stack's profile gives this rule another level: another policy of the pack reports it
        for violation in check_rule(rule, resources, facts, level or rule.level):
            report_violation(violation.message, violation.urn)

    return validate


def stack_policies() -> list[StackValidationPolicy]:
    """One policy per rule at its default level (the policy config overrides it as ever), and one per level a
    compliance profile gives a rule beyond its default: the engine, not the policy, sets a violation's level."""
    policies = []
    for rule in RULES:
        # a rule only profiles use has no policy of its own: `all` in a pack config would turn it on everywhere
        own: list[Level | None] = [] if rule.name in PROFILE_ONLY else [None]
        levels = [*own, *sorted(variant_levels().get(rule.name, ()))]
        for level in levels:
            policies.append(
                StackValidationPolicy(
                    name=rule.name if level is None else f"{rule.name}-{level}",
                    description=rule.description
                    + ("" if level is None else f" ({level}: the level of a compliance profile)"),
                    validate=_validator(rule, level),
                    enforcement_level=LEVELS[level or rule.level],
                    config_schema=PolicyConfigSchema(properties=SCHEMAS[rule.name]) if rule.name in SCHEMAS else None,
                )
            )
    return policies
