"""What share of a workload's prompt tokens each tier catches, at every tier size, from one pass.

The stack: R model-server replicas behind the llm-d router, each with an HBM LRU of `hbm_blocks` and a
CPU-tier LRU, and an optional filesystem tier all replicas share. Everything is counted in the
workload's blocks (`block_tokens` prompt tokens, 512 for the Mooncake trace); `capacity_blocks` turns a
tier's bytes into them.

The replay, and the approximations it makes:

- Streams. Requests are served one at a time in arrival order: each references its prompt blocks in
  order (`hash_ids`; the last carries the remainder of `input_length`), then ceil(output_length /
  block_tokens) fresh blocks (negative ids, never reused: vLLM keeps decode blocks in its cache too, so
  they take room). Concurrent requests do not interleave their blocks, blocks in use are not pinned,
  and vLLM's freeing of a finished request's blocks tail first is not modelled: every tier is a plain
  LRU over the references. A block is looked up when it is touched, after the prompt's earlier blocks.
- Prefix. A block is served from a cache only if every earlier block of its prompt is (vLLM matches a
  contiguous prefix), from the fastest tier that holds it (HBM, then CPU, then filesystem); the rest of
  the prompt is recomputed. Only prompt tokens count. The last prompt token that vLLM always recomputes
  (for the logits) is not subtracted.
- Inclusive CPU tier (vLLM's OffloadingConnector stores every computed block as it is produced,
  LMCache stores on compute): it sees every reference, so at C blocks it holds the LRU of its stream at
  C: present iff stack distance < C. Exclusive (fed only by HBM evictions, SGLang HiCache write-back):
  HBM and CPU together are one LRU of H + C, the CPU holds the distances in [H, H + C).
- CPU scope. Per replica (its replica's stream), or one pool all replicas load from (MooncakeStore: the
  global stream); a pooled tier is inclusive (an exclusive pool fed by several HBMs' evictions is no LRU
  of one stream, so distances do not give it: rejected). The filesystem tier is always one inclusive
  LRU over the global stream (the shared claim).
- Writes. A tier stores a block that is computed or loaded (from another tier) and absent from it (an
  HBM hit writes nothing); the exclusive CPU tier stores each HBM eviction. Counted in blocks: the
  caller turns them into bytes.
- Routing is decided once, before the curves (`route`, replaceable by a finer model: any `RouteFn`):
  the llm-d EPP's scoring as `replica_routing` approximates it.
- Memory. The per-grid sums are bounded by the grid; the request iterator is read once, keeping per
  request its replica and block counts, and the reference streams and their distances as int64 arrays:
  O(references), ~5 MB per 600k references per stream (the replicas' and the global one).

`lru_replay.replay_at` replays one (CPU, filesystem) size with real LRUs: with the curve's routing it
gives the curve's numbers exactly (the test); with live routing at that size it shows how far the
one-routing curve lies from it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import numpy.typing as npt

from components.formulas.payoff import Replica, prefill_seconds, reload_seconds
from components.formulas.replica_routing import Router, ServiceRates, prefix_tokens
from components.formulas.requests import Request
from components.formulas.stack_distance import COLD, distances

Relation = Literal["inclusive", "exclusive"]
Scope = Literal["replica", "pooled"]
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

# payoff's arithmetic is elementwise (+, *, / on its token counts), so it takes arrays of them as well;
# tests/test_tier_replay.py holds the array results equal to the scalar ones.
_prefill = cast(Callable[[Replica, Ints, Ints], Floats], prefill_seconds)
_reload = cast(Callable[[Replica, Ints, float], Floats], reload_seconds)


def capacity_blocks(capacity_bytes: float, block_tokens: int, kv_bytes_per_token: float) -> int:
    """A tier's bytes as whole blocks of the workload's `block_tokens`."""
    return math.floor(capacity_bytes / (block_tokens * kv_bytes_per_token))


@dataclass(frozen=True)
class Tiers:
    """The stack replayed: its replicas and HBM, and how its CPU tier relates to HBM and to the replicas."""

    block_tokens: int
    replicas: int
    hbm_blocks: int
    relation: Relation = "inclusive"
    cpu_scope: Scope = "replica"

    def __post_init__(self) -> None:
        if self.block_tokens < 1 or self.replicas < 1 or self.hbm_blocks < 0:
            raise ValueError(f"block_tokens and replicas >= 1, hbm_blocks >= 0: {self}")
        if self.relation == "exclusive" and self.cpu_scope == "pooled":
            raise ValueError("an exclusive CPU pool fed by several HBMs' evictions is no LRU of one stream")


@dataclass(frozen=True)
class Savings:
    """What a hit saves: the replica's prefill (payoff's model) and each tier's reload bandwidth per pod."""

    replica: Replica
    cpu_bandwidth: float  # bytes/s per pod
    fs_bandwidth: float  # bytes/s per pod


@dataclass(frozen=True)
class Curve:
    """Prompt tokens by the tier that served them, at every (CPU size, filesystem size): arrays indexed
    [cpu, fs]. `fs_sizes` is (0,) when there is no filesystem tier (a tier of 0 blocks holds nothing)."""

    tiers: Tiers
    cpu_sizes: tuple[int, ...]
    fs_sizes: tuple[int, ...]
    requests: int
    duration_ms: int  # last arrival - first
    prompt_tokens: int
    hbm_tokens: Ints
    cpu_tokens: Ints
    fs_tokens: Ints
    recomputed_tokens: Ints
    cpu_stored_blocks: Ints  # blocks written to the CPU tier (all replicas')
    fs_stored_blocks: Ints
    working_set_blocks: int  # distinct blocks, output blocks included
    working_set_tokens: int
    assignment: npt.NDArray[np.int32]  # each request's replica
    seconds_saved: Floats | None  # prefill seconds saved over recomputing every prompt, summed

    @property
    def hit_tokens(self) -> Ints:
        return self.hbm_tokens + self.cpu_tokens + self.fs_tokens

    def share(self, tokens: Ints) -> Floats:
        """Tokens as a share of the prompt tokens."""
        return tokens / max(self.prompt_tokens, 1)

    @property
    def seconds_saved_per_request(self) -> Floats | None:
        return None if self.seconds_saved is None else self.seconds_saved / max(self.requests, 1)


RouteFn = Callable[[Iterable[Request], Tiers, int, ServiceRates], Iterator[tuple[Request, int]]]


def route(
    requests: Iterable[Request], tiers: Tiers, cpu_blocks: int, rates: ServiceRates
) -> Iterator[tuple[Request, int]]:
    """Each request with the replica the router sends it to, lazily (the requests are read once). The CPU
    index holds `cpu_blocks` (the configured `lruCapacityPerServer`); service times from the index's hits."""
    router = Router(tiers.replicas, tiers.hbm_blocks, cpu_blocks, rates)
    for request in requests:
        pick = router.pick(request)
        matched = prefix_tokens(request, pick.matched_blocks, tiers.block_tokens)
        router.send(request, pick, request.input_length - matched)
        yield request, pick.replica


def assigned(assignment: Iterable[int]) -> RouteFn:
    """A routing decided elsewhere (each request's replica, in order), as a `RouteFn`."""

    def fixed(
        requests: Iterable[Request], tiers: Tiers, cpu_blocks: int, rates: ServiceRates
    ) -> Iterator[tuple[Request, int]]:
        return zip(requests, assignment, strict=True)

    return fixed


def output_blocks(output_length: int, block_tokens: int) -> int:
    return -(-output_length // block_tokens)


class _Trace:
    """The routed trace, read once: per request its replica and lengths; the streams of block ids."""

    def __init__(self, routed: Iterator[tuple[Request, int]], tiers: Tiers) -> None:
        self.replica = array("i")
        self.prompt_blocks = array("q")
        self.input_length = array("q")
        self.output_length = array("q")
        self.streams = [array("q") for _ in range(tiers.replicas)]
        self.everyone = array("q")  # the global stream
        first = last = 0
        fresh = -1  # output blocks: negative ids, each used once
        for request, r in routed:
            if not self.replica:
                first = request.timestamp_ms
            last = request.timestamp_ms
            ids = request.hash_ids
            if ids and min(ids) < 0:
                raise ValueError("trace block ids are >= 0 (the output blocks take the negative ones)")
            out = output_blocks(request.output_length, tiers.block_tokens)
            outputs = range(fresh, fresh - out, -1)
            fresh -= out
            for stream in (self.streams[r], self.everyone):
                stream.extend(ids)
                stream.extend(outputs)
            self.replica.append(r)
            self.prompt_blocks.append(len(ids))
            self.input_length.append(request.input_length)
            self.output_length.append(request.output_length)
        self.duration_ms = last - first


GRID_CELLS = 2_000_000  # (requests x blocks x CPU sizes x fs sizes) evaluated per numpy batch


def curve(
    requests: Iterable[Request],
    tiers: Tiers,
    cpu_sizes: Sequence[int],
    fs_sizes: Sequence[int],
    *,
    routing_cpu_blocks: int,
    rates: ServiceRates,
    savings: Savings | None = None,
    router: RouteFn = route,
) -> Curve:
    """Every (CPU size, filesystem size) at once: one routing pass (`router`, its CPU index at
    `routing_cpu_blocks`), one distance pass per stream, then the requests evaluated over the grid in
    numpy batches of equal prompt block counts (sums do not depend on order). An empty `fs_sizes` is no
    filesystem tier."""
    trace = _Trace(router(requests, tiers, routing_cpu_blocks, rates), tiers)
    bt = tiers.block_tokens
    cs = np.asarray(cpu_sizes, dtype=np.int64)
    fs = np.asarray(tuple(fs_sizes) or (0,), dtype=np.int64)
    grid = _Grid(tiers, cs, fs, savings)

    replica = np.frombuffer(trace.replica, dtype=np.int32)
    blocks = np.frombuffer(trace.prompt_blocks, dtype=np.int64)
    input_length = np.frombuffer(trace.input_length, dtype=np.int64)
    output_length = np.frombuffer(trace.output_length, dtype=np.int64)
    refs = blocks + -(-output_length // bt)  # each request's references: prompt, then output blocks
    glob = distances(trace.everyone)
    per_replica = [glob] if tiers.replicas == 1 else [distances(stream) for stream in trace.streams]
    del trace.streams, trace.everyone
    glob_start = np.cumsum(refs) - refs
    rep_start = np.zeros_like(refs)  # into the replicas' distances end to end
    base = 0
    for r, d in enumerate(per_replica):
        mine = replica == r
        rep_start[mine] = base + np.cumsum(refs[mine]) - refs[mine]
        base += d.size
    rep_all = np.concatenate(per_replica)

    outputs = int((refs - blocks).sum())  # computed, new to every tier: written to each
    grid.fs_stored += outputs * (fs > 0)
    if tiers.relation == "inclusive":
        grid.cpu_stored += (outputs * (cs > 0))[:, None]
    else:  # the CPU tier stores what HBM evicts: every insertion into HBM once it is full
        hbm = tiers.hbm_blocks
        evictions = sum(int((d >= hbm).sum()) - min(hbm, int((d == COLD).sum())) for d in per_replica)
        grid.cpu_stored += (evictions * (cs > 0))[:, None]
    working_tokens = int(output_length.sum())
    for n in np.unique(blocks[blocks > 0]).tolist():
        same = np.flatnonzero(blocks == n)
        step = max(1, GRID_CELLS // (n * cs.size * fs.size))
        for i in range(0, same.size, step):
            batch = same[i : i + step]
            offsets = np.arange(n)
            d = rep_all[rep_start[batch][:, None] + offsets]
            g = glob[glob_start[batch][:, None] + offsets]
            w = np.full((batch.size, n), bt, dtype=np.int64)
            w[:, -1] = input_length[batch] - bt * (n - 1)
            grid.add(d, g, w)
            working_tokens += int(w[g == COLD].sum())

    prompt_tokens = int(input_length.sum())
    return Curve(
        tiers=tiers,
        cpu_sizes=tuple(int(x) for x in cs),
        fs_sizes=tuple(int(x) for x in fs),
        requests=replica.size,
        duration_ms=trace.duration_ms,
        prompt_tokens=prompt_tokens,
        hbm_tokens=grid.hbm_tokens,
        cpu_tokens=grid.cpu_tokens,
        fs_tokens=grid.fs_tokens,
        recomputed_tokens=prompt_tokens - grid.hbm_tokens - grid.cpu_tokens - grid.fs_tokens,
        cpu_stored_blocks=grid.cpu_stored,
        fs_stored_blocks=grid.fs_stored,
        working_set_blocks=int((glob == COLD).sum()),
        working_set_tokens=working_tokens,
        assignment=replica.copy(),
        seconds_saved=grid.saved,
    )


class _Grid:
    """The per-(CPU size, fs size) sums, and a batch of requests' prompts evaluated over the grid."""

    def __init__(self, tiers: Tiers, cs: Ints, fs: Ints, savings: Savings | None) -> None:
        self.tiers, self.cs, self.fs, self.savings = tiers, cs, fs, savings
        shape = (cs.size, fs.size)
        self.hbm_tokens = np.zeros(shape, dtype=np.int64)
        self.cpu_tokens, self.fs_tokens = np.zeros_like(self.hbm_tokens), np.zeros_like(self.hbm_tokens)
        self.cpu_stored, self.fs_stored = np.zeros_like(self.hbm_tokens), np.zeros_like(self.hbm_tokens)
        self.saved = np.zeros(shape) if savings else None

    def add(self, d: Ints, g: Ints, w: Ints) -> None:
        """A batch of B prompts of n blocks: distances in their replica's stream `d` and in the global one
        `g`, tokens per block `w`, each (B, n)."""
        tiers, cs, fs = self.tiers, self.cs, self.fs
        b, n = d.shape
        in_hbm = d < tiers.hbm_blocks
        # The CPU tier at C holds a block iff c < C (exclusive: HBM + CPU is one LRU of H + C).
        exclusive, pooled = tiers.relation == "exclusive", tiers.cpu_scope == "pooled"
        c = d - tiers.hbm_blocks if exclusive else (g if pooled else d)
        c_miss = c[:, :, None] >= cs  # (B, n, cpu): the CPU tier at that size lacks the block
        g_miss = g[:, :, None] >= fs  # (B, n, fs)
        absent = c_miss[:, :, :, None] & g_miss[:, :, None, :] & ~in_hbm[:, :, None, None]
        prefix = np.where(absent.any(1), absent.argmax(1), n)  # (B, cpu, fs): the leading blocks served
        row = np.arange(b)[:, None, None]
        served = _cumulative(w)[row, prefix]
        hbm_part = _cumulative(w * in_hbm)[row, prefix]
        cpu_part = _cumulative((w * ~in_hbm)[:, :, None] * ~c_miss)[row, prefix, np.arange(cs.size)[:, None]]
        fs_part = served - hbm_part - cpu_part
        self.hbm_tokens += hbm_part.sum(0)
        self.cpu_tokens += cpu_part.sum(0)
        self.fs_tokens += fs_part.sum(0)
        self.fs_stored += _writes(g_miss, in_hbm, prefix) * (fs > 0)
        if tiers.relation == "inclusive":
            self.cpu_stored += _writes(c_miss, in_hbm, prefix.transpose(0, 2, 1)).T * (cs > 0)[:, None]
        if self.savings is not None and self.saved is not None:
            replica = self.savings.replica
            total = w.sum(1)[:, None, None]
            self.saved += (
                _prefill(replica, total, np.zeros_like(total))
                - _reload(replica, cpu_part, self.savings.cpu_bandwidth)
                - _reload(replica, fs_part, self.savings.fs_bandwidth)
                - _prefill(replica, total - served, served)
            ).sum(0)


def _cumulative(x: Ints) -> Ints:
    """Along axis 1: the sums of x's first 0..n entries."""
    cum = np.zeros((x.shape[0], x.shape[1] + 1, *x.shape[2:]), dtype=np.int64)
    np.cumsum(x, axis=1, out=cum[:, 1:])
    return cum


def _writes(miss: npt.NDArray[np.bool_], in_hbm: npt.NDArray[np.bool_], prefix: Ints) -> Ints:
    """Blocks a tier writes, summed over the batch, per (the other tier's size, this tier's size): those
    it misses (`miss`: (B, n, this tier's sizes)) but HBM hits within the served prefix (`prefix`: (B,
    other, this)): computed, or loaded from the other tier."""
    held = in_hbm[:, :, None]
    not_hbm = (miss & ~held).sum((0, 1))  # (this,)
    cum = _cumulative((miss & held).astype(np.int64))  # (B, n + 1, this)
    row = np.arange(miss.shape[0])[:, None, None]
    past_prefix = cum[:, -1][:, None, :] - cum[row, prefix, np.arange(miss.shape[2])]  # HBM's, recomputed
    return cast(Ints, not_hbm + past_prefix.sum(0))
