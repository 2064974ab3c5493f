"""LRU stack distances (Mattson et al., 1970): every LRU size's hits from one pass over a reference stream.

An LRU cache of C blocks holds exactly the C most recently used distinct blocks (LRU is a stack
algorithm: the cache at C is contained in the cache at C + 1). So a reference hits at C iff its stack
distance, the number of distinct other blocks touched since this block's last use, is below C: one
distance per reference answers every size at once. A first touch misses everywhere (`COLD`).

The distance is a count over last-use positions: of a reference at t to a block last used at p, it
is the t - 1 - p references between less those that are not their block's last use before t, i.e. the
positions superseded (their block used again) before t, all of which lie below t. A Fenwick (binary
indexed) tree over positions counts the superseded ones above p: O(log n) per reuse, O(1) per first
touch (the trace's new prompt blocks and every output block), a plain Python list sized once, hot names
bound to locals (the Mooncake trace is ~600k references).
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

# A first touch: no earlier use, so no LRU of any size holds it (compares above every capacity).
COLD = np.iinfo(np.int64).max // 2  # halved: COLD - a capacity stays positive (the exclusive tier shifts by H)

Distances = npt.NDArray[np.int64]


def distances(stream: Iterable[int]) -> Distances:
    """The stack distance of each reference of `stream` (block ids), COLD for a block's first touch."""
    ids = np.asarray(stream) if isinstance(stream, np.ndarray | array | list | tuple) else np.fromiter(stream, np.int64)
    uniq, dense = np.unique(ids, return_inverse=True)  # ids as 0..k-1: a list, not a dict, per last use
    refs: list[int] = dense.tolist()
    n = len(refs)
    tree = [0] * (n + 1)  # Fenwick tree over positions 1..n: 1 at each superseded position
    out = [COLD] * n
    last = [0] * len(uniq)  # each block's last position, 0 before its first
    superseded = 0
    for t, block in enumerate(refs, 1):
        p = last[block]
        last[block] = t
        if p:
            s = 0  # superseded positions in [1, p]
            i = p
            while i:
                s += tree[i]
                i &= i - 1
            # The t - 1 - p references between, less those whose block was used again before t.
            out[t - 1] = t - 1 - p - superseded + s
            superseded += 1
            i = p
            while i <= n:
                tree[i] += 1
                i += i & -i
    return np.array(out, dtype=np.int64)


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
