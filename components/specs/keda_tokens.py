"""llm-d's token-aware KEDA variant (`guides/workload-autoscaling/keda-epp-token-aware`): the model servers scale on
the prefill backlog in seconds (the EPP's in-flight uncached prompt tokens over the peak prefill rate) beside the
KV cache in use, where components/specs/keda.py scales them on request counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from components.catalog import labels
from components.formulas import hpa
from components.manifest import Manifest
from components.specs import keda, promql

# What the servers scale on: the EPP's request counts (a keda.Mode), or the token-aware variant.
Signal = Literal["requests", "tokens"]


@dataclass(frozen=True)
class TokenThresholds:
    """Per-replica targets of the token-aware variant (upstream's `optimized-baseline/base/scaledobject.yaml`,
    llm-d/llm-d 04c0115b): seconds of prefill backlog, pods' worth of full KV cache."""

    backlog_s: float = 1.5
    kv_usage: float = 0.8

    def __post_init__(self) -> None:
        for name, value in (("backlog", self.backlog_s), ("KV usage", self.kv_usage)):
            if not value > 0:
                raise ValueError(f"the {name} threshold must be positive, not {value}")


# The token-aware variant: the prefill backlog in seconds beside the decode side's KV occupancy. The division is in
# the PromQL (KEDA has no arithmetic); `sum(...) or vector(0)` keeps one series with no labels, as upstream's does.
KV_TRIGGER = "decode-kv-utilization"
TOKEN_SIGNALS: tuple[hpa.Signal, ...] = ("backlog", "kv")


def token_queries(namespace: str, prefill_rate: int, kv_usage_metric: str) -> dict[str, str]:
    """Each token signal's PromQL: the in-flight tokens the EPP's inflight-load-producer counts over the peak
    prefill rate (tokens per second: the seconds to prefill them), and the servers' KV usage summed (pods'
    worth of full KV cache; `kv_usage_metric`, the engine's own gauge)."""
    if prefill_rate <= 0:
        raise ValueError(f"a peak prefill rate is a positive number of tokens per second, not {prefill_rate}")
    inflight = {keda.NAMESPACE_LABEL: namespace, "producer_name": labels.INFLIGHT_PRODUCER}
    return {
        "backlog": f"(sum({promql.selector(labels.INFLIGHT_TOKENS_METRIC, inflight)}) / {prefill_rate}) or vector(0)",
        "kv": f"sum({promql.selector(kv_usage_metric, {keda.NAMESPACE_LABEL: namespace})}) or vector(0)",
    }


def token_hpa_triggers(thresholds: TokenThresholds) -> tuple[hpa.Trigger, ...]:
    """The token triggers as the HPA sees them (both totals KEDA averages over the replicas)."""
    return (hpa.Trigger("backlog", thresholds.backlog_s), hpa.Trigger("kv", thresholds.kv_usage))


def token_triggers(
    thresholds: TokenThresholds, source: keda.MetricsSource, namespace: str, prefill_rate: int, kv_usage_metric: str
) -> list[Manifest]:
    """The token-aware ScaledObject's two Prometheus triggers."""
    query = token_queries(namespace, prefill_rate, kv_usage_metric)
    names = {"backlog": labels.PREFILL_BACKLOG_TRIGGER, "kv": KV_TRIGGER}
    return [
        keda.prometheus_trigger(names[t.signal], t, query[t.signal], source) for t in token_hpa_triggers(thresholds)
    ]
