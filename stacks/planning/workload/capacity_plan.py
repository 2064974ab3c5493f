"""How many replicas, and which tiers, for this traffic: the workload replayed through the time model
(components/formulas/capacity_replay.py) at the configured replicas, and the fewest replicas that keep up (and meet
`workload.slo`) with no tier, with the CPU tier, and with the CPU and filesystem tiers, each at its configured size.

Keeping up (components/formulas/keep_up.py): the workload asks less than the replicas give over its arrivals and
one request's service time (compute at full batches, and the host link's loads), and no load stage's queue grows:
the requests arriving at its end wait no longer than those at its start, within a request's service time. Replica
counts are searched from the demand's estimate (the count at which the workload asks all of
what they give): up, doubling the step until a count keeps up, halving back to the fewest, and down while a count
below the estimate still does (`MAX_REPLICAS` at most).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from components.formulas import keep_up
from components.formulas.capacity_replay import Replayed, replay
from components.formulas.engine_costs import engine_costs
from components.formulas.requests import Request
from components.formulas.serving_time import EngineCosts
from components.formulas.tier_replay import Tiers
from components.units import ByteSize, GiB
from stacks.config.cache_section import MAX_REPLICAS
from stacks.config.errors import ConfigError
from stacks.config.workload_section import SloConfig
from stacks.planning.workload.capacity_records import CapacityPlan, Needed, Run, Scenario
from stacks.planning.workload.routing_weights import Routing
from stacks.planning.workload.tier_curve import StackShape
from stacks.planning.workload.workload_sizing import service_rates, tier_blocks

# The time model's work, counted as `check_bounded` counts it (blocks touched, and an engine step per output token
# and per budget of prompt tokens, an upper bound: decode stretches are jumped). The conversation trace within
# Qwen3's context counts 4.1 million and one replay took 2.8 s (./run bench, one core): about 0.7 us each. At this
# bound a replay takes about 35 s and the search runs several: past it, refused before it starts.
MAX_EVENTS = 50_000_000
QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class _Inputs:
    shape: StackShape
    requests: Sequence[Request]
    block_tokens: int
    routing: Routing
    slo: SloConfig | None
    costs: EngineCosts


def scenarios(shape: StackShape) -> list[Scenario]:
    """No tier, the CPU tier, and the CPU and filesystem tiers where the stack has one; at the configured sizes."""
    out = [
        Scenario("HBM only", ByteSize(0), None, "hbm"),
        Scenario("CPU tier", shape.configured_cpu, None, "cpu"),
    ]
    if shape.fs_configured is not None:
        out.append(Scenario("CPU + filesystem", shape.configured_cpu, shape.fs_configured, "cpu+filesystem"))
    return out


def _met(served_ttft: float, served_tpot: float, slo: SloConfig | None) -> bool | None:
    if slo is None:
        return None
    return (slo.ttft_p90 is None or served_ttft <= slo.ttft_p90) and (
        slo.tpot_p90 is None or served_tpot <= slo.tpot_p90
    )


def replay_scenario(
    shape: StackShape,
    requests: Sequence[Request],
    block_tokens: int,
    routing: Routing,
    scenario: Scenario,
    replicas: int,
    slo: SloConfig | None = None,
) -> tuple[Run, Replayed]:
    """One replay of the workload on `replicas` replicas with the scenario's tiers (the bench's entry)."""
    inputs = _Inputs(shape, requests, block_tokens, routing, slo, stack_costs(shape))
    return _run(inputs, scenario, replicas)


def stack_costs(shape: StackShape) -> EngineCosts:
    bandwidths = [t.bandwidth for t in shape.payoff.tiers]
    cpu = bandwidths[0] if bandwidths else None
    return engine_costs(shape.replica, shape.hbm, cpu, bandwidths[1] if len(bandwidths) > 1 else None)


def _run(inputs: _Inputs, scenario: Scenario, replicas: int) -> tuple[Run, Replayed]:
    shape, bt = inputs.shape, inputs.block_tokens
    cpu = tier_blocks(shape, bt, scenario.cpu)
    fs = tier_blocks(shape, bt, scenario.fs) if scenario.fs is not None else 0
    tiers = Tiers(bt, replicas, shape.hbm.kv_tokens // bt, shape.relation, shape.cpu_scope)
    out = replay(
        inputs.requests,
        tiers,
        cpu,
        fs,
        inputs.costs,
        weights=inputs.routing.weights,
        routing_cpu_blocks=cpu,
        rates=service_rates(shape),
        precise=precise_weights(inputs.routing, shape),
    )
    served = out.served
    prompt = max(out.prompt_tokens, 1)
    kept = keep_up.measure(inputs.requests, served.record, out.alone_s, inputs.costs, out.demand)
    ttft = tuple(served.ttft(q) for q in QUANTILES)
    tpot = (served.tpot(0.5), served.tpot(0.9))
    run = Run(
        scenario=scenario,
        replicas=replicas,
        ttft_s=(ttft[0], ttft[1], ttft[2]),
        tpot_s=tpot,
        output_tokens_per_s=served.output_tokens_per_s,
        requests_per_s=served.requests_per_s,
        utilisation=out.demand.utilisation(),
        load_share=sum(served.load_share()) / replicas,
        asks=kept.asks,
        drain_s=served.drain_s,
        span_s=served.arrival_span_s,
        hbm_share=out.hbm_tokens / prompt,
        cpu_share=out.cpu_tokens / prompt,
        fs_share=out.fs_tokens / prompt,
        slo_met=_met(ttft[1], tpot[1], inputs.slo),
        assignment=out.assignment,
        backlog=kept.backlog,
    )
    return run, out


def precise_weights(routing: Routing, shape: StackShape) -> tuple[float, float | None] | None:
    """What a block on HBM and on the CPU tier counts in a precise router's score (None: approximate routing)."""
    if not routing.precise:
        return None
    hbm = routing.medium_weight(shape.hbm_medium)
    if hbm is None:
        raise ValueError("precise routing needs the HBM tier's KV-cache events; the connector records none")
    return hbm, routing.medium_weight(shape.cpu_medium)


def fewest(inputs: _Inputs, scenario: Scenario, hint: Run) -> Run | None:
    """The fewest replicas that keep up and meet the target, searched from the demand's lower bound (`hint`: a run
    of this scenario, whose `asks` scales with the count)."""
    low = max(1, math.ceil(hint.asks * hint.replicas * (1 + 1e-9)) if hint.asks > 0 else 1)
    if low > MAX_REPLICAS:
        return None
    runs: dict[int, Run] = {hint.replicas: hint}

    def at(count: int) -> Run:
        if count not in runs:
            runs[count] = _run(inputs, scenario, count)[0]
        return runs[count]

    failed, step, count = low - 1, 1, low
    while not at(count).fits:  # gallop up
        failed = count
        if count == MAX_REPLICAS:
            return None
        count = min(MAX_REPLICAS, count + step)
        step *= 2
    while count - failed > 1:  # the fewest between the last that failed and the first that fit
        mid = (failed + count) // 2
        if at(mid).fits:
            count = mid
        else:
            failed = mid
    # The bound is the demand at the hint's count; fewer replicas each see more of a prompt's prefix, so the demand
    # can fall below it: below the bound, step down while a count still fits.
    while count == low and count > 1 and at(count - 1).fits:
        count = low = count - 1
    return at(count)


def check_bounded(requests: Iterable[Request], costs: EngineCosts, block_tokens: int, where: str) -> None:
    """The replay's work, counted in one pass before the requests are held or replayed: every block touched, and at
    most one engine step per output token plus one per budget of prompt tokens."""
    count = prompt = output = 0
    for request in requests:
        count += 1
        prompt += request.input_length
        output += request.output_length
    events = -(-prompt // block_tokens) + -(-output // block_tokens) + prompt // costs.max_batched_tokens + output
    if events > MAX_EVENTS:
        raise ConfigError(
            where,
            f"{count:,} requests, {prompt:,} prompt and {output:,} output tokens",
            f"the time model would take {events:,} steps and block updates; at most {MAX_EVENTS:,} (minutes of"
            " replay): shorten the workload (fewer requests, or a shorter span)",
        )


def check_reachable(slo: SloConfig, costs: EngineCosts, replayed: Replayed, shape: StackShape) -> None:
    """A target below what a replica to each request gives is met by no count: refused before the search."""
    accelerator = shape.hbm.accelerator.reference_hardware
    if slo.tpot_p90 is not None and slo.tpot_p90 < costs.weights_read_s:
        raise ConfigError(
            "workload.slo.tpot_p90",
            slo.tpot_p90,
            f"no replica count meets it: every decode step reads a device's weights once,"
            f" {costs.weights_read_s * 1000:.1f} ms on {accelerator} ({shape.hbm.weights_per_device / GiB:.1f} GiB at"
            f" {shape.hbm.accelerator.memory_bandwidth / 1e12:.2f} TB/s); allowed: at least that",
        )
    floor = float(np.quantile(replayed.alone_s, 0.9)) if len(replayed.alone_s) else 0.0
    if slo.ttft_p90 is not None and slo.ttft_p90 < floor:
        raise ConfigError(
            "workload.slo.ttft_p90",
            slo.ttft_p90,
            f"no replica count meets it: with a replica to itself, the p90 request's loads and prefill take"
            f" {floor:.3f} s (at the configured tiers' hits); allowed: at least that",
        )


def plan_capacity(
    shape: StackShape,
    requests: Sequence[Request],
    block_tokens: int,
    source: str,
    routing: Routing,
    slo: SloConfig | None,
) -> CapacityPlan:
    costs = stack_costs(shape)
    inputs = _Inputs(shape, requests, block_tokens, routing, slo, costs)
    configured_scenario = scenarios(shape)[-1]  # the tiers as configured
    configured, replayed = _run(inputs, configured_scenario, shape.replicas)
    if slo is not None:
        check_reachable(slo, costs, replayed, shape)
    needed = []
    for scenario in scenarios(shape):
        hint = configured if scenario == configured_scenario else _run(inputs, scenario, shape.replicas)[0]
        needed.append(Needed(scenario, fewest(inputs, scenario, hint)))
    return CapacityPlan(source, routing, slo, costs, configured, tuple(needed))


def fewest_at(
    shape: StackShape,
    requests: Sequence[Request],
    block_tokens: int,
    routing: Routing,
    slo: SloConfig | None,
    scenario: Scenario,
) -> Run | None:
    """The fewest replicas that fit with the scenario's tiers (None: none up to `MAX_REPLICAS`), searched from a run
    at the stack's replicas: `pricing.objective: cost` asks it at every CPU-tier size `cache.tier.cpu: auto` weighs."""
    inputs = _Inputs(shape, requests, block_tokens, routing, slo, stack_costs(shape))
    return fewest(inputs, scenario, _run(inputs, scenario, shape.replicas)[0])


def shortfall(run: Run, slo: SloConfig | None) -> str:
    """Why a run does not fit, in a planner's words ('' when it fits)."""
    if not run.keeps_up:
        grows = [b for b in run.backlog if b.grows]
        queue = (
            f"; in stage {grows[0].stage + 1} the wait for a first token grows by {grows[0].growth_s:,.1f} s (more"
            f" than a request's {grows[0].allowance_s:,.1f} s alone)"
            if grows
            else ""
        )
        return (
            f"the workload asks {run.asks:.0%} of what {run.replicas} replicas give (compute at full batches, the"
            f" host link's loads) and its last request finishes {run.drain_s:,.0f} s after the last arrival{queue}"
        )
    missed = []
    if slo is not None and slo.ttft_p90 is not None and run.ttft_s[1] > slo.ttft_p90:
        missed.append(f"TTFT p90 {run.ttft_s[1]:.3g} s against workload.slo.ttft_p90 {slo.ttft_p90:g} s")
    if slo is not None and slo.tpot_p90 is not None and run.tpot_s[1] > slo.tpot_p90:
        missed.append(f"TPOT p90 {run.tpot_s[1] * 1000:.3g} ms against workload.slo.tpot_p90 {slo.tpot_p90:g} s")
    return f"on {run.replicas} replicas the workload's " + " and ".join(missed) if missed else ""


def needs_line(plan: CapacityPlan) -> str:
    return ", ".join(
        f"{n.run.replicas} with {n.scenario.name}" if n.run else f"none up to {MAX_REPLICAS} with {n.scenario.name}"
        for n in plan.needed
    )


def check_fits(plan: CapacityPlan) -> None:
    """The keep-up check: a stack whose replicas do not keep up with its workload (or miss its target) stops here."""
    run = plan.configured
    if run.fits:
        return
    raise ConfigError(
        "cache.replicas",
        run.replicas,
        f"too few for {plan.source}: {shortfall(run, plan.slo)}; {needs_line(plan)} would (the capacity plan;"
        " `./run size` shows it, `cache.replicas: auto` takes it)",
    )


def chosen(plan: CapacityPlan) -> Run:
    """`cache.replicas: auto`: the fewest that fit with the tiers as configured, or one line."""
    run = plan.as_configured
    if run is None:
        target = "keeps up" if plan.slo is None else "keeps up and meets workload.slo"
        raise ConfigError(
            "cache.replicas",
            "auto",
            f"no count up to {MAX_REPLICAS} {target} with {plan.source}: {shortfall(plan.configured, plan.slo)}",
        )
    return run
