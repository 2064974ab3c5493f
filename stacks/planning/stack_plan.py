"""The plan as a record: what `plan.py` builds and the passes (`passes.py`) rewrite. Its own module, so the
passes take the record without importing the planner that calls them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from components.formulas.hbm import HbmBudget
from components.manifest import Manifest
from components.specs import alerts, model_cache, payoff_table, sizing
from components.specs.clusters import PoolSpec
from components.specs.servers import ServerSpec
from components.specs.startup import AwaitBudget
from components.specs.workloads import Workload, WorkloadType
from components.units import ByteSize
from stacks.config import StackConfig
from stacks.planning import autoscaling, hardware, rollout_choice
from stacks.planning.mirror import Mirror
from stacks.planning.resolution import Resolved
from stacks.planning.scale_in_record import ScaleIn
from stacks.planning.workload.capacity_records import CapacityPlan
from stacks.planning.workload.cost_records import StackCost
from stacks.planning.workload.shared_tier import SharedTier
from stacks.planning.workload.tier_curve import TierCurve
from stacks.planning.workload.tier_objective import Objective
from stacks.planning.workload.workload_record import WorkloadPlan


@dataclass(frozen=True)
class Role:
    """A model-server role: its server and its workload's manifests."""

    spec: ServerSpec
    manifests: list[Manifest]


@dataclass(frozen=True)
class StackPlan:
    stack: Resolved  # the stack resolved once: the config, its connector, defaults, accelerator, model
    sizing: sizing.TierSizing
    workloads: dict[str, Workload]  # in declaration order; the model-server roles among them (decode last)
    model_cache: model_cache.ModelCache | None  # where the model servers load their weights from
    router_values: dict[str, Any]
    inference_pool: dict[str, Any] | None  # what the router chart creates, mirrored for checks and the summary
    alerts: list[alerts.Alert]
    metrics_to_watch: list[str]
    fit: hardware.Fit | None  # the stack against its node pool (None: no pool described)
    pools: list[PoolSpec]  # node pools to create
    payoff: payoff_table.Payoff  # break-even load bandwidth and each tier's expected reload
    hbm: HbmBudget  # what one replica's accelerators hold for KV (stacks/planning/hbm_fit.py)
    tier: ByteSize  # `cache.tier.cpu` as sized: the stack's, the combination's or what `auto` chose
    budgets: list[AwaitBudget] = dataclasses.field(default_factory=list)  # what Pulumi waits for, and why
    rollout: rollout_choice.Rollout | None = None  # how a template change rolls the model servers
    mirror: Mirror | None = None  # the created cluster's registry mirror, which every image goes through
    router_policies: list[Manifest] = dataclasses.field(default_factory=list)  # the router pods' NetworkPolicy
    autoscaling: autoscaling.Autoscaling | None = None  # KEDA's bounds, scale-down and replay (None: off)
    shared_tier: SharedTier | None = None  # the filesystem tier's claim, its store rate and its evictor
    scale_in: ScaleIn | None = None  # `autoscaling.scale_in: cache-value`: the annotator and the drain (else None)
    workload: WorkloadPlan | None = None  # the workload through the stack (workload_plan.plan_workload; None: none)
    cost: StackCost | None = None  # what it costs (workload/cost.py), set once the plan is final

    @property
    def config(self) -> StackConfig:
        return self.stack.config

    @property
    def provisioned_mibps(self) -> int | None:
        """MiB/s the filesystem tier's backend is provisioned with, where it runs a provisioned mode."""
        throughput = self.cost.throughput if self.cost is not None else None
        return throughput.provisioned_mibps if throughput is not None else None

    @property
    def namespace_annotations(self) -> dict[str, str]:
        """What the plan stamps on the stack's Namespace for the policy pack and the change plan: the cost and
        the filesystem tier's measured rates against its limits."""
        if self.cost is None:
            return {}
        throughput = self.cost.throughput.annotations() if self.cost.throughput is not None else {}
        return self.cost.annotations() | throughput

    @property
    def tier_curve(self) -> TierCurve | None:
        """The tiers replayed on the stack's workload."""
        return self.workload.curve if self.workload is not None else None

    @property
    def capacity(self) -> CapacityPlan | None:
        """The workload through the time model: the replicas it needs."""
        return self.workload.capacity if self.workload is not None else None

    @property
    def objective(self) -> Objective | None:
        """The size `pricing.objective` took (or, for `./run size`, would take) for `cache.tier.cpu: auto`."""
        return self.workload.objective if self.workload is not None else None

    @property
    def roles(self) -> list[Role]:
        """The model-server roles, the decode role last."""
        return [Role(w.server, w.manifests) for w in self.workloads.values() if w.server is not None]

    @property
    def model_server(self) -> ServerSpec:
        return self.roles[-1].spec

    @property
    def model_server_manifests(self) -> list[Manifest]:
        return self.roles[-1].manifests

    def manifests(self, kind: WorkloadType) -> list[Manifest]:
        """The manifests of the workload of this type (the decode role's for the model servers); none when
        the stack has no such workload."""
        found = self.workloads.get(kind.key)
        return found.manifests if found is not None else []
