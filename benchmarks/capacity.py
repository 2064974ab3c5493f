"""The capacity plan's time model, printed (not asserted): its cost on the conversation trace, and its figures on
the published tiered-prefix-cache runs the repository holds (tests/fixtures/llm-d-benchmark/, its SOURCE.md),
stage by stage: throughput, TTFT mean and p90, time per output token, the CPU tier's gain, each as model /
published, and each column's worst ratio against the issue's targets.

llm-d's runs: 8 x Qwen3-32B TP=2 on H100 (vLLM's OffloadingConnector, or SGLang's HiCache, a 200 GiB CPU tier
each), the router's scorers at weight 1, inference-perf's shared_prefix data (250 groups x 5 prompts, a
16,000-token system prompt, 256-token questions and outputs) at 5 to 40 requests/s, 60 s a stage, one stage after
another on one warm fleet, HBM only against HBM + CPU. Here the same workload goes through the time model, each
stage after the last has drained (inference-perf waits for a stage's requests), the caches warm, arrivals drawn
from a Poisson process as inference-perf draws them (seeded here: `POISSON_SEED`). A stage's throughput is its
requests' prompt and output tokens over its first arrival to its last finish (llm-d's "Throughput (tok/s)"
counts both: 5 QPS x 16,512 tokens is 82,560); its time per output token is (E2E mean - TTFT mean) / 255, the
only form the published tables allow.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.formulas.prefill_rate import LLMD_QWEN3_32B_H100_TP2  # noqa: E402
from components.formulas.requests import Request  # noqa: E402
from components.formulas.serving_time import Served  # noqa: E402
from components.formulas.shared_prefix import SharedPrefixShape, shared_prefix_requests  # noqa: E402
from components.units import ByteSize  # noqa: E402
from stacks.config import loading  # noqa: E402
from stacks.planning.autoscaling import prefill_rate  # noqa: E402
from stacks.planning.plan import plan  # noqa: E402
from stacks.planning.workload.capacity_plan import replay_scenario  # noqa: E402
from stacks.planning.workload.capacity_records import Scenario  # noqa: E402
from stacks.planning.workload.routing_weights import routing_of  # noqa: E402
from stacks.planning.workload.workload_source import file_source, in_memory  # noqa: E402
from stacks.planning.workload_plan import plan_capacity_of, routed_curve, stack_shape  # noqa: E402

TRACE = "tests/fixtures/workloads/mooncake-conversation/conversation_trace_40k.jsonl"
FIXTURES = ROOT / "tests/fixtures/llm-d-benchmark"
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


Stages = list[tuple[float, float, float]]
# inference-perf draws a Poisson process (its `load.type: poisson`); workload.shared_prefix takes one constant rate
# until the arrivals helper lands it there, so the bench draws the gaps itself: exponential at the stage's rate,
# numpy's default generator seeded with POISSON_SEED + the stage's index.
POISSON_SEED = 47


@dataclass(frozen=True)
class PublishedRun:
    """One published tiered-cache run the bench replays: its fixture, and the preset and settings that build it."""

    name: str
    fixture: str
    preset: str
    settings: tuple[str, ...]


PUBLISHED_RUNS = (
    PublishedRun(
        "llm-d, vLLM, 8 x Qwen3-32B TP=2 H100, 200 GiB CPU tier each",
        "qwen3-32b-h100-tiered.json",
        "gpu-vllm-native-cpu",
        ("cache.replicas=8", "cache.tier.cpu=200GiB"),
    ),
    PublishedRun(
        "llm-d, SGLang HiCache, 8 x Qwen3-32B TP=2 H100, 200 GiB CPU tier each",
        "qwen3-32b-h100-sglang-tiered.json",
        "gpu-sglang-native-cpu",
        ("cache.replicas=8", "cache.tier.cpu=200GiB"),
    ),
)
# The targets, model / published: throughput and the tier's gain, TTFT mean and p90, time per output token.
TARGETS = {"tok/s": (0.8, 1.25), "gain": (0.8, 1.25), "TTFT": (0.67, 1.5), "TTFT p90": (0.67, 1.5), "TPOT": (0.8, 1.25)}


def benchmark_requests(data: dict[str, Any]) -> tuple[list[Request], Stages]:
    """Each stage after the last has drained (`DRAIN_GAP_S` after its arrivals; checked), caches kept warm,
    arrivals drawn from a Poisson process at the stage's rate: (requests, [(rate, start s, end s)])."""
    shape = data["workload"]["shared_prefix"]
    requests: list[Request] = []
    stages = []
    start_ms = 0
    for k, stage in enumerate(data["workload"]["load"]["stages"]):
        rate, duration = stage["rate_qps"], int(stage["duration_s"])
        one = SharedPrefixShape(**shape, request_rate=rate, duration=duration)
        drawn = list(shared_prefix_requests(one, BLOCK_TOKENS, seed=k))
        gaps = np.random.default_rng(POISSON_SEED + k).exponential(1000 / rate, len(drawn))
        at = np.floor(np.cumsum(gaps) - gaps[0]).astype(int)
        for r, t in zip(drawn, at, strict=True):
            requests.append(replace(r, timestamp_ms=int(t) + start_ms))
        stages.append((rate, start_ms / 1000, start_ms / 1000 + max(duration, int(at[-1]) / 1000 + 0.001)))
        start_ms += (duration + DRAIN_GAP_S) * 1000
    return requests, stages


@dataclass(frozen=True)
class StageFigures:
    """One stage as the benchmark reports it: tokens/s over its first arrival to its last finish, TTFT mean and
    p90, and time per output token as the published runs give it, (E2E mean - TTFT mean) / (output - 1)."""

    throughput: float
    ttft_mean: float
    ttft_p90: float
    tpot: float


def stage_figures(requests: list[Request], served: Served, first: float, stages: Stages) -> list[StageFigures]:
    record = served.record
    out = []
    for _, start, end in stages:
        picked = [i for i, r in enumerate(requests) if start <= r.timestamp_ms / 1000 < end]
        tokens = sum(requests[i].input_length + requests[i].output_length for i in picked)
        finish = record.finish[picked] + first
        ttft = record.ttft[picked]
        e2e = record.finish[picked] - record.arrival[picked]
        steps = max(requests[picked[0]].output_length - 1, 1)
        out.append(
            StageFigures(
                tokens / (float(finish.max()) - start),
                float(ttft.mean()),
                float(np.quantile(ttft, 0.9)),
                float(e2e.mean() - ttft.mean()) / steps,
            )
        )
    return out


def published_figures(stage: dict[str, Any], output: int) -> StageFigures:
    return StageFigures(
        stage["throughput_tok_s"],
        stage["ttft_mean_s"],
        stage["ttft_p90_s"],
        (stage["e2e_latency_mean_s"] - stage["ttft_mean_s"]) / (output - 1),
    )


def replay_published(run: PublishedRun) -> dict[str, list[float]]:
    """Replays one run, prints its per-stage table, returns each column's model / published ratios."""
    data = json.loads((FIXTURES / run.fixture).read_text())
    replicas = data["hardware"]["model_servers"]
    stack_plan = plan(loading.load_named(run.preset, list(run.settings)))
    shape = stack_shape(stack_plan)
    routing = routing_of(stack_plan.router_values)
    requests, stages = benchmark_requests(data)
    first = requests[0].timestamp_ms / 1000
    output = data["workload"]["shared_prefix"]["output_len"]
    cpu = ByteSize.parse(f"{data['cache']['cpu_per_replica_GiB']}GiB")
    ours: dict[str, list[StageFigures]] = {}
    start = time.perf_counter()
    scenarios = (Scenario("hbm_only", ByteSize(0), None, "hbm"), Scenario("hbm_plus_cpu", cpu, None, "cpu"))
    for scenario in scenarios:
        _, replayed = replay_scenario(shape, requests, BLOCK_TOKENS, routing, scenario, replicas)
        ours[scenario.name] = stage_figures(requests, replayed.served, first, stages)
    print(f"### {run.name}")
    print(
        f"{len(requests):,} requests in {len(stages)} stages (Poisson, seeds {POISSON_SEED}+stage);"
        f" two replays, {time.perf_counter() - start:.1f} s; model / published per cell"
    )
    print()
    print("| rate | tier | tok/s | TTFT mean s | TTFT p90 s | TPOT ms | gain |")
    print("|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {column: [] for column in TARGETS}
    rates = [stage[0] for stage in stages]
    for stage in data["stages"]:
        k = rates.index(stage["rate_qps"])
        gains = {}
        for name in ("hbm_only", "hbm_plus_cpu"):
            model, pub = ours[name][k], published_figures(stage[name], output)
            cells = (
                ("tok/s", model.throughput, pub.throughput, "{:,.0f}"),
                ("TTFT", model.ttft_mean, pub.ttft_mean, "{:.2f}"),
                ("TTFT p90", model.ttft_p90, pub.ttft_p90, "{:.2f}"),
                ("TPOT", model.tpot * 1e3, pub.tpot * 1e3, "{:.1f}"),
            )
            row = []
            for column, m, p, form in cells:
                ratios[column].append(m / p)
                row.append(f"{form.format(m)} / {form.format(p)} ({m / p:.2f})")
            gains[name] = (model.throughput, pub.throughput)
            gain = ""
            if name == "hbm_plus_cpu":
                (mh, ph), (mc, pc) = gains["hbm_only"], gains["hbm_plus_cpu"]
                ratio = (mc / mh) / (pc / ph)
                ratios["gain"].append(ratio)
                gain = f"{mc / mh - 1:+.0%} / {pc / ph - 1:+.0%} ({ratio:.2f})"
            print(f"| {stage['rate_qps']:g} | {name.replace('_', ' ')} | {' | '.join(row)} | {gain} |")
    print()
    return ratios


def published_runs() -> None:
    print("## Published tiered-cache runs, replayed stage by stage")
    print()
    worst: dict[str, list[tuple[float, str]]] = {column: [] for column in TARGETS}
    for run in PUBLISHED_RUNS:
        for column, values in replay_published(run).items():
            extreme = max(values, key=lambda r: abs(math.log(r)))
            worst[column].append((extreme, run.name.split(",")[1].strip()))
    print("| column | target | worst model / published (run) | within |")
    print("|---|---|---|---|")
    for column, (low, high) in TARGETS.items():
        value, where = max(worst[column], key=lambda w: abs(math.log(w[0])))
        print(f"| {column} | [{low}, {high}] | {value:.2f} ({where}) | {'yes' if low <= value <= high else 'NO'} |")
    print()
    print(MISSES)


# Why a column misses, as far as the replays show (read with the tables above).
MISSES = """Where a column misses, and why (read with the tables above):
- TTFT at light load (5 QPS, 0.4-0.7 of published): a miss's prefill alone is about 1.2 s in the model (16,256
  tokens at TP=2 on H100; llm-d's autoscaling guide measures 15,928 tok/s for this model and TP, which agrees),
  yet the published mean is 1.62 s (vLLM) and 2.12 s (SGLang) with the p90 at 2.65 and 4.35: the gap is before
  or beside the engine's steps (the router, tokenising 16k tokens, fewer HBM hits than the model's prefix-aware
  routing finds), which the step costs do not model. Open.
- TTFT with the CPU tier at 15-25 QPS (1.5-3.6x): the model saturates a little early (its throughput there is
  0.81-0.89 of published), and near saturation TTFT is queueing, which grows without bound as the rate nears the
  service rate: a 10-15% lower service rate shows as seconds.
- SGLang's HBM-only TPOT at 20 and 40 QPS (1.44-1.51): the model is vLLM's scheduler; SGLang's overloaded
  decode runs faster than vLLM's on the same hardware (51.7 ms against vLLM's 73-75 ms at those stages).
- The SGLang run's stages are assumed (its report prints no workload config: the vLLM run's eight are used)."""


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
