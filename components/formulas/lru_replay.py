"""One (CPU, filesystem) size of the tier replay, replayed block by block with real LRUs.

The reference for `tier_replay.curve`: given the curve's routing it gives the curve's numbers at that
grid point exactly (tests/test_tier_replay.py holds them equal). Given no routing, it routes live at that
size (the router's CPU index at the replayed size, service times from the real hits), so the difference
from the curve is what deciding the routing once costs. Same model as the curve (its module docstring):
inclusive tiers touched by every reference, the exclusive CPU tier fed by HBM's evictions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import cast

import numpy as np

from components.formulas.payoff import prefill_seconds, reload_seconds
from components.formulas.replica_routing import Router, ServiceRates
from components.formulas.requests import Request
from components.formulas.tier_caches import TierCaches
from components.formulas.tier_grid import Ints
from components.formulas.tier_replay import Curve, Savings, Tiers, assignment_array, output_blocks


def replay_at(
    requests: Iterable[Request],
    tiers: Tiers,
    cpu_blocks: int,
    fs_blocks: int,
    *,
    rates: ServiceRates,
    savings: Savings | None = None,
    assignment: Iterable[int] | None = None,
) -> Curve:
    """One (CPU, filesystem) size replayed with real LRUs, block by block: the curve's reference. With
    `assignment` (each request's replica) the routing is that one; without, it is decided live at this
    size (the CPU index at `cpu_blocks`, service times from the real hits). `fs_blocks` 0: no fs tier."""
    caches = TierCaches(tiers, cpu_blocks, fs_blocks)
    router = Router(tiers.replicas, tiers.hbm_blocks, cpu_blocks, rates) if assignment is None else None
    fixed = iter(assignment) if assignment is not None else None
    replicas = assignment_array(tiers.replicas)
    tokens = {"hbm": 0, "cpu": 0, "fs": 0}
    prompt_tokens = 0
    saved = 0.0
    first = last = 0
    for request in requests:
        pick = router.pick(request) if router else None
        r = pick.replica if pick else next(cast(Iterator[int], fixed))
        if not replicas:
            first = request.timestamp_ms
        last = request.timestamp_ms
        replicas.append(r)
        found = caches.serve(request, r, output_blocks(request.output_length, tiers.block_tokens))
        hit = found.hit
        prompt_tokens += request.input_length
        tokens["hbm"] += found.hbm
        tokens["cpu"] += found.cpu
        tokens["fs"] += found.fs
        if router and pick:
            router.send(request, pick, request.input_length - hit)
        if savings:
            rep = savings.replica
            saved += (
                prefill_seconds(rep, request.input_length)
                - reload_seconds(rep, found.cpu, savings.cpu_bandwidth)
                - reload_seconds(rep, found.fs, savings.fs_bandwidth)
                - prefill_seconds(rep, request.input_length - hit, hit)
            )

    def grid(x: float) -> Ints:
        return np.full((1, 1), x, dtype=np.int64)

    return Curve(
        tiers=tiers,
        cpu_sizes=(cpu_blocks,),
        fs_sizes=(fs_blocks,),
        requests=len(replicas),
        duration_ms=last - first,
        prompt_tokens=prompt_tokens,
        hbm_tokens=grid(tokens["hbm"]),
        cpu_tokens=grid(tokens["cpu"]),
        fs_tokens=grid(tokens["fs"]),
        recomputed_tokens=grid(prompt_tokens - sum(tokens.values())),
        cpu_stored_blocks=grid(caches.cpu_stored),
        fs_stored_blocks=grid(caches.fs_stored),
        working_set_blocks=caches.working_blocks,
        working_set_tokens=caches.working_tokens,
        assignment=replicas,
        seconds_saved=np.full((1, 1), saved) if savings else None,
    )
