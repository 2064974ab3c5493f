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
- Routing is decided once for every size (`route`, replaceable by a finer model: any `RouteFn`), each
  request as it is read: the llm-d EPP's scoring as `replica_routing` approximates it.
- Memory. One pass, nothing kept per reference. Each request is routed, its blocks' distances taken
  in its replica's stream and the global one (`StackDistances`), and its prompt evaluated over the grid
  with others of its block count (`tier_grid`: at most `PENDING_REFS` blocks waiting, `GRID_CELLS` cells per call).
  A stream remembers only what the largest size it is compared with holds (`horizons`: T blocks), in
  O(min(T, D)) memory (D: its distinct blocks; the bound is in `StackDistances`). Besides: the routers'
  indexes (per replica an LRU of H and of `routing_cpu_blocks`), the grid's sums, one byte per request
  (`Curve.assignment`), and the working set's key per distinct prompt block (~110 bytes each, the id
  included: a dict, which gives the streams dense keys): the one term that grows with the trace's
  distinct blocks, not its length. An unbounded size (2**40 blocks) makes T = D: nothing is forgotten.

`lru_replay.replay_at` replays one (CPU, filesystem) size with real LRUs: with the curve's routing it
gives the curve's numbers exactly (the test); with live routing at that size it shows how far the
one-routing curve lies from it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from components.formulas.replica_routing import Router, ServiceRates, prefix_tokens
from components.formulas.requests import Request
from components.formulas.stack_distance import StackDistances
from components.formulas.tier_grid import Floats, Grid, Ints, Pending
from components.formulas.tier_shape import Relation as Relation  # the records, named here too
from components.formulas.tier_shape import Savings as Savings
from components.formulas.tier_shape import Scope as Scope
from components.formulas.tier_shape import Tiers as Tiers


def capacity_blocks(capacity_bytes: float, block_tokens: int, kv_bytes_per_token: float) -> int:
    """A tier's bytes as whole blocks of the workload's `block_tokens`."""
    return math.floor(capacity_bytes / (block_tokens * kv_bytes_per_token))


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
    assignment: array[int]  # each request's replica, one byte each (`assignment_array`)
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


def assignment_array(replicas: int) -> array[int]:
    """An empty array for each request's replica: one byte a request (two past 127 replicas)."""
    return array("b" if replicas <= 127 else "h" if replicas <= 32_767 else "i")


def horizons(tiers: Tiers, cpu_sizes: Sequence[int], fs_sizes: Sequence[int]) -> tuple[int, int]:
    """The largest capacity the distances of a replica's stream and of the global one are compared with:
    deeper blocks miss at every size of the grid, so the streams forget them (`StackDistances`).

    A replica's stream: HBM, and its own CPU tier (inclusive: at C; exclusive: HBM and CPU one LRU of
    H + C). The global stream: the filesystem tier, and a pooled CPU tier. 0: nothing reads it."""
    hbm, cpu, fs = tiers.hbm_blocks, max(cpu_sizes, default=0), max(fs_sizes, default=0)
    if tiers.cpu_scope == "pooled":
        return hbm, max(cpu, fs)
    return (hbm + cpu if tiers.relation == "exclusive" else max(hbm, cpu)), fs


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
    """Every (CPU size, filesystem size) at once, in one pass over the requests: each routed (`router`, its
    CPU index at `routing_cpu_blocks`), its blocks' distances taken at once in its replica's stream and
    the global one, and its prompt held with those of the same block count until they fill a numpy batch
    over the grid (sums do not depend on order; at most `PENDING_REFS` blocks wait). An empty `fs_sizes`
    is no filesystem tier."""
    bt, hbm, replicas = tiers.block_tokens, tiers.hbm_blocks, tiers.replicas
    cs = np.asarray(cpu_sizes, dtype=np.int64)
    fs = np.asarray(tuple(fs_sizes) or (0,), dtype=np.int64)
    rep_horizon, glob_horizon = horizons(tiers, cpu_sizes, fs_sizes)
    if replicas == 1:  # one replica: its stream is the global one
        streams = [StackDistances(max(rep_horizon, glob_horizon))]
        glob = None
    else:
        streams = [StackDistances(rep_horizon) for _ in range(replicas)]
        glob = StackDistances(glob_horizon) if glob_horizon else None  # None: nothing reads it (all COLD)
    pending = Pending(Grid(tiers, cs, fs, savings), "shared" if replicas == 1 else "own" if glob else "none")
    assignment = assignment_array(replicas)
    index: dict[int, int] = {}  # each distinct prompt block's key: 0, 1, ... in order of first use
    number = index.setdefault
    prompt_tokens = outputs = working_blocks = working_tokens = 0
    first = last = 0
    nothing = array("q")
    for request, r in router(requests, tiers, routing_cpu_blocks, rates):
        if not assignment:
            first = request.timestamp_ms
        last = request.timestamp_ms
        assignment.append(r)
        ids = request.hash_ids
        n = len(ids)
        if n and min(ids) < 0:
            raise ValueError("trace block ids are >= 0 (the output blocks take the negative ones)")
        out = output_blocks(request.output_length, bt)
        prompt_tokens += request.input_length
        outputs += out
        pending.misses[r] += out  # fresh: HBM misses them
        working_blocks += out
        working_tokens += request.output_length
        if not n:
            streams[r].extend((), out, nothing)
            if glob is not None:
                glob.extend((), out, nothing)
            continue
        before = len(index)
        keys = [number(block, len(index)) for block in ids]
        bucket = pending.bucket(n)
        streams[r].extend(keys, out, bucket.d)
        if glob is not None:
            glob.extend(keys, out, bucket.g)
        bucket.input_length.append(request.input_length)
        bucket.replica.append(r)
        pending.added(bucket)
        # The working set: blocks new to the global stream, the last one maybe partial.
        added = len(index) - before
        working_blocks += added
        working_tokens += bt * added
        if keys[-1] >= before and keys.index(keys[-1]) == n - 1:
            working_tokens -= bt * n - request.input_length
    pending.flush()

    grid = pending.grid
    grid.fs_stored += outputs * (fs > 0)  # computed, new to every tier: written to each
    if tiers.relation == "inclusive":
        grid.cpu_stored += (outputs * (cs > 0))[:, None]
    else:  # the CPU tier stores what HBM evicts: every insertion into HBM once it is full
        evictions = sum(max(0, m - hbm) for m in pending.misses)
        grid.cpu_stored += (evictions * (cs > 0))[:, None]
    return Curve(
        tiers=tiers,
        cpu_sizes=tuple(int(x) for x in cs),
        fs_sizes=tuple(int(x) for x in fs),
        requests=len(assignment),
        duration_ms=last - first,
        prompt_tokens=prompt_tokens,
        hbm_tokens=grid.hbm_tokens,
        cpu_tokens=grid.cpu_tokens,
        fs_tokens=grid.fs_tokens,
        recomputed_tokens=prompt_tokens - grid.hbm_tokens - grid.cpu_tokens - grid.fs_tokens,
        cpu_stored_blocks=grid.cpu_stored,
        fs_stored_blocks=grid.fs_stored,
        working_set_blocks=working_blocks,
        working_set_tokens=working_tokens,
        assignment=assignment,
        seconds_saved=grid.saved,
    )
