"""The day replayed for an autoscaled stack (components/formulas/scale_in_replay.py): the workload reshaped into a
rate that falls and rises, the HPA and the tiers together, once per victim choice (newest, random, cache-value).

The shape, where the workload has one pace (a trace, or a shared prefix of one stage): three stages at the rates of
the autoscaling replay's load step (`hpa.LoadStep`: its peak and base multiples of what the initial replicas serve):
the peak for the step's duration, the base (a step down) for as long as that replay's HPA took to come back down after
its step (so the day's HPA scales in), the peak again (conversations continue, their prefixes wherever a scale-in
left them). A workload too short for them is scaled: copies of it superposed, each its own users
(`scale_in_replay.scaled`). A workload with stages (`workload.shared_prefix.load.stages`) keeps its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.formulas import hpa
from components.formulas.replica_routing import ServiceRates, Weights
from components.formulas.requests import Request
from components.formulas.scale_in_replay import CHOICES, Day, DayInputs, replay_day, scaled, stepped
from components.formulas.serving_time import EngineCosts
from components.formulas.tier_shape import Tiers

# The day's work, bounded before it starts: the conversation trace's day asks 55,001 requests, and one victim
# choice's replay of it took about 25 s (./run size on two shared cores); three choices at this bound, about 2 minutes.
MAX_DAY_REQUESTS = 100_000


@dataclass(frozen=True)
class ScaleInDay:
    """The three victim choices through the same day (none where the day asks more than `MAX_DAY_REQUESTS`)."""

    shape: str  # how the workload's rate falls and rises (or why the day was not replayed)
    days: tuple[Day, ...]  # newest, random, cache-value

    def of(self, choice: str) -> Day:
        return next(d for d in self.days if d.choice == choice)

    @property
    def fewer_lost(self) -> float | None:
        """cache-value's recomputed-after-scale-in tokens as fewer than newest's, a share (None: newest lost none)."""
        newest = self.of("newest").lost_tokens
        return None if newest == 0 else 1 - self.of("cache-value").lost_tokens / newest

    @property
    def fewer_moved(self) -> float | None:
        """The same of the tokens loaded from a shared tier because a scale-in removed their pod."""
        newest = self.of("newest").moved_tokens
        return None if newest == 0 else 1 - self.of("cache-value").moved_tokens / newest


def descent_s(replay: hpa.Replay, auto: hpa.ReplayInputs) -> int:
    """How long the autoscaling replay's HPA took from its load step's end back to the count it started from (or
    the floor), each sync period as the cluster runs it; its last sample where it never came back."""
    end = auto.load.start_s + auto.load.duration_s
    floor = max(auto.min_replicas, auto.initial_replicas)
    back = next((s.t_s for s in replay.samples if s.t_s >= end and s.replicas <= floor), replay.samples[-1].t_s)
    return max(back - end, auto.sync_s)


def day_shape(requests: Sequence[Request], auto: hpa.ReplayInputs, replay: hpa.Replay) -> tuple[list[Request], str]:
    """The workload as the day replays it, and how it was shaped (the module's docstring)."""
    if len({r.stage for r in requests}) > 1:
        if len(requests) > MAX_DAY_REQUESTS:
            return [], _too_long(len(requests), "its own load stages")
        return list(requests), "the workload's own load stages"
    step = auto.load
    served = auto.initial_replicas * auto.capacity_rps
    peak, base = step.peak * served, step.base * served
    down = descent_s(replay, auto)
    stages = ((peak, float(step.duration_s)), (base, float(down)), (peak, float(step.duration_s)))
    needed = sum(round(rate * duration) for rate, duration in stages)
    if needed > MAX_DAY_REQUESTS:
        return [], _too_long(
            needed,
            f"{peak:.2f}, {base:.2f}, {peak:.2f} requests/s for {step.duration_s:,}, {down:,}, {step.duration_s:,} s",
        )
    copies = -(-needed // len(requests))
    shape = (
        f"{copies} {'copy' if copies == 1 else 'copies'} of it superposed (each its own block ids), in three stages:"
        f" {peak:.2f} requests/s for {step.duration_s:,} s, {base:.2f} for {down:,} s, {peak:.2f} for"
        f" {step.duration_s:,} s ({needed:,} requests). The rates: the autoscaling replay's load step ({step.peak:g}x"
        f" and {step.base:g}x what {auto.initial_replicas} replicas serve, {auto.capacity_rps:.3f} requests/s each),"
        f" the step down as long as that replay's HPA took to come back to {auto.initial_replicas} replicas"
    )
    return stepped(scaled(requests, copies), stages), shape


def _too_long(requests: int, what: str) -> str:
    return (
        f"not replayed: the day ({what}) asks {requests:,} requests, above the {MAX_DAY_REQUESTS:,} it is bounded to"
        " (stacks/planning/workload/scale_in_day.py)"
    )


def replay_scale_in(
    requests: Sequence[Request],
    auto: hpa.ReplayInputs,
    replay: hpa.Replay,
    tiers: Tiers,
    cpu_blocks: int,
    fs_blocks: int,
    costs: EngineCosts,
    rates: ServiceRates,
    weights: Weights,
    window_s: int,
) -> ScaleInDay:
    """The day, once per victim choice; `tiers.replicas` is raised to the most the HPA runs (each pod a slot)."""
    day, shape = day_shape(requests, auto, replay)
    if not day:
        return ScaleInDay(shape, ())
    slots = Tiers(tiers.block_tokens, max(auto.max_replicas, 1), tiers.hbm_blocks, tiers.relation, tiers.cpu_scope)
    inputs = DayInputs(auto, slots, cpu_blocks, fs_blocks, costs, rates, weights, window_s)
    return ScaleInDay(shape, tuple(replay_day(day, inputs, choice) for choice in CHOICES))
