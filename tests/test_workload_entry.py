"""The planning wing's one workload entry (stacks/planning/workload_plan.py `plan_workload`): `plan()` and `./run size`
each run the workload chain once, and the plan renders at the figures the record holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stacks.__main__ import size_lines
from stacks.config import loading
from stacks.planning import plan as plan_module
from stacks.planning import workload_plan
from stacks.planning.plan import plan
from stacks.planning.workload import capacity_plan

# dev's one Qwen3-0.6B replica on a small shared-prefix workload: 300 requests over a minute.
SMALL = [
    "workload.shared_prefix.num_groups=20",
    "workload.shared_prefix.num_prompts_per_group=5",
    "workload.shared_prefix.system_prompt_len=2048",
    "workload.shared_prefix.question_len=512",
    "workload.shared_prefix.output_len=64",
    "workload.shared_prefix.request_rate=5",
    "workload.shared_prefix.duration=60",
]


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    original: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_plan_runs_the_workload_chain_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """One entry call; the capacity plan replayed once at a configured count whose figures do not move."""
    entries = _counting(monkeypatch, plan_module, "plan_workload")
    capacities = _counting(monkeypatch, capacity_plan, "plan_capacity")
    stack_plan = plan(loading.load_named("dev", SMALL))
    assert (len(entries), len(capacities)) == (1, 1)
    assert stack_plan.workload is not None and stack_plan.workload.keeps_up


def test_size_prints_the_record_plan_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    """`./run size` calls plan() once and runs no chain of its own."""
    entries = _counting(monkeypatch, plan_module, "plan_workload")
    capacities = _counting(monkeypatch, capacity_plan, "plan_capacity")
    lines = size_lines("dev", SMALL, None, None)
    assert (len(entries), len(capacities)) == (1, 1)
    assert "## Replicas for the workload" in lines


def test_auto_renders_the_count_and_the_tier_the_record_holds() -> None:
    """`cache.replicas: auto` and `cache.tier.cpu: auto`: the rendered server runs the record's count, its tier is
    the record's, and the record's capacity plan is the one replayed at them."""
    config = loading.load_named("existing-mi300", [*SMALL, "cache.replicas=auto", "cache.tier.cpu=auto"])
    stack_plan = plan(config)
    record = stack_plan.workload
    assert record is not None and record.cpu_tier is not None
    assert stack_plan.model_server.replicas == record.replicas == record.capacity.configured.replicas
    assert stack_plan.tier == record.cpu_tier
    assert record.capacity.configured.scenario.cpu == record.cpu_tier
    assert stack_plan.cost is record.cost


def test_a_configured_count_is_checked_once_at_the_rendered_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = _counting(monkeypatch, capacity_plan, "check_fits")
    plan(loading.load_named("dev", SMALL))
    assert len(checks) == 1
    plan(loading.load_named("dev", [*SMALL, "cache.replicas=auto"]))  # auto takes a count: nothing to check
    assert len(checks) == 1


def test_the_entry_makes_each_plan_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plans the entry measures at other figures are made once each; plan() renders the last one it made."""
    made: list[tuple[object, ...]] = []
    original = workload_plan.Replan.__call__

    def recording(self: workload_plan.Replan, *args: Any) -> Any:
        made.append(args)
        return original(self, *args)

    monkeypatch.setattr(workload_plan.Replan, "__call__", recording)
    plan(loading.load_named("gpu-vllm-native-cpu", [*SMALL, "cache.replicas=auto"]))
    assert len(made) == len(set(made)) + 1  # every figure asked once by the entry, then once more to render
    assert made[-1] == made[-2]
