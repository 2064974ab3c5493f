"""`python -m stacks check NAME`: the policy rules over an offline render's recorded resources."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policies.checks.budget import BUDGET_KEY
from policies.checks.rule_types import Rule, Violation
from policies.checks.ruleset import RULES
from policies.resources import Resource
from stacks.config import StackConfig
from stacks.review.offline import Recording


@dataclass(frozen=True)
class Finding:
    rule: Rule[Any]
    violation: Violation

    def line(self) -> str:
        where = self.violation.resource.name if self.violation.resource else "stack"
        return f"{self.rule.enforcement} {self.rule.name} [{where}]: {self.violation.message}"


def check(recording: Recording, configs: dict[str, dict[str, Any]] | None = None) -> list[Finding]:
    """Each rule with its defaults, overridden by `configs[rule name]` (what the stack sets for it)."""
    resources = [Resource(r.type, r.name, r.inputs) for r in recording.resources]
    configs = configs or {}
    return [
        Finding(rule, v) for rule in RULES for v in rule.check(resources, {**rule.config, **configs.get(rule.name, {})})
    ]


def stack_policy_config(config: StackConfig) -> dict[str, dict[str, Any]]:
    """The policy config a stack's own settings imply: the prefix length the payoff is judged at and the
    filesystem's read bandwidth where the stack states it, a local router chart where the stack names one, and the
    stack's monthly budget where it sets one."""
    payoff: dict[str, Any] = {"prefixTokens": config.monitoring.alerts.prefix_tokens}
    if config.storage.read_bandwidth is not None:  # an existing class's, as the plan's payoff reads it
        payoff["filesystemReadBandwidth"] = float(config.storage.read_bandwidth.bytes)
    configs: dict[str, dict[str, Any]] = {"tiers-beat-recompute": payoff}
    if config.pricing.monthly_budget is not None:  # held even where a transform strips the plan's stamps
        configs["monthly-budget"] = {BUDGET_KEY: config.pricing.monthly_budget}
    if config.router.chart_file:  # the stack chose a packaged chart on disk (router.chart_file)
        configs["chart-registries"] = {"allowLocalCharts": True}
    return configs
