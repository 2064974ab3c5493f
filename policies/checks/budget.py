"""What the stack costs against its budget: the plan's figures, stamped on the stack's Namespace
(`labels.MONTHLY_COST_ANNOTATION` and its neighbours, written by stacks/planning/workload/cost.py); nothing here prices
anything.

Two rules, because a pack's policy has one enforcement level: `monthly-budget` is mandatory and judges the stacks
that set `pricing.monthly_budget`; `monthly-budget-default` is advisory and judges the others against the pack's
own `defaultMonthlyBudget` (0, its default: no budget, nothing to compare, it passes). A budget the mandatory rule
cannot judge is a violation saying why, never a pass: nothing priced, a stamp that is not a finite number, or (where
the pack's config carries the stack's budget, as `./run check` passes it) no budget stamp at all."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from components.catalog.labels import (
    COST_ITEMS_ANNOTATION,
    COST_UNPRICED_ANNOTATION,
    MONTHLY_BUDGET_ANNOTATION,
    MONTHLY_COST_ANNOTATION,
)
from policies.checks.rule_types import Settings, Violation, setting
from policies.resources import Resource

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
DEFAULT_BUDGET_KEY = "defaultMonthlyBudget"
BUDGET_KEY = "monthlyBudget"


@dataclass(frozen=True)
class BudgetConfig(Settings):
    monthly_budget: float = setting(
        BUDGET_KEY,
        0.0,
        "the stack's pricing.monthly_budget in US dollars per month (`./run check` passes it): a stack Namespace"
        " without the plan's budget stamp, or with another figure in it, is then refused (0: the stamp alone)",
    )


@dataclass(frozen=True)
class DefaultBudgetConfig(Settings):
    default_monthly_budget: float = setting(
        DEFAULT_BUDGET_KEY,
        0.0,
        "US dollars per month a stack that sets no pricing.monthly_budget is held to, advisory (0: none)",
    )


def _usd(value: object) -> float | None:
    """A stamp's US dollars: a finite number, else None (NaN, infinities, words, missing)."""
    try:
        number = float(str(value))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _stamps(resources: list[Resource]) -> Iterator[tuple[Resource, dict[str, Any]]]:
    """Each stack Namespace with its annotations."""
    for namespace in (r for r in resources if r.type == NAMESPACE_TYPE):
        yield namespace, (namespace.props.get("metadata") or {}).get("annotations") or {}


def _judge(namespace: Resource, annotations: dict[str, Any], budget: float, owner: str, key: str) -> list[Violation]:
    """The stamped monthly cost against `budget` (`owner`'s, set by `key`)."""
    cannot = f"the budget ${budget:,.2f}/month ({key}) cannot be judged"
    unpriced = annotations.get(COST_UNPRICED_ANNOTATION)
    if MONTHLY_COST_ANNOTATION not in annotations:
        left = f"; unpriced: {unpriced}" if unpriced else ""
        return [
            Violation(
                namespace,
                f"{cannot}: nothing the stack creates is priced (no {MONTHLY_COST_ANNOTATION} stamp){left}",
            )
        ]
    stamped = annotations[MONTHLY_COST_ANNOTATION]
    cost = _usd(stamped)
    if cost is None or cost < 0:
        why = f"the cost stamp {stamped!r} is not a finite number of US dollars, 0 or more"
        return [Violation(namespace, f"{cannot}: {why}")]
    if unpriced:
        return [Violation(namespace, f"{cannot}: the plan's ${cost:,.2f}/month leaves out {unpriced}")]
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


def monthly_budget(resources: list[Resource], config: BudgetConfig) -> list[Violation]:
    """A stack that sets `pricing.monthly_budget` is refused when its planned monthly cost is above it; the
    message names the budget, the figure and the biggest items. A budget that cannot be judged is refused too,
    saying why: an item no price covers (the figure is short of what the stack costs), nothing priced at all, a
    stamp that is not a finite number; and, where the pack's config carries the stack's budget (`monthlyBudget`),
    a Namespace stamped with another budget or none. A stack without a budget is not judged here
    (`monthly_budget_default` is)."""
    stamps = list(_stamps(resources))
    budgeted = [(namespace, stamp) for namespace, stamp in stamps if MONTHLY_BUDGET_ANNOTATION in stamp]
    out = []
    configured = config.monthly_budget
    if configured > 0 and not budgeted:
        out.append(
            Violation(
                stamps[0][0] if stamps else None,
                f"the stack's budget ${configured:,.2f}/month (pricing.monthly_budget, the pack's {BUDGET_KEY}) cannot"
                f" be judged: no Namespace carries the plan's {MONTHLY_BUDGET_ANNOTATION} stamp (a transform removed"
                " it?)",
            )
        )
    for namespace, stamp in budgeted:
        stamped = stamp[MONTHLY_BUDGET_ANNOTATION]
        budget = _usd(stamped)
        if budget is None or budget <= 0:
            out.append(
                Violation(
                    namespace,
                    f"the budget stamp {MONTHLY_BUDGET_ANNOTATION}: {stamped!r} is not a finite number of US dollars"
                    " above 0: the plan writes pricing.monthly_budget there",
                )
            )
            continue
        if configured > 0 and abs(budget - configured) >= 0.01:
            out.append(
                Violation(
                    namespace,
                    f"the budget stamp says ${budget:,.2f}/month where the stack's pricing.monthly_budget is"
                    f" ${configured:,.2f}/month (the pack's {BUDGET_KEY}): a transform rewrote it?",
                )
            )
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
