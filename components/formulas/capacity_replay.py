"""A workload served by R replicas at one tier size: routed live, its tiers as LRUs, timed by the engine model.

Each request, in arrival order: every replica's engine runs up to its arrival (`serving_time`), the router
scores the replicas on what they report then (waiting requests, KV usage) and on its prefix index
(`replica_routing.Router` with the profile's weights: approximate routing, its own LRUs of what it sent each replica;
precise, what each replica's tiers hold here, as their KV-cache events tell it), the tiers say what the chosen
replica finds where (`tier_caches.TierCaches`), and the request joins that replica's engine.

What the workload asks of the replicas, apart from any queueing (`Demand`): the compute of every prompt token
no tier holds (the payoff's prefill), and of every output token at a full batch (its GEMMs, or its context's
KV read, whichever binds: the weights' read is shared by the batch), and the link time of every load. Above
R x the arrival span, no routing or batching keeps up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.formulas.replica_routing import HeldTiers, Router, ServiceRates, Signals, Weights
from components.formulas.requests import Request
from components.formulas.served import Served
from components.formulas.serving_time import EngineCosts, Work, serve
from components.formulas.tier_caches import Tally, TierCaches
from components.formulas.tier_replay import assignment_array, output_blocks
from components.formulas.tier_shape import Tiers


@dataclass(frozen=True)
class Demand:
    compute_s: float  # seconds of a replica's compute the workload needs, at full batches
    load_s: float  # seconds of a replica's host link its loads need
    span_s: float  # first arrival to last
    per_replica: tuple[float, ...]  # compute seconds each replica was sent

    def utilisation(self) -> tuple[float, ...]:
        """What each replica was asked, as a share of its time over the span."""
        return tuple(c / max(self.span_s, 1e-9) for c in self.per_replica)


@dataclass(frozen=True)
class Replayed:
    served: Served
    prompt_tokens: int
    hbm_tokens: int
    cpu_tokens: int
    fs_tokens: int
    demand: Demand
    assignment: Sequence[int]
    alone_s: Sequence[float]  # its first token with the replica to itself: tokenised, its loads, its prefill


def decode_seconds(costs: EngineCosts, prompt: int, output: int) -> float:
    """A request's output tokens at a full batch: each its GEMMs and all-reduces, and its attention's FLOPs or its
    context's KV read (the weights' read and the step's fixed cost are shared by the batch)."""
    context = prompt + output / 2  # the mean context over its decode steps
    attention = context * max(costs.attention_s_per_pair, costs.kv_read_s_per_token)
    per_token = costs.gemm_s_per_token + costs.allreduce_s_per_token + attention
    return max(output - 1, 0) * per_token


def replay(
    requests: Sequence[Request],
    tiers: Tiers,
    cpu_blocks: int,
    fs_blocks: int,
    costs: EngineCosts,
    *,
    weights: Weights,
    routing_cpu_blocks: int,
    rates: ServiceRates,
    precise: tuple[float, float | None] | None = None,
) -> Replayed:
    """The workload on `tiers.replicas` replicas with a CPU tier of `cpu_blocks` and a filesystem tier of
    `fs_blocks` (0: none), the router's CPU index at `routing_cpu_blocks` (its `lruCapacityPerServer`). `precise`:
    the router scores on what the replicas' tiers hold, a block on HBM and on the CPU tier counting these weights
    (None for a tier it is not told of); None: approximate routing on its own LRUs."""
    caches = TierCaches(tiers, cpu_blocks, fs_blocks)
    held = None
    if precise is not None:
        if tiers.cpu_scope == "pooled":
            raise ValueError("precise routing scores each replica's own CPU tier, not a pool every replica loads")
        held = HeldTiers(caches.hbm, caches.cpus, *precise)
    router = Router(tiers.replicas, tiers.hbm_blocks, routing_cpu_blocks, rates, weights, held)
    assignment = assignment_array(tiers.replicas)
    tally = Tally()
    compute = load = 0.0
    alone: list[float] = []
    per_replica = [0.0] * tiers.replicas
    first = requests[0].timestamp_ms / 1000 if requests else 0.0

    def pick(i: int, waiting: list[int], kv_usage: list[float]) -> tuple[int, Work]:
        nonlocal compute, load
        request = requests[i]
        chosen = router.pick(request, Signals(waiting, kv_usage))
        router.sent_live(request, chosen)
        r = chosen.replica
        assignment.append(r)
        found = caches.serve(request, r, output_blocks(request.output_length, tiers.block_tokens))
        work = Work(
            request.timestamp_ms / 1000 - first,
            request.input_length,
            found.hbm,
            found.cpu,
            found.fs,
            request.output_length,
            request.hash_ids[0] if request.hash_ids else -1,
        )
        tally.add(request.input_length, found)
        prefill = costs.prefill_seconds(work.computed, work.prompt - work.computed)
        loads = costs.load.seconds(found.cpu, found.fs)
        asked = prefill + decode_seconds(costs, request.input_length, request.output_length)
        compute += asked
        per_replica[r] += asked
        load += loads
        alone.append(costs.tokenize_seconds(request.input_length) + loads + prefill)
        return r, work

    arrivals = [r.timestamp_ms / 1000 - first for r in requests]
    served = serve(arrivals, costs, tiers.replicas, pick)
    span = arrivals[-1] - arrivals[0] if arrivals else 0.0
    return Replayed(
        served=served,
        prompt_tokens=tally.prompt,
        hbm_tokens=tally.hbm,
        cpu_tokens=tally.cpu,
        fs_tokens=tally.fs,
        demand=Demand(compute, load, span, tuple(per_replica)),
        assignment=assignment,
        alone_s=alone,
    )
