"""What the stack costs against its budget: the plan's figures, stamped on the stack's Namespace
(`labels.MONTHLY_COST_ANNOTATION` and its neighbours, written by stacks/planning/workload/cost.py); nothing here prices
anything.

Two rules, because a pack's policy has one enforcement level: `monthly-budget` is mandatory and judges the stacks
that set `pricing.monthly_budget`; `monthly-budget-default` is advisory and judges the others against the pack's
own `defaultMonthlyBudget` (0, its default: no budget, nothing to compare, it passes)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from components.catalog.labels import (
    COST_ITEMS_ANNOTATION,
    COST_UNPRICED_ANNOTATION,
    MONTHLY_BUDGET_ANNOTATION,
    MONTHLY_COST_ANNOTATION,
)
from policies.checks.rule_types import NoConfig, Settings, Violation, setting
from policies.resources import Resource

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
DEFAULT_BUDGET_KEY = "defaultMonthlyBudget"


@dataclass(frozen=True)
class DefaultBudgetConfig(Settings):
    default_monthly_budget: float = setting(
        DEFAULT_BUDGET_KEY,
        0.0,
        "US dollars per month a stack that sets no pricing.monthly_budget is held to, advisory (0: none)",
    )


def _usd(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


def _stamps(resources: list[Resource]) -> Iterator[tuple[Resource, dict[str, Any]]]:
    """Each stack Namespace with its annotations."""
    for namespace in (r for r in resources if r.type == NAMESPACE_TYPE):
        yield namespace, (namespace.props.get("metadata") or {}).get("annotations") or {}


def _judge(namespace: Resource, annotations: dict[str, Any], budget: float, owner: str, key: str) -> list[Violation]:
    """The stamped monthly cost against `budget` (`owner`'s, set by `key`)."""
    cost = _usd(annotations.get(MONTHLY_COST_ANNOTATION))
    if cost is None:
        shown = {k: annotations.get(k) for k in (MONTHLY_BUDGET_ANNOTATION, MONTHLY_COST_ANNOTATION)}
        return [Violation(namespace, f"the cost stamp is not two numbers of US dollars: {shown}")]
    if COST_UNPRICED_ANNOTATION in annotations:
        return [
            Violation(
                namespace,
                f"the budget ${budget:,.2f}/month ({key}) cannot be judged: the plan's ${cost:,.2f}/month leaves"
                f" out {annotations[COST_UNPRICED_ANNOTATION]}",
            )
        ]
    if cost > budget:
        items = annotations.get(COST_ITEMS_ANNOTATION, "")
        return [
            Violation(
                namespace,
                f"planned cost ${cost:,.2f}/month is over the {owner} budget ${budget:,.2f}/month ({key})"
                f" by ${cost - budget:,.2f}; biggest items: {items}",
            )
        ]
    return []


def monthly_budget(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A stack that sets `pricing.monthly_budget` is refused when its planned monthly cost is above it; the
    message names the budget, the figure and the biggest items. A stack with a budget and an item no price covers
    is refused too (its figure is short of what it costs). A stack without a budget is not judged here
    (`monthly_budget_default` is)."""
    out = []
    for namespace, stamp in _stamps(resources):
        if MONTHLY_BUDGET_ANNOTATION not in stamp:
            continue
        budget = _usd(stamp[MONTHLY_BUDGET_ANNOTATION])
        if budget is None:
            shown = {k: stamp.get(k) for k in (MONTHLY_BUDGET_ANNOTATION, MONTHLY_COST_ANNOTATION)}
            out.append(Violation(namespace, f"the cost stamp is not two numbers of US dollars: {shown}"))
            continue
        out += _judge(namespace, stamp, budget, "stack's", "pricing.monthly_budget")
    return out


def monthly_budget_default(resources: list[Resource], config: DefaultBudgetConfig) -> list[Violation]:
    """A stack that sets no budget, against the pack's `defaultMonthlyBudget` (advisory): over it, the note names
    the figure and the biggest items. Without a default there is nothing to compare: it passes."""
    budget = config.default_monthly_budget
    if budget <= 0:
        return []
    out = []
    for namespace, stamp in _stamps(resources):
        if MONTHLY_BUDGET_ANNOTATION in stamp or MONTHLY_COST_ANNOTATION not in stamp:
            continue  # judged by monthly-budget, or nothing priced (the summary says why)
        out += _judge(namespace, stamp, budget, "pack's default", f"the policy config's {DEFAULT_BUDGET_KEY}")
    return out
