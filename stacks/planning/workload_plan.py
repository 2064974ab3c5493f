"""The plan's workload side: what the replays read of a plan (`stack_shape`), the workload measured and held
(`held_workload`), the capacity plan on the plan's replicas and router (`plan_capacity_of`), the tier curve
routed by the time model (`routed_curve`) and the CPU-tier size `pricing.objective` takes (`objective_of`).
`plan.py` calls them; `./run size` and the bench too."""

from __future__ import annotations

import dataclasses

from components.formulas import replay_work
from components.formulas.payoff import Replica
from components.formulas.tier_replay import assigned
from stacks.config.errors import ConfigError
from stacks.config.workload_section import SloConfig
from stacks.planning import capacity_plan, replay_progress, tier_objective, workload_sizing
from stacks.planning.cost import size_price, stack_cost
from stacks.planning.routing_weights import routing_of
from stacks.planning.stack_plan import StackPlan
from stacks.planning.tier_fit import node_largest_tier, tier_capacity
from stacks.planning.workload_bounds import check_work

ROUTED_BY_TIME_MODEL = (
    "as the capacity plan's router routed them at the configured sizes (the rendered profile's scorers on the"
    " replicas' waiting requests and KV usage, in the time model), and where a row's figures differ, again as at the"
    " largest size (a band)"
)


def stack_shape(stack_plan: StackPlan) -> workload_sizing.StackShape:
    """What the tier replay needs of a plan."""
    stack, decode = stack_plan.stack, stack_plan.model_server
    connector, config = stack.connector, stack.config
    return workload_sizing.StackShape(
        model=decode.model,
        hbm=stack_plan.hbm,
        replicas=stack.replicas,
        relation=connector.tier_relation,
        cpu_scope=connector.cpu_scope,
        configured_cpu=stack_plan.tier,
        capacity_of=lambda tier: tier_capacity(stack, tier),
        cpu_step=connector.auto_tier_step(stack.tensor_parallelism, config.cache.tier.variant),
        node_largest=node_largest_tier(stack),
        fs_configured=config.storage.size if stack.uses_tier_claim else None,
        payoff=stack_plan.payoff,
        replica=Replica(decode.model, decode.accelerator.rates, stack.devices, stack.group_size),
    )


def routed_curve(
    stack_plan: StackPlan, source: workload_sizing.WorkloadSource, capacity: capacity_plan.CapacityPlan
) -> workload_sizing.TierCurve:
    """The tier curve routed as the time model's router routed the configured run, banded by a second routing: the
    time model's at the grid's largest CPU tier (the router's CPU index at that size)."""
    shape = stack_shape(stack_plan)
    refs = sum(replay_work.request_refs(r, source.block_tokens) for r in source.requests_list())
    seconds = 2 * refs / replay_work.REPLAY_REFS_PER_SECOND
    replay_progress.say_long(
        f"the tier curve replays {refs:,} block references at every size, under two routings: about {seconds:.0f} s"
        f" at {replay_work.REPLAY_REFS_PER_SECOND:,} a second",
        seconds,
    )
    sized = workload_sizing.size_tiers(shape, source, assigned(capacity.configured.assignment), ROUTED_BY_TIME_MODEL)
    finite = [c for c in sized.cpu_sizes if c != workload_sizing.UNBOUNDED]
    top = finite[-1]
    if top == shape.configured_cpu:
        return sized
    scenario = capacity_plan.Scenario("band", top, shape.fs_configured)
    run, _ = capacity_plan.replay_scenario(
        shape, source.requests_list(), source.block_tokens, capacity.routing, scenario, shape.replicas
    )
    other = workload_sizing.size_tiers(shape, source, assigned(run.assignment), ROUTED_BY_TIME_MODEL)
    return dataclasses.replace(sized, band=other.curve, band_size=top)


def held_workload(stack_plan: StackPlan, source: workload_sizing.WorkloadSource) -> workload_sizing.WorkloadSource:
    """The workload's work measured before anything holds or replays it (the servers' context, its span and block
    references: `workload_bounds.check_work`; the time model's steps: `capacity_plan.check_bounded`), each a pass
    over the source; then read once and held for the replays."""
    check_work(source.description, source.requests(), source.block_tokens, stack_plan.hbm)
    costs = capacity_plan.stack_costs(stack_shape(stack_plan))
    capacity_plan.check_bounded(source.requests(), costs, source.block_tokens, source.description)
    return workload_sizing.in_memory(source)


def plan_capacity_of(
    stack_plan: StackPlan,
    source: workload_sizing.WorkloadSource,
    slo: SloConfig | None,
    known: capacity_plan.CapacityPlan | None = None,
) -> capacity_plan.CapacityPlan:
    """The workload through the time model on this plan's replicas, routed as its router values say (`known`: the
    plan before, whose unchanged scenarios are not searched again)."""
    return capacity_plan.plan_capacity(
        stack_shape(stack_plan),
        source.requests_list(),
        source.block_tokens,
        source.description,
        routing_of(stack_plan.router_values),
        slo,
        known,
    )


def objective_of(
    stack_plan: StackPlan,
    source: workload_sizing.WorkloadSource,
    slo: SloConfig | None,
    sized: workload_sizing.TierCurve,
) -> tier_objective.Objective | None:
    """`pricing.objective`'s size for `cache.tier.cpu: auto` (stacks/planning/tier_objective.py); None where the
    curve chose none (the node's memory is not known)."""
    if sized.choice is None:
        return None
    pricing = stack_plan.config.pricing
    defaulted = "objective" not in pricing.model_fields_set
    if pricing.objective == "latency":
        return tier_objective.Objective("latency", defaulted, sized.choice, sized.choice, ())
    sizes = _weigh(stack_plan, source, slo, sized)
    chosen = tier_objective.cheapest(sizes, sized.choice, slo)
    return tier_objective.Objective("cost", defaulted, sized.choice, chosen, sizes)


def _weigh(
    stack_plan: StackPlan,
    source: workload_sizing.WorkloadSource,
    slo: SloConfig | None,
    sized: workload_sizing.TierCurve,
) -> tuple[tier_objective.SizeCost, ...]:
    """Each size the node holds with its replicas and prices: every price first (one line where one is missing,
    before any replay), then at each size the capacity plan's search (`cache.replicas: auto`) or one replay at the
    stack's count."""
    config, stack = stack_plan.config, stack_plan.stack
    devices = stack.devices * stack.group_size
    pools, shared = stack_plan.pools, stack_plan.shared_tier
    options = workload_sizing.candidates(sized)
    prices = [size_price(config, pools, shared, sized, i, devices) for i, _ in options]
    if any(p.replica_usd is None or p.tier_usd is None for p in prices):
        missing = stack_cost(config, pools, shared, sized, options[0][0], devices).unpriced
        remedies = "; ".join(f"{u.what}: {u.remedy}" for u in missing) or "the serving pool has no machine type"
        raise ConfigError(
            "pricing.objective",
            "cost",
            f"weighs each CPU-tier size in dollars, and part of it is not priced ({remedies}); or set"
            " pricing.objective: latency",
        )
    shape = stack_shape(stack_plan)
    requests, routing, bt = source.requests_list(), routing_of(stack_plan.router_values), source.block_tokens
    fixed = None if config.cache.replicas == "auto" else stack.replicas
    out = []
    for (_, size), price in zip(options, prices, strict=True):
        scenario = capacity_plan.Scenario(f"CPU tier {size.readable()}", size, shape.fs_configured)
        if fixed is None:  # the fewest that fit, which the plan renders
            run = capacity_plan.fewest_at(shape, requests, bt, routing, slo, scenario)
        else:  # the stack's count, where it fits
            run, _ = capacity_plan.replay_scenario(shape, requests, bt, routing, scenario, fixed, slo)
            run = run if run.fits else None
        out.append(tier_objective.SizeCost(size, run.replicas if run is not None else None, price, fixed))
    return tuple(out)
