"""Autoscaling the model servers through KEDA on the router's own signals (off by default)."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator

from components.formulas.victims import ScaleIn
from components.specs import keda, keda_tokens
from stacks.config import formats
from stacks.config.fields import Section, check_with

# The HPA compares a metric with its target in thousandths (Quantity.MilliValue): a smaller target reads as 0 and
# would scale to the most replicas on any load.
MIN_TARGET = 0.001


class AutoscalingConfig(Section):
    """A KEDA ScaledObject per model-server workload on the EPP's flow-control queue and pool saturation
    (llm-d's workload-autoscaling guide); `cache.replicas` is the initial count."""

    enabled: bool = False
    """true: KEDA scales the model servers between min_replicas and max_replicas; default false"""
    signal: keda_tokens.Signal = "requests"
    """requests: the EPP's request counts (`trigger`); tokens: llm-d's token-aware variant, the prefill backlog in
    seconds (the EPP's in-flight uncached prompt tokens over the peak prefill rate the time model derives for the
    stack's model, accelerator and parallelism, the same figure the router's prefix-cache-affinity-filter reads)
    beside the KV cache's occupancy; needs one endpoint picker (it counts the tokens it routed)"""
    trigger: keda.Mode = "queue"
    """with signal requests: queue (upstream's recommendation: the EPP's flow-control queue), saturation (the
    pool's saturation) or both; the running-requests trigger comes with each, as upstream's recipes set it"""
    queue_threshold: float = Field(default=keda.Thresholds.queue, ge=MIN_TARGET, le=1_000_000)
    """queued requests per replica the HPA holds (upstream: 1)"""
    running_threshold: float = Field(default=keda.Thresholds.running, ge=MIN_TARGET, le=1_000_000)
    """running requests per replica the HPA holds (upstream: 16)"""
    saturation_threshold: float = Field(default=keda.Thresholds.saturation, ge=MIN_TARGET, le=1)
    """the pool saturation the HPA holds, 0..1 (upstream: 0.7, 'recommended 0.7-0.8')"""
    backlog_threshold: float = Field(default=keda_tokens.TokenThresholds.backlog_s, ge=MIN_TARGET, le=3600)
    """with signal tokens: seconds of prefill backlog per replica the HPA holds, a share of the TTFT budget
    (upstream: 1.5, 'interactive / short-context traffic')"""
    kv_usage_threshold: float = Field(default=keda_tokens.TokenThresholds.kv_usage, ge=MIN_TARGET, le=1)
    """with signal tokens: pods' worth of full KV cache per replica the HPA holds (upstream: 0.8)"""
    min_replicas: int = Field(default=1, ge=1, le=10_000)
    """fewest replicas (at least 1: scaling to zero drops every warm tier)"""
    max_replicas: int | None = Field(default=None, ge=1, le=10_000)
    """most replicas; default: what the node pools hold (the fit arithmetic); above it is an error"""
    scale_down: Literal["derived", "upstream"] = "derived"
    """derived: the stabilization window and rate from the stack's modeled cold start (a removed pod
    re-added costs two cold starts); upstream: the recipes' 300 s window, 100% per 15 s"""
    scale_in: ScaleIn = "newest"
    """which model-server pod a scale-in removes: newest (the ReplicaSet controller's own order: among ready pods,
    the one ready for the shortest time, whatever its caches hold); cache-value (an annotator writes each pod's rank
    by the prompt tokens it served from HBM and its own CPU tier as its pod-deletion-cost, so the pod whose caches
    served least goes first, and each pod drains its requests before it stops: docs/scale-in.md)"""
    gcp_project: Annotated[str, check_with(formats.gcp_project)] | None = None
    """the GCP project whose Managed Prometheus KEDA queries (monitoring.provider gke-managed-prometheus on an
    existing cluster); default: a created GKE cluster's cluster.gke.project"""
    prometheus_url: str = "http://prometheus-operated.monitoring.svc:9090"
    """where KEDA queries the router's metrics with monitoring.provider prometheus-operator (the operator's
    `prometheus-operated` Service); GKE Managed Prometheus is queried through its frontend instead"""

    @field_validator("max_replicas")
    @classmethod
    def _not_below_min(cls, value: int | None, info: ValidationInfo) -> int | None:
        low = info.data.get("min_replicas")
        if value is not None and low is not None and value < low:
            raise ValueError(f"must be at least min_replicas ({low})")
        return value

    @field_validator("prometheus_url")
    @classmethod
    def _url(cls, value: str) -> str:
        url = urlsplit(value)
        if url.scheme not in ("http", "https") or not url.hostname or any(c.isspace() for c in value):
            raise ValueError(
                "must be an http:// or https:// URL with a host, e.g. http://prometheus-operated.monitoring.svc:9090"
            )
        try:
            url.port  # noqa: B018 (a port out of range raises)
        except ValueError:
            raise ValueError("must be an http:// or https:// URL with a port of 1..65535") from None
        return value

    @property
    def thresholds(self) -> keda.Thresholds:
        return keda.Thresholds(self.queue_threshold, self.running_threshold, self.saturation_threshold)

    @property
    def token_thresholds(self) -> keda_tokens.TokenThresholds:
        return keda_tokens.TokenThresholds(self.backlog_threshold, self.kv_usage_threshold)
