"""Which replica the llm-d router sends each request to: its EPP's scheduling profile, approximated.

The profile is the one the chart gets (components/specs/router_values.py; `Weights` read from it by
stacks/planning/workload/routing_weights.py): each scorer's score times its weight, the highest sum wins (ties here: the
lowest index). Each scorer, in [0, 1]:

- prefix scorers (HBM, CPU tier): the prompt's leading blocks the router's index says the replica
  holds / its blocks. The index of a replica is an LRU of the prompt blocks the router sent it, of
  the tier's configured capacity (HBM: its KV capacity; CPU: `lruCapacityPerServer`); it never sees
  decode blocks, so it overstates what the replica holds. A pooled CPU tier is still scored per replica
  (the producer indexes per server what it sent there), though any replica can load from the pool.
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


def prefix_tokens(request: Request, blocks: int, block_tokens: int) -> int:
    """The tokens of a prompt's first `blocks` blocks (the last may be partial)."""
    return request.input_length if blocks >= len(request.hash_ids) else blocks * block_tokens


class Router:
    """The EPP's scoring, approximated (module docstring): per replica an HBM and a CPU-tier index, the
    end times of its requests in flight, and the order replicas last received a no-hit request."""

    def __init__(
        self, replicas: int, hbm_blocks: int, cpu_blocks: int, rates: ServiceRates, weights: Weights = Weights()
    ) -> None:
        self.replicas = replicas
        self.rates = rates
        self.weights = weights
        self.hbm = [LRU(hbm_blocks) for _ in range(replicas)]
        self.cpu = [LRU(cpu_blocks) for _ in range(replicas)]
        self.in_flight: list[list[float]] = [[] for _ in range(replicas)]
        self.no_hit_order = list(range(replicas))  # least recently sent a no-hit request first

    def pick(self, request: Request, signals: Signals | None = None) -> Pick:
        """The replica the request goes to: with `signals`, the queue and KV-usage scorers read them; without,
        the queue is the requests in flight by `ServiceRates`."""
        w = self.weights
        if signals is None:
            now = request.timestamp_ms / 1000
            for ends in self.in_flight:
                while ends and ends[0] <= now:
                    heapq.heappop(ends)
            queue = [len(ends) for ends in self.in_flight]
            usage = None  # equal everywhere: left out
        else:
            queue, usage = signals.waiting, signals.kv_usage
        low, high = min(queue), max(queue)
        ids = request.hash_ids
        blocks = max(len(ids), 1)
        hbm = [index.prefix(ids) for index in self.hbm]
        cpu = [index.prefix(ids) for index in self.cpu]
        cold = not any(hbm) and not any(cpu)
        last = max(len(self.no_hit_order) - 1, 1)
        no_hit = {r: 1 - rank / last for rank, r in enumerate(self.no_hit_order)} if cold else {}
        best, best_score = 0, -1.0
        for r in range(self.replicas):
            score = w.queue * (1.0 if high == low else (high - queue[r]) / (high - low))
            if usage is not None:
                score += w.kv_utilization * (1 - usage[r])
            score += (w.hbm_prefix * hbm[r] + w.cpu_prefix * cpu[r]) / blocks
            score += w.no_hit_lru * no_hit.get(r, 0.0)
            if score > best_score:
                best, best_score = r, score
        return Pick(best, max(hbm[best], cpu[best]), cold)

    def send(self, request: Request, pick: Pick, uncached_tokens: int) -> None:
        """Record the request at its replica: its prompt in the indexes, its time in flight."""
        self.hbm[pick.replica].touch_all(request.hash_ids)
        self.cpu[pick.replica].touch_all(request.hash_ids)
        end = request.timestamp_ms / 1000 + self.rates.seconds(uncached_tokens, request.output_length)
        heapq.heappush(self.in_flight[pick.replica], end)
        self._sent(pick)

    def sent_live(self, request: Request, pick: Pick) -> None:
        """Record the request at its replica (live signals: no in-flight estimate)."""
        self.hbm[pick.replica].touch_all(request.hash_ids)
        self.cpu[pick.replica].touch_all(request.hash_ids)
        self._sent(pick)

    def _sent(self, pick: Pick) -> None:
        if pick.cold:
            self.no_hit_order.remove(pick.replica)
            self.no_hit_order.append(pick.replica)
