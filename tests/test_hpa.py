"""The HPA's arithmetic as KEDA drives it, each rule at its boundary, the replay of a load step through it, and
the scale-down window and rate derived from the cold start (both sides of every max and min)."""

from __future__ import annotations

import pytest

from components.formulas import hpa, scale_down
from components.formulas.hpa import Behavior, Policy, Rules, Trigger
from components.units import ByteSize, GiB

TIER = ByteSize(100 * GiB)
QUEUE = (Trigger("queue", 1), Trigger("running", 16))


def _inputs(**changes: object) -> hpa.ReplayInputs:
    base: dict[str, object] = {
        "initial_replicas": 2,
        "capacity_rps": 2.0,
        "concurrency": 16,
        "cold_start_s": 420,
        "min_replicas": 1,
        "max_replicas": 8,
        "cpu_tier": TIER,
        "triggers": QUEUE,
        "behavior": scale_down.UPSTREAM_BEHAVIOR,
    }
    base.update(changes)
    return hpa.ReplayInputs(**base)  # type: ignore[arg-type]


# Proposals


@pytest.mark.parametrize(
    ("total", "expected"),
    [(43.6, 4), (44.4, 5), (36.4, 4), (35.6, 4), (35.2, 4), (34.8, 4), (0.0, 0)],
)
def test_average_value_keeps_the_count_inside_the_tolerance(total: float, expected: int) -> None:
    # 4 replicas at a target of 10 each: a usage ratio within 0.9..1.1 keeps 4, outside it ceil(total / 10).
    assert hpa.average_value_proposal(4, total, 10) == expected


def test_average_value_outside_the_tolerance_on_both_sides() -> None:
    assert hpa.average_value_proposal(10, 109, 10) == 10  # ratio 1.09: kept
    assert hpa.average_value_proposal(10, 111, 10) == 12  # ratio 1.11: ceil(11.1)
    assert hpa.average_value_proposal(10, 91, 10) == 10  # ratio 0.91: kept
    assert hpa.average_value_proposal(10, 89, 10) == 9  # ratio 0.89: ceil(8.9)
    assert hpa.average_value_proposal(0, 25, 10) == 3  # from zero: ceil(total / target)


def test_value_metric_multiplies_the_ready_pods_not_the_current_ones() -> None:
    assert hpa.value_proposal(current=6, ready=2, value=1.4, target=0.7) == 4
    assert hpa.value_proposal(current=6, ready=6, value=1.4, target=0.7) == 12
    assert hpa.value_proposal(current=6, ready=2, value=0.76, target=0.7) == 6  # ratio 1.086: kept
    assert hpa.value_proposal(current=6, ready=6, value=0.78, target=0.7) == 7  # ratio 1.114: ceil(6.69)
    assert hpa.value_proposal(current=0, ready=0, value=1.5, target=0.7) == 3


# Stabilization


def _scaler(behavior: Behavior, low: int = 1, high: int = 20) -> hpa.Autoscaler:
    return hpa.Autoscaler(low, high, behavior)


FREE = (Policy("Percent", 1000, 15),)


def test_scale_down_waits_until_the_window_holds_only_lower_proposals() -> None:
    scaler = _scaler(Behavior(Rules(0, FREE), Rules(300, FREE)))
    assert scaler.sync(0, 4, 4) == 4
    counts = {t: scaler.sync(t, 4, 2) for t in range(15, 301, 15)}
    assert counts[285] == 4  # the proposal of t=0 is still inside (285 - 300, 285]
    assert counts[300] == 2  # it has left the window


def test_scale_up_waits_until_the_window_holds_only_higher_proposals() -> None:
    scaler = _scaler(Behavior(Rules(60, FREE), Rules(0, FREE)))
    assert scaler.sync(0, 2, 2) == 2
    counts = {t: scaler.sync(t, 2, 6) for t in range(15, 61, 15)}
    assert counts[45] == 2
    assert counts[60] == 6


def test_without_windows_the_proposal_applies_at_once() -> None:
    scaler = _scaler(Behavior(Rules(0, FREE), Rules(0, FREE)))
    assert scaler.sync(0, 4, 9) == 9
    assert scaler.sync(15, 9, 3) == 3


def test_a_window_takes_the_extreme_over_it_not_the_latest() -> None:
    scaler = _scaler(Behavior(Rules(0, FREE), Rules(60, FREE)))
    scaler.sync(0, 8, 8)
    assert scaler.sync(15, 8, 3) == 8
    assert scaler.sync(30, 8, 6) == 8
    assert scaler.sync(60, 8, 3) == 6  # t=0's 8 left; the highest left is t=30's 6


# Rate policies and clamps


@pytest.mark.parametrize(("select", "expected"), [("Max", 6), ("Min", 4), ("Disabled", 2)])
def test_scale_up_policies_select_the_most_or_least_change(select: hpa.Select, expected: int) -> None:
    rules = Rules(0, (Policy("Percent", 100, 15), Policy("Pods", 4, 15)), select)
    assert _scaler(Behavior(rules, Rules(0, FREE))).sync(0, 2, 10) == expected


@pytest.mark.parametrize(("select", "expected"), [("Max", 5), ("Min", 7), ("Disabled", 10)])
def test_scale_down_policies_select_the_most_or_least_change(select: hpa.Select, expected: int) -> None:
    rules = Rules(0, (Policy("Percent", 50, 15), Policy("Pods", 3, 15)), select)
    assert _scaler(Behavior(Rules(0, FREE), rules)).sync(0, 10, 1) == expected


def test_percent_rounds_up_when_scaling_up_and_truncates_when_scaling_down() -> None:
    up = Behavior(Rules(0, (Policy("Percent", 50, 15),)), Rules(0, FREE))
    assert _scaler(up).sync(0, 3, 10) == 5  # ceil(4.5)
    down = Behavior(Rules(0, FREE), Rules(0, (Policy("Percent", 50, 15),)))
    assert _scaler(down).sync(0, 3, 1) == 1  # int(1.5)


def test_a_period_counts_the_replicas_already_added_in_it() -> None:
    scaler = _scaler(Behavior(Rules(0, (Policy("Percent", 100, 60),)), Rules(0, FREE)), high=100)
    assert scaler.sync(0, 2, 50) == 4
    assert scaler.sync(15, 4, 50) == 4  # the period started at 2: at most 4 until t=0's event leaves it
    assert scaler.sync(45, 4, 50) == 4
    assert scaler.sync(60, 4, 50) == 8


def test_the_replica_bounds_clamp_on_both_sides() -> None:
    free = Behavior(Rules(0, FREE), Rules(0, FREE))
    assert hpa.Autoscaler(2, 8, free).sync(0, 4, 9) == 8
    assert hpa.Autoscaler(2, 8, free).sync(0, 4, 8) == 8
    assert hpa.Autoscaler(2, 8, free).sync(0, 4, 1) == 2
    assert hpa.Autoscaler(2, 8, free).sync(0, 4, 2) == 2
    assert hpa.Autoscaler(2, 8, free).sync(0, 10, 10) == 8  # above max: max, whatever the metric
    assert hpa.Autoscaler(2, 8, free).sync(0, 1, 1) == 2
    with pytest.raises(ValueError, match="not ordered"):
        hpa.Autoscaler(3, 2, free)


# The replay


def test_new_replicas_serve_after_the_scale_up_window_and_the_cold_start() -> None:
    # The step starts at t=60; the queue the HPA reads first shows it at t=75.
    fast = hpa.replay(_inputs(behavior=hpa.KUBERNETES_DEFAULT))
    assert fast.first_serving_s == 15 + 420
    upstream = hpa.replay(_inputs())
    assert upstream.first_serving_s == 15 + 285 + 420  # the window (t-300, t] first holds only t>=75 at t=360
    slower = hpa.replay(_inputs(cold_start_s=840))
    assert slower.first_serving_s == 15 + 285 + 840


def test_the_step_fills_the_pools_and_the_way_down_drops_each_removed_pods_cpu_tier() -> None:
    result = hpa.replay(_inputs())
    assert result.peak_replicas == 8
    assert result.samples[-1].replicas == 2  # back at 1x: the running-requests trigger holds 2
    assert result.removed_warm == 6
    assert result.cpu_tier_dropped == TIER * 6


def test_without_room_the_queue_grows_by_the_excess_for_the_whole_step() -> None:
    result = hpa.replay(_inputs(max_replicas=2))
    assert result.peak_replicas == 2
    assert result.first_serving_s is None and result.scaled_serving_s is None
    # 4x of two replicas' 4 requests/s for 1800 s, 4 of the 16 served.
    assert result.peak_queue == pytest.approx(12 * 1800)
    assert result.removed_warm == 0


def test_more_room_serves_the_step_with_a_smaller_queue() -> None:
    tight, roomy = hpa.replay(_inputs(max_replicas=6)), hpa.replay(_inputs(max_replicas=12))
    assert roomy.peak_queue < tight.peak_queue
    assert roomy.queue_drained_s is not None and tight.queue_drained_s is not None
    assert roomy.queue_drained_s < tight.queue_drained_s


def test_a_replica_removed_before_it_serves_drops_no_cpu_tier() -> None:
    # A 60 s spike over half-loaded replicas; the replicas it adds are gone before their 3000 s cold start ends.
    spike = hpa.LoadStep(base=0.5, peak=4.0, start_s=60, duration_s=60, total_s=2400)
    result = hpa.replay(_inputs(load=spike, cold_start_s=3000, min_replicas=2, behavior=hpa.KUBERNETES_DEFAULT))
    assert result.peak_replicas > 2
    assert result.removed_warm == 0 and result.cpu_tier_dropped == ByteSize(0)
    assert result.first_serving_s is None


def test_saturation_as_a_value_metric_scales_a_saturated_pool() -> None:
    triggers = (Trigger("saturation", 0.7, "Value"),)
    result = hpa.replay(_inputs(triggers=triggers, behavior=hpa.KUBERNETES_DEFAULT))
    assert result.samples[1].replicas == 3  # at 1x the pool is at 1.0 saturation: ceil(2 x 1.0 / 0.7)
    assert result.peak_replicas == 8


def test_the_replay_refuses_inputs_it_cannot_step() -> None:
    with pytest.raises(ValueError, match="at least one trigger"):
        _inputs(triggers=())
    with pytest.raises(ValueError, match="positive"):
        _inputs(capacity_rps=0.0)


# The scale-down derivation


@pytest.mark.parametrize(
    ("cold_start", "window"),
    [(0, 300), (149, 300), (150, 300), (151, 302), (600, 1200), (1799, 3598), (1800, 3600), (1801, 3600)],
)
def test_the_window_is_two_cold_starts_between_upstreams_300_s_and_the_apis_3600_s(
    cold_start: int, window: int
) -> None:
    assert scale_down.scale_down_window(cold_start) == window


def test_the_window_grows_with_the_modeled_cold_start() -> None:
    windows = [scale_down.scale_down_window(c) for c in range(150, 1801, 50)]
    assert windows == sorted(windows) and len(set(windows)) == len(windows)


@pytest.mark.parametrize(
    ("cold_start", "period"), [(0, 15), (14, 15), (15, 15), (16, 16), (420, 420), (1800, 1800), (1801, 1800)]
)
def test_the_scale_down_period_is_a_cold_start_between_a_sync_and_the_apis_1800_s(cold_start: int, period: int) -> None:
    assert scale_down.scale_down_period(cold_start) == period


def test_the_derived_rules_remove_at_most_half_per_cold_start() -> None:
    assert scale_down.scale_down_rules(420) == Rules(840, (Policy("Percent", 50, 420),), "Max")
    assert scale_down.derived_behavior(420).scale_up == scale_down.UPSTREAM_BEHAVIOR.scale_up


def test_in_the_replay_the_replicas_stay_longer_the_longer_the_cold_start() -> None:
    def kept_after_drain(cold_start: int) -> int:
        """From the queue's drain (the load back at 1x) until the last sync at the peak count."""
        result = hpa.replay(_inputs(cold_start_s=cold_start, behavior=scale_down.derived_behavior(cold_start)))
        assert result.queue_drained_s is not None
        last_at_peak = max(s.t_s for s in result.samples if s.replicas == result.peak_replicas)
        return last_at_peak - (hpa.LoadStep().start_s + result.queue_drained_s)

    # The proposals fall below the peak up to two syncs before the queue reads empty.
    assert scale_down.scale_down_window(300) - 30 <= kept_after_drain(300) < scale_down.scale_down_window(300)
    assert scale_down.scale_down_window(900) - 30 <= kept_after_drain(900) < scale_down.scale_down_window(900)
    assert kept_after_drain(900) > kept_after_drain(300)
