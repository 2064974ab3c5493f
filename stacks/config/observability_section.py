"""Monitoring, alert thresholds, the verification Job and the NetworkPolicies."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from components.catalog import versions
from components.formulas import payoff
from components.units import ByteSize
from stacks.config.fields import (
    MAX_STORAGE,
    MIN_BANDWIDTH,
    ImageReference,
    Labels,
    Section,
    size_between,
)


class AlertThresholds(Section):
    """When the tiered-cache alerts fire (each rule's runbook line says what to do)."""

    window: str = Field(default="15m", pattern=r"^[1-9][0-9]{0,4}[smh]$", description="rate window of every rule")
    offload_hit_rate_floor: float = Field(default=0.01, ge=0, le=1, description="offload hits / queries below this")
    hbm_hit_rate_drop: float = Field(default=0.8, gt=0, le=1, description="HBM hit rate below this x an hour ago")
    loads_per_store: float = Field(default=0.01, ge=0, le=1, description="loaded / stored bytes below this")
    min_load_bandwidth: Annotated[ByteSize | None, size_between(MIN_BANDWIDTH, MAX_STORAGE)] = Field(
        default=None,
        description="bytes per second one device's CPU->HBM loads must beat (vLLM sums load bytes and load time"
        " over a pod's ranks, so their ratio is per device); default: the stack's derived break-even per device"
        " at prefix_tokens (the summary's payoff table)",
    )
    prefix_tokens: int = Field(
        default=payoff.ALERT_PREFIX_TOKENS,
        ge=1,
        description="the prefix length (tokens) the break-even load bandwidth is derived at: longer prefixes cost"
        " more per token to recompute, so a slower load still pays off; sets min_load_bandwidth's default, the"
        " summary's verdict and `python -m stacks check`'s tiers-beat-recompute (the policy pack's `prefixTokens`);"
        f" default {payoff.ALERT_PREFIX_TOKENS}; at most the model's context less a {payoff.SUFFIX_TOKENS}-token"
        " suffix",
    )
    router_hit_ratio_margin: float = Field(
        default=0.2, ge=0, le=1, description="router CPU index hit ratio above the servers' by more than this"
    )
    lmcache_hit_rate_floor: float = Field(default=0.01, ge=0, le=1)
    """LMCache hit tokens / requested tokens below this (0-1) fires; default 0.01"""


class MonitoringConfig(Section):
    enabled: bool = False
    """deploy monitors, alert rules and the dashboard; default off (needs the provider's CRDs)"""
    provider: Literal["prometheus-operator", "gke-managed-prometheus"] = "prometheus-operator"
    """prometheus-operator (ServiceMonitor, PodMonitors, PrometheusRule) or gke-managed-prometheus (PodMonitorings);
    default prometheus-operator"""
    alerts: AlertThresholds = AlertThresholds()
    """thresholds of the tiered-cache alert rules"""
    dashboard: bool = Field(default=True, description="a Grafana dashboard ConfigMap (sidecar label grafana_dashboard)")


class VerificationConfig(Section):
    """A Job `pulumi up` waits on: the seed's verification steps, failing with the seed's messages."""

    enabled: bool = False
    """run the verification Job on `pulumi up`; default off (on in the dev preset)"""
    image: ImageReference = Field(
        default=versions.VERIFICATION_IMAGE, description="a Python image; the script uses the stdlib"
    )
    requests: int = Field(default=10, ge=1, le=100, description="requests of the shared-prefix burst")


class ScraperConfig(Section):
    """The metrics scraper the NetworkPolicies admit to the metrics ports; unset: by `monitoring.provider`
    (prometheus-operator: pods `app.kubernetes.io/name: prometheus` in any namespace; GKE Managed
    Prometheus: pods `app.kubernetes.io/name: collector` in `gmp-system`)."""

    namespace_labels: Labels | None = Field(
        default=None,
        description="labels of the scraper's namespace ({}: any namespace); unset: by monitoring.provider",
    )
    pod_labels: Labels | None = Field(
        default=None, description="labels of the scraper's pods; unset: by monitoring.provider"
    )


class NetworkPoliciesConfig(Section):
    enabled: bool = Field(
        default=True,
        description="a NetworkPolicy per pod that admits only the traffic serving needs; turn off where the"
        " cluster's network plugin does not enforce NetworkPolicy (or other policies govern the namespace)",
    )
    scraper: ScraperConfig = ScraperConfig()
    """the metrics scraper admitted to the metrics ports; unset fields follow monitoring.provider"""
