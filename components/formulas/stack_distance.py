"""LRU stack distances (Mattson et al., 1970): every LRU size's hits from one pass over a reference stream.

An LRU cache of C blocks holds exactly the C most recently used distinct blocks (LRU is a stack
algorithm: the cache at C is contained in the cache at C + 1). So a reference hits at C iff its stack
distance, the number of distinct other blocks touched since this block's last use, is below C: one
distance per reference answers every size at once. A first touch misses everywhere (`COLD`).

The distance is a count over last-use positions: of a reference at t to a block last used at p, it
is the t - 1 - p references between less those that are not their block's last use before t, i.e. the
positions superseded (their block used again) before t, all of which lie below t. A Fenwick (binary
indexed) tree over positions counts the superseded ones above p: O(log n) per reuse, O(1) per first
touch (the trace's new prompt blocks and every output block), plain Python lists and hot names bound to
locals (the Mooncake trace is ~300k references).

`StackDistances` takes the stream a piece at a time and keeps only what an LRU of its `horizon` (the
largest capacity its distances are compared with) can hold: when its positions run out it renumbers the
live last uses 1..k, and forgets the blocks `horizon` or more distinct blocks deep. Distances only grow
until the next use, so a forgotten block misses at every capacity up to the horizon until then, and its
next use, read as COLD, misses at all of them too: every comparison with a capacity <= horizon is exact.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

# A first touch: no earlier use, so no LRU of any size holds it (compares above every capacity).
COLD = np.iinfo(np.int64).max // 2  # halved: COLD - a capacity stays positive (the exclusive tier shifts by H)

Distances = npt.NDArray[np.int64]

# Positions a tracker starts with and never goes below: compaction (numpy over the positions, the
# last uses renumbered) then runs at most once per this many references.
MIN_POSITIONS = 1 << 16
# The last uses are a dict (~80 bytes an entry) or, once a compaction finds the keys dense enough (at most
# this many keys per block kept), an array indexed by key (8 bytes a key): the smaller.
DENSE_KEYS = 8


class StackDistances:
    """The stack distances of one reference stream, fed a piece at a time (`extend`), exact against every
    capacity up to `horizon` (module docstring). Blocks are keys >= 0: dense ones (0, 1, 2, ... in order
    of first use, as `tier_replay.curve` numbers them) let the last uses live in an array.

    Memory, D the distinct blocks of the stream so far (output blocks included), m the most references
    of one `extend`, k = min(horizon, D) the blocks a compaction keeps at most: the Fenwick tree (a list)
    and a flag byte over `size` <= max(MIN_POSITIONS, 2 * (k + m)) positions; the last uses, a dict of at
    most `size` entries or an array of at most DENSE_KEYS * k + `size` keys. A horizon no stream reaches
    (the unbounded tier's 2**40 blocks, or COLD) never forgets: then k is D."""

    __slots__ = ("extent", "gone", "horizon", "last", "size", "superseded", "t", "tree")

    def __init__(self, horizon: int) -> None:
        if horizon < 0:
            raise ValueError(f"a horizon is a block count >= 0, not {horizon}")
        self.horizon = horizon
        self.last: dict[int, int] | array[int] = {}  # each remembered block's last position (0: none)
        self.extent = 0  # the largest key seen, plus one
        self.size = MIN_POSITIONS
        self.tree = [0] * (self.size + 1)  # Fenwick tree over positions 1..size: 1 at each superseded one
        self.gone = bytearray(self.size + 1)  # the same marks, flat (compaction reads them)
        self.t = 0  # the last position used
        self.superseded = 0

    def extend(self, blocks: Sequence[int], fresh: int, out: array[int]) -> None:
        """Reference `blocks` (keys >= 0) in order, then `fresh` blocks never referenced before or again
        (output blocks: they take room, nothing looks them up); append the distances of `blocks` to `out`."""
        if blocks:
            self.extent = max(self.extent, max(blocks) + 1)
        if self.t + len(blocks) + fresh > self.size:
            self._compact(len(blocks) + fresh)
        tree, gone, last = self.tree, self.gone, self.last
        n, t, superseded = self.size, self.t, self.superseded
        found = [COLD] * len(blocks)
        base = t + 1  # found[t - base]: the distance of the reference at t
        if isinstance(last, dict):
            remember = last.setdefault
            for block in blocks:
                t += 1
                p = remember(block, t)  # t: a first touch (or the first since the block was forgotten)
                if p != t:
                    last[block] = t
                    s = 0  # superseded positions in [1, p]
                    i = p
                    while i:
                        s += tree[i]
                        i &= i - 1
                    # The t - 1 - p references between, less those whose block was used again before t.
                    found[t - base] = t - 1 - p - superseded + s
                    superseded += 1
                    gone[p] = 1
                    i = p
                    while i <= n:
                        tree[i] += 1
                        i += i & -i
        elif self.extent > len(last) and self.extent > DENSE_KEYS * (t + len(blocks) + fresh):
            keys, positions = self._held()  # too sparse now (other streams took the new keys): a dict
            self.last = dict(zip(keys.tolist(), positions.tolist(), strict=True))
            return self.extend(blocks, fresh, out)
        else:
            if self.extent > len(last):  # room for the new keys, doubling up to DENSE_KEYS a position
                grown = max(self.extent, min(2 * len(last), DENSE_KEYS * n))
                last.frombytes(bytes(8 * (grown - len(last))))
            for block in blocks:  # the same, indexed
                t += 1
                p = last[block]
                last[block] = t
                if p:
                    s = 0
                    i = p
                    while i:
                        s += tree[i]
                        i &= i - 1
                    found[t - base] = t - 1 - p - superseded + s
                    superseded += 1
                    gone[p] = 1
                    i = p
                    while i <= n:
                        tree[i] += 1
                        i += i & -i
        out.extend(found)
        self.t, self.superseded = t + fresh, superseded

    def _compact(self, need: int) -> None:
        """Renumber the live positions (not superseded: each block's last use, output blocks' included)
        1..k in order, keeping the `horizon` most recent (the deeper ones miss at every capacity up to it);
        then room for `need` more references and as many again. The last uses become an array when the
        keys are dense enough, a dict when not."""
        t = self.t
        flags = np.frombuffer(self.gone, dtype=np.uint8)[: t + 1]
        live_at = np.arange(t + 1, dtype=np.int64) - np.cumsum(flags, dtype=np.int64)  # live positions in [1, q]
        del flags
        keys, positions = self._held()
        live = t - self.superseded
        kept = min(live, self.horizon)
        renumbered = live_at[positions] - (live - kept)
        del live_at, positions
        keep = renumbered > 0
        keys, renumbered = keys[keep], renumbered[keep]
        if self.extent <= DENSE_KEYS * max(kept, 1):
            dense = np.zeros(self.extent, dtype=np.int64)
            dense[keys] = renumbered
            self.last = array("q", dense.tobytes())
        else:
            self.last = dict(zip(keys.tolist(), renumbered.tolist(), strict=True))
        self.size = max(MIN_POSITIONS, 2 * (kept + need))
        self.tree = [0] * (self.size + 1)
        self.gone = bytearray(self.size + 1)
        self.t, self.superseded = kept, 0

    def _held(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The remembered blocks' keys and last positions."""
        last = self.last
        if isinstance(last, dict):
            return np.fromiter(last.keys(), np.int64, len(last)), np.fromiter(last.values(), np.int64, len(last))
        held = np.frombuffer(last, dtype=np.int64)
        keys = np.flatnonzero(held)
        return keys, held[keys]


def distances(stream: Iterable[int]) -> Distances:
    """The stack distance of each reference of `stream` (block ids), COLD for a block's first touch."""
    ids = np.fromiter(stream, np.int64)
    keys = np.unique(ids, return_inverse=True)[1].reshape(-1)  # dense keys
    out = array("q")
    StackDistances(COLD).extend(keys.tolist(), 0, out)
    return np.frombuffer(out, dtype=np.int64).copy()


class LRU:
    """A brute-force LRU of `capacity` blocks (OrderedDict, most recent last): the replay's and the tests'
    reference for what the distances claim."""

    __slots__ = ("blocks", "capacity")

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"an LRU capacity is a block count >= 0, not {capacity}")
        self.capacity = capacity
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def __contains__(self, block: int) -> bool:
        return block in self.blocks

    def __len__(self) -> int:
        return len(self.blocks)

    def touch(self, block: int) -> int | None:
        """Make `block` the most recent (inserting it if absent); the block evicted to make room, if any
        (at capacity 0, the block itself)."""
        blocks = self.blocks
        if block in blocks:
            blocks.move_to_end(block)
            return None
        blocks[block] = None
        if len(blocks) > self.capacity:
            return blocks.popitem(last=False)[0]
        return None

    def touch_all(self, blocks: Iterable[int]) -> None:
        """Touch each of `blocks` in order, then evict down to capacity: the same content as touching them
        one by one (the most recently touched `capacity` blocks), faster."""
        held = self.blocks
        move = held.move_to_end
        for block in blocks:
            if block in held:
                move(block)
            else:
                held[block] = None
        while len(held) > self.capacity:
            held.popitem(last=False)

    def remove(self, block: int) -> None:
        del self.blocks[block]

    def prefix(self, blocks: Iterable[int]) -> int:
        """How many leading `blocks` it holds (a prefix match, as a prefix cache looks up a prompt)."""
        held = self.blocks
        count = 0
        for block in blocks:
            if block not in held:
                break
            count += 1
        return count
