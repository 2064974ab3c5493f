"""The day replayed: an autoscaled pool over a workload whose rate falls and rises, the HPA and the tiers together,
once for each way a scale-in picks its victims (`victims.Victims`: newest, random, cache-value).

Every sync period (`hpa.SYNC_PERIOD_S`), in order:
1. The HPA (`hpa.Autoscaler`, its triggers' proposals from `hpa.proposal`) sets the replica count from the
   router's signals, the queue a fluid one as in `hpa.replay`: what arrived in the period beyond what the serving
   replicas serve (each `capacity_rps`) waits.
2. A scale-out adds pods that serve after the cold start, with empty caches. A scale-in removes pods as the
   ReplicaSet controller does: pods not yet ready first (the newest first), then among the ready ones by the
   choice: `newest`, the controller's order with no cost written; `cache-value`, with each pod's cost the rank of
   the prompt tokens it served from its HBM and its own CPU tier over the annotator's window (what the annotator
   reads); `random`, a uniform draw (seeded per scale-in). A removed pod's HBM and own CPU tier go with it; the
   blocks no other live pod's tiers held are lost, or moved where a tier that outlives pods holds them (a pooled
   CPU tier, the filesystem tier).
3. Each request arriving in the period is routed among the pods serving at its arrival (`replica_routing.Router`,
   queue by the in-flight estimate, as the tier curve routes), served by the tiers as LRUs (`tier_caches`), and
   timed: its first token after the fluid queue's wait at the period's start (the queue over the serving
   replicas' capacity) plus its loads and its prefill alone (`EngineCosts.prefill_seconds`).

Prompt tokens recomputed because a scale-in removed the only holder: every lost block a request recomputes, counted
the first time it is recomputed after the loss (it is held again then). An upper bound of what the loss cost: the
block might have been evicted from its pod before it was asked for again, or recomputed for an earlier miss of its
prompt anyway. Prompt tokens served from a shared tier because a scale-in removed the pod's own copy: every moved
block a request's served prefix loads from a tier that outlives pods (not from its pod's HBM or own CPU tier),
counted the first time it is asked for after the move.

Without a drain (`newest` renders none) the victim's requests in flight are aborted; the replay does not count them
(their prompt is counted where it was served).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from components.formulas import hpa
from components.formulas.replica_routing import Router, ServiceRates, Weights
from components.formulas.requests import Request
from components.formulas.serving_time import EngineCosts
from components.formulas.tier_caches import Tally, TierCaches
from components.formulas.tier_replay import output_blocks
from components.formulas.tier_shape import Tiers
from components.formulas.victims import Candidate, Victims, victims

CHOICES: tuple[Victims, ...] = ("newest", "random", "cache-value")


@dataclass(frozen=True)
class DayInputs:
    """The pool and its tiers as the day replays them."""

    hpa: hpa.ReplayInputs  # the bounds, triggers, behaviour, cold start and a replica's capacity (its load unused)
    tiers: Tiers  # replicas: the slots pods take, at least `hpa.max_replicas`
    cpu_blocks: int  # each pod's own CPU tier (or the pool's), in the workload's blocks
    fs_blocks: int  # the filesystem tier (0: none)
    costs: EngineCosts  # a prompt's prefill and loads
    rates: ServiceRates  # the router's in-flight estimate
    weights: Weights
    window_s: int  # the annotator's window: a pod's value is its hits over it
    seed: int = 0  # the random choice's first draw

    def __post_init__(self) -> None:
        if self.tiers.replicas < self.hpa.max_replicas:
            raise ValueError(f"{self.tiers.replicas} slots for up to {self.hpa.max_replicas} replicas")


@dataclass(frozen=True)
class Day:
    """One victim choice through the day."""

    choice: Victims
    samples: tuple[hpa.Sample, ...]  # each sync: the replicas the HPA set, those serving, the queue
    prompt_tokens: int
    hbm_tokens: int
    cpu_tokens: int
    fs_tokens: int
    lost_tokens: int  # prompt tokens recomputed because a scale-in removed the only holder
    moved_tokens: int  # prompt tokens loaded from a shared tier because a scale-in removed the only pod holding them
    victims: tuple[tuple[int, int], ...]  # each pod a scale-in removed: (when, its number in order of creation)
    ttft_s: tuple[float, float]  # p50, p90

    @property
    def removed(self) -> int:
        return len(self.victims)

    def share(self, tokens: int) -> float:
        return tokens / max(self.prompt_tokens, 1)


@dataclass
class _Pod:
    uid: int
    added_s: float
    ready_s: float
    hits: list[tuple[float, int]] = field(default_factory=list)  # (arrival, tokens from its HBM and CPU tier)

    def value(self, now: float, window_s: int) -> float:
        """What the annotator reads: tokens served from its caches over the window."""
        self.hits = [(t, n) for t, n in self.hits if t > now - window_s]
        return float(sum(n for _, n in self.hits))


class _Pool:
    """The live pods, each on a slot of the tiers and the router; the lost blocks."""

    def __init__(self, inputs: DayInputs, choice: Victims) -> None:
        self.inputs, self.choice = inputs, choice
        self.caches = TierCaches(inputs.tiers, inputs.cpu_blocks, inputs.fs_blocks)
        self.router = Router(
            inputs.tiers.replicas, inputs.tiers.hbm_blocks, inputs.cpu_blocks, inputs.rates, inputs.weights
        )
        self.live: dict[int, _Pod] = {}
        self.free = list(range(inputs.tiers.replicas))
        self.lost: set[int] = set()
        self.moved: set[int] = set()
        self.victims: list[tuple[int, int]] = []
        self.scale_ins = self.uids = 0

    def add(self, now: float, ready: float) -> None:
        slot = self.free.pop(0)
        self.caches.forget(slot)
        self.router.forget(slot)
        self.live[slot] = _Pod(self.uids, now, ready)
        self.uids += 1

    def remove(self, now: float, count: int) -> None:
        unready = sorted((s for s, p in self.live.items() if p.ready_s > now), key=lambda s: -self.live[s].added_s)
        gone = unready[:count]
        ready = [s for s, p in self.live.items() if p.ready_s <= now]
        if count > len(gone):
            names = {f"{self.live[s].uid:08d}": s for s in ready}
            candidates = [
                Candidate(name, name, now - self.live[s].ready_s, now - self.live[s].added_s)
                for name, s in names.items()
            ]
            values = {name: self.live[s].value(now, self.inputs.window_s) for name, s in names.items()}
            picked = victims(candidates, count - len(gone), self.choice, values, self.inputs.seed + self.scale_ins)
            gone += [names[name] for name in picked]
        self.scale_ins += 1
        held = set().union(*(self.caches.held(s) for s in gone))
        alone = held - set().union(*(self.caches.held(s) for s in self.live if s not in gone))
        outliving = self.caches.outliving()
        self.lost |= alone - outliving
        self.moved |= alone & outliving
        for slot in gone:
            self.victims.append((round(now), self.live[slot].uid))
            del self.live[slot]
            self.caches.forget(slot)
            self.router.forget(slot)
            self.free.append(slot)
        self.free.sort()


def replay_day(requests: Sequence[Request], inputs: DayInputs, choice: Victims) -> Day:
    """The day for one victim choice (the module's steps 1 to 3)."""
    auto, dt, bt = inputs.hpa, inputs.hpa.sync_s, inputs.tiers.block_tokens
    scaler = hpa.Autoscaler(auto.min_replicas, auto.max_replicas, auto.behavior)
    pool = _Pool(inputs, choice)
    for _ in range(auto.initial_replicas):
        pool.add(-auto.cold_start_s, 0)
    first = requests[0].timestamp_ms / 1000 if requests else 0.0
    end = requests[-1].timestamp_ms / 1000 - first if requests else 0.0
    queue, served_rps = 0.0, 0.0
    tally = _DayTally()
    ttfts: list[float] = []
    samples: list[hpa.Sample] = []
    i, t = 0, 0
    while t <= end:
        batch = []
        while i < len(requests) and requests[i].timestamp_ms / 1000 - first < t + dt:
            batch.append(requests[i])
            i += 1
        arrival = len(batch) / dt
        live = len(pool.live)
        serving = sum(1 for p in pool.live.values() if p.ready_s <= t)
        wanted = scaler.sync(t, live, hpa.proposal(auto, live, serving, queue, served_rps, arrival))
        for _ in range(wanted - live):
            pool.add(t, t + auto.cold_start_s)
        if wanted < live:
            pool.remove(t, live - wanted)
        serving = sum(1 for p in pool.live.values() if p.ready_s <= t)
        samples.append(hpa.Sample(t, len(pool.live), serving, queue))
        wait = queue / (serving * auto.capacity_rps) if serving else 0.0
        for request in batch:
            ttfts.append(wait + _serve(pool, request, request.timestamp_ms / 1000 - first, tally, bt))
        fractions = sum(max(0.0, dt - max(0.0, p.ready_s - t)) / dt for p in pool.live.values())
        served = min(auto.capacity_rps * dt * fractions, queue + arrival * dt)
        queue, served_rps = queue + arrival * dt - served, served / dt
        t += dt
    ttfts.sort()
    return Day(
        choice=choice,
        samples=tuple(samples),
        prompt_tokens=tally.prompt,
        hbm_tokens=tally.hbm,
        cpu_tokens=tally.cpu,
        fs_tokens=tally.fs,
        lost_tokens=tally.lost,
        moved_tokens=tally.moved,
        victims=tuple(pool.victims),
        ttft_s=(_quantile(ttfts, 0.5), _quantile(ttfts, 0.9)),
    )


@dataclass
class _DayTally(Tally):
    """The day's prompt tokens by tier, and those a scale-in cost: recomputed (`lost`) or loaded from a shared tier
    (`moved`) because it removed the only pod holding them."""

    lost: int = 0
    moved: int = 0


def _serve(pool: _Pool, request: Request, at: float, tally: _DayTally, block_tokens: int) -> float:
    """One request at the pod the router picks among those serving at `at` (all live ones where none is yet):
    its tokens counted, its lost blocks recomputed, its moved ones loaded; the seconds to its first token past the
    queue."""
    slots = sorted(s for s, p in pool.live.items() if p.ready_s <= at) or sorted(pool.live)
    pick = pool.router.pick(request, None, slots)
    ids = request.hash_ids
    own = pool.caches.held(pick.replica) if pool.moved.intersection(ids) else set()
    found = pool.caches.serve(request, pick.replica, output_blocks(request.output_length, block_tokens))
    pool.router.send(request, pick, request.input_length - found.hit)
    pod = pool.live[pick.replica]
    pod.hits.append((at, found.hbm + (found.cpu if pool.inputs.tiers.cpu_scope == "replica" else 0)))
    tally.add(request.input_length, found)
    served_blocks = math.ceil(found.hit / block_tokens)
    for k, block in enumerate(ids):  # each block is in the pod's HBM now: counted once
        tokens = block_tokens if k < len(ids) - 1 else request.input_length - block_tokens * k
        if block in pool.lost:
            pool.lost.discard(block)
            tally.lost += tokens if k >= served_blocks else 0
        elif block in pool.moved:
            pool.moved.discard(block)
            tally.moved += tokens if k < served_blocks and block not in own else 0
    costs = pool.inputs.costs
    computed = max(request.input_length - found.hit, 1)
    loads = costs.load.seconds(found.cpu, found.fs)
    first = costs.tokenize_seconds(request.input_length) + loads
    return max(0.0, pod.ready_s - at) + first + costs.prefill_seconds(computed, request.input_length - computed)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """The nearest-rank quantile (0 for none)."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]


def scaled(requests: Sequence[Request], copies: int) -> list[Request]:
    """A trace at `copies` times its rate: that many copies of it superposed, each its own users (its block ids
    offset past every other copy's) and rotated by a share of the span (copy c starts c/copies of the way in, what
    passes the end wrapping to the start), so the copies' bursts do not coincide."""
    if copies < 1 or not requests:
        raise ValueError(f"{copies} copies of {len(requests)} requests")
    first = requests[0].timestamp_ms
    span = max(requests[-1].timestamp_ms - first + 1, 1)
    ids = 1 + max((max(r.hash_ids) for r in requests if r.hash_ids), default=0)
    out = []
    for c in range(copies):
        shift = span * c // copies
        for r in requests:
            at = (r.timestamp_ms - first + shift) % span
            out.append(Request(at, r.input_length, r.output_length, tuple(h + c * ids for h in r.hash_ids), r.stage))
    out.sort(key=lambda r: r.timestamp_ms)
    return out


def stepped(requests: Sequence[Request], stages: Sequence[tuple[float, float]]) -> list[Request]:
    """The first requests of a workload, reshaped into `stages` of (rate per second, duration in seconds): each stage
    takes round(rate x duration) requests in order, their arrivals stretched or squeezed to a mean gap of 1 / rate
    (the gaps' proportions kept), each stage after the previous one; a conversation trace's conversations continue
    across the steps."""
    counts = [round(rate * duration) for rate, duration in stages]
    if any(c < 1 for c in counts) or sum(counts) > len(requests):
        raise ValueError(f"stages {list(stages)} ask {counts} requests of {len(requests)}")
    out: list[Request] = []
    start, taken = 0.0, 0
    for k, ((_, duration), count) in enumerate(zip(stages, counts, strict=True)):
        part = requests[taken : taken + count]
        taken += count
        t0, span_ms = part[0].timestamp_ms, part[-1].timestamp_ms - part[0].timestamp_ms
        scale = duration * 1000 * (count - 1) / count / span_ms if span_ms else 0.0  # a mean gap of duration / count
        for r in part:
            out.append(
                Request(round(start + (r.timestamp_ms - t0) * scale), r.input_length, r.output_length, r.hash_ids, k)
            )
        start += duration * 1000
    return out
