"""The workload side of a plan as one record: what `stacks/planning/workload_plan.py` `plan_workload` returns, the
plan renders at, and the summary and `./run size` print. A new capability of the workload side (another replay,
another choice) is a field here, not another call in the plan or the CLI."""

from __future__ import annotations

from dataclasses import dataclass

from components.formulas.shared_tier_capacity import StoreRate
from components.units import ByteSize
from stacks.planning.workload.capacity_records import CapacityPlan, RoutingComparison
from stacks.planning.workload.cost_records import StackCost
from stacks.planning.workload.pd_records import PdPlan
from stacks.planning.workload.scale_in_day import ScaleInDay
from stacks.planning.workload.tier_curve import TierCurve
from stacks.planning.workload.tier_objective import Objective


@dataclass(frozen=True)
class WorkloadPlan:
    """The workload through the stack, once: the replicas and tiers it needs and what they cost."""

    source: str  # the workload as the summary names it (where it came from)
    capacity: CapacityPlan  # the time model's capacity plan at the rendered replicas and tiers
    curve: TierCurve  # the tier curve, routed as the time model's router routed it (its choice: the objective's)
    objective: Objective | None  # the size `pricing.objective` takes (None: not weighed, or no size to choose)
    replicas: int  # the model-server replicas to render (`cache.replicas: auto`: the count the plan took)
    cpu_tier: ByteSize | None  # the CPU tier `cache.tier.cpu: auto` took (None: the tier as configured)
    store_rate: StoreRate | None  # the filesystem tier's write rate the replay measured (None: no such tier)
    cost: StackCost  # the stack as rendered, priced
    scale_in_day: ScaleInDay | None = None  # the day replayed per victim choice (autoscaled stacks, when asked)
    routings: RoutingComparison | None = None  # approximate vs precise prefix routing (None: not asked, `plan()`)
    # `cache.disaggregation`: the workload through the prefill pool, the handoff and the decode pool (the aggregated
    # plan above is the stack's shape without it, what P/D is weighed against); None: aggregated
    disaggregated: PdPlan | None = None

    @property
    def keeps_up(self) -> bool:
        """The rendered count keeps up with the workload (and meets `workload.slo`)."""
        return self.capacity.configured.fits
