"""The P/D plan's records (what `pd_plan.py` computes, `workload_record.WorkloadPlan` carries and the summary and
`./run size` print), in a module of their own beneath both."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PdRun:
    prefill_pods: int
    decode_pods: int
    devices: int
    ttft_s: tuple[float, float]  # p50, p90
    tpot_s: tuple[float, float]
    handoff_s: float  # p90 of a request's KV transfer
    cpu_share: float  # prompt tokens the prefill pool's CPU tier served
    hbm_share: float
    usd_per_hour: float | None
    slo_met: bool | None


@dataclass(frozen=True)
class PdPlan:
    run: PdRun  # the pools as rendered (configured, or the counts auto took)
    auto: tuple[bool, bool]  # (prefill, decode) counts chosen by the plan
    handoff_from: str
    routing: str
