"""The day replayed (components/formulas/scale_in_replay.py): which pod a scale-in removes under each victim choice,
and the prompt tokens recomputed because it held them alone, against arithmetic done by hand on a small day."""

from __future__ import annotations

import dataclasses

import pytest

from components.formulas import hpa
from components.formulas.load_costs import LoadCosts
from components.formulas.replica_routing import ServiceRates, Weights
from components.formulas.requests import Request
from components.formulas.scale_in_replay import Day, DayInputs, replay_day, scaled, stepped
from components.formulas.serving_time import EngineCosts
from components.formulas.tier_shape import Tiers
from components.units import ByteSize
from stacks.planning.workload.scale_in_day import ScaleInDay, day_shape, descent_s
from stacks.review.scale_in_day_table import scale_in_day_lines

ONE_PER_PERIOD = hpa.Rules(0, (hpa.Policy("Pods", 1, 15),))


def _inputs(fs_blocks: int = 0) -> DayInputs:
    """Two pods, 1 to 2 replicas, a replica serving 0.1 requests/s, the HPA on saturation (a Value metric: the
    offered load over what the ready replicas serve), no stabilization, one pod a period either way; each pod's HBM
    two blocks of 4 tokens, no CPU tier; a prompt token computed in 1 ms, nothing else timed."""
    auto = hpa.ReplayInputs(
        initial_replicas=2,
        capacity_rps=0.1,
        concurrency=1.0,
        cold_start_s=0,
        min_replicas=1,
        max_replicas=2,
        cpu_tier=ByteSize(0),
        triggers=(hpa.Trigger("saturation", 1.0, "Value"),),
        behavior=hpa.Behavior(ONE_PER_PERIOD, ONE_PER_PERIOD),
    )
    costs = EngineCosts(0.001, 0.0, 0.0, 0.0, LoadCosts(0.0, 0.0), 8192, 256, 1_000_000)
    return DayInputs(
        auto, Tiers(4, 2, 2), 0, fs_blocks, costs, ServiceRates(1000.0, 0.0), Weights(), window_s=60, seed=0
    )


def _request(at_s: int, length: int, ids: tuple[int, ...]) -> Request:
    return Request(at_s * 1000, length, 0, ids)


# Period 0 (0-15 s): 3 arrivals = 0.2 requests/s = what 2 replicas serve: the HPA keeps 2. A1 (blocks 1, 2; 7 tokens,
# the last block 3) goes to pod 0 (no hit anywhere: the no-hit LRU's first), B1 (3, 4) to pod 1 (the least recently
# sent a no-hit request), A2 to pod 0 (its prefix there: 7 tokens from HBM, pod 0's cache value 7, pod 1's 0).
# Period 1 (15-30 s): nothing arrives: saturation 0, one pod goes at 15 s. Period 2: A3 (blocks 1, 2) returns.
DAY = [
    _request(0, 7, (1, 2)),
    _request(1, 8, (3, 4)),
    _request(2, 7, (1, 2)),
    _request(30, 7, (1, 2)),
]


@pytest.mark.parametrize(
    ("choice", "victim", "lost", "hbm"),
    [
        # Both pods ready 15 s (one log2 bucket), the same age: the controller's order keeps them as listed, pod 0
        # (A's prefix) first. A3 finds blocks 1 and 2 nowhere: 4 + 3 = 7 tokens recomputed, 7 from HBM in all (A2).
        ("newest", 0, 7, 7),
        # Pod 0 served 7 tokens from its caches in the window, pod 1 none: costs 1 and 0, pod 1 goes; A3 finds its
        # prefix on pod 0: nothing recomputed, 14 tokens from HBM (A2 and A3).
        ("cache-value", 1, 0, 14),
    ],
)
def test_the_victim_and_the_tokens_its_scale_in_costs(choice: str, victim: int, lost: int, hbm: int) -> None:
    day = replay_day(DAY, _inputs(), choice)  # type: ignore[arg-type]
    assert [s.replicas for s in day.samples] == [2, 1, 1]
    assert day.victims == ((15, victim),)
    assert (day.lost_tokens, day.moved_tokens) == (lost, 0)
    assert (day.prompt_tokens, day.hbm_tokens, day.cpu_tokens, day.fs_tokens) == (29, hbm, 0, 0)


def test_a_random_victim_is_one_of_the_pods_and_repeatable() -> None:
    first, again = replay_day(DAY, _inputs(), "random"), replay_day(DAY, _inputs(), "random")
    assert first.victims == again.victims
    assert first.victims[0][1] in (0, 1)
    assert first.lost_tokens == (7 if first.victims[0][1] == 0 else 0)


def test_a_filesystem_tier_that_outlives_the_pod_loses_nothing() -> None:
    """With a filesystem tier of 4 blocks (it holds 1 to 4), A3 loads its prefix from it after newest removed pod 0:
    no token recomputed; 7 moved from pod 0's HBM to the filesystem. cache-value removes pod 1, whose blocks 3 and 4
    no request asks for again: nothing moved."""
    day = replay_day(DAY, _inputs(fs_blocks=4), "newest")
    assert day.victims == ((15, 0),)
    assert (day.lost_tokens, day.moved_tokens, day.fs_tokens) == (0, 7, 7)
    kept = replay_day(DAY, _inputs(fs_blocks=4), "cache-value")
    assert (kept.victims, kept.lost_tokens, kept.moved_tokens, kept.fs_tokens) == (((15, 1),), 0, 0, 0)


def test_ttft_is_the_prefill_of_what_no_tier_holds() -> None:
    """No queue (each period's arrivals within what the replicas serve): a first token after each prompt's computed
    tokens at 1 ms each, at least one (its logits). newest: A1 7, B1 8, A2 1, A3 7 ms; p50 (2nd of 4) 7 ms, p90 8 ms."""
    day = replay_day(DAY, _inputs(), "newest")
    assert day.ttft_s == pytest.approx((0.007, 0.008))


def test_stepped_keeps_each_stage_at_its_rate_and_duration() -> None:
    """Stages (1 request/s for 4 s, 0.5 for 4 s): the first 4 requests over 0-4 s, the next 2 over 4-8 s, their gaps'
    proportions kept (0, 1, 2, 3 s spaced over 4 s: x4/4 = 1 s each)."""
    requests = [_request(t, 4, (t,)) for t in range(8)]
    out = stepped(requests, [(1.0, 4.0), (0.5, 4.0)])
    assert [r.timestamp_ms for r in out] == [0, 1000, 2000, 3000, 4000, 6000]
    assert [r.stage for r in out] == [0, 0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="ask"):
        stepped(requests, [(1.0, 9.0)])


def test_scaled_copies_are_their_own_users_rotated() -> None:
    """Two copies of a 4 s trace (ids 0 and 1): the second's ids offset by 2 and its arrivals by half the span
    (4001 ms // 2 = 2000 ms), wrapping past the end."""
    requests = [_request(0, 4, (0,)), _request(4, 4, (1,))]
    out = scaled(requests, 2)
    assert [(r.timestamp_ms, r.hash_ids) for r in out] == [(0, (0,)), (1999, (3,)), (2000, (2,)), (4000, (1,))]


def _day(choice: str, lost: int, moved: int) -> Day:
    return Day(choice, (), 1000, 0, 0, 0, lost, moved, (), (0.0, 0.0))  # type: ignore[arg-type]


def test_size_prints_cache_value_against_newest() -> None:
    """newest recomputes 400 tokens and moves 0, cache-value 100 and 0: 1 - 100 / 400 = 75% fewer; random between."""
    day = ScaleInDay("by hand", (_day("newest", 400, 0), _day("random", 300, 0), _day("cache-value", 100, 0)))
    assert day.fewer_lost == pytest.approx(0.75)
    assert day.fewer_moved is None
    lines = scale_in_day_lines(day)
    assert "| newest | 0 | 0.0% | 0.0% | 0.0% | 0 ms / 0 ms | 400 (40.00%) | 0 (0.00%) |" in lines
    assert lines[-2] == (
        "cache-value against newest: 75% fewer prompt tokens recomputed after a scale-in; newest had no prompt token"
        " loaded from a shared tier after a scale-in"
    )
    worse = ScaleInDay("by hand", (_day("newest", 100, 0), _day("random", 100, 0), _day("cache-value", 115, 0)))
    assert worse.fewer_lost == pytest.approx(-0.15)
    assert scale_in_day_lines(worse)[-2].startswith("cache-value against newest: 15% more recomputed;")


def test_the_step_down_lasts_as_long_as_the_autoscaling_replay_took_to_come_down() -> None:
    """The load step ends at 60 + 1,800 = 1,860 s; the replay is back at its 2 replicas at 4,755 s: 2,895 s. Never
    back: its last sample, 5,000 - 1,860 = 3,140 s."""
    auto = _inputs().hpa
    samples = [hpa.Sample(t, 8 if t < 4755 else 2, 8, 0.0) for t in range(0, 5001, 15)]
    replay = hpa.Replay(tuple(samples), 0.0, 8, None, None, None, 0, ByteSize(0))
    assert descent_s(replay, auto) == 2895
    never = hpa.Replay(
        tuple(hpa.Sample(t, 8, 8, 0.0) for t in range(0, 5001, 15)), 0.0, 8, None, None, None, 0, ByteSize(0)
    )
    assert descent_s(never, auto) == 4995 - 1860


def test_a_day_of_one_pace_is_stepped_and_one_with_stages_kept() -> None:
    """Peak 4 x 2 replicas x 0.1 = 0.8 requests/s for 1,800 s (1,440 requests), base 0.2 for 2,895 s (579), peak again:
    3,459 requests, from a 1,000-request trace: 4 copies."""
    auto = _inputs().hpa
    samples = [hpa.Sample(t, 8 if t < 4755 else 2, 8, 0.0) for t in range(0, 5001, 15)]
    replay = hpa.Replay(tuple(samples), 0.0, 8, None, None, None, 0, ByteSize(0))
    trace = [_request(t, 4, (t,)) for t in range(1000)]
    day, shape = day_shape(trace, auto, replay)
    assert len(day) == 3459
    assert [sum(1 for r in day if r.stage == k) for k in range(3)] == [1440, 579, 1440]
    assert shape.startswith("4 copies of it superposed")
    staged = [Request(t * 1000, 4, 0, (t,), stage=t // 500) for t in range(1000)]
    assert day_shape(staged, auto, replay) == (staged, "the workload's own load stages")


def test_a_day_above_its_bound_is_not_replayed_and_says_why() -> None:
    """A capacity of 20 requests/s a replica: the peak 4 x 2 x 20 = 160 requests/s for 1,800 s alone asks 288,000
    requests, above 100,000: nothing is replayed, one line says so; a day just at the bound would be."""
    auto = dataclasses.replace(_inputs().hpa, capacity_rps=20.0)
    samples = [hpa.Sample(t, 8 if t < 4755 else 2, 8, 0.0) for t in range(0, 5001, 15)]
    replay = hpa.Replay(tuple(samples), 0.0, 8, None, None, None, 0, ByteSize(0))
    day, shape = day_shape([_request(0, 4, (0,))], auto, replay)
    assert day == []
    assert shape.startswith("not replayed: the day (160.00, 40.00, 160.00 requests/s for 1,800, 2,895, 1,800 s) asks")
    assert "691,800 requests, above the 100,000" in shape
    lines = scale_in_day_lines(ScaleInDay(shape, ()))
    assert lines[2].startswith("Not replayed: the day")
