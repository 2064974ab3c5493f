"""The rules as a pulumi-policy pack: one StackValidationPolicy per rule, config schema from its defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.catalog import labels
from policies.checks.rule_types import Rule, SettingRecord
from policies.checks.ruleset import RULES
from policies.resources import CHART_TYPE, Resource

PACK_NAME = "llmd-tiered-prefix-cache"
_LEVELS = {"mandatory": EnforcementLevel.MANDATORY, "advisory": EnforcementLevel.ADVISORY}
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}


def _schema(records: list[SettingRecord]) -> PolicyConfigSchema | None:
    """A rule's config schema: each key's type, default and description (its `setting`)."""
    if not records:
        return None
    return PolicyConfigSchema(
        properties={
            r.key: {"type": _JSON_TYPES[type(r.default)], "default": r.default, "description": r.description}
            for r in records
        }
    )


# The engine hands a stack policy each resource's outputs, but the rules read inputs, as the program
# declares them (and as `./run check` records them): a component's outputs are only what it registers,
# so a chart's values and source would be invisible. Each resource's inputs are recorded here as the
# engine analyzes it (before the stack is analyzed) and the stack policies read those.
_INPUTS: dict[str, dict[str, Any]] = {}


def _record_inputs(args: ResourceValidationArgs, report: ReportViolation) -> None:
    _INPUTS[args.urn] = dict(args.props)


RECORD_INPUTS = ResourceValidationPolicy(
    name="record-inputs",
    description="Records each resource's inputs for the stack rules (reports nothing)",
    validate=_record_inputs,
    enforcement_level=EnforcementLevel.ADVISORY,
)


def _plain(value: Any) -> Any:
    """The analyzer's read-only property proxies as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _props(resource: Any) -> dict[str, Any]:
    props = _INPUTS.get(resource.urn, _plain(resource.props))
    if resource.resource_type == CHART_TYPE and "chart" not in props and resource.parent is not None:
        # The engine shows a remote component's inputs to no policy: its parent Router repeats them as an output.
        repeated = _plain(resource.parent.props).get(labels.ROUTER_CHART_OUTPUT)
        if isinstance(repeated, dict):
            return repeated
    return dict(props)


def stack_resources(resources: Any) -> list[Resource]:
    """The stack's resources with their inputs where the engine showed them, else their outputs."""
    return [Resource(r.resource_type, r.name, _props(r), r.urn) for r in resources]


def _policy(rule: Rule[Any]) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        config = {**rule.config, **(args.get_config() or {})}
        resources = stack_resources(args.resources)
        for violation in rule.check(resources, config):
            urn = violation.resource.urn if violation.resource and violation.resource.urn else None
            report(violation.message, urn)

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=_LEVELS[rule.enforcement],
        config_schema=_schema(rule.settings.records()),
    )


POLICIES: list[Policy] = [RECORD_INPUTS, *(_policy(rule) for rule in RULES)]
