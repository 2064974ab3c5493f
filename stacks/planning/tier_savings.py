"""What each tier costs against what it saves (stacks/planning/cost.py prices the stack; this judges its tiers):
the accelerator time not spent on prefill, and the capacity plan's replicas not needed."""

from __future__ import annotations

from dataclasses import dataclass

from stacks.planning.capacity_plan import CapacityPlan
from stacks.planning.workload_sizing import TierCurve

REPLICAS_BASIS = "replicas not needed (the capacity plan; the one counted)"


@dataclass(frozen=True)
class Saving:
    """One measure of what a tier saves, in $/hour: accelerator time not spent on prefill, or the capacity plan's
    replicas not needed (`REPLICAS_BASIS`)."""

    basis: str
    usd_per_hour: float
    formula: str


@dataclass(frozen=True)
class TierCost:
    tier: str  # CPU | filesystem
    cost_usd_per_hour: float | None  # None: part of it is unpriced
    cost_formula: str
    savings: tuple[Saving, ...]

    @property
    def saving_usd_per_hour(self) -> float:
        """The measures are of one benefit, so one is counted: the replicas the capacity plan gives back where it
        has them (a fleet returns whole replicas, not prefill seconds), else the accelerator time."""
        replicas = [s.usd_per_hour for s in self.savings if s.basis == REPLICAS_BASIS]
        return replicas[0] if replicas else sum(s.usd_per_hour for s in self.savings)

    @property
    def net_usd_per_hour(self) -> float | None:
        """What it saves less what it costs; negative: it saves time but loses money."""
        return None if self.cost_usd_per_hour is None else self.saving_usd_per_hour - self.cost_usd_per_hour

    @property
    def verdict(self) -> str:
        net = self.net_usd_per_hour
        if net is None:
            return "not known (part of its cost is unpriced)"
        if net >= 0:
            return f"pays: saves ${net:,.2f}/hour more than it costs"
        return f"loses money: costs ${-net:,.2f}/hour more than the accelerator time it saves"


def _replicas_saved(
    capacity: CapacityPlan | None, without: int, with_tier: int, replica_usd: float
) -> tuple[Saving, ...]:
    """Replicas the capacity plan needs without the tier and with it (scenarios by index: HBM only, CPU tier, CPU +
    filesystem); none where either count is past the search's bound."""
    if capacity is None or len(capacity.needed) <= with_tier:
        return ()
    before, after = capacity.needed[without][1], capacity.needed[with_tier][1]
    if before is None or after is None:
        return ()
    fewer = before.replicas - after.replicas
    formula = f"({before.replicas} - {after.replicas}) replicas x ${replica_usd:,.4f}/hour per replica"
    return (Saving(REPLICAS_BASIS, fewer * replica_usd, formula),)


def tier_costs(
    curve: TierCurve | None,
    cpu_index: int | None,
    replica_usd: float | None,
    fs_usd: float | None,
    capacity: CapacityPlan | None = None,
) -> tuple[TierCost, ...]:
    """Each tier's cost against the accelerator time it saves: prefill seconds not spent (the replay's, over
    recomputing every prompt) per second of the workload, at one replica's accelerator price. The CPU tier is
    host memory the machine type already carries (no price of its own)."""
    if curve is None or cpu_index is None or curve.curve.seconds_saved is None or replica_usd is None:
        return ()
    saved, span = curve.curve.seconds_saved, curve.duration_s
    fs = curve.configured[1] if curve.fs_sizes else 0

    def saving(before: float, after: float) -> tuple[Saving, ...]:
        seconds = (after - before) / span
        formula = f"{round(seconds, 4) + 0.0:.4f} prefill s saved per s x ${replica_usd:,.4f}/hour per replica"
        return (Saving("accelerator time not spent on prefill", seconds * replica_usd, formula),)

    out = []
    if curve.cpu_sizes[cpu_index].bytes:
        cpu = saving(float(saved[0, 0]), float(saved[cpu_index, 0])) + _replicas_saved(capacity, 0, 1, replica_usd)
        out.append(TierCost("CPU", 0.0, "host memory the machine type carries, not priced apart", cpu))
    if curve.fs_sizes and fs:
        files = saving(float(saved[cpu_index, 0]), float(saved[cpu_index, fs]))
        files += _replicas_saved(capacity, 1, 2, replica_usd)
        out.append(TierCost("filesystem", fs_usd, "its storage and throughput lines", files))
    return tuple(out)
