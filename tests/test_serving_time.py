"""The time model (components/formulas/serving_time.py) against cases with closed forms, worked by hand here."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from components.formulas.capacity_replay import replay
from components.formulas.load_costs import LoadCosts
from components.formulas.replica_routing import ServiceRates, Weights
from components.formulas.requests import Request
from components.formulas.served import Record
from components.formulas.serving_time import Engine, EngineCosts, Work, fixed, serve
from components.formulas.tier_replay import Tiers

# Round figures, so every expectation below is arithmetic on these.
GEMM = 1e-4  # s a token
WEIGHTS = 0.01  # s a step
BUDGET = 1000


def costs(kv_read: float = 0.0, attention: float = 0.0, kv_tokens: int = 10**9, seqs: int = 256) -> EngineCosts:
    return EngineCosts(
        gemm_s_per_token=GEMM,
        attention_s_per_pair=attention,
        weights_read_s=WEIGHTS,
        kv_read_s_per_token=kv_read,
        load=LoadCosts(1e-5, 1e-4),
        max_batched_tokens=BUDGET,
        max_seqs=seqs,
        kv_tokens=kv_tokens,
    )


def work(at: float, prompt: int, output: int, hbm: int = 0, cpu: int = 0, fs: int = 0) -> Work:
    return Work(at, prompt, hbm, cpu, fs, output)


def test_a_lone_request_waits_for_its_prefill_only() -> None:
    # 800 prompt tokens fit one step's budget: one step of max(800 x 0.1 ms, 10 ms) = 80 ms.
    arrivals, pick = fixed([(0, work(5.0, 800, 1))])
    served = serve(arrivals, costs(), 1, pick)
    assert served.record.ttft[0] == pytest.approx(0.08)
    assert served.record.finish[0] == pytest.approx(5.08)
    assert math.isnan(served.record.tpot[0])


def test_spaced_arrivals_never_queue() -> None:
    # D/D/1 below saturation: arrivals every 0.2 s, each 0.1 s of service: every TTFT is the service time.
    arrivals, pick = fixed([(0, work(0.2 * k, BUDGET, 1)) for k in range(50)])
    served = serve(arrivals, costs(), 1, pick)
    assert np.allclose(served.record.ttft, 0.1)
    assert served.drain_s == pytest.approx(0.1)


def test_arrivals_faster_than_service_queue_linearly() -> None:
    # D/D/1 above saturation: a full-budget prompt (0.1 s) every 0.06 s. Request k starts when k earlier ones
    # are done: its TTFT is (k + 1) x 0.1 - k x 0.06.
    n = 40
    arrivals, pick = fixed([(0, work(0.06 * k, BUDGET, 1)) for k in range(n)])
    served = serve(arrivals, costs(), 1, pick)
    expected = [(k + 1) * 0.1 - k * 0.06 for k in range(n)]
    assert np.allclose(served.record.ttft, expected)


def test_decode_is_one_weight_read_a_token() -> None:
    # No KV read cost: each decode step is max(1 token x 0.1 ms, 10 ms of weights) = 10 ms.
    arrivals, pick = fixed([(0, work(0.0, 100, 51))])
    served = serve(arrivals, costs(), 1, pick)
    assert served.record.tpot[0] == pytest.approx(WEIGHTS)
    assert served.record.finish[0] == pytest.approx(0.01 + 50 * WEIGHTS)  # prefill max(10 ms, 10 ms), then 50 steps


def test_decode_stretches_sum_the_growing_context_exactly() -> None:
    # Each decode step reads the context: step i (context 100 + 1 + i) takes 10 ms + (101 + i) x 1 us.
    kv = 1e-6
    out = 200
    arrivals, pick = fixed([(0, work(0.0, 100, out))])
    served = serve(arrivals, costs(kv_read=kv), 1, pick)
    decode = sum(WEIGHTS + (101 + i) * kv for i in range(out - 1))
    prefill = max(100 * GEMM, WEIGHTS)
    assert served.record.finish[0] == pytest.approx(prefill + decode, rel=1e-12)
    assert served.record.tpot[0] == pytest.approx(decode / (out - 1), rel=1e-12)


def test_an_arrival_mid_stretch_joins_at_the_next_step() -> None:
    # A long decode runs; a second request arriving at 0.105 s starts at the step boundary (0.11 s) and its prompt
    # (100 tokens + the running decode token) takes max(101 x 0.1 ms, 10 ms) = 10.1 ms.
    arrivals, pick = fixed([(0, work(0.0, 100, 100)), (0, work(0.105, 100, 1))])
    served = serve(arrivals, costs(), 1, pick)
    assert served.record.ttft[1] == pytest.approx(0.11 + 0.0101 - 0.105)


def test_a_tier_hit_waits_for_its_load() -> None:
    # 600 of 800 prompt tokens in the CPU tier: 600 x 10 us of loading, then 200 tokens (10 ms: weights bind).
    arrivals, pick = fixed([(0, work(0.0, 800, 1, cpu=600))])
    served = serve(arrivals, costs(), 1, pick)
    assert served.record.ttft[0] == pytest.approx(0.006 + 0.02)
    assert served.totals[0].load_s == pytest.approx(0.006)


def test_the_servers_tokenizer_takes_prompts_one_at_a_time_before_the_engine() -> None:
    # 10 us a token: two 800-token prompts arriving together are tokenised 8 ms apart (one tokenizer thread); the
    # first reaches the engine at 8 ms and prefills (80 ms); the second, ready at 16 ms, joins at that step's end.
    tokenizing = replace(costs(), tokenize_s_per_token=1e-5)
    arrivals, pick = fixed([(0, work(0.0, 800, 1)), (0, work(0.0, 800, 1))])
    served = serve(arrivals, tokenizing, 1, pick)
    assert served.record.ttft[0] == pytest.approx(0.008 + 0.08)
    assert served.record.ttft[1] == pytest.approx(0.008 + 0.08 + 0.08)
    # a tier's load starts once its prompt is tokenised: 8 ms, then 600 x 10 us, then 200 tokens (10 ms)
    arrivals, pick = fixed([(0, work(0.0, 800, 1, cpu=600))])
    assert serve(arrivals, tokenizing, 1, pick).record.ttft[0] == pytest.approx(0.008 + 0.006 + 0.02)


def test_the_router_counts_a_request_waiting_once_the_server_has_tokenised_it() -> None:
    # vLLM's waiting count is the engine's queue: a prompt still in the server's tokenizer is not in it (8 ms here),
    # one waiting for its tier's KV is (8 ms tokenising, then 6 ms loading).
    engine = Engine(replace(costs(), tokenize_s_per_token=1e-5), Record.of([0.0]))
    engine.admit(0, work(0.0, 800, 1, cpu=600))
    assert engine.queued(0.004) == 0
    assert engine.queued(0.010) == 1


def test_kv_pool_admits_what_fits() -> None:
    # A pool of 1,000 tokens: two 600-token requests cannot run together; the second starts when the first ends.
    arrivals, pick = fixed([(0, work(0.0, 500, 100)), (0, work(0.0, 500, 100))])
    served = serve(arrivals, costs(kv_tokens=1000), 1, pick)
    assert served.record.ttft[1] >= served.record.finish[0]


def _no_reuse(n: int) -> list[Request]:
    return [Request(k * 500, 2048, 64, tuple(range(4 * k, 4 * k + 4))) for k in range(n)]


def test_a_workload_that_never_reuses_gains_nothing_from_a_tier() -> None:
    requests = _no_reuse(200)
    tiers = Tiers(512, 2, 64)
    rates = ServiceRates(10_000, 0.01)
    runs = [
        replay(requests, tiers, cpu, 0, costs(), weights=Weights(), routing_cpu_blocks=cpu, rates=rates)
        for cpu in (0, 10_000)
    ]
    assert runs[0].cpu_tokens == runs[1].cpu_tokens == 0
    assert np.array_equal(runs[0].served.record.ttft, runs[1].served.record.ttft)


def test_a_shared_prefix_loads_from_the_cpu_tier_once_hbm_forgets_it() -> None:
    # One replica, HBM of 4 blocks: a 4-block prompt, then 6 others, then the first again: HBM forgot it, the CPU
    # tier (inclusive, 100 blocks) holds it: 2,048 tokens loaded, 1 recomputed (the last prompt token's logits).
    first = Request(0, 2048, 1, (0, 1, 2, 3))
    others = [Request(1000 * (k + 1), 2048, 1, tuple(range(10 + 4 * k, 14 + 4 * k))) for k in range(6)]
    again = Request(10_000, 2048, 1, (0, 1, 2, 3))
    out = replay(
        [first, *others, again],
        Tiers(512, 1, 4),
        100,
        0,
        costs(),
        weights=Weights(),
        routing_cpu_blocks=100,
        rates=ServiceRates(10_000, 0.01),
    )
    assert out.cpu_tokens == 2048
    assert out.served.record.ttft[-1] == pytest.approx(2048 * 1e-5 + max(GEMM, WEIGHTS))


def test_a_prefix_a_running_request_holds_is_not_loaded_again() -> None:
    # Two requests of one 800-token prefix, both told by the tiers' LRUs that it is in the CPU tier. The first loads
    # 600 tokens (6 ms) and computes 200; the second arrives while the first decodes (its 1,000 output tokens keep
    # it running): vLLM finds the prefix in the first one's HBM blocks, so it loads nothing and computes its 200.
    a = Work(0.0, 800, 0, 600, 0, 1000, prefix=7)
    b = Work(0.5, 800, 0, 600, 0, 1, prefix=7)
    arrivals, pick = fixed([(0, a), (0, b)])
    served = serve(arrivals, costs(), 1, pick)
    assert served.totals[0].load_s == pytest.approx(0.006)
    assert served.record.ttft[1] < 0.006 + 0.02 + WEIGHTS  # no load: at most a step to join, and its own


def test_tier_hits_of_one_prefix_are_reserved_once() -> None:
    # A pool of 1,500 tokens: two requests of 1,000 prompt tokens, 900 of them one prefix loaded from the CPU tier,
    # 100 output tokens each. Apart: 1,100 + 1,100 would not fit; sharing the prefix: 1,100 + 200 = 1,300 does,
    # so the second runs beside the first (its first token before the first one finishes).
    a = Work(0.0, 1000, 0, 900, 0, 100, prefix=3)
    b = Work(0.0, 1000, 0, 900, 0, 100, prefix=3)
    arrivals, pick = fixed([(0, a), (0, b)])
    served = serve(arrivals, costs(kv_tokens=1500), 1, pick)
    assert served.record.ttft[1] < served.record.finish[0]
    # without the shared prefix they queue
    c = Work(0.0, 1000, 0, 900, 0, 100, prefix=4)
    arrivals, pick = fixed([(0, a), (0, c)])
    apart = serve(arrivals, costs(kv_tokens=1500), 1, pick)
    assert apart.record.ttft[1] >= apart.record.finish[0]


def test_a_mixture_of_experts_step_reads_the_experts_its_tokens_route_to() -> None:
    # Dense weights 10 ms, every routed expert 100 ms; 4 of 128 experts a token. One token: 4/128 of the experts,
    # 10 + 3.125 ms. Five: 1 - (124/128)^5 = 1 - 0.853215 of them, 10 + 14.68 ms. A thousand: all, 110 ms.
    moe = EngineCosts(
        GEMM * 0, 0.0, 0.01, 0.0, LoadCosts(0.0, 0.0), BUDGET, 256, 10**9, expert_read_s=0.1, routing=(4, 128)
    )
    assert moe.weights_seconds(1) == pytest.approx(0.013125)
    assert moe.weights_seconds(5) == pytest.approx(0.0246785, abs=1e-7)
    assert moe.weights_seconds(1000) == pytest.approx(0.11, rel=1e-6)
    assert costs().weights_seconds(5) == WEIGHTS  # dense: every weight, whatever the batch
