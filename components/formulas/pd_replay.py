"""P/D through the time model: a workload's prompts on the prefill pool (its engines, HBM and CPU tier, routed live as
the aggregated replay routes them), each prompt's KV handed to the decode pool over the transport, and its output on
the decode pool (`serving_time`'s engines on both sides).

The prefill pool serves every request with one output token (the routing sidecar sends the prefill leg with
`max_tokens` 1); its KV then crosses the fabric, each of the fewer side's devices moving its shard over its own NIC
(`Handoff`); the decode engine schedules the request once its KV has arrived, holding the whole prompt in HBM (it
computes the one last token, as `Work.computed` keeps at least one), and decodes its output. Time to first token is
the decode engine's first token less the request's arrival: the prefill's queue and compute, the handoff, and the
decode engine's queue and first step. Decode requests are routed to the engine with the fewest waiting (the
pd-tiered profile's queue scorer).

Approximations: the handoff is not queued behind other handoffs on a NIC (each request's at the full fabric rate);
the prefill engine frees the KV once the request is done (vLLM keeps it until the decode side reads it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from components.formulas import capacity_replay
from components.formulas.replica_routing import ServiceRates, Weights
from components.formulas.requests import Request
from components.formulas.served import Served
from components.formulas.serving_time import EngineCosts, Work, serve
from components.formulas.tier_shape import Tiers


@dataclass(frozen=True)
class Handoff:
    """The prefill -> decode KV transfer: bytes per prompt token over the engines' fabric (bytes/s, all the devices
    that move it in parallel together)."""

    kv_bytes_per_token: int
    bandwidth: float

    def seconds(self, tokens: int) -> float:
        return tokens * self.kv_bytes_per_token / self.bandwidth


def handoff(kv_bytes_per_token: int, prefill_devices: int, decode_devices: int, per_device: float) -> Handoff:
    """Each device holds its shard of the KV and moves it over its own NIC: the fewer side's devices bound it."""
    return Handoff(kv_bytes_per_token, min(prefill_devices, decode_devices) * per_device)


@dataclass(frozen=True)
class PdServed:
    """Per request, in arrival order: its prefill leg, handoff and decode leg, and what the client sees."""

    prefill: Served
    decode: Served  # in arrival order of the decode legs (`order` maps them back)
    handoff_s: np.ndarray
    ttft_s: np.ndarray  # decode's first token - arrival
    tpot_s: np.ndarray  # NaN for one-token outputs

    def ttft(self, q: float) -> float:
        return float(np.quantile(self.ttft_s, q))

    def tpot(self, q: float) -> float:
        decoded = self.tpot_s[~np.isnan(self.tpot_s)]
        return float(np.quantile(decoded, q)) if len(decoded) else 0.0


def decode_after(
    prefill: Served,
    prompts: Sequence[int],
    outputs: Sequence[int],
    link: Handoff,
    costs: EngineCosts,
    engines: int,
) -> PdServed:
    """The decode legs of requests whose prefill legs `prefill` served (in arrival order), after their handoffs."""
    arrival = prefill.record.arrival
    moved = np.array([link.seconds(p) for p in prompts], dtype=np.float64)
    ready = prefill.record.finish + moved
    order = np.argsort(ready, kind="stable")
    works = [Work(float(ready[i]), int(prompts[i]), int(prompts[i]), 0, 0, int(outputs[i])) for i in order]

    def pick(i: int, waiting: list[int], kv_usage: list[float]) -> tuple[int, Work]:
        return min(range(engines), key=lambda e: (waiting[e], kv_usage[e])), works[i]

    decoded = serve([w.arrival_s for w in works], costs, engines, pick)
    ttft, tpot = np.zeros(len(order)), np.full(len(order), np.nan)
    ttft[order] = decoded.record.arrival + decoded.record.ttft - arrival[order]
    tpot[order] = decoded.record.tpot
    return PdServed(prefill, decoded, moved, ttft, tpot)


def replay_pd(
    requests: Sequence[Request],
    prefill_tiers: Tiers,
    cpu_blocks: int,
    prefill_costs: EngineCosts,
    decode_costs: EngineCosts,
    decode_engines: int,
    link: Handoff,
    *,
    weights: Weights,
    rates: ServiceRates,
) -> tuple[PdServed, capacity_replay.Replayed]:
    """The workload through both pools: the prefill legs routed live over `prefill_tiers.replicas` engines with a
    CPU tier of `cpu_blocks` each (the router's CPU index at that size), then the decode legs."""
    legs = [dataclasses.replace(r, output_length=1) for r in requests]
    prefilled = capacity_replay.replay(
        legs,
        prefill_tiers,
        cpu_blocks,
        0,
        prefill_costs,
        weights=weights,
        routing_cpu_blocks=cpu_blocks,
        rates=rates,
    )
    prompts, outputs = [r.input_length for r in requests], [r.output_length for r in requests]
    return decode_after(prefilled.served, prompts, outputs, link, decode_costs, decode_engines), prefilled
