"""A budget the `monthly-budget` rule cannot judge is a mandatory violation saying why, never a pass (round 5: a budget
on a stack with nothing priced, a NaN or negative cost stamp, an infinite budget stamp and stamps a transform removed
all passed), and a budget the config cannot read unambiguously is refused (`'25,00 USD/month'` was $2,500)."""

from __future__ import annotations

import pytest

from components.catalog import labels
from policies.checks.budget import (
    NAMESPACE_TYPE,
    BudgetConfig,
    DefaultBudgetConfig,
    monthly_budget,
    monthly_budget_default,
)
from policies.resources import Resource
from stacks.__main__ import main
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from stacks.review.check import check, stack_policy_config
from stacks.review.offline import record

COST, BUDGET = labels.MONTHLY_COST_ANNOTATION, labels.MONTHLY_BUDGET_ANNOTATION


def _namespace(annotations: dict[str, str]) -> Resource:
    return Resource(NAMESPACE_TYPE, "llmd-namespace", {"metadata": {"name": "ns", "annotations": annotations}})


def _messages(annotations: dict[str, str], config: BudgetConfig | None = None) -> list[str]:
    return [v.message for v in monthly_budget([_namespace(annotations)], config or BudgetConfig())]


@pytest.mark.parametrize("cost", ["nan", "NaN", "-1", "-0.01", "inf", "-inf", "1e400", "", "12 USD"])
def test_a_cost_stamp_that_is_not_a_finite_sum_cannot_pass_a_budget(cost: str) -> None:
    [message] = _messages({COST: cost, BUDGET: "1000"})
    assert message.startswith("the budget $1,000.00/month (pricing.monthly_budget) cannot be judged:")
    assert f"the cost stamp {cost!r} is not a finite number of US dollars, 0 or more" in message


@pytest.mark.parametrize("budget", ["inf", "nan", "0", "-5", "1e400", "lots"])
def test_a_budget_stamp_that_is_not_a_finite_positive_sum_is_refused(budget: str) -> None:
    [message] = _messages({COST: "10", BUDGET: budget})
    assert message == (
        f"the budget stamp {labels.MONTHLY_BUDGET_ANNOTATION}: {budget!r} is not a finite number of US dollars"
        " above 0: the plan writes pricing.monthly_budget there"
    )


def test_the_edges_of_a_judgeable_budget() -> None:
    """A cost of 0 is a figure (nothing costs anything) and at the budget is within it; a cent over is not."""
    assert _messages({COST: "0", BUDGET: "1000"}) == []
    assert _messages({COST: "1000.00", BUDGET: "1000"}) == []
    [over] = _messages({COST: "1000.01", BUDGET: "1000"})
    assert "is over the stack's budget $1,000.00/month" in over


def test_a_budget_with_nothing_priced_cannot_be_judged() -> None:
    unpriced = {BUDGET: "1000", labels.COST_UNPRICED_ANNOTATION: "node pool h100: set pricing.machine_types.h100"}
    [message] = _messages(unpriced)
    assert message == (
        "the budget $1,000.00/month (pricing.monthly_budget) cannot be judged: nothing the stack creates is priced"
        " (no llm-d.ai/monthly-cost-usd stamp); unpriced: node pool h100: set pricing.machine_types.h100"
    )


def test_stamps_a_transform_removed_are_refused_when_the_stack_sets_a_budget() -> None:
    """The stack's budget reaches the rule through the pack's config (`./run check` passes it): a Namespace without
    the stamps, or with another budget on it, is refused; without the config key there is nothing to hold it to."""
    config = BudgetConfig(1000.0)
    [stripped] = _messages({}, config)
    assert stripped == (
        "the stack's budget $1,000.00/month (pricing.monthly_budget, the pack's monthlyBudget) cannot be judged: no"
        " Namespace carries the plan's llm-d.ai/monthly-budget-usd stamp (a transform removed it?)"
    )
    [rewritten] = _messages({COST: "10", BUDGET: "5000"}, config)
    assert rewritten == (
        "the budget stamp says $5,000.00/month where the stack's pricing.monthly_budget is $1,000.00/month (the"
        " pack's monthlyBudget): a transform rewrote it?"
    )
    assert _messages({COST: "10", BUDGET: "1000"}, config) == []
    assert _messages({}) == []  # no budget anywhere: nothing to judge


def test_the_advisory_default_reports_a_stamp_it_cannot_read() -> None:
    [message] = [v.message for v in monthly_budget_default([_namespace({COST: "nan"})], DefaultBudgetConfig(10.0))]
    assert "cannot be judged" in message and "'nan'" in message


def _mandatory(name: str, *sets: str) -> list[str]:
    stack_plan = plan(loading.load_preset(name, list(sets)))
    findings = check(record(stack_plan, name), stack_policy_config(stack_plan.config))
    return [f.violation.message for f in findings if f.rule.name == "monthly-budget"]


def test_a_budget_on_a_stack_with_nothing_priced_fails_run_check(capsys: pytest.CaptureFixture[str]) -> None:
    """dev runs on an existing cluster with no price: its budget cannot be judged (it passed before)."""
    [message] = _mandatory("dev", "pricing.monthly_budget=1000")
    assert "cannot be judged: nothing the stack creates is priced" in message
    assert main(["check", "dev", "--set", "pricing.monthly_budget=1000"]) == 1
    assert "mandatory monthly-budget" in capsys.readouterr().out
    assert _mandatory("dev") == []


@pytest.mark.parametrize(
    ("text", "usd"),
    [("25000", 25000.0), ("25,000 USD/month", 25000.0), ("$1,250,000 per month", 1_250_000.0), ("25000.50", 25000.5)],
)
def test_a_budget_written_with_thousands_separators_is_read(text: str, usd: float) -> None:
    assert loading.load_preset("dev", [f"pricing.monthly_budget={text}"]).pricing.monthly_budget == usd


@pytest.mark.parametrize("text", ["25,00 USD/month", "2,5000", "1,2,3", "25,000,00", ",250", "25.000,00", "25,"])
def test_a_budget_with_an_ambiguous_separator_is_refused(text: str) -> None:
    with pytest.raises(ConfigError) as refused:
        loading.load_preset("dev", [f"pricing.monthly_budget={text}"])
    assert "pricing.monthly_budget" in str(refused.value) and "\n" not in str(refused.value)
    assert "a comma separates thousands" in str(refused.value)
