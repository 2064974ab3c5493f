"""The workload through a P/D stack (components/formulas/pd_replay.py): the prefill pool's engines with their HBM and
CPU tier, the handoff over the fabric, the decode pool's engines; each pool's count as configured, or under
`workload.slo` the fewest that meet it (`cache.disaggregation.*.replicas: auto`): the prefill pool's from the TTFT
target (at the time model's error band's pessimistic edge, as the aggregated plan), the decode pool's from the
time-per-output-token target. The records the summary and `./run size` print beside the aggregated plan."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from components.catalog.time_model_band import TtftBand, judged_ttft
from components.formulas.capacity_replay import Replayed
from components.formulas.pd_replay import Handoff, PdServed, replay_pd
from components.formulas.replica_routing import ServiceRates
from components.formulas.requests import Request
from components.formulas.serving_time import EngineCosts
from components.formulas.tier_shape import Tiers
from stacks.config.workload_section import SloConfig
from stacks.planning.workload.pd_records import PdPlan, PdRun
from stacks.planning.workload.routing_weights import Routing

MAX_POOL_PODS = 64  # the auto search's bound on one pool's pods (a replay each step of a doubling and a bisection)


@dataclass(frozen=True)
class PdPool:
    """One pool as the replay takes it: its pods (None: `auto`), engines a pod, devices an engine, its costs."""

    pods: int | None
    engines_per_pod: int
    devices_per_engine: int
    costs: EngineCosts

    def engines(self, pods: int) -> int:
        return pods * self.engines_per_pod

    def devices(self, pods: int) -> int:
        return self.engines(pods) * self.devices_per_engine


@dataclass(frozen=True)
class PdInputs:
    """What the adapter (stacks/planning/workload_plan.py) reads of a P/D plan."""

    prefill: PdPool
    decode: PdPool
    handoff: Handoff
    handoff_from: str  # the fabric and its source
    block_tokens: int
    hbm_blocks: int  # per prefill engine
    cpu_blocks: int  # per prefill engine
    tiers: Callable[[int], Tiers]  # the prefill pool's tiers at so many engines
    routing: Routing  # the prefill profile's weights
    rates: ServiceRates
    device_usd_per_hour: float | None  # one device of the serving pool (None: unpriced)
    # The time model's TTFT error band (components/catalog/time_model_band.py): a TTFT target is met at its
    # pessimistic edge, as the aggregated plan meets it (None: at the central estimate).
    ttft_band: TtftBand | None = None


def _run(inputs: PdInputs, requests: Sequence[Request], prefill: int, decode: int, slo: SloConfig | None) -> PdRun:
    served, prefilled = _replay(inputs, requests, prefill, decode)
    prompt = max(prefilled.prompt_tokens, 1)
    devices = inputs.prefill.devices(prefill) + inputs.decode.devices(decode)
    ttft = (served.ttft(0.5), served.ttft(0.9))
    tpot = (served.tpot(0.5), served.tpot(0.9))
    usd = devices * inputs.device_usd_per_hour if inputs.device_usd_per_hour is not None else None
    return PdRun(
        prefill,
        decode,
        devices,
        ttft,
        tpot,
        float(np.quantile(served.handoff_s, 0.9)) if len(served.handoff_s) else 0.0,
        prefilled.cpu_tokens / prompt,
        prefilled.hbm_tokens / prompt,
        usd,
        _met(judged_ttft(inputs.ttft_band, ttft[1]), tpot[1], slo),
    )


def _replay(inputs: PdInputs, requests: Sequence[Request], prefill: int, decode: int) -> tuple[PdServed, Replayed]:
    return replay_pd(
        requests,
        inputs.tiers(inputs.prefill.engines(prefill)),
        inputs.cpu_blocks,
        inputs.prefill.costs,
        inputs.decode.costs,
        inputs.decode.engines(decode),
        inputs.handoff,
        weights=inputs.routing.weights,
        rates=inputs.rates,
    )


def _met(ttft: float, tpot: float, slo: SloConfig | None) -> bool | None:
    if slo is None:
        return None
    return (slo.ttft_p90 is None or ttft <= slo.ttft_p90) and (slo.tpot_p90 is None or tpot <= slo.tpot_p90)


def fewest(meets: Callable[[int], bool]) -> int | None:
    """The fewest pods in 1..MAX_POOL_PODS that meet (`meets` monotone: more pods never hurt), by doubling then
    bisection; None where even the most do not."""
    high = 1
    while not meets(high):
        if high >= MAX_POOL_PODS:
            return None
        high = min(high * 2, MAX_POOL_PODS)
    low = high // 2  # fails (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        if meets(mid):
            high = mid
        else:
            low = mid
    return high


def plan_pd(inputs: PdInputs, requests: Sequence[Request], slo: SloConfig | None) -> PdPlan:
    """The pools as configured, or `auto`'s fewest under the SLO: decode first at the prefill count given (else as
    many pods as it takes), then prefill at the decode count it took."""
    auto = (inputs.prefill.pods is None, inputs.decode.pods is None)
    decode = inputs.decode.pods
    prefill = inputs.prefill.pods
    if decode is None:
        assert slo is not None and slo.tpot_p90 is not None, "auto decode counts need workload.slo.tpot_p90 (checked)"
        at = prefill or MAX_POOL_PODS
        target = slo.tpot_p90
        decode = fewest(lambda d: _run(inputs, requests, at, d, None).tpot_s[1] <= target) or MAX_POOL_PODS
    if prefill is None:
        assert slo is not None and slo.ttft_p90 is not None, "auto prefill counts need workload.slo.ttft_p90 (checked)"
        target, at_decode = slo.ttft_p90, decode

        def meets(pods: int) -> bool:
            return judged_ttft(inputs.ttft_band, _run(inputs, requests, pods, at_decode, None).ttft_s[1]) <= target

        prefill = fewest(meets) or MAX_POOL_PODS
    return PdPlan(_run(inputs, requests, prefill, decode, slo), auto, inputs.handoff_from, inputs.routing.source)
