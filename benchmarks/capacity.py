"""The capacity plan's time model, printed (not asserted): its cost on the conversation trace, and its figures on
the published tiered-prefix-cache runs the repository holds, stage by stage (benchmarks/published_runs.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from published_runs import published_runs  # noqa: E402  (this script's folder is on sys.path)

from components.formulas.prefill_rate import LLMD_QWEN3_32B_H100_TP2  # noqa: E402
from stacks.config import loading  # noqa: E402
from stacks.planning.autoscaling import prefill_rate  # noqa: E402
from stacks.planning.plan import plan  # noqa: E402
from stacks.planning.workload.capacity_plan import replay_scenario  # noqa: E402
from stacks.planning.workload.capacity_records import Scenario  # noqa: E402
from stacks.planning.workload.routing_weights import routing_of  # noqa: E402
from stacks.planning.workload.workload_source import file_source, in_memory  # noqa: E402
from stacks.planning.workload_plan import plan_capacity_of, routed_curve, stack_shape  # noqa: E402

TRACE = "tests/fixtures/workloads/mooncake-conversation/conversation_trace_40k.jsonl"


def conversation_cost() -> None:
    stack_plan = plan(loading.load_named("gpu-vllm-native-cpu", []))
    source = in_memory(file_source(str(ROOT / TRACE), 512))
    shape = stack_shape(stack_plan)
    routing = routing_of(stack_plan.router_values)
    requests = source.requests_list()
    scenario = Scenario("CPU tier", shape.configured_cpu, None, "cpu")
    start = time.perf_counter()
    run, _ = replay_scenario(shape, requests, 512, routing, scenario, shape.replicas)
    one = time.perf_counter() - start
    start = time.perf_counter()
    capacity = plan_capacity_of(stack_plan, source, None)
    whole = time.perf_counter() - start
    print(
        "## The time model's cost (the conversation trace within Qwen3's context, 11,457 requests, gpu-vllm-native-cpu)"
    )
    print(
        f"one replay at {run.replicas} replicas: {one:.1f} s; the whole capacity plan (every scenario): {whole:.1f} s"
    )
    for needed in capacity.needed:
        print(f"  {needed.scenario.name}: {needed.run.replicas if needed.run else '>256'} replicas")
    start = time.perf_counter()
    sized = routed_curve(stack_plan, source, capacity)
    curve_s = time.perf_counter() - start
    assert sized.band is not None
    c, b, fs = sized.curve, sized.band, sized.configured[1]
    width = abs(c.share(c.hit_tokens)[:, fs] - b.share(b.hit_tokens)[:, fs])
    print(
        f"the tier curve with its two routings: {curve_s:.1f} s; the band (how far routing at the configured size"
        f" lies from routing at {sized.band_size}): up to {float(width.max()):.1%} of prompt tokens"
    )
    print()


def peak_prefill_rate() -> None:
    """The token-aware trigger's divisor as the time model derives it, beside llm-d's hand-measured figure."""
    rate = prefill_rate(plan(loading.load_named("gpu-vllm-native-cpu", [])).model_server)
    print("## The peak prefill rate (llm-d's `peakPrefillThroughput`): Qwen3-32B TP=2 H100")
    print(f"derived: {rate.tokens_per_s:,.0f} tok/s ({rate.formula})")
    print(f"llm-d:   {LLMD_QWEN3_32B_H100_TP2:,} tok/s (calibrate.sh, one unloaded 8,192-token chunk, vLLM 0.19)")
    print(f"ratio:   {rate.tokens_per_s / LLMD_QWEN3_32B_H100_TP2:.3f} (derived / llm-d)")
    print()


if __name__ == "__main__":
    peak_prefill_rate()
    conversation_cost()
    published_runs()
