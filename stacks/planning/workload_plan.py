"""The plan's workload side, one entry: `plan_workload` takes the stack's first plan, its workload and its SLO, runs
the chain once (the workload measured and held, the capacity plan, the tier curve routed by the time model, the
size `pricing.objective` takes, the store rate the replay measured, the cost) and returns one record
(`workload/workload_record.py` `WorkloadPlan`) with the replica count and CPU tier to render. `plan()` and
`./run size` both call it; it is the one adapter between the plan and the workload engine (`workload/`): what the
replays read of a plan (`stack_shape`) and how a plan is made again at other figures (`Replan`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from components.catalog.time_model_band import ttft_band
from components.formulas import replay_work
from components.formulas.engine_costs import engine_costs
from components.formulas.payoff import Replica
from components.formulas.pd_replay import handoff
from components.formulas.shared_tier_capacity import StoreRate
from components.formulas.tier_replay import assigned, capacity_blocks
from components.formulas.tier_shape import Tiers
from components.specs.servers import ServerSpec
from components.units import ByteSize
from stacks.config.errors import ConfigError
from stacks.config.workload_section import SloConfig
from stacks.planning import hardware, hbm_fit, scale_in
from stacks.planning.pd_roles import engine_shape
from stacks.planning.stack_plan import StackPlan
from stacks.planning.tier_capacity import budget as tier_budget
from stacks.planning.tier_fit import node_largest_tier, tier_capacity
from stacks.planning.workload import capacity_plan, replay_progress, tier_objective, workload_sizing
from stacks.planning.workload.capacity_records import (
    ROUTINGS,
    CapacityPlan,
    RoutingComparison,
    RoutingRun,
    Scenario,
    TierSet,
    other_of,
)
from stacks.planning.workload.cost import device_usd_per_hour, size_price, stack_cost
from stacks.planning.workload.cost_records import ServingUse, StackCost
from stacks.planning.workload.pd_plan import PdInputs, PdPool, plan_pd
from stacks.planning.workload.routing_weights import routing_of
from stacks.planning.workload.scale_in_day import ScaleInDay, replay_scale_in
from stacks.planning.workload.tier_curve import UNBOUNDED, StackShape, TierCurve
from stacks.planning.workload.workload_bounds import check_work
from stacks.planning.workload.workload_record import WorkloadPlan
from stacks.planning.workload.workload_sizing import service_rates
from stacks.planning.workload.workload_source import WorkloadSource, in_memory

ROUTED_BY_TIME_MODEL = (
    "as the capacity plan's router routed them at the configured sizes (the rendered profile's scorers on the"
    " replicas' waiting requests and KV usage, in the time model), and where a row's figures differ, again as at the"
    " largest size (a band)"
)


class Replan:
    """The stack's plan made again at other figures (a replica count, the CPU tier auto took, the filesystem tier's
    measured store rate), each made once: the entry asks for the plans it measures, and `plan()` renders the last
    one it asked for."""

    def __init__(self, first: StackPlan, make: Callable[[int, ByteSize | None, StoreRate | None], StackPlan]) -> None:
        self._make = make
        self._made: dict[tuple[int, ByteSize | None, StoreRate | None], StackPlan] = {
            (first.stack.replicas, None, None): first
        }

    def __call__(self, replicas: int, cpu_tier: ByteSize | None, store_rate: StoreRate | None) -> StackPlan:
        key = (replicas, cpu_tier, store_rate)
        if key not in self._made:
            self._made[key] = self._make(replicas, cpu_tier, store_rate)
        return self._made[key]


# The stack's plan with the other prefix routing, at a replica count, CPU tier and store rate (a ConfigError where
# that routing is refused for the stack).
OtherRouting = Callable[[int, ByteSize | None, StoreRate | None], StackPlan]


def plan_workload(
    first: StackPlan,
    source: WorkloadSource,
    slo: SloConfig | None,
    replan: Replan,
    *,
    weigh_any_tier: bool = False,
    replay_day: bool = False,
    other_routing: OtherRouting | None = None,
) -> WorkloadPlan:
    """The workload through the stack, once. `first`: the plan at the configured figures; `weigh_any_tier`: weigh
    `pricing.objective`'s size even where `cache.tier.cpu` is set (what auto would take, as `./run size` shows);
    `other_routing`: replay the rendered figures again under the other prefix routing, side by side (`./run size`).
    `cache.replicas: auto` takes the capacity plan's fewest (and, under `pricing.objective: cost`, the count of the
    size it took); the capacity plan is replayed again at the rendered figures where they moved. The keep-up check
    of a configured count is the caller's (`capacity_plan.check_fits` on the record's capacity). `replay_day`: an
    autoscaled stack's day replayed per scale-in victim choice (`./run size`; `day_of`)."""
    config = first.config
    source = held_workload(first, source)
    capacity = plan_capacity_of(first, source, slo)
    at = first
    if config.cache.replicas == "auto":
        run = capacity_plan.chosen(capacity)
        capacity = capacity.with_replicas(run)
        at = replan(run.replicas, None, None)
    sized = routed_curve(at, source, capacity)
    tier_auto = config.cache.tier.cpu == "auto"
    objective = objective_of(at, source, slo, sized) if tier_auto or weigh_any_tier else None
    if objective is not None:  # pricing.objective's size (latency: the curve's own choice)
        sized = dataclasses.replace(sized, choice=objective.chosen)
    chosen = sized.choice.size if tier_auto and sized.choice is not None else None
    measured = workload_sizing.filesystem_store_rate(sized, chosen)  # the evictor's watermarks, from the replay
    replicas = at.stack.replicas
    if objective is not None and tier_auto and config.cache.replicas == "auto":  # the cost objective's count
        weighed = objective.cost_of(objective.chosen.size)
        if weighed is not None and weighed.replicas is not None:
            replicas = weighed.replicas
    rendered = replan(replicas, chosen, measured) if chosen is not None or measured is not None else at
    if rendered.tier != at.tier or rendered.stack.replicas != at.stack.replicas:  # the capacity plan as rendered
        capacity = plan_capacity_of(rendered, source, slo, capacity)
    cost = priced(rendered, sized, capacity, chosen)
    day = day_of(rendered, source) if replay_day else None

    routings = None
    if other_routing is not None:
        routings = routings_of(
            rendered, source, capacity, lambda: other_routing(rendered.stack.replicas, chosen, measured)
        )
    device_usd = device_usd_per_hour(rendered.config, rendered.pools)
    pd_in = pd_inputs(rendered, stack_shape(rendered), source.block_tokens, device_usd)
    pd = plan_pd(pd_in, source.requests_list(), slo) if pd_in is not None else None
    return WorkloadPlan(
        source.description, capacity, sized, objective, replicas, chosen, measured, cost, day, routings, pd
    )


def day_of(stack_plan: StackPlan, source: WorkloadSource) -> ScaleInDay | None:
    """The autoscaled stack's day (workload/scale_in_day.py) at its rendered tiers and routing; None without
    autoscaling."""
    auto = stack_plan.autoscaling
    if auto is None or auto.inputs is None:
        return None
    shape, bt = stack_shape(stack_plan), source.block_tokens
    tiers = Tiers(bt, shape.replicas, shape.hbm.kv_tokens // bt, shape.relation, shape.cpu_scope)
    fs = workload_sizing.tier_blocks(shape, bt, shape.fs_configured) if shape.fs_configured is not None else 0
    return replay_scale_in(
        source.requests_list(),
        auto.inputs,
        auto.replay,
        tiers,
        workload_sizing.tier_blocks(shape, bt, shape.configured_cpu),
        fs,
        capacity_plan.stack_costs(shape),
        workload_sizing.service_rates(shape),
        routing_of(stack_plan.router_values).weights,
        scale_in.annotator_window(auto),
    )


def routings_of(
    rendered: StackPlan, source: WorkloadSource, capacity: CapacityPlan, other: Callable[[], StackPlan]
) -> RoutingComparison:
    """The rendered routing's capacity-plan run beside the other routing's replay of the same figures, one replay
    more at the configured run's count and tiers (or the line that refuses the other routing for this stack)."""
    configured, prefix = capacity.configured, rendered.config.router.prefix_routing
    runs = {prefix: RoutingRun(prefix, configured, capacity.routing.source)}
    try:
        routing = routing_of(other().router_values)
    except ConfigError as error:
        return RoutingComparison(prefix, (runs[prefix],), f"{error.field}: {error.allowed}")
    shape, requests = stack_shape(rendered), source.requests_list()
    run, _ = capacity_plan.replay_scenario(
        shape, requests, source.block_tokens, routing, configured.scenario, configured.replicas, capacity.slo
    )
    runs[other_of(prefix)] = RoutingRun(other_of(prefix), run, routing.source)
    return RoutingComparison(prefix, tuple(runs[r] for r in ROUTINGS if r in runs))


def priced(
    stack_plan: StackPlan,
    curve: TierCurve | None = None,
    capacity: CapacityPlan | None = None,
    chosen: ByteSize | None = None,
) -> StackCost:
    """The plan's cost (workload/cost.py), with the workload's curve and capacity plan where it has one; `chosen`:
    the CPU tier auto took (else the configured one is priced)."""
    stack = stack_plan.stack
    cpu_index = None
    if curve is not None:
        cpu_index = curve.cpu_sizes.index(chosen) if chosen is not None else curve.configured[0]
    devices = stack.devices * stack.group_size
    key = stack.config.cache.node_pool
    use = None
    if key:  # the serving pool's nodes its pods take (the rest idle, named in the cost)
        use = ServingUse(stack.pods, hardware.pods_per_node(hardware.pool_hardware(stack.config, key), stack.devices))
    pools, shared = stack_plan.pools, stack_plan.shared_tier
    return stack_cost(stack.config, pools, shared, curve, cpu_index, devices, capacity, use)


def stack_shape(stack_plan: StackPlan) -> StackShape:
    """What the tier replay needs of a plan."""
    stack, decode = stack_plan.stack, stack_plan.model_server
    connector, config = stack.connector, stack.config
    media = {t.tier: t.medium.lower() for t in connector.kv_events(stack.choice.filesystem_tier) if t.medium}
    return StackShape(
        model=decode.model,
        hbm=stack_plan.hbm,
        replicas=stack.replicas,
        relation=connector.tier_relation,
        cpu_scope=connector.cpu_scope,
        configured_cpu=stack_plan.tier,
        capacity_of=lambda tier: tier_capacity(stack, tier),
        cpu_step=connector.auto_tier_step(stack.tensor_parallelism, config.cache.tier.variant),
        node_largest=node_largest_tier(stack),
        fs_configured=ByteSize(tier_budget(config)) if stack.uses_tier_claim else None,  # what the evictor holds
        payoff=stack_plan.payoff,
        replica=Replica(decode.model, decode.accelerator.rates, stack.devices, stack.group_size),
        ttft_band=ttft_band(config.cache.accelerator, config.cache.server, decode.model.experts > 0),
        band_scope=f"{config.cache.server} on {decode.accelerator.reference_hardware}, a"
        f" {'mixture-of-experts' if decode.model.experts else 'dense'} model",
        hbm_medium=media.get("hbm"),
        cpu_medium=media.get("cpu"),
    )


def routed_curve(stack_plan: StackPlan, source: WorkloadSource, capacity: CapacityPlan) -> TierCurve:
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
    finite = [c for c in sized.cpu_sizes if c != UNBOUNDED]
    top = finite[-1]
    if top == shape.configured_cpu:
        return sized
    tiers: TierSet = "cpu+filesystem" if shape.fs_configured is not None else "cpu"
    scenario = Scenario("band", top, shape.fs_configured, tiers)
    run, _ = capacity_plan.replay_scenario(
        shape, source.requests_list(), source.block_tokens, capacity.routing, scenario, shape.replicas
    )
    other = workload_sizing.size_tiers(shape, source, assigned(run.assignment), ROUTED_BY_TIME_MODEL)
    return dataclasses.replace(sized, band=other.curve, band_size=top)


def held_workload(stack_plan: StackPlan, source: WorkloadSource) -> WorkloadSource:
    """The workload's work measured before anything holds or replays it (the servers' context, its span and block
    references: `workload_bounds.check_work`; the time model's steps: `capacity_plan.check_bounded`), each a pass
    over the source; then read once and held for the replays."""
    check_work(source.description, source.requests(), source.block_tokens, stack_plan.hbm)
    costs = capacity_plan.stack_costs(stack_shape(stack_plan))
    capacity_plan.check_bounded(source.requests(), costs, source.block_tokens, source.description)
    return in_memory(source)


def plan_capacity_of(
    stack_plan: StackPlan, source: WorkloadSource, slo: SloConfig | None, known: CapacityPlan | None = None
) -> CapacityPlan:
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
    stack_plan: StackPlan, source: WorkloadSource, slo: SloConfig | None, sized: TierCurve
) -> tier_objective.Objective | None:
    """`pricing.objective`'s size for `cache.tier.cpu: auto` (workload/tier_objective.py); None where the curve
    chose none (the node's memory is not known)."""
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
    stack_plan: StackPlan, source: WorkloadSource, slo: SloConfig | None, sized: TierCurve
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
    tiers: TierSet = "cpu+filesystem" if shape.fs_configured is not None else "cpu"
    out = []
    for (_, size), price in zip(options, prices, strict=True):
        scenario = Scenario(f"CPU tier {size.readable()}", size, shape.fs_configured, tiers)
        if fixed is None:  # the fewest that fit, which the plan renders
            run = capacity_plan.fewest_at(shape, requests, bt, routing, slo, scenario)
        else:  # the stack's count, where it fits
            run, _ = capacity_plan.replay_scenario(shape, requests, bt, routing, scenario, fixed, slo)
            run = run if run.fits else None
        out.append(tier_objective.SizeCost(size, run.replicas if run is not None else None, price, fixed))
    return tuple(out)


def _pd_pool(stack_plan: StackPlan, spec: ServerSpec, pods: int | None) -> PdPool:
    """An engine of the pool: its devices' figures, its HBM budget, its CPU tier's loads at the aggregated pod's
    bandwidth per device (the payoff's, over the host link at the transfer block) times its own devices."""
    stack = stack_plan.stack
    tiers = stack_plan.payoff.tiers
    per_device = tiers[0].bandwidth / stack.devices if tiers and tiers[0].bandwidth else None
    cpu = per_device * spec.tensor_parallelism if per_device and spec.cpu_tier_bytes else None
    replica = Replica(spec.model, spec.accelerator.rates, spec.tensor_parallelism)
    costs = engine_costs(replica, hbm_fit.hbm_budget(engine_shape(spec)), cpu, None)
    return PdPool(pods, spec.data_parallelism, spec.tensor_parallelism, costs)


def pd_inputs(
    stack_plan: StackPlan, shape: StackShape, block_tokens: int, device_usd_per_hour: float | None
) -> PdInputs | None:
    """None: the stack is aggregated. `device_usd_per_hour`: one device of the serving pool (None: unpriced)."""
    pd = stack_plan.stack.choice.disaggregation
    pools = stack_plan.config.cache.disaggregation
    if pd is None or pools is None:
        return None
    prefill, decode = (r.spec for r in stack_plan.roles)
    kv = prefill.model.kv_bytes_per_token.bytes
    hbm_blocks = hbm_fit.hbm_budget(engine_shape(prefill)).kv_tokens // block_tokens
    per_engine = prefill.sizing.cpu_tier_per_pod.bytes // prefill.data_parallelism
    fabric = pd.transport.fabric
    same = prefill.accelerator.key == decode.accelerator.key == stack_plan.config.cache.accelerator
    return PdInputs(
        prefill=_pd_pool(stack_plan, prefill, pools.prefill.replicas if pools.prefill.replicas != "auto" else None),
        decode=_pd_pool(stack_plan, decode, pools.decode.replicas if pools.decode.replicas != "auto" else None),
        handoff=handoff(kv, prefill.tensor_parallelism, decode.tensor_parallelism, fabric.bandwidth),
        handoff_from=f"{pd.transport.key} over {fabric.name}, {fabric.bandwidth / 1e9:g} GB/s a device: {fabric.cited}",
        block_tokens=block_tokens,
        hbm_blocks=hbm_blocks,
        cpu_blocks=capacity_blocks(per_engine, block_tokens, kv) if per_engine else 0,
        tiers=lambda engines: Tiers(block_tokens, engines, hbm_blocks, shape.relation, shape.cpu_scope),
        routing=routing_of(stack_plan.router_values, "prefill"),
        rates=service_rates(shape),
        device_usd_per_hour=device_usd_per_hour if same else None,
        ttft_band=shape.ttft_band,
    )
