"""The keep-up rule (components/formulas/keep_up.py): a stack keeps up when no load stage's queue grows (the wait for a
first token at a stage's end no longer than at its start, within a request's service time alone) and the replicas
give more than the workload asks over its arrivals and one service time. Boundaries from both sides on the pure
function; then the workloads the old rule (the last request done within 5% of the span) refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.formulas import keep_up
from components.formulas.load_costs import LoadCosts
from components.formulas.serving_time import EngineCosts
from stacks.__main__ import size_lines
from stacks.config import loading
from stacks.planning.plan import plan

TRACE = Path(__file__).parent / "fixtures/workloads/mooncake-conversation/conversation_trace_40k.jsonl"


def _stage(waits: list[float], service: float = 10.0, spacing: float = 1.0) -> keep_up.StageBacklog:
    arrivals = [i * spacing for i in range(len(waits))]
    (backlog,) = keep_up.stage_backlogs([0] * len(waits), arrivals, waits, [service] * len(waits))
    return backlog


def test_the_windows_are_a_tenth_of_the_stage_at_least_a_service_time_at_most_half() -> None:
    # 101 arrivals a second apart over 100 s, service 4 s: the first and last 10 s
    flat = _stage([0.0] * 101, service=4.0)
    assert (flat.start_s, flat.end_s, flat.window_s, flat.allowance_s) == (0.0, 100.0, 10.0, 4.0)
    assert _stage([0.0] * 101, service=30.0).window_s == 30.0  # a service time, more than a tenth
    assert _stage([0.0] * 2, service=11.0).window_s == 0.5  # two requests a second apart: half the stage


def test_a_queue_that_grows_by_a_service_time_keeps_up_and_a_hair_more_does_not() -> None:
    # 101 requests a second apart, the first 10 s waiting 1 s, the last 10 s (11 requests) a given wait
    def growing(late: float) -> keep_up.StageBacklog:
        return _stage([1.0] * 11 + [1.0] * 79 + [late] * 11, service=4.0)

    at = growing(5.0)  # 1 s -> 5 s: grows by exactly the 4 s service time
    assert (at.early_wait_s, at.late_wait_s, at.growth_s) == (1.0, 5.0, 4.0)
    assert not at.grows and keep_up.keeps_up(0.5, [at])
    past = growing(5.001)
    assert past.grows and not keep_up.keeps_up(0.5, [past])
    shrinking = growing(0.0)  # a queue that drains keeps up
    assert shrinking.growth_s == -1.0 and not shrinking.grows


def test_each_stage_is_judged_on_its_own() -> None:
    """A stage whose queue grows fails the workload even when the next one drains it."""
    stages = [0] * 21 + [1] * 21
    arrivals = [float(i) for i in range(42)]
    waits = [0.0] * 19 + [9.0, 9.0] + [9.0, 9.0] + [0.0] * 19
    first, second = keep_up.stage_backlogs(stages, arrivals, waits, [4.0] * 42)
    assert (first.stage, first.requests, first.window_s) == (0, 21, 4.0)  # 20 s long: a service time
    assert first.early_wait_s == 0.0 and first.late_wait_s == pytest.approx(9 * 2 / 5)  # 16..20: 2 of 5 wait 9 s
    assert not first.grows  # 3.6 s of growth, within 4 s
    assert second.growth_s < 0
    steeper = [0.0] * 16 + [9.0] * 5 + [0.0] * 21
    grown, _ = keep_up.stage_backlogs(stages, arrivals, steeper, [4.0] * 42)
    assert grown.growth_s == 9.0 and grown.grows
    assert not keep_up.keeps_up(0.1, keep_up.stage_backlogs(stages, arrivals, steeper, [4.0] * 42))


def test_the_fluid_bound_counts_the_span_and_one_service_time() -> None:
    # 30 s of work on 2 replicas over a 10 s span and a 5 s service: 30 / (2 x 15) = 100%, not below
    assert keep_up.demand_share(30.0, 2, 10.0, 5.0) == 1.0
    assert not keep_up.keeps_up(keep_up.demand_share(30.0, 2, 10.0, 5.0), [])
    assert keep_up.keeps_up(keep_up.demand_share(29.99, 2, 10.0, 5.0), [])
    # two requests a second apart, 3 s of compute: one replica over 1 s + an 11 s service time
    assert keep_up.demand_share(3.0, 1, 1.0, 11.0) == 0.25


def test_a_requests_service_alone_is_its_first_token_and_its_decode_at_a_batch_of_one() -> None:
    costs = EngineCosts(1e-4, 1e-9, 0.02, 1e-7, LoadCosts(0.0, 0.0), 8192, 256, 10**6)
    # 257 output tokens: 256 steps, each max(1e-4 + 1128.5 x 1e-9, 0.02 + 1128 x 1e-7) at the mean context 1,128.5
    assert keep_up.service_alone_s(costs, 1000, 257, 0.5) == pytest.approx(0.5 + 256 * (0.02 + 1128 * 1e-7))
    assert keep_up.service_alone_s(costs, 1000, 1, 0.5) == 0.5


STAGE = {  # the stage: 3,256-token requests (2,048 shared, 952 own, 256 out) at 3/s for 60 s
    "num_groups": 50,
    "num_prompts_per_group": 5,
    "system_prompt_len": 2048,
    "question_len": 952,
    "output_len": 256,
}


def _sets(fields: dict[str, object]) -> list[str]:
    return [f"workload.shared_prefix.{k}={v}" for k, v in fields.items()]


def test_size_gives_a_count_for_the_sixty_second_stage() -> None:
    """On an Intel B60 (Qwen3-32B at TP=4, its preset) a request takes 13.9 s alone (its 3,000-token prompt, then 255
    decode steps of about 50 ms: 16.4 GB of weights per device at 456 GB/s, with the engine's step costs, issue 47),
    and the last one finishes long after the last arrival whatever the count: past 5% of the minute (3 s), so the old
    rule found none up to 256. The queue does not grow at 3 replicas (the reviewed figures of this model: asks 73%,
    waits 2.7 s -> 9.2 s, within the 13.9 s)."""
    lines = size_lines("xpu-vllm-native-cpu", [*_sets({**STAGE, "request_rate": 3, "duration": 60})], None, None)
    text = "\n".join(lines)
    assert "| HBM only: the fewest | 4 | yes |" in text and "| CPU tier 100 GiB: the fewest | 3 | yes |" in text
    assert "Fewest per tiers: 4 with HBM only, 3 with CPU tier." in text
    stack = plan(
        loading.load_named(
            "xpu-vllm-native-cpu", [*_sets({**STAGE, "request_rate": 3, "duration": 60}), "cache.replicas=auto"]
        )
    )
    run = stack.capacity.configured if stack.capacity else None
    assert run is not None and run.replicas == 3 and run.keeps_up
    assert run.drain_s > 0.05 * run.span_s  # what the old rule refused
    (stage,) = run.backlog
    assert stage.requests == 180 and stage.allowance_s == pytest.approx(13.88, abs=0.01)


def test_two_requests_a_second_apart_are_plannable() -> None:
    sets = _sets({**STAGE, "num_groups": 1, "num_prompts_per_group": 2, "request_rate": 1, "duration": 2})
    stack = plan(loading.load_named("xpu-vllm-native-cpu", [*sets, "cache.replicas=auto"]))
    assert stack.capacity is not None and stack.capacity.configured.replicas == 1
    assert stack.capacity.configured.keeps_up


def test_a_minute_sampled_from_a_trace_is_plannable(tmp_path: Path) -> None:
    minute = tmp_path / "minute.jsonl"
    with TRACE.open() as trace:
        rows = [json.loads(line) for line in trace]
    start = rows[len(rows) // 2]["timestamp"]  # a minute from the middle of the hour
    picked = [r for r in rows if start <= r["timestamp"] < start + 60_000]
    minute.write_text("".join(json.dumps({**r, "timestamp": r["timestamp"] - start}) + "\n" for r in picked))
    text = "\n".join(size_lines("gpu-vllm-native-cpu", [], str(minute), None))
    assert "Fewest per tiers: " in text and "none up to" not in text
