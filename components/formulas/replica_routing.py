"""Which replica the llm-d router sends each request to: its EPP's scheduling profile, approximated.

The profile is the one the chart gets (components/specs/router_values.py; `Weights` read from it by
stacks/planning/workload/routing_weights.py): each scorer's score times its weight, the highest sum wins (ties here: the
lowest index). Each scorer, in [0, 1]:

- prefix scorers (HBM, CPU tier), approximate routing: the prompt's leading blocks the router's index says the
  replica holds / its blocks. The index of a replica is an LRU of the prompt blocks the router sent it, of
  the tier's configured capacity (HBM: its KV capacity; CPU: `lruCapacityPerServer`); it never sees
  decode blocks, so it overstates what the replica holds. A pooled CPU tier is still scored per replica
  (the producer indexes per server what it sent there), though any replica can load from the pool.
- the precise prefix scorer (`router.prefix_routing: precise`, `HeldTiers`): the router indexes what each
  replica's KV-cache events say its tiers hold, so it reads the replay's own tiers (`tier_caches.TierCaches`).
  llm-d-kv-cache's LongestPrefixScorer: the prompt's leading blocks the replica holds on any medium, each
  counting the highest weight of a medium it is held on (`indexerConfig.backendConfigs`); the generic
  prefix-cache-scorer divides that by the prompt's blocks. The index is taken as current when a request is
  routed (the events' delay is left out) and the producer's truncation of the sum to whole engine blocks is not
  modelled (a trace block is 32 of vLLM's 16-token blocks at 512 tokens).
- queue scorer: (max q - q) / (max q - min q), 1 when all equal. With live signals (the time model,
  components/formulas/serving_time.py), q is the replica's waiting requests as vLLM reports them, as the EPP
  reads them. Without (the tier curve, decided before any timing), q is the replica's requests in flight: a
  request occupies its replica from its arrival for its uncached prompt tokens / prefill tokens per second +
  output tokens x decode seconds per token (`ServiceRates`); uncached by the router's own index (the longest
  of its two matches there); batching and queueing delay are not modelled there.
- kv-cache-utilization scorer: 1 - the replica's KV usage, from the live signals; without them it is left
  out (the same on every replica, it changes no pick).
- no-hit LRU scorer: a request no index matches anywhere scores the replicas 1 (least recently sent a
  no-hit request, never-sent first by index) down to 0 (most recently); a request with a hit scores
  all equal (it does not change the pick).

The tier replay (`tier_replay.route`) decides the routing once with it, before the curves.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from components.formulas.requests import Request
from components.formulas.stack_distance import LRU


@dataclass(frozen=True)
class ServiceRates:
    """How long a request occupies its replica (the router's queue scorer): prefill, then decode."""

    prefill_tokens_per_s: float
    decode_s_per_token: float

    def seconds(self, uncached_tokens: int, output_tokens: int) -> float:
        return uncached_tokens / self.prefill_tokens_per_s + output_tokens * self.decode_s_per_token


@dataclass(frozen=True)
class Weights:
    """Each scorer's weight in the profile (0: not in it)."""

    queue: float = 1.0
    kv_utilization: float = 1.0
    hbm_prefix: float = 1.0
    cpu_prefix: float = 1.0
    no_hit_lru: float = 1.0


class Signals(NamedTuple):
    """What each replica reports to the EPP when a request arrives."""

    waiting: list[int]
    kv_usage: list[float]


class Pick(NamedTuple):
    replica: int
    matched_blocks: int  # the prompt's leading blocks the router's index says the replica holds
    cold: bool  # no index matched anything anywhere


@dataclass(frozen=True)
class HeldTiers:
    """What the precise scorer reads: each replica's HBM and CPU tier as the replay holds them, and the weight a
    block counts on each (a tier whose engine publishes no events is absent from the index: weight None)."""

    hbm: Sequence[LRU]
    cpu: Sequence[LRU]  # one per replica: a pooled tier's events name only the replica that stored a block
    hbm_weight: float
    cpu_weight: float | None

    def prefix(self, ids: Sequence[int], replica: int) -> tuple[int, float]:
        """The prompt's leading blocks `replica` holds on either tier, and their weights summed (each block its
        highest: LongestPrefixScorer's getMaxWeight)."""
        hbm, cpu = self.hbm[replica].blocks, self.cpu[replica].blocks
        cpu_weight = self.cpu_weight
        matched, score = 0, 0.0
        for block in ids:
            weights = [self.hbm_weight] if block in hbm else []
            if cpu_weight is not None and block in cpu:
                weights.append(cpu_weight)
            if not weights:
                break
            matched += 1
            score += max(weights)
        return matched, score


def prefix_tokens(request: Request, blocks: int, block_tokens: int) -> int:
    """The tokens of a prompt's first `blocks` blocks (the last may be partial)."""
    return request.input_length if blocks >= len(request.hash_ids) else blocks * block_tokens


class Router:
    """The EPP's scoring, approximated (module docstring): per replica an HBM and a CPU-tier index, the
    end times of its requests in flight, and the order replicas last received a no-hit request."""

    def __init__(
        self,
        replicas: int,
        hbm_blocks: int,
        cpu_blocks: int,
        rates: ServiceRates,
        weights: Weights = Weights(),
        held: HeldTiers | None = None,
    ) -> None:
        """`held`: precise routing, the prefix scorer reading the replicas' tiers (weighted as `hbm_prefix`); the
        router then keeps no index of its own."""
        if held is not None and not len(held.hbm) == len(held.cpu) == replicas:
            raise ValueError(f"precise routing reads each of the {replicas} replicas' own HBM and CPU tier")
        self.replicas = replicas
        self.rates = rates
        self.weights = weights
        self.held = held
        own = held is None
        self.hbm = [LRU(hbm_blocks) for _ in range(replicas)] if own else []
        self.cpu = [LRU(cpu_blocks) for _ in range(replicas)] if own else []
        self.in_flight: list[list[float]] = [[] for _ in range(replicas)]
        self.no_hit_order = list(range(replicas))  # least recently sent a no-hit request first

    def pick(self, request: Request, signals: Signals | None = None, among: Sequence[int] | None = None) -> Pick:
        """The replica the request goes to: with `signals`, the queue and KV-usage scorers read them; without,
        the queue is the requests in flight by `ServiceRates`. `among`: the replicas in the pool now (an
        autoscaled pool's serving ones; None: all), the only ones scored."""
        w = self.weights
        pool = range(self.replicas) if among is None else among
        if signals is None:
            now = request.timestamp_ms / 1000
            for ends in self.in_flight:
                while ends and ends[0] <= now:
                    heapq.heappop(ends)
            queue = [len(ends) for ends in self.in_flight]
            usage = None  # equal everywhere: left out
        else:
            queue, usage = signals.waiting, signals.kv_usage
        low, high = min(queue[r] for r in pool), max(queue[r] for r in pool)
        ids = request.hash_ids
        blocks = max(len(ids), 1)
        if self.held is None:
            hbm = [index.prefix(ids) for index in self.hbm]
            cpu = [index.prefix(ids) for index in self.cpu]
            matched = [max(h, c) for h, c in zip(hbm, cpu, strict=True)]
            prefix = [(w.hbm_prefix * h + w.cpu_prefix * c) / blocks for h, c in zip(hbm, cpu, strict=True)]
        else:
            held = [self.held.prefix(ids, r) for r in range(self.replicas)]
            matched = [m for m, _ in held]
            prefix = [w.hbm_prefix * weighted / blocks for _, weighted in held]
        cold = not any(matched[r] for r in pool)
        order = self.no_hit_order if among is None else [r for r in self.no_hit_order if r in pool]
        last = max(len(order) - 1, 1)
        no_hit = {r: 1 - rank / last for rank, r in enumerate(order)} if cold else {}
        best, best_score = pool[0], -1.0
        for r in pool:
            score = w.queue * (1.0 if high == low else (high - queue[r]) / (high - low))
            if usage is not None:
                score += w.kv_utilization * (1 - usage[r])
            score += prefix[r]
            score += w.no_hit_lru * no_hit.get(r, 0.0)
            if score > best_score:
                best, best_score = r, score
        return Pick(best, matched[best], cold)

    def send(self, request: Request, pick: Pick, uncached_tokens: int) -> None:
        """Record the request at its replica: its prompt in the indexes, its time in flight."""
        self._index(request, pick)
        end = request.timestamp_ms / 1000 + self.rates.seconds(uncached_tokens, request.output_length)
        heapq.heappush(self.in_flight[pick.replica], end)
        self._sent(pick)

    def sent_live(self, request: Request, pick: Pick) -> None:
        """Record the request at its replica (live signals: no in-flight estimate)."""
        self._index(request, pick)
        self._sent(pick)

    def forget(self, replica: int) -> None:
        """A replica removed (a scale-in) or added in its place: the router's indexes of it start empty, as the EPP's
        do for a new endpoint (precise routing: the replay empties the replica's tiers, which the router reads)."""
        if self.held is None:
            self.hbm[replica] = LRU(self.hbm[replica].capacity)
            self.cpu[replica] = LRU(self.cpu[replica].capacity)
        self.in_flight[replica] = []

    def _index(self, request: Request, pick: Pick) -> None:
        """The router's own indexes learn the prompt (precise routing: the replay's tiers do, as it serves it)."""
        if self.held is None:
            self.hbm[pick.replica].touch_all(request.hash_ids)
            self.cpu[pick.replica].touch_all(request.hash_ids)

    def _sent(self, pick: Pick) -> None:
        if pick.cold:
            self.no_hit_order.remove(pick.replica)
            self.no_hit_order.append(pick.replica)
