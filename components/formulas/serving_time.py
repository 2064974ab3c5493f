"""How long the replicas take to serve a workload: a discrete-event replay of vLLM's scheduler on each replica.

Each replica runs engine steps back to back while it has work. A step, as vLLM's scheduler builds it: every
decoding request takes one token of the step's budget (`max_num_batched_tokens`), then the requests still in
prefill continue, then waiting requests are admitted in arrival order (chunked prefill: a prompt takes what is
left of the budget and continues next step) while `max_num_seqs` and the HBM KV pool allow. A step's time is
a roofline per kernel, summed as the kernels run one after another: the GEMMs (every token through the weights,
or the weights read once, whichever is longer), then attention (every (query, key) pair's FLOPs, or every decoding
request's context read from the KV cache, whichever is longer), plus what a step pays whatever its size (the
small kernels of every layer under CUDA graphs, the tensor-parallel all-reduces' latency) and the all-reduces'
bytes per token (`EngineCosts`, derived from the accelerator profile and the H200 measurements).

Before the engine sees a request, the server tokenises its prompt: one tokenizer thread a server (vLLM's API
server runs its tokenizer on a single-thread executor, `AsyncMicrobatchTokenizer`), so prompts queue there
(`EngineCosts.tokenize_s_per_token`). A request's prompt tokens come in three kinds (`Work`): held in HBM
(free), held in a tier (loaded over the replica's host link before the request can be scheduled, one load at a
time: vLLM's connectors load asynchronously while other requests run, `WAITING_FOR_REMOTE_KVS`), and the rest,
computed. At least one prompt token is always computed (the logits of the last one).

Approximations, each a simplification of vLLM's scheduler:
- KV is reserved for a request's whole prompt and output when it is admitted (vLLM allocates as it goes and
  preempts when the pool runs out); a request that would not fit waits. Its hits (HBM, or loaded from a tier into
  HBM blocks) are reserved once per prefix among the running requests (by the first prompt block's id), as vLLM's
  block sharing counts them. So admission is conservative, and there is no preemption or recomputation. A
  request whose prefix a running request holds finds it in HBM, whatever the tiers' LRUs say: it loads nothing.
- A step's GEMMs and its attention are each the larger of their compute and their memory reads (one kernel
  does not overlap the next); the host's own work between steps (scheduling, output processing) is not timed.
- Tier loads share one link per replica (CPU and filesystem loads queue together); stores are not timed
  (they run device-to-host, the other direction of the link).
- Decode-only stretches are advanced in one jump to the next event (a finish, a load ready, an arrival),
  their exact summed time (the step times grow linearly with the context); an arrival joins at the first
  step boundary after it, as in vLLM.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from components.formulas.load_costs import LoadCosts
from components.formulas.served import Record, ReplicaTotals, Served
from components.formulas.step_sums import steps_to_reach, stretch_seconds


@dataclass(frozen=True)
class EngineCosts:
    """What one replica's engine costs, all its devices together."""

    gemm_s_per_token: float  # every weight a token activates, at the prefill's GEMM share of peak
    attention_s_per_pair: float  # QK^T and AV of one (query, key) pair over every layer
    weights_read_s: float  # one step reads every weight of a device once (a mixture of experts: but its experts)
    kv_read_s_per_token: float  # a decoding request reads its context's KV (a device's share)
    load: LoadCosts  # one token's KV loaded from the CPU tier, from the filesystem tier
    max_batched_tokens: int
    max_seqs: int
    kv_tokens: int  # the HBM KV pool
    step_s: float = 0.0  # every step, whatever its size: the layers' small kernels, the all-reduces' latency
    allreduce_s_per_token: float = 0.0  # the tensor-parallel all-reduces' bytes, per token of the step
    # A mixture of experts: reading every routed expert of a device once (not in `weights_read_s`), and the
    # experts a token routes to of all (0, 0: a dense model).
    expert_read_s: float = 0.0
    routing: tuple[int, int] = (0, 0)  # (experts a token activates, routed experts)
    tokenize_s_per_token: float = 0.0  # the server's tokenizer, before the engine sees the prompt

    def tokenize_seconds(self, prompt: int) -> float:
        return prompt * self.tokenize_s_per_token

    def fixed_seconds(self, tokens: int) -> float:
        """What a step of `tokens` tokens pays besides its GEMMs and attention."""
        return self.step_s + tokens * self.allreduce_s_per_token

    def weights_seconds(self, tokens: int) -> float:
        """Reading the weights a step of `tokens` tokens multiplies, each once: every dense weight, and of the
        routed experts those its tokens route to. Each token takes k of E experts; routed uniformly (what the
        routers' load-balancing loss trains for), one expert is missed by every token with probability
        (1 - k/E)^tokens, so the step reads E x (1 - (1 - k/E)^tokens) experts a layer (19 of gpt-oss-120b's 128
        at 5 tokens, nearly all at 200)."""
        active, experts = self.routing
        if not experts:
            return self.weights_read_s
        return self.weights_read_s + self.expert_read_s * (1 - (1 - active / experts) ** tokens)

    def gemm_seconds(self, tokens: int) -> float:
        """The layers' GEMMs: every token's FLOPs, or the weights they multiply read once, whichever is longer."""
        return max(tokens * self.gemm_s_per_token, self.weights_seconds(tokens))

    def step_seconds(self, tokens: int, pairs: float, context: int) -> float:
        attention = max(pairs * self.attention_s_per_pair, context * self.kv_read_s_per_token)
        return self.fixed_seconds(tokens) + self.gemm_seconds(tokens) + attention

    def prefill_seconds(self, new: int, cached: int = 0) -> float:
        """A prompt prefilled alone in one step (compute bound), `new` tokens over `cached` ones."""
        return (
            self.fixed_seconds(new)
            + self.gemm_seconds(new)
            + (new * cached + new * new / 2) * self.attention_s_per_pair
        )


@dataclass(frozen=True, slots=True)
class Work:
    """One request at its replica: where its prompt tokens are, and what it generates."""

    arrival_s: float
    prompt: int
    hbm: int  # prompt tokens HBM holds
    cpu: int  # loaded from the CPU tier
    fs: int  # loaded from the filesystem tier
    output: int
    # The prefix its HBM hits share (the first prompt block's id), -1 for none: while a running request holds
    # a prefix, another one that hits it shares its blocks rather than reserving them again.
    prefix: int = -1

    @property
    def computed(self) -> int:
        return max(1, self.prompt - self.hbm - self.cpu - self.fs)


class _Job:
    __slots__ = (
        "done",
        "first_s",
        "index",
        "left",
        "need",
        "output",
        "prefix",
        "prompt",
        "ready_s",
        "sent_s",
        "shared",
    )

    def __init__(self, index: int, work: Work, ready_s: float, sent_s: float) -> None:
        self.index = index
        self.prompt = work.prompt
        self.output = max(work.output, 1)
        self.left = work.computed  # prompt tokens still to compute
        self.done = work.prompt - self.left  # tokens in the KV already (hits)
        # KV tokens reserved while it runs: its own, and its HBM hits unless a running request holds them already
        # (vLLM's prefix cache shares a block among the requests that use it)
        hits = work.hbm + work.cpu + work.fs  # a tier's hits land in HBM blocks the prefix's requests share
        self.prefix = work.prefix if hits else -1
        self.shared = hits if self.prefix >= 0 else 0
        self.need = work.prompt - self.shared + self.output
        self.ready_s = ready_s
        self.sent_s = sent_s  # when the server hands it to the engine (tokenised)
        self.first_s = 0.0


class Engine:
    """One replica's scheduler and its clock."""

    def __init__(self, costs: EngineCosts, record: Record) -> None:
        self.costs = costs
        self.record = record
        self.clock = 0.0
        self.link_free = 0.0
        self.tokenizer_free = 0.0
        # requests the engine cannot schedule yet (being tokenised, or their tiers' KV loading): (ready, index, job)
        self.pending: list[tuple[float, int, _Job]] = []
        self.waiting: deque[_Job] = deque()
        self.prefilling: deque[_Job] = deque()
        self.finishing: list[tuple[int, int, _Job]] = []  # (the step it finishes at, index, job)
        self.decoding = 0
        self.context = 0  # the decoding requests' contexts, summed
        self.kv_used = 0
        self.holding: dict[int, list[int]] = {}  # prefix -> [running requests sharing it, its tokens reserved]
        self.running = 0
        self.steps = 0
        self.totals = ReplicaTotals()

    # What the router reads.
    def queued(self, at: float) -> int:
        """vLLM's waiting requests at `at`: those waiting for a tier's KV included, those the server is still
        tokenising not (the engine has not got them)."""
        return len(self.waiting) + sum(1 for _, _, job in self.pending if job.sent_s <= at)

    @property
    def kv_usage(self) -> float:
        return self.kv_used / max(self.costs.kv_tokens, 1)

    def admit(self, index: int, work: Work) -> None:
        """A request joins: the server's tokenizer takes its prompt (one at a time), then its tiers' hits load over
        the link, unless a running request holds its prefix in HBM (vLLM never evicts a block a running request
        references: the prefix is an HBM hit however long ago the tier caches' LRU last saw it there)."""
        ready = work.arrival_s
        tokenize = self.costs.tokenize_seconds(work.prompt)
        if tokenize > 0:
            ready = self.tokenizer_free = max(ready, self.tokenizer_free) + tokenize
        sent = ready
        loaded = self.costs.load.seconds(work.cpu, work.fs)
        if loaded > 0 and work.prefix >= 0 and work.prefix in self.holding:
            loaded = 0.0
        if loaded > 0:
            ready = self.link_free = max(ready, self.link_free) + loaded
            self.totals.load_s += loaded
        if ready > work.arrival_s:
            heapq.heappush(self.pending, (ready, index, _Job(index, work, ready, sent)))
        else:
            self.waiting.append(_Job(index, work, ready, sent))

    def advance(self, until: float) -> None:
        """Run the steps that start before `until` (math.inf: until the work is done)."""
        while self.clock < until:
            now = self.clock
            while self.pending and self.pending[0][0] <= now:
                self.waiting.append(heapq.heappop(self.pending)[2])
            if self.prefilling or self._admissible():
                self._step(now)
            elif self.decoding:
                self._decode_stretch(now, min(until, self.pending[0][0] if self.pending else math.inf))
            elif self.pending:  # idle until a request is ready
                self.clock = min(until, self.pending[0][0])
            else:  # idle until the next arrival
                if until < math.inf:
                    self.clock = until
                return

    def _admissible(self) -> bool:
        if not self.waiting or self.running >= self.costs.max_seqs:
            return False
        return self.running == 0 or self.kv_used + self._charge(self.waiting[0]) <= self.costs.kv_tokens

    def _charge(self, job: _Job) -> int:
        """The KV tokens admitting `job` reserves: its own, and its shared prefix if no running request holds it."""
        return job.need + (job.shared if job.prefix not in self.holding else 0)

    def _hold(self, job: _Job) -> None:
        self.kv_used += self._charge(job)
        if job.prefix >= 0:
            held = self.holding.setdefault(job.prefix, [0, job.shared])
            held[0] += 1

    def _step(self, now: float) -> None:
        costs = self.costs
        budget = costs.max_batched_tokens - self.decoding
        tokens, pairs = self.decoding, float(self.context)
        chunks: list[tuple[_Job, int]] = []
        for job in self.prefilling:
            if budget <= 0:
                break
            take = min(job.left, budget)
            chunks.append((job, take))
            pairs += take * job.done + take * take / 2
            budget -= take
            tokens += take
        while budget > 0 and self._admissible():
            job = self.waiting.popleft()
            self._hold(job)
            self.running += 1
            self.prefilling.append(job)
            take = min(job.left, budget)
            chunks.append((job, take))
            pairs += take * job.done + take * take / 2
            budget -= take
            tokens += take
        dt = costs.step_seconds(tokens, pairs, self.context)
        end = now + dt
        self.clock = end
        self.totals.compute_s += dt
        self.steps += 1
        self.context += self.decoding
        self._finish_due(end)
        for job, take in chunks:
            job.done += take
            job.left -= take
            if job.left == 0:
                self.prefilling.popleft()  # only the last chunk can be partial: the finished ones lead
                self._first_token(job, end)

    def _first_token(self, job: _Job, at: float) -> None:
        job.first_s = at
        self.record.ttft[job.index] = at - self.record.arrival[job.index]
        if job.output <= 1:
            self._release(job, at)
            return
        self.decoding += 1
        self.context += job.prompt + 1
        heapq.heappush(self.finishing, (self.steps + job.output - 1, job.index, job))

    def _release(self, job: _Job, at: float) -> None:
        self.kv_used -= job.need
        if job.prefix >= 0:
            held = self.holding[job.prefix]
            held[0] -= 1
            if held[0] == 0:
                self.kv_used -= held[1]
                del self.holding[job.prefix]
        self.running -= 1
        self.record.finish[job.index] = at
        if job.output > 1:
            self.record.tpot[job.index] = (at - job.first_s) / (job.output - 1)

    def _finish_due(self, at: float) -> None:
        while self.finishing and self.finishing[0][0] <= self.steps:
            job = heapq.heappop(self.finishing)[2]
            self.decoding -= 1
            self.context -= job.prompt + job.output
            self._release(job, at)

    def _decode_stretch(self, now: float, until: float) -> None:
        """Decode-only steps up to the next event: the next finish, or the first step ending past `until`."""
        costs, n, c = self.costs, self.decoding, self.context
        due = self.finishing[0][0] - self.steps
        # Step i takes the same GEMMs and fixed costs, then max(its attention's FLOPs, its KV reads), each growing
        # with the context: max(a1 + b1 i, a2 + b2 i).
        same = costs.fixed_seconds(n) + costs.gemm_seconds(n)
        a1, b1 = same + c * costs.attention_s_per_pair, n * costs.attention_s_per_pair
        a2, b2 = same + c * costs.kv_read_s_per_token, n * costs.kv_read_s_per_token
        steps = due
        if until < math.inf:
            steps = min(due, steps_to_reach(until - now, a1, b1, a2, b2, due))
        dt = stretch_seconds(steps, a1, b1, a2, b2)
        self.clock = now + dt
        self.totals.compute_s += dt
        self.steps += steps
        self.context += n * steps
        self._finish_due(self.clock)


PickFn = Callable[[int, list[int], list[float]], tuple[int, Work]]


def serve(
    arrivals: Sequence[float],
    costs: EngineCosts,
    replicas: int,
    pick: PickFn,
) -> Served:
    """Replay requests in arrival order through `replicas` engines. `pick(i, queued, kv_usage)` is the router and the
    tiers: given request i and what each replica reports at its arrival (waiting requests, KV usage), it returns
    the replica it goes to and its `Work` there."""
    record = Record.of(arrivals)
    output = np.zeros(len(arrivals), dtype=np.int64)
    engines = [Engine(costs, record) for _ in range(replicas)]
    for i, t in enumerate(arrivals):
        for engine in engines:
            engine.advance(t)
        r, work = pick(i, [e.queued(t) for e in engines], [e.kv_usage for e in engines])
        output[i] = max(work.output, 1)
        engines[r].admit(i, work)
    for engine in engines:
        engine.advance(math.inf)
    return Served(replicas, record, output, tuple(e.totals for e in engines))


def fixed(works: Iterable[tuple[int, Work]]) -> tuple[list[float], PickFn]:
    """Requests already routed (each its replica and work): the arrivals and a `pick` that replays them."""
    routed = list(works)

    def pick(i: int, queued: list[int], kv_usage: list[float]) -> tuple[int, Work]:
        return routed[i]

    return [w.arrival_s for _, w in routed], pick
