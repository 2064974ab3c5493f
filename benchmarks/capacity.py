"""The capacity plan's time model, printed (not asserted): its cost on the conversation trace, and its figures on
llm-d's published tiered-prefix-cache benchmark beside llm-d's (tests/fixtures/llm-d-benchmark/, its SOURCE.md).

llm-d's run: 8 x Qwen3-32B TP=2 on H100 (gpu-vllm-native-cpu at 8 replicas, a 200 GiB CPU tier each), the router's
five scorers at weight 1, inference-perf's shared_prefix data (250 groups x 5 prompts, a 16,000-token system
prompt, 256-token questions and outputs) at 5 to 40 requests/s, 60 s a stage, one stage after another on one warm
fleet, HBM only against HBM + CPU. Here the same workload goes through the time model, each stage after the last
has drained (inference-perf waits for a stage's requests), the caches warm. Arrivals are evenly spaced at each
stage's rate where llm-d's are Poisson (an approximation: bursts queue more). A stage's throughput is its
requests' prompt and output tokens over its first arrival to its last finish (llm-d's "Throughput (tok/s)"
counts both: 5 QPS x 16,512 tokens is 82,560).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.formulas.prefill_rate import LLMD_QWEN3_32B_H100_TP2  # noqa: E402
from components.formulas.requests import Request  # noqa: E402
from components.formulas.shared_prefix import SharedPrefixShape, shared_prefix_requests  # noqa: E402
from components.units import ByteSize  # noqa: E402
from stacks.config import loading  # noqa: E402
from stacks.planning.autoscaling import prefill_rate  # noqa: E402
from stacks.planning.capacity_plan import Scenario, replay_scenario  # noqa: E402
from stacks.planning.plan import plan  # noqa: E402
from stacks.planning.routing_weights import routing_of  # noqa: E402
from stacks.planning.workload_plan import plan_capacity_of, routed_curve, stack_shape  # noqa: E402
from stacks.planning.workload_sizing import file_source, in_memory  # noqa: E402

TRACE = "tests/fixtures/workloads/mooncake-conversation/conversation_trace_40k.jsonl"
BENCHMARK = ROOT / "tests/fixtures/llm-d-benchmark/qwen3-32b-h100-tiered.json"
# inference-perf runs a stage's requests, waits for them, pauses `interval` and starts the next: each stage here
# starts this long after the last one's arrivals (long enough for the slowest to drain: the bench checks it).
DRAIN_GAP_S = 3600
BLOCK_TOKENS = 128  # divides the 16,000-token system prompt (the router's and vLLM's blocks are smaller still)


def conversation_cost() -> None:
    stack_plan = plan(loading.load_named("gpu-vllm-native-cpu", []))
    source = in_memory(file_source(str(ROOT / TRACE), 512))
    shape = stack_shape(stack_plan)
    routing = routing_of(stack_plan.router_values)
    requests = source.requests_list()
    scenario = Scenario("CPU tier", shape.configured_cpu, None)
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
    for scenario, needed in capacity.needed:
        print(f"  {scenario.name}: {needed.replicas if needed else '>256'} replicas")
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


Stages = list[tuple[float, float, float]]


def benchmark_requests(data: dict[str, Any]) -> tuple[list[Request], Stages]:
    """Each stage after the last has drained (`DRAIN_GAP_S` after its arrivals; checked), caches kept warm:
    (requests, [(rate, start s, end s)])."""
    shape = data["workload"]["shared_prefix"]
    requests: list[Request] = []
    stages = []
    start_ms = 0
    for k, stage in enumerate(data["workload"]["load"]["stages"]):
        rate, duration = stage["rate_qps"], int(stage["duration_s"])
        one = SharedPrefixShape(**shape, request_rate=rate, duration=duration)
        for r in shared_prefix_requests(one, BLOCK_TOKENS, seed=k):
            requests.append(replace(r, timestamp_ms=r.timestamp_ms + start_ms))
        stages.append((rate, start_ms / 1000, start_ms / 1000 + duration))
        start_ms += (duration + DRAIN_GAP_S) * 1000
    return requests, stages


def stage_throughput(
    requests: list[Request], finish: list[float], stages: list[tuple[float, float, float]]
) -> list[float]:
    out = []
    for _, start, end in stages:
        picked = [i for i, r in enumerate(requests) if start <= r.timestamp_ms / 1000 < end]
        tokens = sum(requests[i].input_length + requests[i].output_length for i in picked)
        out.append(tokens / (max(finish[i] for i in picked) - start))
    return out


def llm_d_benchmark() -> None:
    data = json.loads(BENCHMARK.read_text())
    replicas = data["hardware"]["model_servers"]
    cpu = ByteSize.parse("200GiB")
    stack_plan = plan(
        loading.load_named("gpu-vllm-native-cpu", [f"cache.replicas={replicas}", "cache.tier.cpu=200GiB"])
    )
    shape = stack_shape(stack_plan)
    routing = routing_of(stack_plan.router_values)
    requests, stages = benchmark_requests(data)
    first = requests[0].timestamp_ms / 1000
    results = {}
    for name, size in (("hbm_only", ByteSize(0)), ("hbm_plus_cpu", cpu)):
        start = time.perf_counter()
        run, replayed = replay_scenario(shape, requests, BLOCK_TOKENS, routing, Scenario(name, size, None), replicas)
        finish = [f + first for f in replayed.served.record.finish]
        results[name] = (stage_throughput(requests, finish, stages), time.perf_counter() - start, run)
    print(f"## llm-d's tiered-prefix-cache benchmark: {replicas} x Qwen3-32B TP=2 H100, 200 GiB CPU tier each")
    print(
        f"{len(requests):,} requests; the replays took {results['hbm_only'][1]:.1f} s and"
        f" {results['hbm_plus_cpu'][1]:.1f} s"
    )
    print()
    print(
        "| rate (req/s) | HBM only: model / llm-d tok/s | HBM + CPU: model / llm-d tok/s | gain: model / llm-d"
        " | ratio |"
    )
    print("|---|---|---|---|---|")
    for k, stage in enumerate(data["stages"]):
        ours_h, ours_c = results["hbm_only"][0][k], results["hbm_plus_cpu"][0][k]
        pub_h, pub_c = stage["hbm_only"]["throughput_tok_s"], stage["hbm_plus_cpu"]["throughput_tok_s"]
        gain, published = ours_c / ours_h - 1, pub_c / pub_h - 1
        print(
            f"| {stage['rate_qps']:g} | {ours_h:,.0f} / {pub_h:,.0f} | {ours_c:,.0f} / {pub_c:,.0f} |"
            f" {gain:+.0%} / {published:+.0%} | {(1 + gain) / (1 + published):.2f} |"
        )
    print()
    print("ratio: (1 + the model's gain) / (1 + llm-d's): 1.00 is agreement; the throughputs themselves are beside it.")


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
    llm_d_benchmark()
