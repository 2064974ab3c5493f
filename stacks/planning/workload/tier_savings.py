"""What each tier costs against what it saves (stacks/planning/workload/cost.py prices the stack; this judges its
tiers): the accelerator time not spent on prefill, and the capacity plan's replicas not needed."""

from __future__ import annotations

from stacks.planning.workload.capacity_records import CapacityPlan, TierSet
from stacks.planning.workload.cost_records import Saving, TierCost
from stacks.planning.workload.tier_curve import TierCurve


def _replicas_saved(
    capacity: CapacityPlan | None, without: TierSet, with_tier: TierSet, replica_usd: float
) -> tuple[Saving, ...]:
    """Replicas the capacity plan needs without the tier and with it; none where the plan has no such scenario or
    either count is past the search's bound."""
    before = capacity.needed_with(without) if capacity is not None else None
    after = capacity.needed_with(with_tier) if capacity is not None else None
    if before is None or after is None or before.run is None or after.run is None:
        return ()
    fewer = before.run.replicas - after.run.replicas
    formula = f"({before.run.replicas} - {after.run.replicas}) replicas x ${replica_usd:,.4f}/hour per replica"
    return (Saving("replicas", fewer * replica_usd, formula),)


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
        return (Saving("prefill-time", seconds * replica_usd, formula),)

    out: list[TierCost] = []
    if curve.cpu_sizes[cpu_index].bytes:
        cpu = saving(float(saved[0, 0]), float(saved[cpu_index, 0]))
        cpu += _replicas_saved(capacity, "hbm", "cpu", replica_usd)
        out.append(TierCost("CPU", 0.0, "host memory the machine type carries, not priced apart", cpu))
    if curve.fs_sizes and fs:
        files = saving(float(saved[cpu_index, 0]), float(saved[cpu_index, fs]))
        files += _replicas_saved(capacity, "cpu", "cpu+filesystem", replica_usd)
        out.append(TierCost("filesystem", fs_usd, "its storage and throughput lines", files))
    return tuple(out)
