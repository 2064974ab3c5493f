"""The plan sizes both P/D pools: `cache.disaggregation.*.replicas: auto` takes the fewest of each under
`workload.slo` (both sides of the boundary), renders them, and `./run size` prints aggregated vs disaggregated."""

from __future__ import annotations

import dataclasses

import pytest

from stacks.__main__ import size_lines
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from stacks.planning.workload.pd_plan import fewest

PRESET = "gpu-vllm-native-pd"
WORKLOAD = [
    "workload.shared_prefix.num_groups=8",
    "workload.shared_prefix.num_prompts_per_group=5",
    "workload.shared_prefix.system_prompt_len=8192",
    "workload.shared_prefix.question_len=256",
    "workload.shared_prefix.output_len=64",
    "workload.shared_prefix.request_rate=12",
    "workload.shared_prefix.duration=10",
]


def test_fewest_is_the_boundary() -> None:
    """A monotone target met from 5 pods on: 5, with 4 failing; never met: None; met by one: 1."""
    assert fewest(lambda n: n >= 5) == 5
    assert fewest(lambda n: n >= 1) == 1
    assert fewest(lambda n: False) is None
    assert fewest(lambda n: n >= 33) == 33


def _planned(*overrides: str):  # type: ignore[no-untyped-def]
    return plan(loading.load_preset(PRESET, [*WORKLOAD, *overrides]), keep_up=False)


def test_auto_takes_the_fewest_prefill_pods_that_meet_ttft() -> None:
    """Prefill auto under a 1.2 s TTFT p90 target, met at the time model's error band's pessimistic edge (modelled
    / its lowest ratio, as the aggregated plan meets it): 1 prefill pod misses it (queued prompts, its modelled p90
    alone above 1.2 x that ratio), 2 meet it: auto takes 2, and the plan renders 2 prefill pods."""
    one = _planned("cache.disaggregation.prefill.replicas=1").workload
    assert one is not None and one.disaggregated is not None
    p = _planned("cache.disaggregation.prefill.replicas=auto", "workload.slo.ttft_p90=1.2", "workload.slo.tpot_p90=1")
    band = p.workload.capacity.band if p.workload is not None else None
    assert band is not None and 0.4 < band.low < 0.7
    assert one.disaggregated.run.ttft_s[1] / band.low > 1.2
    assert p.workload is not None and p.workload.disaggregated is not None
    run = p.workload.disaggregated.run
    assert (run.prefill_pods, run.decode_pods) == (2, 1)
    assert run.ttft_s[1] / band.low <= 1.2 and run.slo_met is True
    assert p.workload.disaggregated.auto == (True, False)
    prefill = next(r for r in p.roles if r.spec.role == "prefill")
    assert prefill.manifests[-1]["spec"]["replicas"] == 2


def test_auto_decode_meets_tpot() -> None:
    """Decode auto under a TPOT p90 target one decode pod meets: it takes 1."""
    p = _planned("cache.disaggregation.decode.replicas=auto", "workload.slo.tpot_p90=0.05")
    assert p.workload is not None and p.workload.disaggregated is not None
    assert p.workload.disaggregated.run.decode_pods == 1 and p.workload.disaggregated.auto == (False, True)


def test_auto_needs_its_target() -> None:
    with pytest.raises(ConfigError) as caught:
        _planned("cache.disaggregation.decode.replicas=auto", "workload.slo.ttft_p90=2")
    assert caught.value.field == "cache.disaggregation.decode.replicas" and "tpot_p90" in str(caught.value)


def test_size_prints_aggregated_beside_disaggregated() -> None:
    lines = size_lines(PRESET, WORKLOAD, None, None)
    table = lines[lines.index("## Aggregated vs disaggregated") :][:8]
    assert table[2] == "| plan | pods | accelerators | TTFT p50 / p90 | TPOT p50 / p90 | $/hour |"
    assert table[4].startswith("| aggregated, as the stack's shape | 2 replicas | 4 |")  # 2 x TP 2
    assert any(row.startswith("| disaggregated | 2 prefill + 1 decode | 12 |") for row in table)  # 2x2x2 + 4


def test_the_record_is_the_plan_s_own() -> None:
    """One entry: the P/D plan rides on the WorkloadPlan record `plan()` returns (no second orchestration)."""
    p = _planned()
    assert p.workload is not None
    assert dataclasses.fields(p.workload)[-1].name == "disaggregated"
