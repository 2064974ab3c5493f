"""The rules as a pulumi-policy pack: one StackValidationPolicy per rule, config schema from its defaults."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.resources import Resource
from policies.rules import RULES, Rule

PACK_NAME = "llmd-tiered-prefix-cache"
_LEVELS = {"mandatory": EnforcementLevel.MANDATORY, "advisory": EnforcementLevel.ADVISORY}
_JSON_TYPES = {bool: "boolean", int: "integer", str: "string", list: "array"}


def _schema(defaults: dict[str, Any]) -> PolicyConfigSchema | None:
    if not defaults:
        return None
    return PolicyConfigSchema(properties={k: {"type": _JSON_TYPES[type(v)], "default": v} for k, v in defaults.items()})


def _policy(rule: Rule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        config = {**rule.config, **(args.get_config() or {})}
        resources = [Resource(r.resource_type, r.name, dict(r.props), r.urn) for r in args.resources]
        for violation in rule.check(resources, config):
            urn = violation.resource.urn if violation.resource and violation.resource.urn else None
            report(violation.message, urn)

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=_LEVELS[rule.enforcement],
        config_schema=_schema(rule.config),
    )


POLICIES: list[Policy] = [_policy(rule) for rule in RULES]
