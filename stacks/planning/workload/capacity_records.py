"""The capacity plan's records: a scenario (which tiers), a replay's figures at a count (`Run`), the plan
(`CapacityPlan`: the configured run and the fewest replicas per scenario), and the configured run beside the same
replay under the other prefix routing (`RoutingComparison`). `capacity_plan.py` and `workload_plan.routings_of`
compute them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from components.catalog.time_model_band import TtftBand
from components.formulas import keep_up
from components.formulas.serving_time import EngineCosts
from components.units import ByteSize
from stacks.config.workload_section import SloConfig
from stacks.planning.workload.routing_weights import Routing

TierSet = Literal["hbm", "cpu", "cpu+filesystem"]  # which tiers serve a scenario's hits


@dataclass(frozen=True)
class Scenario:
    """The tiers one replay runs with: a name for the summary, the CPU tier's size, the filesystem tier's, and
    which of the capacity plan's tier configurations it is."""

    name: str
    cpu: ByteSize  # 0: no CPU tier
    fs: ByteSize | None  # None: no filesystem tier
    tiers: TierSet


@dataclass(frozen=True)
class Run:
    """One replay's figures."""

    scenario: Scenario
    replicas: int
    ttft_s: tuple[float, float, float]  # p50, p90, p99
    tpot_s: tuple[float, float]  # p50, p90
    output_tokens_per_s: float
    requests_per_s: float
    utilisation: tuple[float, ...]  # per replica: the compute it was sent (at full batches) / the workload's span
    load_share: float  # mean share of the span a replica's host link spends loading
    asks: float  # what the workload asks of these replicas / what they give over its arrivals and a service time
    drain_s: float
    span_s: float  # the workload's arrivals
    hbm_share: float
    cpu_share: float
    fs_share: float
    slo_met: bool | None  # None: no target
    assignment: Sequence[int] = field(compare=False, repr=False)  # each request's replica, the router's way
    backlog: tuple[keep_up.StageBacklog, ...] = field(default=(), compare=False, repr=False)  # per load stage

    @property
    def keeps_up(self) -> bool:
        return keep_up.keeps_up(self.asks, self.backlog)

    @property
    def fits(self) -> bool:
        return self.keeps_up and self.slo_met is not False


@dataclass(frozen=True)
class Needed:
    """The fewest replicas that fit with a scenario's tiers (`run` None: none up to `MAX_REPLICAS`)."""

    scenario: Scenario
    run: Run | None


@dataclass(frozen=True)
class CapacityPlan:
    source: str
    routing: Routing
    slo: SloConfig | None
    costs: EngineCosts
    configured: Run  # at the stack's replicas and tiers (`cache.replicas: auto`: the count it chose)
    needed: tuple[Needed, ...]  # the fewest replicas that fit, per scenario (HBM only first, as configured last)
    band: TtftBand | None = None  # the TTFT error band a target is held to (None: the central estimate)
    band_scope: str = ""  # the stack's engine, accelerator and model kind, in words

    @property
    def as_configured(self) -> Run | None:
        """The fewest replicas that fit with the tiers as configured."""
        return self.needed[-1].run

    def needed_with(self, tiers: TierSet) -> Needed | None:
        """The fewest replicas with these tiers (None: the stack has no such scenario)."""
        return next((n for n in self.needed if n.scenario.tiers == tiers), None)

    def with_replicas(self, run: Run) -> CapacityPlan:
        """The plan at the count `cache.replicas: auto` chose (a run of the configured tiers)."""
        return dataclasses.replace(self, configured=run)


# -- approximate and precise prefix routing side by side (`./run size`) -------------------------------------------
# Approximate routing scores the router's own LRUs of the prompts it sent each replica, at the derived capacities
# (they can hold what the server evicted, and never see decode blocks); precise, what each replica's tiers hold in
# the replay, as their KV-cache events tell it (components/formulas/replica_routing.py). Both run through the same
# time model at the same replicas and tiers, so the difference is what the routing is worth for the traffic.

PrefixRouting = Literal["approximate", "precise"]
ROUTINGS: tuple[PrefixRouting, ...] = ("approximate", "precise")


@dataclass(frozen=True)
class RoutingRun:
    routing: PrefixRouting
    run: Run
    source: str  # the router it replayed (its profile's weights, as rendered)


@dataclass(frozen=True)
class RoutingComparison:
    """Both routings' runs at the rendered replicas and tiers (approximate first); `refused`: why the other routing
    does not render for this stack (its run is then absent)."""

    rendered: PrefixRouting
    runs: tuple[RoutingRun, ...]
    refused: str | None = None

    def run(self, routing: PrefixRouting) -> Run | None:
        return next((r.run for r in self.runs if r.routing == routing), None)


def other_of(routing: PrefixRouting) -> PrefixRouting:
    return "approximate" if routing == "precise" else "precise"
