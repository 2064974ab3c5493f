"""The tiers of one stack at one size, as real LRUs: what each request finds where, as it arrives.

The model is the tier replay's (components/formulas/tier_replay.py, its module docstring): each replica an HBM
LRU, a CPU-tier LRU per replica or one pool, one filesystem LRU over all replicas; a prompt is served from a
contiguous prefix of blocks each from the fastest tier that holds it; inclusive tiers touched by every
reference, the exclusive CPU tier fed by HBM's evictions. `lru_replay.replay_at` replays a whole workload
with it (and is held equal to the curve); the time model asks it request by request, with the routing
decided live.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple

from components.formulas.requests import Request
from components.formulas.stack_distance import LRU
from components.formulas.tier_shape import Tiers


class Found(NamedTuple):
    """Prompt tokens of one request by the tier that served them."""

    hbm: int
    cpu: int
    fs: int

    @property
    def hit(self) -> int:
        return self.hbm + self.cpu + self.fs


@dataclass
class Tally:
    """Prompt tokens a replay has served so far, and by which tier each was found."""

    prompt: int = 0
    hbm: int = 0
    cpu: int = 0
    fs: int = 0

    def add(self, prompt: int, found: Found) -> None:
        self.prompt += prompt
        self.hbm += found.hbm
        self.cpu += found.cpu
        self.fs += found.fs


class TierCaches:
    """Every tier's LRU at one (CPU, filesystem) size, the blocks each tier stored, the distinct blocks seen."""

    def __init__(self, tiers: Tiers, cpu_blocks: int, fs_blocks: int) -> None:
        self.tiers, self.cpu_blocks, self.fs_blocks = tiers, cpu_blocks, fs_blocks
        self.hbm = [LRU(tiers.hbm_blocks) for _ in range(tiers.replicas)]
        self.cpus = [LRU(cpu_blocks) for _ in range(1 if tiers.cpu_scope == "pooled" else tiers.replicas)]
        self.fs = LRU(fs_blocks)
        self.cpu_stored = self.fs_stored = 0
        self.working_blocks = self.working_tokens = 0
        self._seen: set[int] = set()
        self._fresh = -1  # output blocks: negative ids, never reused

    def forget(self, replica: int) -> None:
        """A replica's pod removed (a scale-in), or a new one in its place: its HBM and its own CPU tier start empty;
        a pooled CPU tier and the filesystem tier outlive it."""
        self.hbm[replica] = LRU(self.tiers.hbm_blocks)
        if self.tiers.cpu_scope == "replica":
            self.cpus[replica] = LRU(self.cpu_blocks)

    def held(self, replica: int) -> set[int]:
        """The blocks this replica's pod holds in the tiers that die with it (its HBM, its own CPU tier)."""
        own = set(self.hbm[replica].blocks)
        if self.tiers.cpu_scope == "replica":
            own |= set(self.cpus[replica].blocks)
        return own

    def outliving(self) -> set[int]:
        """The blocks the tiers that outlive any pod hold (a pooled CPU tier, the filesystem tier)."""
        kept = set(self.fs.blocks)
        if self.tiers.cpu_scope == "pooled":
            kept |= set(self.cpus[0].blocks)
        return kept

    def serve(self, request: Request, replica: int, output_blocks: int) -> Found:
        """The request's prompt at `replica`: which tier serves each prompt token; every tier updated with its
        prompt blocks, then `output_blocks` fresh ones (vLLM keeps decode blocks in its cache too). Block by
        block, as `LRU.touch` would (its operations inlined: this is the time model's inner loop); a tier of
        0 blocks holds nothing and is skipped."""
        bt, exclusive = self.tiers.block_tokens, self.tiers.relation == "exclusive"
        own_lru, cpu_lru = self.hbm[replica], self.cpus[0 if len(self.cpus) == 1 else replica]
        own, cpu, fs = own_lru.blocks, cpu_lru.blocks, self.fs.blocks
        own_cap, cpu_cap, fs_cap = own_lru.capacity, self.cpu_blocks, self.fs_blocks
        n = len(request.hash_ids)
        served = [0, 0, 0]  # hbm, cpu, fs
        serving = True
        blocks = [*request.hash_ids, *range(self._fresh, self._fresh - output_blocks, -1)]
        self._fresh -= output_blocks
        seen = self._seen
        last = n - 1
        for k, block in enumerate(blocks):
            size = bt if k < last else request.input_length - bt * last if k == last else 0
            if block not in seen:
                seen.add(block)
                self.working_blocks += 1
                self.working_tokens += size
            in_hbm, in_cpu, in_fs = block in own, block in cpu, block in fs
            tier = -1
            if k < n and serving and (in_hbm or in_cpu or in_fs):
                tier = 0 if in_hbm else 1 if in_cpu else 2
                served[tier] += size
            elif k < n:
                serving = False
            if exclusive:
                if in_cpu:
                    del cpu[block]
                evicted = _touch(own, own_cap, block, in_hbm)
                if evicted is not None and cpu_cap:
                    _touch(cpu, cpu_cap, evicted, evicted in cpu)
                    self.cpu_stored += 1
            else:
                _touch(own, own_cap, block, in_hbm)
                if cpu_cap:
                    if not in_cpu and tier in (-1, 2):
                        self.cpu_stored += 1
                    _touch(cpu, cpu_cap, block, in_cpu)
            if fs_cap:
                if not in_fs and tier in (-1, 1):
                    self.fs_stored += 1
                _touch(fs, fs_cap, block, in_fs)
        self.working_tokens += request.output_length
        return Found(*served)


def _touch(held: OrderedDict[int, None], capacity: int, block: int, present: bool) -> int | None:
    """`LRU.touch`, with membership already known: the block evicted, if any."""
    if present:
        held.move_to_end(block)
        return None
    held[block] = None
    if len(held) > capacity:
        return held.popitem(last=False)[0]
    return None
