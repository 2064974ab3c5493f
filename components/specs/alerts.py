"""PrometheusRule alerts for the seed's "Common failure modes", each with its runbook line.

Which rules a stack gets follows what its model servers export: vLLM's offload counters
(`vllm:kv_offload_*`, native OffloadingConnector only), vLLM's external prefix-cache counters (every
vLLM connector), SGLang HiCache, LMCache, and the router's CPU-tier index (tiered router values).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from components.manifest import Manifest
from components.specs.promql import rate, ratio


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
class Exports:
    """The metric families a stack's servers and router export."""

    vllm: bool  # vllm:* prefix-cache and external prefix-cache counters
    vllm_offload: bool  # vllm:kv_offload_* (the native OffloadingConnector)
    sglang: bool
    lmcache: bool
    router_cpu_index: bool  # the tiered router values' cpu-prefix-cache-producer


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


def alerts(exports: Exports, t: Thresholds) -> list[Alert]:
    out: list[Alert] = []
    if exports.vllm:
        out += _offload_hit_rate(t)
    if exports.vllm_offload:
        out += _offload_transfers(t)
    if exports.vllm and exports.router_cpu_index:
        out += _router_cpu_index(t)
    if exports.sglang:
        out += _hicache(t)
    if exports.lmcache:
        out += _lmcache(t)
    return out


def _offload_hit_rate(t: Thresholds) -> list[Alert]:
    """vLLM (every connector): the offload tier misses while the HBM hit rate falls."""
    w = t.window
    offload = ratio("vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_queries_total", w)
    hbm_now = ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", w)
    hbm_before = ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", w, offset="1h")
    return [
        Alert(
            "TieredCacheOffloadHitRateNearZero",
            f"{offload} < {t.offload_hit_rate_floor} and on (pod) {hbm_now} < {t.hbm_hit_rate_drop} * {hbm_before}",
            "30m",
            "Offload-tier hit rate near zero while the HBM hit rate falls on {{ $labels.pod }}",
            "Blocks are not reaching the offload tier, or are evicted from it before reuse. If"
            " vllm:kv_offload_store_bytes_total is flat, confirm the pod started with the connector in"
            " --kv-transfer-config; if stores are steady, raise the CPU tier within the pod's memory limit.",
        )
    ]


def _offload_transfers(t: Thresholds) -> list[Alert]:
    """The native OffloadingConnector's stores, loads and CPU-block allocations."""
    w = t.window
    store = rate("vllm:kv_offload_store_bytes_total", w)
    load = rate("vllm:kv_offload_load_bytes_total", w)
    return [
        Alert(
            "TieredCacheStoresWithoutLoads",
            f"{store} > 0 and on (pod) {load} < {t.loads_per_store} * {store}",
            "1h",
            "{{ $labels.pod }} writes KV blocks to the offload tier but almost never loads them",
            "Evicted blocks are written but not reused: the tier costs memory and copy time without saving"
            " prefill. Either the workload rarely repeats prefixes or the tier is too small for the working set.",
            severity="info",
        ),
        Alert(
            "TieredCacheLoadTooSlow",
            f"{load} / {rate('vllm:kv_offload_load_time_total', w)} < {t.min_load_bandwidth_bytes}"
            f" and on (pod) {rate('vllm:kv_offload_load_time_total', w)} > 0",
            "30m",
            "CPU-to-accelerator loads on {{ $labels.pod }} are slower than the prefill they replace",
            "TTFT can be worse than the HBM-only baseline. Check load speed per device"
            " (vllm:kv_offload_load_bytes_total / vllm:kv_offload_load_time_total, both summed over the pod's"
            " ranks), and on filesystem paths the storage backend's read throughput.",
        ),
        Alert(
            "TieredCacheStoreAllocationFailures",
            f"{rate('vllm:kv_offload_allocation_failure_total', '5m')} > 0",
            "15m",
            "Stores on {{ $labels.pod }} cannot get CPU blocks (the log shows `cannot store chunks`)",
            "The CPU tier has no free or evictable blocks, usually because in-flight transfers hold them under"
            " high concurrency; vllm:kv_offload_cpu_cache_usage_perc near 1.0 confirms it. Increase"
            " cpu_bytes_to_use.",
        ),
    ]


def _router_cpu_index(t: Thresholds) -> list[Alert]:
    """The router's CPU-tier index against what the model servers really hit."""
    w = t.window
    servers = (
        f"((sum(rate(vllm:prefix_cache_hits_total[{w}])) + sum(rate(vllm:external_prefix_cache_hits_total[{w}])))"
        f" / sum(rate(vllm:prefix_cache_queries_total[{w}])))"
    )
    return [
        Alert(
            "TieredCacheRouterCPUIndexAhead",
            f'max(llm_d_epp_prefix_indexer_hit_ratio{{plugin_name="cpu-prefix-cache-producer"}})'
            f" > scalar({servers}) + {t.router_hit_ratio_margin}",
            "30m",
            "The router's CPU-tier index hits far more often than the model servers do",
            "The router steers requests toward blocks the servers no longer hold: lruCapacityPerServer of"
            " cpu-prefix-cache-producer is larger than the CPU tier fits. Lower it (this program derives it"
            " from cache.tier.cpu; check the tier size the pods really run with).",
        )
    ]


def _hicache(t: Thresholds) -> list[Alert]:
    """SGLang HiCache's host tier."""
    w = t.window
    return [
        Alert(
            "HiCacheHostTierUnused",
            "sum by (pod) (sglang:hicache_host_used_tokens) == 0"
            f" and on (pod) {rate('sglang:evicted_tokens_total', w)} > 0",
            "30m",
            "SGLang on {{ $labels.pod }} evicts from HBM but its HiCache host tier holds nothing",
            "With --hicache-write-policy write_through every computed block is copied to host memory; an empty"
            " host tier means HiCache is off. Check the --hicache-* flags.",
        ),
        Alert(
            "HiCacheHostTierFullWithoutHits",
            "sum by (pod) (sglang:hicache_host_used_tokens) / sum by (pod) (sglang:hicache_host_total_tokens) > 0.9"
            f' and on (pod) sum by (pod) (rate(sglang:cached_tokens_total{{cache_source="host"}}[{w}])) == 0',
            "1h",
            "The HiCache host tier of {{ $labels.pod }} is full but serves no hits",
            "Blocks are stored but never reused: the workload rarely repeats prefixes, or requests for a prefix"
            " reach a different pod (check the router's prefix scoring).",
            severity="info",
        ),
    ]


def _lmcache(t: Thresholds) -> list[Alert]:
    """LMCache's retrieve hit rate."""
    return [
        Alert(
            "LMCacheHitRateNearZero",
            f"max by (pod) (lmcache:retrieve_hit_rate) < {t.lmcache_hit_rate_floor}"
            " and on (pod) max by (pod) (lmcache:local_cache_usage) > 0",
            "30m",
            "LMCache on {{ $labels.pod }} holds KV but retrieves almost none of it",
            "Check that every process sets the same PYTHONHASHSEED, that prompts exceed one LMCache chunk, and"
            " (LMCache server) that the pod talks to the server on its own node.",
        )
    ]


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


def metrics_to_watch(exports: Exports) -> list[str]:
    """The seed's key metrics for this stack, for operators (a stack output)."""
    out: list[str] = []
    if exports.vllm:
        out += [
            "vllm:external_prefix_cache_hits_total / vllm:external_prefix_cache_queries_total (offload-tier hit rate)",
            "vllm:prefix_cache_hits_total (HBM hits)",
            "vllm:time_to_first_token_seconds (TTFT)",
        ]
    if exports.vllm_offload:
        out += [
            "vllm:kv_offload_store_bytes_total, vllm:kv_offload_load_bytes_total (store and load volume)",
            "vllm:kv_offload_load_bytes_total / vllm:kv_offload_load_time_total (load speed per device)",
            "vllm:kv_offload_allocation_failure_total (store allocation failures)",
        ]
    if exports.sglang:
        out += [
            "sglang:hicache_host_used_tokens / sglang:hicache_host_total_tokens (host tier occupancy)",
            'sglang:cached_tokens_total{cache_source="host"} (host-tier hits)',
        ]
    if exports.lmcache:
        out += ["lmcache:retrieve_hit_rate, lmcache:local_cache_usage"]
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
