"""Sharp tests of the plan's own choices (issue 48 item 7, a third batch of seeded faults): each decision at its
boundary, on stand-ins whose figures are written here, asserting the decision itself."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from components.units import ByteSize, GiB
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.config.workload_section import SloConfig
from stacks.planning.plan import plan
from stacks.planning.workload import capacity_plan, workload_sizing
from stacks.planning.workload.capacity_records import CapacityPlan, Needed, Run, Scenario
from stacks.planning.workload.cost_records import ServingUse

SIZES = tuple(ByteSize(n * GiB) for n in (0, 4, 8, 16))


def _auto(shares: list[float], node_holds_gib: int | None = 16) -> int | None:
    """`cache.tier.cpu: auto`'s size in GiB on a curve whose hit shares (of prompt tokens, per size of SIZES at the
    configured filesystem size) are `shares`, on a node that holds `node_holds_gib` of tier."""
    largest = None if node_holds_gib is None else ByteSize(node_holds_gib * GiB)
    curve = SimpleNamespace(hit_tokens=np.array([shares]).T, share=lambda tokens: tokens)
    sized = SimpleNamespace(
        shape=SimpleNamespace(node_largest=largest), cpu_sizes=SIZES, configured=(1, 0), curve=curve
    )
    choice = workload_sizing.choose(cast(Any, sized))
    return None if choice is None else choice.size.bytes // GiB


@pytest.mark.parametrize(
    ("shares", "node", "expected"),
    [
        ([0.0, 0.25, 0.49, 0.50], 16, 8),  # 8 GiB is exactly the margin (1% of prompt tokens) below the best: taken
        ([0.0, 0.25, 0.4899, 0.50], 16, 16),  # a hair more below: the best itself
        ([0.0, 0.50, 0.50, 0.50], 16, 4),  # a flat curve: the smallest
        ([0.0, 0.25, 0.49, 0.90], 8, 8),  # the node holds 8 GiB: 16 GiB is no option, however good
        ([0.0, 0.25, 0.49, 0.90], 2, None),  # not even the smallest fits the node: no choice
        ([0.0, 0.25, 0.49, 0.90], None, None),  # the node's memory is not known: no choice
    ],
)
def test_auto_takes_the_smallest_size_within_one_percent_of_the_best_the_node_holds(
    shares: list[float], node: int | None, expected: int | None
) -> None:
    assert workload_sizing.AUTO_MARGIN == 0.01
    assert _auto(shares, node) == expected


# -- the keep-up check: keeping up and the target ---------------------------------------------------------------

HBM_ONLY = Scenario("HBM only", ByteSize(0), None, "hbm")
CPU_TIER = Scenario("CPU tier", ByteSize(4 * GiB), None, "cpu")


def _run(replicas: int, asks: float, ttft_p90: float, slo_met: bool | None) -> Run:
    return Run(
        CPU_TIER, replicas, (0.1, ttft_p90, 2.0), (0.01, 0.02), 1.0, 1.0, (0.5,), 0.0, asks, 0.0, 60.0, 0.5, 0.1, 0.0,
        slo_met, (),
    )  # fmt: skip


def _check(run: Run, slo: SloConfig | None) -> None:
    needed = (Needed(HBM_ONLY, None), Needed(CPU_TIER, _run(3, 0.6, 0.4, True)))
    plan = CapacityPlan("trace t", cast(Any, None), slo, cast(Any, None), run, needed)
    capacity_plan.check_fits(plan)


def test_a_count_that_keeps_up_but_misses_the_target_is_refused_and_one_that_meets_it_is_not() -> None:
    slo = SloConfig(ttft_p90=0.5)
    _check(_run(2, 0.9, 0.5, True), slo)  # TTFT p90 at the target: met
    with pytest.raises(ConfigError) as missed:
        _check(_run(2, 0.9, 0.9, False), slo)  # keeps up (asks 90%), TTFT p90 0.9 s
    assert "on 2 replicas the workload's TTFT p90 0.9 s against workload.slo.ttft_p90 0.5 s" in str(missed.value)
    assert "none up to 256 with HBM only, 3 with CPU tier would" in str(missed.value)
    with pytest.raises(ConfigError, match="asks 100% of what 2 replicas give"):
        _check(_run(2, 1.0, 0.1, None), None)  # asks all they give: does not keep up
    _check(_run(2, 0.999, 0.1, None), None)


# -- idle nodes of the serving pool ----------------------------------------------------------------------------


@pytest.mark.parametrize(("pods", "per_node", "nodes"), [(1, 8, 1), (2, 2, 1), (3, 2, 2), (4, 2, 2), (5, 2, 3)])
def test_the_serving_pods_take_whole_nodes(pods: int, per_node: int, nodes: int) -> None:
    assert ServingUse(pods, per_node).nodes == nodes


@pytest.mark.parametrize(("replicas", "idle"), [(2, 1), (3, 0)])
def test_one_idle_node_is_named_and_none_is_not(replicas: int, idle: int) -> None:
    """gke-tpu-v6e: 3 ct6e-standard-8t nodes at $21.60/hour, one replica's pod to a node."""
    cost = plan(loading.load_preset("gke-tpu-v6e", [f"cache.replicas={replicas}"])).cost
    assert cost is not None
    assert [(i.idle, i.nodes) for i in cost.idle] == ([(1, 3)] if idle else [])
    assert [i.usd_per_hour for i in cost.idle] == ([pytest.approx(21.6)] if idle else [])
