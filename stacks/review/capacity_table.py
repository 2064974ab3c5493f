"""The summary's and `./run size`'s "Replicas for the workload" section: the capacity plan
(stacks/planning/workload/capacity_plan.py) as a planner reads it: how many replicas each tier configuration needs, what
they serve at, and whether the configured count keeps up."""

from __future__ import annotations

from stacks.planning.workload.capacity_plan import needs_line, shortfall
from stacks.planning.workload.capacity_records import CapacityPlan, Run


def duration(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.0f} s"


def tiers_of(run: Run) -> str:
    scenario = run.scenario
    parts = ["HBM only"] if not scenario.cpu.bytes else [f"CPU tier {scenario.cpu.readable()}"]
    if scenario.fs is not None:
        parts.append(f"filesystem {scenario.fs.readable()}")
    return " + ".join(parts)


def _row(label: str, run: Run) -> str:
    ttft = " / ".join(duration(t) for t in run.ttft_s)
    tpot = " / ".join(duration(t) for t in run.tpot_s)
    busy = max(run.utilisation)
    hits = run.hbm_share + run.cpu_share + run.fs_share
    verdict = "yes" if run.fits else "no"
    return (
        f"| {label} | {run.replicas} | {verdict} | {run.asks:.0%} | {ttft} | {tpot} | {run.output_tokens_per_s:,.0f} |"
        f" {hits:.1%} | {busy:.0%} | {run.load_share:.1%} |"
    )


def capacity_lines(plan: CapacityPlan, auto: bool) -> list[str]:
    costs, run = plan.costs, plan.configured
    target = "keep up"
    if plan.slo is not None:
        goals = [f"TTFT p90 <= {plan.slo.ttft_p90:g} s" if plan.slo.ttft_p90 is not None else ""]
        goals.append(f"TPOT p90 <= {plan.slo.tpot_p90:g} s" if plan.slo.tpot_p90 is not None else "")
        target += " and meet " + " and ".join(g for g in goals if g) + " (workload.slo)"
    lines = [
        "## Replicas for the workload",
        "",
        f"Workload: {plan.source}, through the time model (components/formulas/serving_time.py): vLLM's scheduler"
        f" on each replica ({costs.max_batched_tokens:,} batched tokens and {costs.max_seqs:,} sequences a step,"
        f" chunked prefill, {costs.kv_tokens:,} tokens of HBM KV), routed by {plan.routing.source}.",
        "",
        f"| tiers | replicas | {target}? | asks | TTFT p50 / p90 / p99 | TPOT p50 / p90 | output tok/s | prompt"
        " hits | busiest replica asked | link loading |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    label = "as configured" + (" (`cache.replicas: auto`)" if auto else "")
    lines.append(_row(f"{tiers_of(run)}, {label}", run))
    for needed in plan.needed:
        if needed.run is None:
            lines.append(f"| {needed.scenario.name} | more than 256 | no | | | | | | | |")
        else:
            lines.append(_row(f"{tiers_of(needed.run)}: the fewest", needed.run))
    lines.append("")
    if run.fits:
        lines.append(f"The {run.replicas} configured replicas {target}. Fewest per tiers: {needs_line(plan)}.")
    else:
        lines.append(
            f"**The {run.replicas} configured replicas do not {target}**: {shortfall(run, plan.slo, plan.band)}."
            f" Fewest per tiers: {needs_line(plan)}."
        )
    if plan.slo is not None and plan.slo.ttft_p90 is not None:
        lines.append(ttft_sizing_line(plan))
    if plan.routing.unmodelled:
        lines.append(f"Scorers the replay leaves out: {', '.join(plan.routing.unmodelled)}.")
    lines += [
        "",
        f"A step takes {costs.step_s * 1000:.2f} ms (the layers' small kernels) + tokens x"
        f" {costs.allreduce_s_per_token * 1e6:.2f} us of tensor-parallel all-reduces + max(tokens x"
        f" {costs.gemm_s_per_token * 1e6:.1f} us, {costs.weights_read_s * 1000:.2f} ms of weights) + max(attention"
        f" pairs x {costs.attention_s_per_pair * 1e12:.2f} ps, context tokens x"
        f" {costs.kv_read_s_per_token * 1e9:.1f} ns of KV) (components/formulas/engine_costs.py): the payoff"
        " model's prefill rates (the Payoff section), the accelerator's memory bandwidth and interconnect, and the"
        " measured shares of their peaks."
        f" A tier's hit loads at {costs.load.cpu_s_per_token * 1e6:.2f} us a token from the CPU tier"
        + (f", {costs.load.fs_s_per_token * 1e6:.2f} us from the filesystem" if costs.load.fs_s_per_token else "")
        + f" (the payoff's bandwidths), over one host link per replica, after the server tokenises the prompt at"
        f" {costs.tokenize_s_per_token * 1e6:.2f} us a token (one tokenizer thread a server). Asks: the workload's"
        " compute at full batches (and its loads) over what the replicas give in its span and one request's"
        " service time after it; keeping up: asks below 100% and in no load stage a queue that grows (the wait for"
        " a first token at the stage's end no longer than at its start, within a request's service time alone)."
        " The replica count is searched from the asks' estimate. Approximations (serving_time.py): KV reserved"
        " whole at admission (no preemption), loads and stores on one link, no router time. Sizes of the rows are"
        " the configured ones.",
        "",
    ]
    return lines


def ttft_sizing_line(plan: CapacityPlan) -> str:
    """Which TTFT the target is held to: the error band's pessimistic edge, or the model's central estimate."""
    band, run = plan.band, plan.configured
    if band is None:
        return (
            "TTFT is sized at the time model's central estimate: no published run comparable to this stack"
            f" ({plan.band_scope}) bands its error (components/catalog/time_model_band.py)."
        )
    return (
        f"TTFT is sized at the time model's error band's pessimistic edge: on {band.runs} ({band.stages} stage rows,"
        f" `./run bench`) the modelled TTFT p90 is {band.low:.2f} to {band.high:.2f} of published, so a count meets"
        f" workload.slo.ttft_p90 when its modelled p90 / {band.low:.2f} does: {duration(run.ttft_s[1])} modelled,"
        f" {duration(band.edge(run.ttft_s[1]))} at the edge, on the {run.replicas} replicas as configured."
    )
