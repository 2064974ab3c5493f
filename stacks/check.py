"""`python -m stacks check NAME`: the policy rules over an offline render's recorded resources."""

from __future__ import annotations

from dataclasses import dataclass

from policies.resources import Resource
from policies.rules import RULES, Rule, Violation
from stacks.offline import Recording


@dataclass(frozen=True)
class Finding:
    rule: Rule
    violation: Violation

    def line(self) -> str:
        where = self.violation.resource.name if self.violation.resource else "stack"
        return f"{self.rule.enforcement} {self.rule.name} [{where}]: {self.violation.message}"


def check(recording: Recording) -> list[Finding]:
    resources = [Resource(r.type, r.name, r.inputs) for r in recording.resources]
    return [Finding(rule, v) for rule in RULES for v in rule.check(resources, dict(rule.config))]
