"""Does a stack keep up with its workload? Its queue does not grow: measured on the replay, stage by stage.

A request's wait is its time to first token beyond what it takes with a replica to itself (its loads and its
prefill alone): time in the engine's queue, behind other prefills, behind a busy host link. In each load stage
(a shared prefix's `load.stages`, each draw its own; a trace is one stage), the mean wait of the requests that
arrive in its last window is compared with the mean wait of those in its first: a queue that grows by more
than a request's service time alone (its first token and every output token at a batch of one, the median
request's) over a stage does not keep up. Within that allowance the line at the stage's end holds at most about
one more request per replica than at its start, and the drain after the last arrival is bounded by the service
of the requests admitted; beyond it the backlog grows with the stage's length. The window is the stage's
first and last tenth, at least one service time (and at most half the stage): long enough to average a
Poisson draw's bursts, short enough to see the trend.

Beside it, the fluid bound: what the workload asks of the replicas (compute at full batches, the host link's
loads) must be less than they give over the arrivals plus that same allowance (`demand_share`), so a workload
shorter than a request's service time (two requests a second apart) is not held to a share of its span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from components.formulas.capacity_replay import Demand
from components.formulas.requests import Request
from components.formulas.served import Record
from components.formulas.serving_time import EngineCosts

WINDOW_SHARE = 0.1  # the first and last tenth of a stage


def service_alone_s(costs: EngineCosts, prompt: int, output: int, first_token_s: float) -> float:
    """A request served with a replica to itself: its first token (loads and prefill alone), then every further
    output token at a batch of one, at its mean context."""
    context = prompt + output / 2
    return first_token_s + max(output - 1, 0) * costs.step_seconds(1, context, round(context))


@dataclass(frozen=True)
class StageBacklog:
    """One load stage's waits at its start and its end."""

    stage: int
    requests: int
    start_s: float  # first arrival
    end_s: float  # last arrival
    window_s: float
    early_wait_s: float  # mean wait of the requests arriving within window_s of the start
    late_wait_s: float  # ... of the end
    allowance_s: float  # the median request's service time alone

    @property
    def growth_s(self) -> float:
        return self.late_wait_s - self.early_wait_s

    @property
    def grows(self) -> bool:
        return self.growth_s > self.allowance_s


def stage_backlogs(
    stages: npt.ArrayLike, arrivals: npt.ArrayLike, waits: npt.ArrayLike, service: npt.ArrayLike
) -> tuple[StageBacklog, ...]:
    """Per stage (in order), from each request's stage, arrival, wait and service time alone."""
    stage_of, arrival, wait, alone = (np.asarray(x) for x in (stages, arrivals, waits, service))
    out = []
    for stage in sorted(set(stage_of.tolist())):
        mine = stage_of == stage
        t, w = arrival[mine], wait[mine]
        start, end = float(t.min()), float(t.max())
        allowance = float(np.median(alone[mine]))
        window = min(max(allowance, WINDOW_SHARE * (end - start)), (end - start) / 2)
        early, late = w[t <= start + window], w[t >= end - window]
        out.append(
            StageBacklog(stage, int(mine.sum()), start, end, window, float(early.mean()), float(late.mean()), allowance)
        )
    return tuple(out)


def demand_share(work_s: float, replicas: int, span_s: float, allowance_s: float) -> float:
    """What the workload asks of `replicas` replicas over its arrivals and one service time after them, as a share
    of what they give (1: all of it)."""
    return work_s / (replicas * (max(span_s, 0.0) + allowance_s) or 1e-9)


@dataclass(frozen=True)
class Measured:
    asks: float  # demand_share at the median request's service time alone
    backlog: tuple[StageBacklog, ...]


def measure(
    requests: Sequence[Request], record: Record, alone_s: Sequence[float], costs: EngineCosts, demand: Demand
) -> Measured:
    """A replay's figures for the rule: each request's service alone and wait (its TTFT beyond its loads and prefill
    alone, `alone_s`), per stage; and the demand on `len(demand.per_replica)` replicas."""
    service = [
        service_alone_s(costs, r.input_length, r.output_length, a) for r, a in zip(requests, alone_s, strict=True)
    ]
    waits = record.ttft - np.asarray(alone_s)
    backlog = stage_backlogs([r.stage for r in requests], record.arrival, waits, service)
    allowance = float(np.median(service)) if service else 0.0
    work = max(demand.compute_s, demand.load_s)
    return Measured(demand_share(work, len(demand.per_replica), demand.span_s, allowance), backlog)


def keeps_up(asks: float, backlogs: Sequence[StageBacklog]) -> bool:
    """The rule: the replicas give more than the workload asks, and no stage's queue grows."""
    return asks < 1 and not any(b.grows for b in backlogs)
