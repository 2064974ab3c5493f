"""A metric family: metrics a stack's pods export, with the alert rules, dashboard panels and lines of the
stack's `metricsToWatch` built on them. Records only: each family is defined where what exports it is (the
vLLM family and the router's CPU-tier index in connectors/vllm_family.py, the OffloadingConnector's in
native.py, LMCache's in lmcache_connector.py, SGLang HiCache's in sglang_hicache.py) and a connector names the
families its pods export; alerts.py and dashboard.py assemble them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from components.manifest import Manifest

Panel = tuple[str, str, list[tuple[str, str]]]  # (title, unit, [(legend, PromQL)])


@dataclass(frozen=True)
class Thresholds:
    window: str
    offload_hit_rate_floor: float
    hbm_hit_rate_drop: float
    loads_per_store: float
    min_load_bandwidth_bytes: int
    router_hit_ratio_margin: float
    lmcache_hit_rate_floor: float


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    duration: str
    summary: str
    runbook: str
    severity: str = "warning"

    def rule(self) -> Manifest:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.duration,
            "labels": {"severity": self.severity},
            "annotations": {"summary": self.summary, "runbook": self.runbook},
        }


@dataclass(frozen=True)
class CacheValue:
    """The counters of the prompt tokens a pod served from its caches instead of computing them, each a sample
    selector (`name` or `name{label="value"}`): from HBM, and from the connector's own tier (the cache-value
    annotator's reading, components/cache_annotator/). The tier's counts only where the tier dies with the pod
    (`Connector.cpu_scope` replica); a pooled tier outlives it."""

    hbm: str
    tier: str


def _none(_: object) -> list[Panel]:
    return []


@dataclass(frozen=True)
class MetricFamily:
    """`rank` places the family's rules and panels in the rendered PrometheusRule and dashboard (the order
    they have always been rendered in: vLLM 10, the OffloadingConnector 20, the router's index 30, SGLang 40,
    LMCache 50); `late_panels` come after the router's own panels."""

    key: str
    rank: int
    alerts: Callable[[Thresholds], list[Alert]]
    panels: Callable[[str], list[Panel]] = _none  # from the alert window
    late_panels: Callable[[str], list[Panel]] = _none
    watch: tuple[str, ...] = ()  # lines of the stack's metricsToWatch
    cache_value: CacheValue | None = None  # the hit-token counters, where the family exports them


def cache_value(families: tuple[MetricFamily, ...]) -> CacheValue | None:
    """The hit-token counters the first family that exports them names (None: no family does)."""
    return next((f.cache_value for f in families if f.cache_value is not None), None)


def in_order(families: tuple[MetricFamily, ...]) -> tuple[MetricFamily, ...]:
    """Each family once, by rank."""
    return tuple(sorted({f.key: f for f in families}.values(), key=lambda f: f.rank))
