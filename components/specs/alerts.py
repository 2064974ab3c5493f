"""PrometheusRule alerts for the seed's "Common failure modes", each with its runbook line.

Which rules a stack gets follows the metric families its model servers export (`metric_family.py`; each
family's rules are where it is defined, in the connectors' modules), the shared tier's evictor and the cache
annotator.
"""

from __future__ import annotations

import math

from components.manifest import Manifest
from components.specs.metric_family import Alert as Alert  # the records, named here too
from components.specs.metric_family import MetricFamily
from components.specs.metric_family import Thresholds as Thresholds


def alerts(families: tuple[MetricFamily, ...], t: Thresholds) -> list[Alert]:
    """The rules of every family the stack's pods export."""
    return [alert for family in families for alert in family.alerts(t)]


def shared_tier_alerts(scan_seconds: float) -> list[Alert]:
    """The filesystem tier's evictor: usage that stays above its high watermark for longer than a few passes,
    and an evictor that reports nothing."""
    minutes = f"{max(15, math.ceil(3 * scan_seconds / 60))}m"
    return [
        Alert(
            "TieredCacheSharedTierAboveHighWatermark",
            "max(tier_evictor_usage_ratio) > max(tier_evictor_high_watermark_ratio)",
            minutes,
            "The shared filesystem tier stays above its evictor's high watermark",
            "The evictor does not keep up: its log line per pass says what it skipped (younger than a pass, denied,"
            " used since the scan). If the usage climbs back above the high watermark within a scan, the tier stores"
            " faster than the watermarks were derived for: grow storage.size or set storage.evictor's watermarks"
            " lower; tier_evictor_scan_seconds against the summary's modeled scan says whether the backend scans"
            " slower than storage.evictor.scan_rate. Once full, stores fail and the tier serves only what it holds.",
        ),
        Alert(
            "TieredCacheEvictorDown",
            "absent(tier_evictor_usage_ratio)",
            minutes,
            "The shared filesystem tier's evictor reports nothing",
            "Nothing deletes from the filesystem tier while the evictor is down: check the tier-evictor Deployment's"
            " pod (its claim mounted, its log) before the tier fills.",
        ),
    ]


def annotator_alerts(interval_s: int) -> list[Alert]:
    """The cache annotator: it stopped leaving every model-server pod with its deletion cost (its loop fails to list
    the pods or to write, or it is down), so a scale-in falls back to the newest pod, whatever its caches hold."""
    stale = 4 * interval_s  # four loops in a row
    return [
        Alert(
            "TieredCacheAnnotatorStale",
            f"time() - max(cache_annotator_last_sync_timestamp_seconds) > {stale}"
            " or absent(cache_annotator_last_sync_timestamp_seconds)",
            "10m",
            "The cache annotator has not written the model servers' deletion costs for a while",
            "A scale-in now removes pods by the ReplicaSet controller's own order (the newest first), warm caches"
            " or not. The cache-annotator pod's log says each loop's failure: the API server unreachable (its"
            " egress NetworkPolicy admits 443 and 6443), a write refused (its Role: get, list, patch on pods), or"
            " pods that do not answer on :8000/metrics (cache_annotator_unanswered_pods).",
        )
    ]


def metrics_to_watch(families: tuple[MetricFamily, ...]) -> list[str]:
    """The seed's key metrics for this stack, for operators (a stack output)."""
    out = [line for family in families for line in family.watch]
    out += ["llm_d_epp_prefix_indexer_size, llm_d_epp_prefix_indexer_hit_ratio by plugin_name (router index per tier)"]
    return out


def prometheus_rule(name: str, namespace: str, rules: list[Alert]) -> Manifest:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"groups": [{"name": "tiered-prefix-cache", "rules": [a.rule() for a in rules]}]},
    }


# GKE Managed Prometheus requires each group's evaluation interval; Prometheus's default global one.
GMP_EVALUATION_INTERVAL = "1m"


def gmp_rules(name: str, namespace: str, rules: list[Alert]) -> Manifest:
    """The same rules for GKE Managed Prometheus, which evaluates its own `Rules` kind, not PrometheusRule."""
    group = {"name": "tiered-prefix-cache", "interval": GMP_EVALUATION_INTERVAL, "rules": [a.rule() for a in rules]}
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "Rules",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"groups": [group]},
    }
