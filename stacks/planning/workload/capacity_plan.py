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
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from components.catalog import time_model_band
from components.catalog.time_model_band import TtftBand
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
from stacks.planning.workload import replay_progress
from stacks.planning.workload.capacity_records import CapacityPlan, Needed, Run, Scenario
from stacks.planning.workload.routing_weights import Routing
from stacks.planning.workload.tier_curve import StackShape
from stacks.planning.workload.workload_sizing import service_rates, tier_blocks

# The time model's work, counted as `check_bounded` counts it (blocks touched, and an engine step per output token
# and per budget of prompt tokens, an upper bound: decode stretches are jumped). The conversation trace within
# Qwen3's context counts 4.1 million and one replay took 2.8 s when the bound was set (./run bench, one core): about
# 0.7 us each, 35 s a replay at the bound, and the search runs several: past it, refused before it starts. (Replays
# are faster now, below; the bound is the time model's to move.)
MAX_EVENTS = 50_000_000
# What a replay's estimate is made of, measured in CPU time (time.process_time, one replay each, the least of several)
# on 2026-12-04 after decode stretches were jumped: 30,000 requests of 1,024 prompt and 16 output tokens (544,688
# steps, dev) took 1.02 s; the conversation trace (11,457 requests, 4.11 million steps, gpu-vllm-native-cpu on 2
# replicas) 0.67 s. The two solved: 33 us a request (routing and admission) and 0.07 us a step. A plan's replays of
# one workload then differ by up to 1.5x (the count, the tiers, the machine's load); each replay's line corrects it.
SECONDS_PER_REQUEST = 33e-6
SECONDS_PER_STEP = 0.07e-6


def replay_seconds(requests: int, steps: int) -> float:
    """About how long one time-model replay of a workload takes (the measurement above)."""
    return requests * SECONDS_PER_REQUEST + steps * SECONDS_PER_STEP


def events_of(requests: Iterable[Request], costs: EngineCosts, block_tokens: int) -> tuple[int, int, int, int]:
    """(requests, prompt tokens, output tokens, the time model's steps and block updates) of a workload."""
    count = prompt = output = 0
    for request in requests:
        count += 1
        prompt += request.input_length
        output += request.output_length
    events = -(-prompt // block_tokens) + -(-output // block_tokens) + prompt // costs.max_batched_tokens + output
    return count, prompt, output, events


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


def judged_ttft(shape: StackShape, modelled_s: float) -> float:
    """The TTFT a target is held to: at the time model's error band's pessimistic edge where published runs
    comparable to the stack band it (components/catalog/time_model_band.py), else the model's central estimate."""
    return time_model_band.judged_ttft(shape.ttft_band, modelled_s)


def _met(shape: StackShape, served_ttft: float, served_tpot: float, slo: SloConfig | None) -> bool | None:
    if slo is None:
        return None
    return (slo.ttft_p90 is None or judged_ttft(shape, served_ttft) <= slo.ttft_p90) and (
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
    progress = _estimated(inputs)
    started = time.perf_counter()
    run, out = _replayed(inputs, scenario, replicas)
    if progress is not None:
        progress.ran(f"{scenario.name} on {replicas} replicas", run.fits, run.asks, time.perf_counter() - started)
    return run, out


def _estimated(inputs: _Inputs) -> replay_progress.Progress | None:
    """The command's progress, with this workload's estimate (made at its first replay); None: nobody listens."""
    progress = replay_progress.current()
    requests = inputs.requests
    workload = (len(requests), requests[0] if requests else None, requests[-1] if requests else None)
    if progress is not None and not progress.knows(workload):
        count, _, _, steps = events_of(requests, inputs.costs, inputs.block_tokens)
        progress.estimated(workload, count, steps, replay_seconds(count, steps))
    return progress


def _replayed(inputs: _Inputs, scenario: Scenario, replicas: int) -> tuple[Run, Replayed]:
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
        slo_met=_met(shape, ttft[1], tpot[1], inputs.slo),
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
    count, prompt, output, events = events_of(requests, costs, block_tokens)
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
    one_token = costs.weights_seconds(1)
    if slo.tpot_p90 is not None and slo.tpot_p90 < one_token:
        experts = " (of its experts, those one token routes to)" if costs.routing[1] else ""
        raise ConfigError(
            "workload.slo.tpot_p90",
            slo.tpot_p90,
            f"no replica count meets it: every decode step reads a device's weights once{experts},"
            f" {one_token * 1000:.1f} ms on {accelerator} ({shape.hbm.weights_per_device / GiB:.1f} GiB held, at"
            f" {shape.hbm.accelerator.memory_bandwidth / 1e12:.2f} TB/s); allowed: at least that",
        )
    alone = float(np.quantile(replayed.alone_s, 0.9)) if len(replayed.alone_s) else 0.0
    floor = judged_ttft(shape, alone)
    if slo.ttft_p90 is not None and slo.ttft_p90 < floor:
        edge = f", {floor:.3f} s at the time model's error band's pessimistic edge" if floor != alone else ""
        raise ConfigError(
            "workload.slo.ttft_p90",
            slo.ttft_p90,
            f"no replica count meets it: with a replica to itself, the p90 request's loads and prefill take"
            f" {alone:.3f} s (at the configured tiers' hits){edge}; allowed: at least that",
        )


def plan_capacity(
    shape: StackShape,
    requests: Sequence[Request],
    block_tokens: int,
    source: str,
    routing: Routing,
    slo: SloConfig | None,
    known: CapacityPlan | None = None,
) -> CapacityPlan:
    """The configured run, then the fewest replicas per scenario (`known`: an earlier plan of this workload, whose
    searches of an unchanged scenario are taken rather than replayed again)."""
    costs = stack_costs(shape)
    inputs = _Inputs(shape, requests, block_tokens, routing, slo, costs)
    progress = _estimated(inputs)
    if progress is not None:
        count = len(scenarios(shape))
        replay_progress.say_long(
            f"the capacity plan: at least {2 * count} replays for its {count} tier scenarios", progress.seconds_each
        )
    configured_scenario = scenarios(shape)[-1]  # the tiers as configured
    configured, replayed = _run(inputs, configured_scenario, shape.replicas)
    if slo is not None:
        check_reachable(slo, costs, replayed, shape)
    found = {configured_scenario: fewest(inputs, configured_scenario, configured)}
    # The other scenarios' searches start at the count the configured tiers need (near theirs, and a count that
    # keeps up replays fast), not at the stack's (which may not keep up: its backlog makes the slowest replay);
    # a scenario an earlier plan of the same workload, costs and router searched is taken from it.
    start = found[configured_scenario]
    for scenario in scenarios(shape)[:-1]:
        earlier = _same_search(known, costs, routing, slo, scenario)
        if earlier is not None:
            found[scenario] = earlier.run
            continue
        hint = _run(inputs, scenario, start.replicas if start is not None else shape.replicas)[0]
        found[scenario] = fewest(inputs, scenario, hint)
    needed = tuple(Needed(scenario, found[scenario]) for scenario in scenarios(shape))
    return CapacityPlan(source, routing, slo, costs, configured, needed, shape.ttft_band, shape.band_scope)


def _same_search(
    known: CapacityPlan | None, costs: EngineCosts, routing: Routing, slo: SloConfig | None, scenario: Scenario
) -> Needed | None:
    """`known`'s search of this scenario where it ran on the same replays: the same engine costs, router and target
    (the HBM-only scenario, when only the CPU tier's size or the stack's count moved); else None."""
    if known is None or (known.costs, known.routing, known.slo) != (costs, routing, slo):
        return None
    return next((n for n in known.needed if n.scenario == scenario), None)


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


def shortfall(run: Run, slo: SloConfig | None, band: TtftBand | None = None) -> str:
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
    judged = time_model_band.judged_ttft(band, run.ttft_s[1])
    if slo is not None and slo.ttft_p90 is not None and judged > slo.ttft_p90:
        edge = f" ({judged:.3g} s at the time model's error band's pessimistic edge)" if band is not None else ""
        missed.append(f"TTFT p90 {run.ttft_s[1]:.3g} s{edge} against workload.slo.ttft_p90 {slo.ttft_p90:g} s")
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
        f"too few for {plan.source}: {shortfall(run, plan.slo, plan.band)}; {needs_line(plan)} would (the capacity"
        " plan; `./run size` shows it, `cache.replicas: auto` takes it)",
    )


def chosen(plan: CapacityPlan) -> Run:
    """`cache.replicas: auto`: the fewest that fit with the tiers as configured, or one line."""
    run = plan.as_configured
    if run is None:
        target = "keeps up" if plan.slo is None else "keeps up and meets workload.slo"
        raise ConfigError(
            "cache.replicas",
            "auto",
            f"no count up to {MAX_REPLICAS} {target} with {plan.source}:"
            f" {shortfall(plan.configured, plan.slo, plan.band)}",
        )
    return run
