"""Which pods a scale-in removes (components/formulas/victims.py): the deletion costs the annotator writes and the
ReplicaSet controller's order, each expectation written out by hand from kubernetes' `ActivePodsWithRanks.Less`."""

from __future__ import annotations

import pytest

from components.formulas.victims import LOWEST_COST, Candidate, deletion_costs, deletion_order, victims


def test_costs_are_the_dense_rank_of_the_values_and_silence_is_lowest() -> None:
    values = {"a": 900.0, "b": 10.0, "c": None, "d": 10.0, "e": 0.0}
    assert deletion_costs(values) == {"a": 2, "b": 1, "c": LOWEST_COST, "d": 1, "e": 0}


def test_a_cost_moves_only_when_the_order_does() -> None:
    before = deletion_costs({"a": 100.0, "b": 200.0, "c": 300.0})
    after = deletion_costs({"a": 150.0, "b": 260.0, "c": 999.0})  # every value moved, the order did not
    assert before == after == {"a": 0, "b": 1, "c": 2}
    assert deletion_costs({"a": 201.0, "b": 200.0, "c": 300.0}) == {"a": 1, "b": 0, "c": 2}  # a passed b


def test_no_pod_answering_gives_every_pod_the_lowest_cost() -> None:
    assert deletion_costs({"a": None, "b": None}) == {"a": LOWEST_COST, "b": LOWEST_COST}
    assert deletion_costs({}) == {}


def _pod(name: str, ready_s: float, uid: str, cost: int = 0, colocated: int = 1) -> Candidate:
    """Created a minute before it turned ready."""
    return Candidate(name, uid, ready_s=ready_s, age_s=ready_s + 60, cost=cost, colocated=colocated)


def test_the_newest_ready_goes_first_across_log2_buckets() -> None:
    # 100 s is 2^36.5 ns, 1000 s 2^39.9 ns, 10 s 2^33.2 ns: three buckets, shortest first whatever the UIDs.
    pods = [_pod("old", 1000, "a"), _pod("young", 10, "z"), _pod("mid", 100, "m")]
    assert [p.name for p in deletion_order(pods)] == ["young", "mid", "old"]


def test_within_one_log2_bucket_the_uid_decides() -> None:
    # 600 s and 1000 s are both within [2^39, 2^40) ns (549.8 s .. 1099.5 s): the smaller UID goes first.
    pods = [_pod("younger", 600, "uid-9"), _pod("older", 1000, "uid-1")]
    assert [p.name for p in deletion_order(pods)] == ["older", "younger"]
    # 1100 s is past 2^40 ns: the buckets differ, and the younger goes first again.
    pods = [_pod("younger", 600, "uid-9"), _pod("older", 1100, "uid-1")]
    assert [p.name for p in deletion_order(pods)] == ["younger", "older"]


def test_the_cost_comes_before_the_node_and_the_ready_time() -> None:
    pods = [
        _pod("young-crowded", 10, "a", colocated=4),
        _pod("old-lowest-cost", 1000, "b", cost=-5),
        _pod("young", 10, "c", cost=3),
    ]
    assert [p.name for p in deletion_order(pods)] == ["old-lowest-cost", "young-crowded", "young"]


def test_doubled_up_pods_go_before_the_ready_time_counts() -> None:
    pods = [_pod("alone-young", 10, "a", colocated=1), _pod("crowded-old", 1000, "b", colocated=3)]
    assert [p.name for p in deletion_order(pods)] == ["crowded-old", "alone-young"]


def test_equal_ready_times_fall_to_restarts_then_creation() -> None:
    same = 500.0
    pods = [
        Candidate("restarted", "a", ready_s=same, age_s=5000, restarts=2),
        Candidate("new", "b", ready_s=same, age_s=600, restarts=0),
        Candidate("old", "c", ready_s=same, age_s=5000, restarts=0),
    ]
    assert [p.name for p in deletion_order(pods)] == ["restarted", "new", "old"]


def test_newest_ignores_any_cost_and_cache_value_follows_the_values() -> None:
    pods = [_pod("young", 10, "a", cost=7), _pod("mid", 100, "b"), _pod("old", 1000, "c")]
    values = {"young": 5000.0, "mid": 20.0, "old": 900.0}
    assert victims(pods, 1, "newest") == ["young"]
    assert victims(pods, 2, "newest") == ["young", "mid"]
    assert victims(pods, 1, "cache-value", values) == ["mid"]
    assert victims(pods, 2, "cache-value", values) == ["mid", "old"]
    # A pod that did not answer goes before any that did; equal values leave the controller's order.
    assert victims(pods, 1, "cache-value", {"young": 1.0, "mid": 1.0, "old": None}) == ["old"]
    assert victims(pods, 2, "cache-value", {"young": 1.0, "mid": 1.0, "old": 1.0}) == ["young", "mid"]


def test_random_is_a_seeded_uniform_draw() -> None:
    pods = [_pod(f"p{i}", 10 * (i + 1), f"u{i}") for i in range(8)]
    first = victims(pods, 3, "random", seed=1)
    assert first == victims(pods, 3, "random", seed=1) and len(set(first)) == 3
    drawn = {name for seed in range(200) for name in victims(pods, 1, "random", seed=seed)}
    assert drawn == {p.name for p in pods}  # every pod can be drawn, unlike the controller's order


def test_bad_counts_and_missing_values_are_refused() -> None:
    pods = [_pod("a", 10, "a")]
    assert victims(pods, 0, "newest") == []
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        victims(pods, 2, "newest")
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        victims(pods, -1, "newest")
    with pytest.raises(ValueError, match="needs each candidate's cache value"):
        victims(pods, 1, "cache-value")
