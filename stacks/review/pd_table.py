"""`./run size` and the summary on a P/D stack: the aggregated plan and the disaggregated one side by side (pods,
accelerators, TTFT, time per output token, $/hour), and whether disaggregation or the prefill pool's tier pays."""

from __future__ import annotations

from stacks.planning.stack_plan import StackPlan
from stacks.planning.workload.capacity_records import CapacityPlan, Run
from stacks.planning.workload.pd_records import PdPlan


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _usd(usd: float | None) -> str:
    return f"${usd:,.2f}" if usd is not None else "unpriced"


def _row(
    what: str, pods: str, devices: int, run_ttft: tuple[float, float], tpot: tuple[float, float], usd: float | None
) -> str:
    return (
        f"| {what} | {pods} | {devices} | {_ms(run_ttft[0])} / {_ms(run_ttft[1])} | {_ms(tpot[0])} / {_ms(tpot[1])}"
        f" | {_usd(usd)} |"
    )


def pd_lines(capacity: CapacityPlan, pd: PdPlan, devices_per_replica: int) -> list[str]:
    """`devices_per_replica`: the aggregated replica's (`cache.tensor_parallelism`, else the combination's)."""
    run = pd.run
    per_device = run.usd_per_hour / run.devices if run.usd_per_hour is not None else None
    aggregated: list[tuple[str, Run]] = [("aggregated, as the stack's shape", capacity.configured)]
    fewest = capacity.as_configured
    if fewest is not None and fewest.replicas != capacity.configured.replicas:
        aggregated.append(("aggregated: the fewest that keep up", fewest))
    rows = []
    for what, r in aggregated:
        devices = r.replicas * devices_per_replica
        usd = devices * per_device if per_device is not None else None
        rows.append(_row(what, f"{r.replicas} replicas", devices, (r.ttft_s[0], r.ttft_s[1]), r.tpot_s, usd))
    counts = f"{run.prefill_pods} prefill + {run.decode_pods} decode"
    chose = " (auto)" if any(pd.auto) else ""
    rows.append(_row(f"disaggregated{chose}", counts, run.devices, run.ttft_s, run.tpot_s, run.usd_per_hour))
    best = min((r for _w, r in aggregated), key=lambda r: r.replicas)
    best_devices = best.replicas * devices_per_replica
    verdict = (
        "disaggregation does not pay on this workload: as many accelerators or more, and no faster first token or"
        " output token than the aggregated plan"
        if run.devices >= best_devices and run.ttft_s[1] >= best.ttft_s[1] and run.tpot_s[1] >= best.tpot_s[1]
        else "disaggregation trades accelerators for latency here: read the rows"
    )
    tier = (
        f"the prefill pool's CPU tier served {run.cpu_share:.1%} of prompt tokens (HBM {run.hbm_share:.1%})"
        if run.cpu_share > 0
        else "the prefill pool's CPU tier served no prompt tokens: on this workload it does not pay"
    )
    return [
        "## Aggregated vs disaggregated",
        "",
        "| plan | pods | accelerators | TTFT p50 / p90 | TPOT p50 / p90 | $/hour |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"P/D by the time model (components/formulas/pd_replay.py): prefill legs routed by {pd.routing}; each KV"
        f" handoff {pd.handoff_from} (p90 {_ms(run.handoff_s)}); decode legs to the least-queued engine."
        f" {tier[0].upper()}{tier[1:]}; {verdict}.",
        "",
    ]


def pd_lines_of(stack_plan: StackPlan) -> list[str]:
    """The summary's section: none for an aggregated stack or one without a workload."""
    workload = stack_plan.workload
    if workload is None or workload.disaggregated is None:
        return []
    return pd_lines(workload.capacity, workload.disaggregated, stack_plan.stack.devices)
