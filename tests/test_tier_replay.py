"""The tier replay: stack distances equal a naive count, the one-pass curve equals a brute-force LRU replay
at every grid point under the same routing, and the router sends a shared prefix where it was served."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS
from components.formulas import payoff, stack_distance, tier_grid
from components.formulas.lru_replay import replay_at
from components.formulas.replica_routing import ServiceRates
from components.formulas.requests import Request
from components.formulas.stack_distance import COLD, LRU, StackDistances, distances
from components.formulas.tier_replay import (
    Curve,
    Savings,
    Tiers,
    assigned,
    capacity_blocks,
    curve,
    horizons,
    route,
)

RATES = ServiceRates(prefill_tokens_per_s=1_000.0, decode_s_per_token=0.01)
REPLICA = payoff.Replica(MODELS["Qwen/Qwen3-32B"], ACCELERATORS["gpu"].rates, 2)
SAVINGS = Savings(REPLICA, cpu_bandwidth=20e9, fs_bandwidth=2e9)
BT = 4  # block tokens in the small traces
FIELDS = ("hbm_tokens", "cpu_tokens", "fs_tokens", "recomputed_tokens", "cpu_stored_blocks", "fs_stored_blocks")


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


# Mostly dense keys (the last uses in an array), now and then a far one (too sparse: a dict).
_BLOCKS = st.integers(0, 15).map(lambda k: k if k < 13 else 200 * k)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.lists(_BLOCKS, max_size=6), st.integers(0, 3)), max_size=25),
    st.integers(0, 10),
    st.integers(1, 8),
)
def test_a_stream_fed_in_pieces_forgets_only_what_misses_at_every_size_up_to_its_horizon(
    pieces: list[tuple[list[int], int]], horizon: int, positions: int
) -> None:
    # Few positions: compaction (renumbering, forgetting the blocks `horizon` deep) runs on most pieces.
    # Each piece: prompt blocks, then that many fresh output blocks (never referenced again).
    whole: list[int] = []
    prompt: list[bool] = []
    fresh = -1
    for blocks, outputs in pieces:
        whole += [*blocks, *range(fresh, fresh - outputs, -1)]
        prompt += [True] * len(blocks) + [False] * outputs
        fresh -= outputs
    expected = [d for d, p in zip(_naive(whole), prompt, strict=True) if p]
    found: array[int] = array("q")
    with mock.patch.object(stack_distance, "MIN_POSITIONS", positions):
        tracker, most = StackDistances(horizon), 0
        for blocks, outputs in pieces:
            tracker.extend(blocks, outputs, found)
            most = max(most, len(blocks) + outputs)
            assert tracker.size <= max(positions, 2 * (horizon + most))
            if isinstance(tracker.last, dict):
                assert len(tracker.last) <= tracker.size
            else:
                assert len(tracker.last) <= stack_distance.DENSE_KEYS * tracker.size
    assert [min(d, horizon) for d in found] == [min(d, horizon) for d in expected]


@st.composite
def _traces(draw: st.DrawFn) -> list[Request]:
    """Prompts over three shared prefixes with fresh blocks mixed in, partial last blocks, output blocks."""
    requests, now, fresh = [], 0, 1_000
    for _ in range(draw(st.integers(1, 16))):
        now += draw(st.integers(0, 3_000))
        base, ids = draw(st.integers(0, 2)), []
        for k in range(draw(st.integers(0, 6))):
            if draw(st.integers(0, 4)):
                ids.append(100 * base + k)
            else:
                ids.append(fresh)
                fresh += 1
        length = BT * (len(ids) - 1) + draw(st.integers(1, BT)) if ids else 0
        requests.append(Request(now, length, draw(st.integers(0, 3 * BT)), tuple(ids)))
    return requests


STACKS = [("inclusive", "replica"), ("inclusive", "pooled"), ("exclusive", "replica")]


@settings(max_examples=100, deadline=None)
@given(
    _traces(),
    st.integers(1, 3),
    st.integers(0, 6),
    st.sampled_from(STACKS),
    st.sampled_from([(), (0, 3, 9, 30)]),
)
def test_the_one_pass_curve_is_the_lru_replay_at_every_size(
    trace: list[Request], replicas: int, hbm: int, stack: tuple[str, str], fs_sizes: tuple[int, ...]
) -> None:
    tiers = Tiers(BT, replicas, hbm, stack[0], stack[1])  # type: ignore[arg-type]
    cpu_sizes = (0, 2, 5, 12)
    one_pass = curve(iter(trace), tiers, cpu_sizes, fs_sizes, routing_cpu_blocks=5, rates=RATES, savings=SAVINGS)
    assert one_pass.fs_sizes == (fs_sizes or (0,))
    for i, cpu in enumerate(cpu_sizes):
        for j, fs in enumerate(one_pass.fs_sizes):
            brute = replay_at(
                trace, tiers, cpu, fs, rates=RATES, savings=SAVINGS, assignment=one_pass.assignment.tolist()
            )
            for field in FIELDS:
                assert getattr(one_pass, field)[i, j] == getattr(brute, field)[0, 0], (field, cpu, fs)
            assert one_pass.seconds_saved is not None and brute.seconds_saved is not None
            assert one_pass.seconds_saved[i, j] == pytest.approx(brute.seconds_saved[0, 0], rel=1e-9, abs=1e-12)
    assert (one_pass.working_set_blocks, one_pass.working_set_tokens) == (
        brute.working_set_blocks,
        brute.working_set_tokens,
    )
    assert (one_pass.requests, one_pass.duration_ms, one_pass.prompt_tokens) == (
        brute.requests,
        brute.duration_ms,
        brute.prompt_tokens,
    )
    _shares_hold(one_pass)


@settings(max_examples=60, deadline=None)
@given(
    _traces(),
    st.integers(1, 3),
    st.integers(0, 6),
    st.sampled_from(STACKS),
    st.sampled_from([(), (0, 3, 9, 30), (0, 2**40)]),
)
def test_compaction_forgetting_and_small_batches_change_nothing(
    trace: list[Request], replicas: int, hbm: int, stack: tuple[str, str], fs_sizes: tuple[int, ...]
) -> None:
    # The streams renumbered and forgetting on almost every request, prompts evaluated a few at a time:
    # the same curve as with room to spare (itself held equal to the LRU replay above).
    tiers = Tiers(BT, replicas, hbm, stack[0], stack[1])  # type: ignore[arg-type]
    cpu_sizes = (0, 2, 5, 12)
    roomy = curve(iter(trace), tiers, cpu_sizes, fs_sizes, routing_cpu_blocks=5, rates=RATES, savings=SAVINGS)
    with (
        mock.patch.object(stack_distance, "MIN_POSITIONS", 1),
        mock.patch.object(tier_grid, "PENDING_REFS", 3),
        mock.patch.object(tier_grid, "GRID_CELLS", 50),
    ):
        tight = curve(iter(trace), tiers, cpu_sizes, fs_sizes, routing_cpu_blocks=5, rates=RATES, savings=SAVINGS)
    for field in (*FIELDS, "working_set_blocks", "working_set_tokens", "requests", "prompt_tokens"):
        assert np.array_equal(getattr(tight, field), getattr(roomy, field)), field
    assert tight.assignment == roomy.assignment
    assert tight.seconds_saved is not None and roomy.seconds_saved is not None
    assert np.allclose(tight.seconds_saved, roomy.seconds_saved, rtol=1e-12, atol=1e-12)


def test_the_streams_remember_no_deeper_than_the_largest_size_they_are_compared_with() -> None:
    # Inclusive per replica: HBM or the CPU tier; exclusive: the two as one LRU; pooled: HBM alone per
    # replica, the CPU pool on the global stream with the filesystem tier.
    assert horizons(Tiers(BT, 2, 10), (0, 4, 30), ()) == (30, 0)
    assert horizons(Tiers(BT, 2, 10), (0, 4), (0, 50)) == (10, 50)
    assert horizons(Tiers(BT, 2, 10, "exclusive"), (0, 4, 30), (0, 8)) == (40, 8)
    assert horizons(Tiers(BT, 2, 10, "inclusive", "pooled"), (0, 70), (0, 8)) == (10, 70)
    assert horizons(Tiers(BT, 2, 10), (0, 2**40), ()) == (2**40, 0)  # the unbounded tier: nothing forgotten


def _shares_hold(result: Curve) -> None:
    """The tiers and recompute split the prompt tokens; more cache never serves less."""
    parts = (result.hbm_tokens, result.cpu_tokens, result.fs_tokens, result.recomputed_tokens)
    assert all((part >= 0).all() for part in parts)
    assert (result.hit_tokens + result.recomputed_tokens == result.prompt_tokens).all()
    if result.prompt_tokens:
        assert np.allclose(sum(result.share(part) for part in parts), 1)
    hits = result.hit_tokens
    assert (np.diff(hits, axis=0) >= 0).all() and (np.diff(hits, axis=1) >= 0).all()
    assert (np.diff(result.cpu_tokens, axis=0) >= 0).all()
    assert (np.diff(result.hbm_tokens, axis=0) >= 0).all() and (np.diff(result.hbm_tokens, axis=1) >= 0).all()


def test_three_requests_by_hand() -> None:
    # One replica, blocks of 4 tokens, HBM of 2 blocks, a CPU tier of 0 or 4 blocks, no fs tier.
    #   r1  t=0     prompt 8 tokens  [1, 2]          output 0
    #   r2  t=1000  prompt 10 tokens [1, 2, 3 (2 t)]  output 4 tokens: one block, id -1
    #   r3  t=2000  prompt 8 tokens  [1, 2]          output 0
    # Stream 1 2 | 1 2 3 -1 | 1 2; distances C C | 1 1 C C | 3 3.
    # r1 misses. r2: 1 and 2 at distance 1 < 2: HBM serves 8 tokens, 3 is new: 2 recomputed.
    # r3: 1 and 2 at distance 3: not in HBM (2); in the CPU tier of 4 (3 < 4): 8 tokens from it.
    # Served: HBM 8 at both sizes; CPU 0 | 8; recomputed 26 - 8 = 18 | 26 - 16 = 10.
    # CPU writes at 4 (computed and absent): r1's 1, 2; r2's 3 and its output block; r3 is loaded
    # from the CPU tier itself: 4. At 0 there is no tier: 0.
    # Exclusive: HBM + CPU is an LRU of 6: same hits. Writes are HBM evictions: 1 and 2 by r2's 3 and
    # -1, then 3 and -1 by r3's 1 and 2 coming back: 4 (HBM insertions 6 - its 2 filling ones).
    # Working set: 1, 2, 3, -1: 4 blocks, 4 + 4 + 2 + 4 = 14 tokens.
    trace = [
        Request(0, 8, 0, (1, 2)),
        Request(1_000, 10, 4, (1, 2, 3)),
        Request(2_000, 8, 0, (1, 2)),
    ]
    for relation in ("inclusive", "exclusive"):
        result = curve(iter(trace), Tiers(4, 1, 2, relation), (0, 4), (), routing_cpu_blocks=4, rates=RATES)
        assert result.hbm_tokens.tolist() == [[8], [8]]
        assert result.cpu_tokens.tolist() == [[0], [8]]
        assert result.fs_tokens.tolist() == [[0], [0]]
        assert result.recomputed_tokens.tolist() == [[18], [10]]
        assert result.cpu_stored_blocks.tolist() == [[0], [4]]
        assert result.fs_stored_blocks.tolist() == [[0], [0]]
        assert (result.working_set_blocks, result.working_set_tokens) == (4, 14)
        assert (result.requests, result.duration_ms, result.prompt_tokens) == (3, 2_000, 26)
        assert result.seconds_saved is None
        _shares_hold(result)


def test_blocks_past_a_broken_prefix_are_recomputed_and_written_though_hbm_holds_them() -> None:
    # HBM of 4, a CPU tier of 1. r2 = [9, 2, 3]: 9 is new, so 2 and 3 (distance 2 each: HBM holds them,
    # the CPU tier of 1 does not) are recomputed and written again: writes 1 2 3 | 9 2 3 = 6, no hit.
    trace = [Request(0, 12, 0, (1, 2, 3)), Request(1_000, 12, 0, (9, 2, 3))]
    result = curve(iter(trace), Tiers(4, 1, 4), (1,), (), routing_cpu_blocks=1, rates=RATES)
    assert result.hbm_tokens.tolist() == [[0]]
    assert result.cpu_stored_blocks.tolist() == [[6]]


def test_the_filesystem_tier_serves_across_replicas_what_no_replica_holds() -> None:
    # Two replicas, no HBM to speak of, no CPU tier: r2 on replica 1 reuses r1's prompt from replica 0
    # only through the shared filesystem tier.
    trace = [Request(0, 8, 0, (1, 2)), Request(1_000, 8, 0, (1, 2))]
    result = curve(
        iter(trace),
        Tiers(4, 2, 0),
        (0,),
        (0, 2),
        routing_cpu_blocks=0,
        rates=RATES,
        savings=SAVINGS,
        router=assigned([0, 1]),
    )
    assert result.fs_tokens.tolist() == [[0, 8]]
    assert result.fs_stored_blocks.tolist() == [[0, 2]]  # r1's blocks; r2's are loaded from it
    # r2 reloads its 8 tokens from the filesystem instead of prefilling them, and nothing is left to
    # prefill (the sign is payoff's: a few tokens reload slower than they recompute).
    saved = payoff.prefill_seconds(REPLICA, 8) - payoff.reload_seconds(REPLICA, 8, SAVINGS.fs_bandwidth)
    assert result.seconds_saved is not None
    assert result.seconds_saved[0].tolist() == pytest.approx([0, saved])
    assert result.seconds_saved_per_request is not None
    assert result.seconds_saved_per_request[0, 1] == pytest.approx(saved / 2)


def test_the_router_sends_a_shared_prefix_where_it_was_served_even_past_a_queue() -> None:
    # Three no-hit requests spread over the replicas; a fourth shares 8 of its 10 blocks with the second
    # and arrives while the second is still in flight on replica 1: prefix scores 0.8 + 0.8 beat the
    # queue scorer's 1 for the idle replicas.
    def prompt(first: int) -> tuple[int, ...]:
        return tuple(range(first, first + 10))

    trace = [
        Request(0, 40, 0, prompt(100)),
        Request(0, 40, 1_000, prompt(200)),  # 40 ms of prefill + 10 s of decode
        Request(0, 40, 0, prompt(300)),
        Request(1_000, 40, 0, (*prompt(200)[:8], 901, 902)),
    ]
    assert [r for _, r in route(trace, Tiers(4, 3, 100), 100, RATES)] == [0, 1, 2, 1]


def test_the_router_spreads_requests_that_hit_nothing() -> None:
    trace = [Request(60_000 * i, 8, 4, (10 * i, 10 * i + 1)) for i in range(6)]
    assert [r for _, r in route(trace, Tiers(4, 3, 100), 100, RATES)] == [0, 1, 2, 0, 1, 2]


class _Once:
    """An iterable that refuses a second pass."""

    def __init__(self, requests: list[Request]) -> None:
        self.requests, self.passes = requests, 0

    def __iter__(self) -> Iterator[Request]:
        self.passes += 1
        assert self.passes == 1, "the requests were read twice"
        return iter(self.requests)


def test_the_requests_are_read_once() -> None:
    trace = [Request(1_000 * i, 8, 4, (i % 3, 7)) for i in range(9)]
    once = _Once(trace)
    result = curve(once, Tiers(4, 2, 3), (0, 4), (0, 8), routing_cpu_blocks=4, rates=RATES)
    again = curve(list(trace), Tiers(4, 2, 3), (0, 4), (0, 8), routing_cpu_blocks=4, rates=RATES)
    assert once.passes == 1
    assert result.hit_tokens.tolist() == again.hit_tokens.tolist()
    assert result.assignment.tolist() == again.assignment.tolist()


def test_live_routing_replays_the_same_numbers_when_it_routes_the_same() -> None:
    # With the router's CPU index at the replayed size and no prefix shared, live routing decides as
    # the curve's did (service times differ only through hits, and there are none across requests).
    trace = [Request(60_000 * i, 8, 4, (10 * i, 10 * i + 1)) for i in range(5)]
    tiers = Tiers(4, 2, 3)
    result = curve(iter(trace), tiers, (4,), (8,), routing_cpu_blocks=4, rates=RATES)
    live = replay_at(trace, tiers, 4, 8, rates=RATES)
    assert live.assignment.tolist() == result.assignment.tolist()
    assert live.recomputed_tokens.tolist() == result.recomputed_tokens.tolist()


def test_payoffs_arithmetic_runs_elementwise_on_arrays() -> None:
    new, cached = np.array([0, 7, 128, 4_096]), np.array([0, 1, 512, 10_000])
    assert np.allclose(
        payoff.prefill_seconds(REPLICA, new, cached),  # type: ignore[arg-type]
        [payoff.prefill_seconds(REPLICA, int(n), int(c)) for n, c in zip(new, cached, strict=True)],
    )
    assert np.allclose(
        payoff.reload_seconds(REPLICA, new, 1e9),  # type: ignore[arg-type]
        [payoff.reload_seconds(REPLICA, int(n), 1e9) for n in new],
    )


def test_capacities_are_whole_blocks() -> None:
    assert capacity_blocks(10 * 512 * 1_000 + 999, 512, 1_000) == 10


def test_an_exclusive_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="exclusive"):
        Tiers(4, 2, 8, "exclusive", "pooled")
