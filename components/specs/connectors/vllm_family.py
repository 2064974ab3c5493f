"""What the vLLM connectors share (the native OffloadingConnector, LMCache in-process and as a server,
MooncakeStore): vLLM's manifests, its argument layout (upstream's or the Intel XPU overlays'), the XPU
overlays' device-memory share, and the filesystem tier's shared claim."""

from __future__ import annotations

from components.catalog import labels
from components.manifest import Manifest
from components.specs.connectors.interface import Choice, Connector, RouterProfile
from components.specs.kv_events import TierEvents
from components.specs.metric_family import Alert, CacheValue, MetricFamily, Panel, Thresholds, in_order
from components.specs.promql import rate, ratio
from components.specs.servers.base import GuideLimits, ServerSpec, files_storage_mount, files_storage_volume
from components.specs.servers.limits import fraction_text, limit_args, limits
from components.specs.servers.vllm import vllm_manifests

# Intel XPU serving flags of the guide's overlays.
XPU_TAIL_ARGS = ["--max-num-seqs", "128"]
XPU_LOG_ARGS = ["--uvicorn-log-level", "warning"]
XPU_MEMORY_FRACTION = 0.85
XPU_DTYPE = "bfloat16"


def xpu_dtype_args(spec: ServerSpec) -> list[str]:
    """bf16, and the profile's KV block (`kv_block_tokens`: the overlays' 64, what the tier is counted in)."""
    return ["--dtype", XPU_DTYPE, "--block-size", str(spec.accelerator.kv_block_tokens)]


def vllm_layout(spec: ServerSpec, model: list[str], tp: str, kv: list[str], extra: list[str]) -> list[str]:
    """vLLM's arguments in the guide's order: the Intel XPU overlays' or upstream's."""
    if spec.accelerator.intel_xpu_flags:
        return [
            *model,
            *xpu_dtype_args(spec),
            tp,
            "--gpu-memory-utilization",
            fraction_text(limits(spec).memory_fraction),
            *kv,
            *extra,
            *XPU_TAIL_ARGS,
            *XPU_LOG_ARGS,
            *limit_args(spec),
        ]
    return [*model, f"--port={labels.MODEL_SERVER_PORT}", tp, *kv, *extra, *limit_args(spec)]


def shared_tier_volumes(spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
    """The filesystem tier's shared claim and its mount, where the pod has the tier."""
    if not spec.filesystem_tier:
        return [], []
    return [files_storage_volume()], [files_storage_mount(spec)]


def offload_hit_rate_alerts(t: Thresholds) -> list[Alert]:
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


def router_cpu_index_alerts(t: Thresholds) -> list[Alert]:
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


def hit_rate_panels(window: str) -> list[Panel]:
    offload = ratio("vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_queries_total", window)
    hbm = ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", window)
    return [
        (
            "Offload-tier hit rate beside the HBM hit rate",
            "percentunit",
            [("offload {{pod}}", offload), ("HBM {{pod}}", hbm)],
        )
    ]


def ttft_panels(window: str) -> list[Panel]:
    ttft = rate("vllm:time_to_first_token_seconds_bucket", window, by="le")
    return [
        (
            "Time to first token",
            "s",
            [("p50", f"histogram_quantile(0.5, {ttft})"), ("p95", f"histogram_quantile(0.95, {ttft})")],
        )
    ]


# vllm:* prefix-cache counters, external (every vLLM connector) and HBM, and the TTFT histogram.
VLLM_METRICS = MetricFamily(
    "vllm",
    10,
    offload_hit_rate_alerts,
    panels=hit_rate_panels,
    late_panels=ttft_panels,
    watch=(
        "vllm:external_prefix_cache_hits_total / vllm:external_prefix_cache_queries_total (offload-tier hit rate)",
        "vllm:prefix_cache_hits_total (HBM hits)",
        "vllm:time_to_first_token_seconds (TTFT)",
    ),
    # Prompt tokens found in the GPU prefix cache, and those the KV connector loaded (its CPU tier; with the
    # native connector's filesystem tier behind it, those loads too: vLLM counts them as one).
    cache_value=CacheValue("vllm:prefix_cache_hits_total", "vllm:external_prefix_cache_hits_total"),
)
# The tiered router values' cpu-prefix-cache-producer index, held against what vLLM's counters say the
# servers hit.
ROUTER_CPU_INDEX = MetricFamily("router-cpu-index", 30, router_cpu_index_alerts)


# vLLM's own HBM cache: its block pool reports every block it caches and frees (the scheduler's KV cache manager,
# on every platform vLLM runs, the TPU's too).
VLLM_HBM_EVENTS = TierEvents(
    "hbm",
    "GPU",
    stores=True,
    evictions=True,
    source="vLLM 0.26.0 and 0.27.1 v1/core/block_pool.py: BlockStored and BlockRemoved, medium GPU",
)


class VllmConnector(Connector):
    """A connector of vLLM on an accelerator's vLLM image: the family's defaults."""

    weight_streaming = True

    def manifests(self, spec: ServerSpec) -> list[Manifest]:
        return vllm_manifests(spec)

    def guide_limits(self, spec: ServerSpec) -> GuideLimits:
        """The Intel XPU overlays write the device-memory share."""
        if spec.accelerator.intel_xpu_flags:
            return GuideLimits(
                memory_fraction=(XPU_MEMORY_FRACTION, "the Intel XPU overlays' `--gpu-memory-utilization`")
            )
        return GuideLimits()

    def vllm_args(self, spec: ServerSpec, model: list[str], tp: str, kv: list[str]) -> list[str]:
        return vllm_layout(spec, model, tp, kv, [])

    def volumes(self, spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
        """The shared tier's claim, where the pod has the tier."""
        return shared_tier_volumes(spec)

    def exports(self, choice: Choice, profile: RouterProfile) -> tuple[MetricFamily, ...]:
        """vLLM's counters, the connector's own and, under the tiered router values, the router's CPU index."""
        index = (ROUTER_CPU_INDEX,) if profile in ("tiered", "pd-tiered") else ()
        return in_order((VLLM_METRICS, *self.metric_families, *index))
