"""What the stack costs against its budget: the plan's figures, stamped on the stack's Namespace
(`labels.MONTHLY_COST_ANNOTATION` and its neighbours, written by stacks/planning/cost.py); nothing here prices
anything."""

from __future__ import annotations

from components.catalog.labels import (
    COST_ITEMS_ANNOTATION,
    COST_UNPRICED_ANNOTATION,
    MONTHLY_BUDGET_ANNOTATION,
    MONTHLY_COST_ANNOTATION,
)
from policies.checks.rule_types import NoConfig, Violation
from policies.resources import Resource

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"


def _usd(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


def monthly_budget(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A stack that sets `pricing.monthly_budget` is refused when its planned monthly cost is above it; the
    message names the budget, the figure and the biggest items. A stack with a budget and an item no price covers
    is refused too (its figure is short of what it costs). A stack without a budget is not judged."""
    out = []
    for namespace in (r for r in resources if r.type == NAMESPACE_TYPE):
        annotations = (namespace.props.get("metadata") or {}).get("annotations") or {}
        if MONTHLY_BUDGET_ANNOTATION not in annotations:
            continue
        budget, cost = _usd(annotations[MONTHLY_BUDGET_ANNOTATION]), _usd(annotations.get(MONTHLY_COST_ANNOTATION))
        if budget is None or cost is None:
            shown = {k: annotations.get(k) for k in (MONTHLY_BUDGET_ANNOTATION, MONTHLY_COST_ANNOTATION)}
            out.append(Violation(namespace, f"the cost stamp is not two numbers of US dollars: {shown}"))
        elif COST_UNPRICED_ANNOTATION in annotations:
            out.append(
                Violation(
                    namespace,
                    f"the budget ${budget:,.2f}/month (pricing.monthly_budget) cannot be judged: the plan's"
                    f" ${cost:,.2f}/month leaves out {annotations[COST_UNPRICED_ANNOTATION]}",
                )
            )
        elif cost > budget:
            items = annotations.get(COST_ITEMS_ANNOTATION, "")
            out.append(
                Violation(
                    namespace,
                    f"planned cost ${cost:,.2f}/month is over the stack's budget ${budget:,.2f}/month"
                    f" (pricing.monthly_budget) by ${cost - budget:,.2f}; biggest items: {items}",
                )
            )
    return out
