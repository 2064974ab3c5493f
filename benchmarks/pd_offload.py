"""The P/D replay (components/formulas/pd_replay.py) beside llm-d's published P/D Multi Tier run
(tests/fixtures/llm-d-benchmark/gpt-oss-120b-h200-pd-multi-tier.json, its SOURCE.md): gpt-oss-120b on H200, 8
prefill pods at TP=1 with 100 GiB of CPU tier each, 2 decode pods at TP=4, NIXL between them. Printed, not
asserted: per arm and stage, model / published and the ratio.

Arms: plain NIXL (no CPU tier), the tier with the router blind to it (CPU prefix weight 0), the tier with the
router scoring it (the rendered pd-tiered profile; llm-d's aware arm scores a precise index at weight 0.4, this
model's router an approximate one). Where the published run shows a tie (the random profile: nothing to reuse) the
model must show one too; where it shows a gain (the eviction-pressure profile), the model's direction must agree.
Stages are replayed each after the last has drained (as benchmarks/capacity.py), Poisson arrivals seeded."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.formulas.pd_replay import PdServed, replay_pd  # noqa: E402
from components.formulas.requests import Request  # noqa: E402
from components.formulas.shared_prefix import SharedPrefixShape, shared_prefix_requests  # noqa: E402
from stacks.config import loading  # noqa: E402
from stacks.planning.plan import plan  # noqa: E402
from stacks.planning.workload.pd_plan import PdInputs  # noqa: E402
from stacks.planning.workload_plan import pd_inputs, stack_shape  # noqa: E402

FIXTURE = ROOT / "tests/fixtures/llm-d-benchmark/gpt-oss-120b-h200-pd-multi-tier.json"
BLOCK_TOKENS = 128  # the run's engine and router block; divides 16,000 (the eviction profile's shared prefix)
DRAIN_GAP_S = 3600
POISSON_SEED = 1000


def inputs(data: dict[str, Any]) -> PdInputs:
    hw = data["hardware"]
    settings = [
        f"cache.accelerator={hw['accelerator']}",
        f"cache.model={data['model']}",
        f"cache.tier.cpu={data['cpu_per_prefiller_GiB']}GiB",
        f"cache.disaggregation.prefill.replicas={hw['prefill']['pods']}",
        f"cache.disaggregation.prefill.tensor_parallelism={hw['prefill']['tensor_parallelism']}",
        "cache.disaggregation.prefill.data_parallelism=1",
        f"cache.disaggregation.decode.replicas={hw['decode']['pods']}",
        f"cache.disaggregation.decode.tensor_parallelism={hw['decode']['tensor_parallelism']}",
        f"cache.tensor_parallelism={hw['prefill']['tensor_parallelism']}",
    ]
    stack_plan = plan(loading.load_named("gpu-vllm-native-pd", settings))
    made = pd_inputs(stack_plan, stack_shape(stack_plan), BLOCK_TOKENS, None)
    assert made is not None
    return made


def arms(made: PdInputs) -> dict[str, PdInputs]:
    blind = dataclasses.replace(made.routing, weights=dataclasses.replace(made.routing.weights, cpu_prefix=0.0))
    return {
        "pd_nixl": dataclasses.replace(made, cpu_blocks=0, routing=blind),
        "cpu_blind": dataclasses.replace(made, routing=blind),
        "cpu_aware": made,
    }


def replay(made: PdInputs, requests: list[Request]) -> PdServed:
    served, _ = replay_pd(
        requests,
        made.tiers(made.prefill.engines(made.prefill.pods or 1)),
        made.cpu_blocks,
        made.prefill.costs,
        made.decode.costs,
        made.decode.engines(made.decode.pods or 1),
        made.handoff,
        weights=made.routing.weights,
        rates=made.rates,
    )
    return served


def latency(served: PdServed, requests: list[Request]) -> np.ndarray:
    steps = np.array([max(r.output_length - 1, 0) for r in requests], dtype=np.float64)
    out: np.ndarray = served.ttft_s + np.nan_to_num(served.tpot_s) * steps
    return out


def _cell(model: float, published: float, form: str = "{:.3f}") -> str:
    return f"{form.format(model)} / {form.format(published)} ({model / published:.2f})"


def random_profile(data: dict[str, Any], made: PdInputs) -> None:
    w = data["random"]["workload"]
    count = int(w["rate_qps"] * w["duration_s"])
    gap = 1000 / w["rate_qps"]
    # random prompts: every prompt its own hash blocks (nothing to reuse)
    blocks = -(-w["input_len"] // BLOCK_TOKENS)
    requests = [
        Request(int(i * gap), w["input_len"], w["output_len"], tuple(range(i * blocks, (i + 1) * blocks)))
        for i in range(count)
    ]
    print("### Random 5,000/250 tokens at 45 QPS (the guide's profile: little to reuse)")
    print()
    print("| arm | TTFT mean s | TTFT p95 s | latency mean s |")
    print("|---|---|---|---|")
    for name in ("pd_nixl", "pd_multi_tier"):
        served = replay(arms(made)["pd_nixl" if name == "pd_nixl" else "cpu_aware"], requests)
        pub = data["random"]["arms"][name]
        lat = latency(served, requests)
        print(
            f"| {name} | {_cell(float(served.ttft_s.mean()), pub['ttft_mean_s'])} |"
            f" {_cell(served.ttft(0.95), pub['ttft_p95_s'])} | {_cell(float(lat.mean()), pub['latency_mean_s'])} |"
        )
    print()


def eviction_requests(data: dict[str, Any]) -> tuple[list[Request], list[tuple[float, float, float]]]:
    shape = data["eviction"]["workload"]
    requests: list[Request] = []
    stages = []
    start_ms = 0
    fields = {k: shape[k] for k in ("num_groups", "num_prompts_per_group", "system_prompt_len", "question_len")}
    for k, stage in enumerate(shape["stages"]):
        rate, duration = stage["rate_qps"], int(stage["duration_s"])
        one = SharedPrefixShape(**fields, output_len=shape["output_len"], request_rate=rate, duration=duration)
        drawn = list(shared_prefix_requests(one, BLOCK_TOKENS, seed=k))
        gaps = np.random.default_rng(POISSON_SEED + k).exponential(1000 / rate, len(drawn))
        at = np.floor(np.cumsum(gaps) - gaps[0]).astype(int)
        requests += [dataclasses.replace(r, timestamp_ms=int(t) + start_ms) for r, t in zip(drawn, at, strict=True)]
        stages.append((rate, start_ms / 1000, start_ms / 1000 + duration + 1))
        start_ms += (duration + DRAIN_GAP_S) * 1000
    return requests, stages


def eviction_profile(data: dict[str, Any], made: PdInputs) -> None:
    requests, stages = eviction_requests(data)
    start = time.perf_counter()
    replayed = {name: replay(arm, requests) for name, arm in arms(made).items()}
    print(f"### Eviction pressure: {len(requests):,} requests, three replays in {time.perf_counter() - start:.0f} s")
    print()
    print("| arm | latency mean s | latency p90 s | TTFT mean s | TTFT p90 s |")
    print("|---|---|---|---|---|")
    for name, served in replayed.items():
        pub, lat = data["eviction"]["overall"][name], latency(served, requests)
        print(
            f"| {name} | {_cell(float(lat.mean()), pub['latency_mean_s'])} |"
            f" {_cell(float(np.quantile(lat, 0.9)), pub['latency_p90_s'])} |"
            f" {_cell(float(served.ttft_s.mean()), pub['ttft_mean_s'])} |"
            f" {_cell(served.ttft(0.9), pub['ttft_p90_s'])} |"
        )
    print()
    print("Per stage, request latency p90 s, model / published (ratio):")
    print()
    print("| QPS | " + " | ".join(replayed) + " |")
    print("|---|" + "---|" * len(replayed))
    arrival = np.array([r.timestamp_ms / 1000 for r in requests])
    for k, (rate, begin, end) in enumerate(stages):
        picked = (arrival >= begin) & (arrival < end)
        cells = []
        for name, served in replayed.items():
            p90 = float(np.quantile(latency(served, requests)[picked], 0.9))
            cells.append(_cell(p90, data["eviction"]["stages_p90_latency_s"][name][k], "{:.2f}"))
        print(f"| {rate:g} | " + " | ".join(cells) + " |")
    print()


def main() -> None:
    data = json.loads(FIXTURE.read_text())
    made = inputs(data)
    print("## P/D with a CPU tier on prefill, beside llm-d's published run (gpt-oss-120b, H200)")
    print()
    print(f"Handoff: {made.handoff_from}. Prefill routing: {made.routing.source}.")
    print()
    random_profile(data, made)
    if "--random-only" not in sys.argv:
        eviction_profile(data, made)


if __name__ == "__main__":
    main()
