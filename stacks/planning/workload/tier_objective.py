"""`pricing.objective`: which CPU-tier size `cache.tier.cpu: auto` takes with a workload.

`latency` (the default) takes the curve's choice (workload_sizing.choose: the smallest size within `AUTO_MARGIN` of
the best hit share the node holds). `cost` weighs every size the node holds in dollars: the replicas that keep up
and meet `workload.slo` at that size (with `cache.replicas: auto` the capacity plan's search for the fewest, which
the plan then renders; with a count, that count where it fits), the filesystem tier at its configured size, x one
replica's accelerator price, plus the filesystem tier's own charges at the rates the replay measured
at that size (the CPU tier is host memory the machine type carries: no price of its own); it takes the cheapest,
the smallest on a tie. The filesystem tier's size is `storage.size`: the plan does not choose it.

The records and the choice; `workload_plan.objective_of` replays and prices the sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.units import ByteSize
from stacks.config.cache_section import MAX_REPLICAS
from stacks.config.pricing_section import PricingObjective
from stacks.config.workload_section import SloConfig
from stacks.planning.workload.cost_records import SizePrice
from stacks.planning.workload.tier_curve import TierChoice


@dataclass(frozen=True)
class SizeCost:
    """One CPU-tier size as the cost objective weighs it."""

    size: ByteSize
    replicas: int | None  # the replicas that fit at this size (None: none)
    price: SizePrice
    fixed: int | None = None  # `cache.replicas` where the stack sets a count: the only one tried; None: searched

    @property
    def usd_per_hour(self) -> float | None:
        return None if self.replicas is None else self.price.usd_per_hour(self.replicas)

    def formula(self) -> str:
        if self.replicas is None:
            return f"no count up to {MAX_REPLICAS} fits" if self.fixed is None else f"{self.fixed} replicas do not fit"
        replicas = f"{self.replicas} replica{'s' if self.replicas != 1 else ''}"
        tier = f"${self.price.tier_usd:,.2f}/hour the filesystem tier"
        return f"{replicas} x ${self.price.replica_usd:,.4f}/hour + {tier}"


@dataclass(frozen=True)
class Objective:
    name: PricingObjective
    defaulted: bool  # pricing.objective unset
    latency: TierChoice  # the latency objective's size (the curve's choice)
    chosen: TierChoice
    sizes: tuple[SizeCost, ...]  # every size weighed, smallest first (the cost objective only)

    def cost_of(self, size: ByteSize) -> SizeCost | None:
        return next((s for s in self.sizes if s.size == size), None)


def cheapest(sizes: tuple[SizeCost, ...], latency: TierChoice, slo: SloConfig | None) -> TierChoice:
    """The cheapest size that fits, the smallest on a tie (to the cent per hour). Where none fits, the latency
    objective's size, saying so (the plan's keep-up check refuses a count that does not keep up; `./run size`
    reports it)."""
    target = "keeps up and meets workload.slo" if slo is not None else "keeps up"
    fitting = [s for s in sizes if s.usd_per_hour is not None]
    if not fitting:
        fixed = sizes[0].fixed if sizes else None
        on = f"on up to {MAX_REPLICAS} replicas"
        if fixed is not None:
            on = f"on cache.replicas {fixed} (cache.replicas: auto weighs each size at the fewest that keep up)"
        return TierChoice(latency.size, f"no CPU-tier size the node holds {target} {on}: the latency objective's size")
    best = min(fitting, key=lambda s: (round(s.usd_per_hour or 0.0, 2), s.size.bytes))
    other = next(s for s in sizes if s.size == latency.size)
    other_usd = f"${other.usd_per_hour:,.2f}/hour" if other.usd_per_hour is not None else "does not fit"
    return TierChoice(
        best.size,
        f"the cheapest size that {target}: ${best.usd_per_hour or 0.0:,.2f}/hour at {best.size.readable()}"
        f" ({best.formula()}); the latency objective's {latency.size.readable()}: {other_usd} ({other.formula()})",
    )
