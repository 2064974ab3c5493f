"""A Grafana dashboard of the seed's key metrics, as a ConfigMap the Grafana sidecar picks up."""

from __future__ import annotations

import json
from typing import Any

from components.manifest import Manifest
from components.specs.alerts import Exports
from components.specs.promql import rate, ratio

SIDECAR_LABEL = {"grafana_dashboard": "1"}  # the kube-prometheus-stack Grafana sidecar's default label


Panel = tuple[str, str, list[tuple[str, str]]]  # (title, unit, [(legend, PromQL)])


def panels(exports: Exports, window: str) -> list[Panel]:
    out: list[Panel] = []
    if exports.vllm:
        out += _hit_rate_panels(window)
    if exports.vllm_offload:
        out += _offload_panels(window)
    if exports.sglang:
        out += _hicache_panels(window)
    if exports.lmcache:
        out += _lmcache_panels()
    out += _router_panels()
    if exports.vllm:
        out += _ttft_panels(window)
    return out


def _hit_rate_panels(window: str) -> list[Panel]:
    offload = ratio("vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_queries_total", window)
    hbm = ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", window)
    return [
        (
            "Offload-tier hit rate beside the HBM hit rate",
            "percentunit",
            [("offload {{pod}}", offload), ("HBM {{pod}}", hbm)],
        )
    ]


def _offload_panels(window: str) -> list[Panel]:
    return [
        (
            "Store and load volume",
            "Bps",
            [
                ("stored {{pod}}", rate("vllm:kv_offload_store_bytes_total", window)),
                ("loaded {{pod}}", rate("vllm:kv_offload_load_bytes_total", window)),
            ],
        ),
        (
            "Load speed per device (CPU to accelerator)",
            "Bps",
            [("{{pod}}", ratio("vllm:kv_offload_load_bytes_total", "vllm:kv_offload_load_time_total", window))],
        ),
        (
            "Store allocation failures",
            "ops",
            [("{{pod}}", rate("vllm:kv_offload_allocation_failure_total", window))],
        ),
        (
            "CPU tier pinned by in-flight transfers",
            "percentunit",
            [("{{pod}}", "max by (pod) (vllm:kv_offload_cpu_cache_usage_perc)")],
        ),
    ]


def _hicache_panels(window: str) -> list[Panel]:
    return [
        (
            "HiCache host tier occupancy",
            "percentunit",
            [
                (
                    "{{pod}}",
                    "sum by (pod) (sglang:hicache_host_used_tokens) / sum by (pod) (sglang:hicache_host_total_tokens)",
                )
            ],
        ),
        (
            "Cached tokens by tier",
            "short",
            [("{{cache_source}} {{pod}}", rate("sglang:cached_tokens_total", window, by="pod, cache_source"))],
        ),
    ]


def _lmcache_panels() -> list[Panel]:
    return [
        (
            "LMCache retrieve hit rate and usage",
            "percentunit",
            [
                ("hit rate {{pod}}", "max by (pod) (lmcache:retrieve_hit_rate)"),
                ("usage {{pod}}", "max by (pod) (lmcache:local_cache_usage)"),
            ],
        )
    ]


def _router_panels() -> list[Panel]:
    return [
        (
            "Router prefix index size by tier",
            "short",
            [("{{plugin_name}}", "sum by (plugin_name) (llm_d_epp_prefix_indexer_size)")],
        ),
        (
            "Router prefix index hit ratio by tier",
            "percentunit",
            [("{{plugin_name}}", "max by (plugin_name) (llm_d_epp_prefix_indexer_hit_ratio)")],
        ),
    ]


def _ttft_panels(window: str) -> list[Panel]:
    ttft = rate("vllm:time_to_first_token_seconds_bucket", window, by="le")
    return [
        (
            "Time to first token",
            "s",
            [("p50", f"histogram_quantile(0.5, {ttft})"), ("p95", f"histogram_quantile(0.95, {ttft})")],
        )
    ]


def dashboard(exports: Exports, window: str) -> dict[str, Any]:
    grafana_panels = [
        {
            "id": i + 1,
            "type": "timeseries",
            "title": title,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [
                {"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend}
                for j, (legend, expr) in enumerate(queries)
            ],
        }
        for i, (title, unit, queries) in enumerate(panels(exports, window))
    ]
    return {
        "title": "llm-d tiered prefix cache",
        "uid": "llmd-tiered-prefix-cache",
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}]
        },
        "panels": grafana_panels,
    }


def dashboard_config_map(namespace: str, exports: Exports, window: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "llmd-tiered-prefix-cache-dashboard", "namespace": namespace, "labels": SIDECAR_LABEL},
        "data": {"tiered-prefix-cache.json": json.dumps(dashboard(exports, window), indent=2, sort_keys=True) + "\n"},
    }
