"""The capacity plan through planning and the CLI (stacks/planning/workload/capacity_plan.py): the keep-up check,
`cache.replicas: auto`, the router's weights as rendered, and the targets no count meets. The time model itself is
held to closed forms in test_serving_time.py."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from components.catalog.time_model_band import TTFT_BANDS
from components.formulas.load_costs import LoadCosts
from components.formulas.requests import Request
from components.formulas.serving_time import EngineCosts
from stacks.__main__ import main, size_lines
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning import workload_plan
from stacks.planning.plan import StackPlan, plan
from stacks.planning.workload import capacity_plan
from stacks.planning.workload.capacity_plan import MAX_EVENTS, check_bounded
from stacks.planning.workload.routing_weights import routing_of
from stacks.review.render import render

TRACE = "tests/fixtures/workloads/mooncake-conversation/conversation_trace_40k.jsonl"
# A small shared-prefix workload dev's one Qwen3-0.6B replica serves with room: 300 requests over a minute.
SMALL = {
    "num_groups": 20,
    "num_prompts_per_group": 5,
    "system_prompt_len": 2048,
    "question_len": 512,
    "output_len": 64,
    "request_rate": 5,
    "duration": 60,
}


def _small(**more: object) -> list[str]:
    sets = [f"workload.shared_prefix.{k}={v}" for k, v in SMALL.items()]
    return [*sets, *(f"{k}={v}" for k, v in more.items())]


@functools.cache
def _conversation(replicas: str) -> StackPlan:
    return plan(loading.load_named("gpu-vllm-native-cpu", [f"workload.trace={TRACE}", f"cache.replicas={replicas}"]))


def test_two_replicas_do_not_keep_up_with_the_conversation_trace() -> None:
    """The issue's finding, now a refusal: the trace (its requests within Qwen3's context) asks more than two
    Qwen3-32B TP=2 replicas give. The counts are the reviewed figures of `./run size gpu-vllm-native-cpu --trace`
    (4 with HBM only, 3 with the 300 GiB tier: with the engine's step costs (issue 47; decode fitted to an H100's
    measured steps) HBM alone needs a fourth, and at 3 with the tier the trace asks 83% and the wait for a first
    token grows from 3.8 s in the trace's first tenth to 7.0 s in its last, within the 6.2 s a request takes alone:
    keep_up.py's backlog rule; with the H200's decode shares taken for the H100 it grew 45 s and the tier needed 4)."""
    with pytest.raises(ConfigError) as caught:
        _conversation("2")
    message = str(caught.value)
    assert message.startswith("invalid stack config: cache.replicas = 2: too few for trace")
    assert "asks 1" in message and "% of what 2 replicas give" in message
    assert "4 with HBM only, 3 with CPU tier would" in message
    assert "\n" not in message


def test_auto_renders_the_count_that_keeps_up() -> None:
    stack_plan = _conversation("auto")
    assert stack_plan.model_server.replicas == 3
    capacity = stack_plan.capacity
    assert capacity is not None and capacity.configured.replicas == 3 and capacity.configured.keeps_up
    summary = render(stack_plan, "t").summary
    assert "## Replicas for the workload" in summary
    assert "as configured (`cache.replicas: auto`) | 3 | yes |" in summary
    sized = stack_plan.tier_curve
    assert sized is not None and sized.band is not None and sized.band_size is not None
    assert sized.band_size == max(c for c in sized.cpu_sizes if c.bytes < 2**60)  # the second routing: the largest
    assert "A share given as a band was replayed with two routings" in summary


def test_the_router_is_the_rendered_one() -> None:
    tiered = routing_of(plan(loading.load_named("gpu-vllm-native-cpu", [])).router_values)
    assert (tiered.weights.queue, tiered.weights.kv_utilization) == (1, 1)
    assert (tiered.weights.hbm_prefix, tiered.weights.cpu_prefix, tiered.weights.no_hit_lru) == (1, 1, 1)
    token = routing_of(plan(loading.load_named("gpu-vllm-lmcache-server-routing", [])).router_values)
    assert (token.weights.queue, token.weights.kv_utilization, token.weights.hbm_prefix) == (2, 2, 3)
    assert token.weights.cpu_prefix == 0 and token.weights.no_hit_lru == 0


def test_a_small_workload_keeps_up_and_says_so() -> None:
    stack_plan = plan(loading.load_named("dev", _small()))
    capacity = stack_plan.capacity
    assert capacity is not None and capacity.configured.fits
    assert capacity.configured.asks < 0.5
    assert "configured replicas keep up" in render(stack_plan, "t").summary


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (_small(**{"workload.slo.tpot_p90": "0.0001"}), "workload.slo.tpot_p90 = 0.0001: no replica count meets it"),
        (_small(**{"workload.slo.ttft_p90": "0.000001"}), "workload.slo.ttft_p90 = 1e-06: no replica count meets it"),
        (["cache.replicas=auto"], "cache.replicas = 'auto': needs a workload"),
        (_small(**{"workload.slo": "{}"}), "workload.slo = {}: set workload.slo.ttft_p90 and/or"),
        (
            _small(**{"cache.replicas": "auto", "autoscaling.enabled": "true"}),
            "cache.replicas = 'auto': plans a fixed count",
        ),
    ],
)
def test_targets_no_count_meets_are_one_line(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_named("dev", overrides))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_size_says_how_many_replicas_keep_up(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["size", "dev"]
    for o in _small(**{"workload.slo.ttft_p90": "5"}):
        args += ["--set", o]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "## Replicas for the workload" in out and "| HBM only" in out and "| CPU tier" in out
    assert "keep up and meet TTFT p90 <= 5 s (workload.slo)" in out


def test_a_workload_past_the_time_models_bound_is_refused_before_it_runs() -> None:
    costs = EngineCosts(1e-4, 0.0, 0.01, 0.0, LoadCosts(0.0, 0.0), 8192, 256, 10**6)
    huge = [Request(0, 1000, MAX_EVENTS, (0, 1))]
    with pytest.raises(ConfigError, match=r"the time model would take .* at most 50,000,000"):
        check_bounded(huge, costs, 512, "workload.trace")
    check_bounded([Request(0, 1000, 1000, (0, 1))], costs, 512, "workload.trace")  # small: no error


def test_auto_takes_the_count_the_target_needs() -> None:
    """Qwen3-32B at 20 requests/s of the small workload: one replica keeps up at a TTFT p90 of about 63 ms, two
    give about 42 ms, three 41 ms (the server tokenising 2,560 tokens at 3 us each, 7.7 ms; a question's 512 tokens
    at ~61 us each on the shared system prompt's hits, plus the step's 4.3 ms of small kernels and all-reduces:
    reviewed figures of this model). The target is held at the error band's pessimistic edge (vLLM on H100: the
    model's p90 at 0.5881 of published at worst), 63 / 0.5881 = 107 ms and 42 / 0.5881 = 71 ms: a 100 ms target
    takes two, no target one."""
    faster = [o for o in _small() if "request_rate" not in o] + ["workload.shared_prefix.request_rate=20"]
    alone = plan(loading.load_named("gpu-vllm-native-cpu", [*faster, "cache.replicas=auto"]))
    targeted = plan(
        loading.load_named("gpu-vllm-native-cpu", [*faster, "cache.replicas=auto", "workload.slo.ttft_p90=0.1"])
    )
    assert alone.model_server.replicas == 1
    assert targeted.model_server.replicas == 2
    capacity = targeted.capacity
    assert capacity is not None and capacity.configured.slo_met
    assert capacity.configured.ttft_s[1] / TTFT_BANDS[("gpu", "vllm")].low <= 0.1


def test_the_workloads_bounds_are_checked_before_the_time_model_holds_or_replays_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request past the servers' context is refused by the work measure, before any request is held or replayed."""

    def replayed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the time model ran before the workload's bounds were checked")

    monkeypatch.setattr(capacity_plan, "plan_capacity", replayed)
    monkeypatch.setattr(workload_plan, "in_memory", replayed)
    trace = tmp_path / "long.jsonl"
    lines = [{"timestamp": 0, "input_length": 512, "output_length": 8, "hash_ids": [0]}]
    lines.append({"timestamp": 1000, "input_length": 50_000, "output_length": 8, "hash_ids": list(range(1, 99))})
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ConfigError, match="request 2 = '50,008 tokens': prompt and output longer than the 40,960"):
        size_lines("dev", [], str(trace), None)
