"""The monthly-budget rule and the change plan's cost line read the plan's cost stamp on the Namespace."""

from __future__ import annotations

from typing import Any

from components.catalog import labels
from policies.checks.budget import NAMESPACE_TYPE, DefaultBudgetConfig, monthly_budget, monthly_budget_default
from policies.checks.rule_types import NoConfig
from policies.resources import Resource
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review.changeplan import cost_line
from stacks.review.check import check
from stacks.review.offline import record


def _namespace(annotations: dict[str, str]) -> Resource:
    return Resource(NAMESPACE_TYPE, "llmd-namespace", {"metadata": {"name": "ns", "annotations": annotations}})


def _stamp(cost: str, budget: str | None = None) -> dict[str, str]:
    out = {labels.MONTHLY_COST_ANNOTATION: cost, labels.COST_ITEMS_ANNOTATION: "node pool a: $900/month"}
    return out | ({labels.MONTHLY_BUDGET_ANNOTATION: budget} if budget is not None else {})


def test_over_the_budget_is_refused_naming_it_and_the_biggest_items() -> None:
    [violation] = monthly_budget([_namespace(_stamp("1000.50", "1000"))], NoConfig())
    assert "$1,000.50/month is over the stack's budget $1,000.00/month" in violation.message
    assert "by $0.50" in violation.message and "node pool a: $900/month" in violation.message


def test_at_or_under_the_budget_or_without_one_passes() -> None:
    assert monthly_budget([_namespace(_stamp("1000", "1000"))], NoConfig()) == []
    assert monthly_budget([_namespace(_stamp("999999"))], NoConfig()) == []
    assert monthly_budget([_namespace({})], NoConfig()) == []


def test_a_stamp_that_is_not_numbers_is_reported() -> None:
    [violation] = monthly_budget([_namespace(_stamp("lots", "1000"))], NoConfig())
    assert "not two numbers" in violation.message


def test_a_budget_cannot_pass_a_stack_with_unpriced_items() -> None:
    stamp = _stamp("10", "1000") | {labels.COST_UNPRICED_ANNOTATION: "system pool: set pricing.prices.x"}
    [violation] = monthly_budget([_namespace(stamp)], NoConfig())
    assert "cannot be judged" in violation.message and "system pool: set pricing.prices.x" in violation.message


def test_without_a_budget_the_packs_default_is_advisory_and_none_passes() -> None:
    default = DefaultBudgetConfig(1000.0)
    [violation] = monthly_budget_default([_namespace(_stamp("1000.50"))], default)
    assert violation.message == (
        "planned cost $1,000.50/month is over the pack's default budget $1,000.00/month (the policy config's"
        " defaultMonthlyBudget) by $0.50; biggest items: node pool a: $900/month"
    )
    assert monthly_budget_default([_namespace(_stamp("1000"))], default) == []
    assert monthly_budget_default([_namespace(_stamp("1000.50"))], DefaultBudgetConfig()) == []  # no default
    assert monthly_budget_default([_namespace({})], default) == []  # nothing priced: nothing to compare
    # a stack that sets its own budget is judged by monthly-budget (mandatory), not against the pack's default
    assert monthly_budget_default([_namespace(_stamp("5000", "9000"))], default) == []


def _findings(name: str, *sets: str, rule: str = "monthly-budget", configs: dict[str, Any] | None = None) -> list[str]:
    stack_plan = plan(loading.load_preset(name, list(sets)))
    return [f.violation.message for f in check(record(stack_plan, name), configs) if f.rule.name == rule]


# gke-tpu-v5p priced in full: its spot pool on demand, its NAT and boot disks (not in the catalog) at $0.
V5P_PRICED = ("pricing.rate=on-demand", "pricing.prices={gke-cloud-nat: 0, gke-boot-disk: 0}")


def test_the_rendered_stack_is_judged_at_its_plan_figure() -> None:
    """gke-tpu-v5p: 3 x ct5p-hightpu-4t at 16.80 + the $0.10 fee + 3 x e2-standard-8 at 0.26805 (a regional system
    pool) = 51.30415 $/hour = $37,452.03/month: over a $37,000 budget, within $38,000."""
    [message] = _findings("gke-tpu-v5p", *V5P_PRICED, "pricing.monthly_budget=37000")
    assert "$37,452.03/month is over the stack's budget $37,000.00/month" in message
    assert _findings("gke-tpu-v5p", *V5P_PRICED, "pricing.monthly_budget=38000") == []
    assert _findings("gke-tpu-v5p", *V5P_PRICED) == []


def test_a_rendered_stack_without_a_budget_is_an_advisory_finding_over_the_packs_default() -> None:
    """The same $37,452.03/month against the policy config's default: reported at the advisory level (the
    stack's own budget is mandatory); no default, no finding."""
    over = {"monthly-budget-default": {"defaultMonthlyBudget": 37000}}
    stack_plan = plan(loading.load_preset("gke-tpu-v5p", list(V5P_PRICED)))
    [finding] = [f for f in check(record(stack_plan, "gke-tpu-v5p"), over) if f.rule.name.startswith("monthly-")]
    assert finding.rule.enforcement == "advisory"
    assert "$37,452.03/month is over the pack's default budget $37,000.00/month" in finding.violation.message
    assert _findings("gke-tpu-v5p", *V5P_PRICED, rule="monthly-budget-default") == []


def test_a_rendered_stack_with_unpriced_items_cannot_pass_its_budget() -> None:
    """eks-h100-efs without a workload: EFS's per-GB throughput is not priced."""
    [message] = _findings("eks-h100-efs", "pricing.monthly_budget=1000000")
    assert "cannot be judged" in message and "EFS elastic throughput" in message


def _resources(cost: str | None) -> dict[tuple[str, str], dict[str, Any]]:
    annotations = {labels.MONTHLY_COST_ANNOTATION: cost} if cost is not None else {}
    row = {"inputs": {"metadata": {"annotations": annotations}}}
    return {(NAMESPACE_TYPE, "llmd-namespace"): row}


def test_the_change_plan_shows_the_monthly_cost_before_after_and_delta() -> None:
    assert (
        cost_line(_resources("1000"), _resources("1500.5")) == "- monthly cost: $1,000.00 -> $1,500.50 (+$500.50/month)"
    )
    assert (
        cost_line(_resources("1500"), _resources("1000")) == "- monthly cost: $1,500.00 -> $1,000.00 (-$500.00/month)"
    )
    assert cost_line(_resources(None), _resources("10")) == "- monthly cost: not priced -> $10.00"
    assert cost_line(_resources(None), _resources(None)) == "- monthly cost: not priced at either revision"
