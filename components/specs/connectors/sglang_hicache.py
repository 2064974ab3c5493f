"""SGLang's HiCache: SGLang's own hierarchical cache (host memory and, with the fs variant, its file
backend on the shared claim), counted in pages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.catalog import labels, versions
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.manifest import Manifest
from components.specs.connectors.interface import Choice, Connector, SizingInputs
from components.specs.kv_events import TierEvents
from components.specs.metric_family import Alert, CacheValue, MetricFamily, Panel, Thresholds
from components.specs.promql import rate
from components.specs.servers.base import env_var, tier_dir
from components.specs.servers.limits import GuideLimits
from components.specs.servers.sglang import MEMORY_FRACTION, PAGE_TOKENS, SGLANG_SHM, sglang_manifests
from components.specs.sizing import Derivation, Sizes, TierSizing, sized, sizes_of
from components.units import GB, ByteSize

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec


@dataclass(frozen=True)
class HiCacheSizes(Sizes):
    """What HiCache's flags take."""

    per_rank_gb: int  # `--hicache-size`: whole GB (10^9 bytes) of host memory per rank


def size_host_pool(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, cpu_tier_per_pod: ByteSize
) -> TierSizing:
    """SGLang's `--hicache-size` is whole GB (10^9 bytes) of host memory per tensor-parallel rank."""
    per_rank_gb = cpu_tier_per_pod.bytes // tensor_parallelism // GB
    held = ByteSize(per_rank_gb * GB * tensor_parallelism)
    return sized(
        model,
        accelerator,
        tensor_parallelism,
        held,
        [("HiCache host pool", held), ("/dev/shm", SGLANG_SHM)],
        SGLANG_SHM,
        HiCacheSizes(per_rank_gb),
        [
            Derivation(
                "`--hicache-size` (GB per rank)",
                str(per_rank_gb),
                f"floor(CPU tier {cpu_tier_per_pod.human()} per pod / {tensor_parallelism} ranks / 10^9)",
            )
        ],
    )


def hicache_alerts(t: Thresholds) -> list[Alert]:
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


def hicache_panels(window: str) -> list[Panel]:
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


# sglang:hicache_* and the cached tokens by tier.
HICACHE_METRICS = MetricFamily(
    "sglang-hicache",
    40,
    hicache_alerts,
    panels=hicache_panels,
    watch=(
        "sglang:hicache_host_used_tokens / sglang:hicache_host_total_tokens (host tier occupancy)",
        'sglang:cached_tokens_total{cache_source="host"} (host-tier hits)',
    ),
    # SGLang counts a request's cached prompt tokens by where they were found: the device (HBM), the host tier.
    cache_value=CacheValue(
        'sglang:cached_tokens_total{cache_source="device"}', 'sglang:cached_tokens_total{cache_source="host"}'
    ),
)


# SGLang 0.5.16's HiRadixCache reports both tiers it keeps (mem_cache/events.py KVCacheEventMixin); its L3 (the
# file storage backend of the fs variant) reports nothing.
HICACHE_HBM_EVENTS = TierEvents(
    "hbm",
    "GPU",
    stores=True,
    evictions=True,
    source="SGLang 0.5.16 mem_cache/hiradix_cache.py: _record_store_event / _record_remove_event, medium GPU",
)
HICACHE_HOST_EVENTS = TierEvents(
    "cpu",
    "CPU_PINNED",
    stores=True,
    evictions=True,
    source="SGLang 0.5.16 mem_cache/hiradix_cache.py: the host tier's stores and evictions, medium CPU_PINNED",
)
HICACHE_STORAGE_EVENTS = TierEvents(
    "fs",
    None,
    stores=False,
    evictions=False,
    source="SGLang 0.5.16 mem_cache/hiradix_cache.py: no event names the storage backend (StorageMedium.DISK unused)",
)


class HiCache(Connector):
    key = "sglang-hicache"
    engine_flag = "--enable-hierarchical-cache"
    engine = "sglang"
    kv_usage_metric = "sglang:token_usage"
    block_flag = "--page-size"
    kv_events_switch = None
    metric_families = (HICACHE_METRICS,)
    verification_check = "sglang"

    def size(self, inputs: SizingInputs) -> TierSizing:
        i = inputs
        return size_host_pool(i.model, i.accelerator, i.tensor_parallelism, i.tier)

    def pod_cpu_tier(self, sizing: TierSizing, hosts: int) -> ByteSize:
        """`--hicache-size` GB in each of the pod's ranks."""
        return ByteSize(sizes_of(HiCacheSizes, sizing).per_rank_gb * GB * sizing.tensor_parallelism)

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        return PAGE_TOKENS, "HiCache page"

    def engine_block(self, choice: Choice) -> int:
        return PAGE_TOKENS  # `--page-size`

    def kv_events(self, filesystem_tier: bool) -> tuple[TierEvents, ...]:
        return (HICACHE_HBM_EVENTS, HICACHE_HOST_EVENTS, *((HICACHE_STORAGE_EVENTS,) if filesystem_tier else ()))

    def image(self, choice: Choice) -> str:
        return versions.SGLANG_IMAGE

    def sglang_args(self, spec: ServerSpec, engine: list[str], limits: list[str]) -> list[str]:
        """HiCache on, every computed block written through to host memory, sized per rank; with the fs variant
        its file backend, a prefetch waiting for the whole prefix."""
        hicache = [
            HiCache.engine_flag,
            "--hicache-write-policy", "write_through",  # every computed block is copied to host memory
            "--hicache-io-backend", "kernel",
            "--hicache-size", str(sizes_of(HiCacheSizes, spec.sizing).per_rank_gb),
        ]  # fmt: skip
        storage = ["--hicache-storage-backend", "file", "--hicache-storage-prefetch-policy", "wait_complete"]
        return [*engine, *hicache, *limits, *(storage if spec.filesystem_tier else [])]

    def env(self, spec: ServerSpec) -> list[Manifest]:
        """The file backend's directory on the shared claim, its metadata cache, and one hash seed in every pod
        (the guide's)."""
        if not spec.filesystem_tier:
            return []
        return [
            env_var("SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR", tier_dir(spec)),
            env_var("SGLANG_HICACHE_FILE_BACKEND_ENABLE_METADATA_CACHE", "true"),
            env_var("SGLANG_HICACHE_FILE_BACKEND_METADATA_TTL", "5.0"),
            env_var(labels.HASH_SEED_ENV, labels.KV_HASH_SEED),
        ]

    def pod_labels(self, accelerator: AcceleratorProfile) -> dict[str, str]:
        return {labels.ENGINE_TYPE_LABEL: "sglang"}

    def guide_limits(self, spec: ServerSpec) -> GuideLimits:
        return GuideLimits(memory_fraction=(MEMORY_FRACTION, "the guide's `--mem-fraction-static`"))

    def manifests(self, spec: ServerSpec) -> list[Manifest]:
        return sglang_manifests(spec)

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        raise NotImplementedError("SGLang takes --hicache-* flags (servers/sglang.py), not a kv-transfer config")


HICACHE = HiCache()
