"""Every alert fires on the failure mode its runbook describes and stays silent on a healthy pod.

The rules are parsed with a real PromQL parser and evaluated in a one-pod world: each series is that
pod's value (a counter's rate, a gauge's level), so `sum by (pod)`, `max by (pod)`, `sum` and `scalar`
all reduce to the value itself, a comparison keeps its left side or drops it, and `and` needs both.
That is enough to tell a comparison from its inverse, which a text snapshot cannot.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import promql_parser
import pytest

from components.specs.alerts import Alert
from stacks.config import loading
from stacks.planning.plan import plan

Series = dict[str, float]  # metric name (with " offset 1h" when shifted) -> the pod's value
_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": lambda a, b: a / b if b else (math.nan if a == 0 else math.copysign(math.inf, a)),
}
_COMPARISON: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}


def evaluate(node: Any, series: Series) -> float | None:
    """The pod's value of an expression, or None when a filter drops the pod (no result, no alert)."""
    if isinstance(node, promql_parser.NumberLiteral):
        return float(node.val)
    if isinstance(node, promql_parser.VectorSelector):
        shift = f" offset {int(node.offset.total_seconds()) // 3600}h" if node.offset else ""
        return series.get(f"{node.name}{shift}", 0.0)
    if isinstance(node, promql_parser.MatrixSelector):
        return evaluate(node.vector_selector, series)
    if isinstance(node, (promql_parser.ParenExpr, promql_parser.AggregateExpr)):
        return evaluate(node.expr, series)
    if isinstance(node, promql_parser.UnaryExpr):
        value = evaluate(node.expr, series)
        return None if value is None else -value
    if isinstance(node, promql_parser.Call):
        assert node.func.name in ("rate", "scalar"), node.func.name
        return evaluate(node.args[0], series)
    assert isinstance(node, promql_parser.BinaryExpr), type(node)
    lhs, rhs, op = evaluate(node.lhs, series), evaluate(node.rhs, series), str(node.op)
    if op == "and":
        return lhs if lhs is not None and rhs is not None else None
    if lhs is None or rhs is None:
        return None
    if op in _COMPARISON:
        return lhs if _COMPARISON[op](lhs, rhs) else None
    return _ARITHMETIC[op](lhs, rhs)


def fires(alert: Alert, series: Series) -> bool:
    return evaluate(promql_parser.parse(alert.expr), series) is not None


def _alerts() -> dict[str, Alert]:
    """The default thresholds' rules of the stacks that export each family."""
    out: dict[str, Alert] = {}
    for preset in ("gpu-vllm-native-cpu", "gpu-sglang-native-cpu", "gpu-vllm-lmcache-connector-cpu"):
        out |= {a.name: a for a in plan(loading.load_preset(preset, ["monitoring.enabled=true"])).alerts}
    return out


ALERTS = _alerts()

HBM_FALLING = {
    "vllm:prefix_cache_queries_total": 100,
    "vllm:prefix_cache_hits_total": 20,
    "vllm:prefix_cache_queries_total offset 1h": 100,
    "vllm:prefix_cache_hits_total offset 1h": 60,
}
HBM_STEADY = {**HBM_FALLING, "vllm:prefix_cache_hits_total": 60}
# (alert, a pod in the failure mode its runbook names, healthy pods)
CASES: list[tuple[str, Series, list[Series]]] = [
    (
        "TieredCacheOffloadHitRateNearZero",
        {**HBM_FALLING, "vllm:external_prefix_cache_queries_total": 100, "vllm:external_prefix_cache_hits_total": 0},
        [
            {
                **HBM_FALLING,
                "vllm:external_prefix_cache_queries_total": 100,
                "vllm:external_prefix_cache_hits_total": 40,
            },
            {**HBM_STEADY, "vllm:external_prefix_cache_queries_total": 100, "vllm:external_prefix_cache_hits_total": 0},
        ],
    ),
    (
        "TieredCacheStoresWithoutLoads",
        {"vllm:kv_offload_store_bytes_total": 1e9, "vllm:kv_offload_load_bytes_total": 0},
        [
            {"vllm:kv_offload_store_bytes_total": 1e9, "vllm:kv_offload_load_bytes_total": 5e8},
            {"vllm:kv_offload_store_bytes_total": 0, "vllm:kv_offload_load_bytes_total": 0},
        ],
    ),
    (
        "TieredCacheLoadTooSlow",
        {"vllm:kv_offload_load_bytes_total": 1e6, "vllm:kv_offload_load_time_total": 1},
        [
            {"vllm:kv_offload_load_bytes_total": 1e12, "vllm:kv_offload_load_time_total": 1},
            {"vllm:kv_offload_load_bytes_total": 0, "vllm:kv_offload_load_time_total": 0},
        ],
    ),
    (
        "TieredCacheStoreAllocationFailures",
        {"vllm:kv_offload_allocation_failure_total": 0.5},
        [{"vllm:kv_offload_allocation_failure_total": 0}],
    ),
    (
        "TieredCacheRouterCPUIndexAhead",
        {
            "llm_d_epp_prefix_indexer_hit_ratio": 0.9,
            "vllm:prefix_cache_queries_total": 100,
            "vllm:prefix_cache_hits_total": 20,
            "vllm:external_prefix_cache_hits_total": 10,
        },
        [
            {
                "llm_d_epp_prefix_indexer_hit_ratio": 0.3,
                "vllm:prefix_cache_queries_total": 100,
                "vllm:prefix_cache_hits_total": 20,
                "vllm:external_prefix_cache_hits_total": 10,
            }
        ],
    ),
    (
        "HiCacheHostTierUnused",
        {"sglang:hicache_host_used_tokens": 0, "sglang:evicted_tokens_total": 50},
        [
            {"sglang:hicache_host_used_tokens": 1000, "sglang:evicted_tokens_total": 50},
            {"sglang:hicache_host_used_tokens": 0, "sglang:evicted_tokens_total": 0},
        ],
    ),
    (
        "HiCacheHostTierFullWithoutHits",
        {"sglang:hicache_host_used_tokens": 95, "sglang:hicache_host_total_tokens": 100},
        [
            {
                "sglang:hicache_host_used_tokens": 95,
                "sglang:hicache_host_total_tokens": 100,
                "sglang:cached_tokens_total": 10,
            },
            {"sglang:hicache_host_used_tokens": 50, "sglang:hicache_host_total_tokens": 100},
        ],
    ),
    (
        "LMCacheHitRateNearZero",
        {"lmcache:retrieve_hit_rate": 0, "lmcache:local_cache_usage": 0.5},
        [
            {"lmcache:retrieve_hit_rate": 0.5, "lmcache:local_cache_usage": 0.5},
            {"lmcache:retrieve_hit_rate": 0, "lmcache:local_cache_usage": 0},
        ],
    ),
]


def test_every_alert_has_its_cases() -> None:
    assert sorted(ALERTS) == sorted(name for name, _, _ in CASES)


@pytest.mark.parametrize(("name", "failing", "healthy"), CASES, ids=[c[0] for c in CASES])
def test_alert_fires_on_its_failure_mode_only(name: str, failing: Series, healthy: list[Series]) -> None:
    alert = ALERTS[name]
    assert fires(alert, failing), alert.expr
    for pod in healthy:
        assert not fires(alert, pod), (pod, alert.expr)


def test_the_evaluator_reads_comparisons_and_and() -> None:
    assert evaluate(promql_parser.parse("sum by (pod) (rate(a[5m])) > 1"), {"a": 2}) == 2
    assert evaluate(promql_parser.parse("sum by (pod) (rate(a[5m])) < 1"), {"a": 2}) is None
    assert evaluate(promql_parser.parse("a > 0 and on (pod) b > 0"), {"a": 1}) is None
    assert evaluate(promql_parser.parse("a offset 1h / b"), {"a offset 1h": 6, "b": 3}) == 2
