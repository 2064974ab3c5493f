"""vLLM's native OffloadingConnector: a CPU tier, and a filesystem tier below it through
TieringOffloadingSpec (on the shared claim)."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.catalog import labels
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.kv_transport import PD_BLOCK_TOKENS, PD_HASH_SEED
from components.catalog.models import ModelSpec
from components.manifest import Manifest
from components.specs.connectors.interface import Choice, RouterProfile, SizingInputs
from components.specs.connectors.vllm_family import VLLM_HBM_EVENTS, VllmConnector, shared_tier_volumes, vllm_layout
from components.specs.kv_events import TierEvents
from components.specs.metric_family import Alert, MetricFamily, Panel, Thresholds
from components.specs.promql import rate, ratio
from components.specs.servers.base import empty_dir, env_var, tier_dir
from components.specs.servers.limits import limit_args
from components.specs.servers.pd import engine_port, nixl_env
from components.specs.sizing import SHM_HEADROOM, Derivation, Sizes, TierSizing, sized, sizes_of
from components.units import ByteSize, GiB

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec

# vLLM's TieringOffloadingSpec: offloaded block size and the filesystem tier's I/O threads (the guide's values).
TIERING_BLOCK_TOKENS = 256
FS_IO_THREADS = 16
# ROCm: CPU->GPU loads of native offloading take the fast Triton path below this many bytes per
# block; the guide raises it from 28 KiB to 40 KiB for Qwen3-32B's blocks.
ROCM_SWAP_KERNEL = "/usr/local/lib/python3.12/dist-packages/vllm/v1/kv_offload/cpu/swap_blocks_triton.py"
ROCM_SWAP_THRESHOLD = ("28 * 1024", "40 * 1024")


@dataclass(frozen=True)
class NativeSizes(Sizes):
    cpu_bytes_to_use: ByteSize  # the CPU tier per pod, in /dev/shm


def size_cpu_tier(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, cpu_tier_per_pod: ByteSize
) -> TierSizing:
    """vLLM's OffloadingConnector keeps its CPU tier in /dev/shm, which is charged to the pod's memory cgroup."""
    shm = (cpu_tier_per_pod + SHM_HEADROOM).ceil_to(GiB)
    return sized(
        model,
        accelerator,
        tensor_parallelism,
        cpu_tier_per_pod,
        [("/dev/shm", shm)],
        shm,
        NativeSizes(cpu_tier_per_pod),
        [
            Derivation(
                "CPU tier per pod (`cpu_bytes_to_use`)",
                f"{cpu_tier_per_pod.bytes} ({cpu_tier_per_pod.human()})",
                "stack config `cache.tier.cpu`",
            ),
            Derivation(
                "`/dev/shm` sizeLimit",
                shm.quantity(),
                f"CPU tier {cpu_tier_per_pod.human()} + headroom {SHM_HEADROOM.human()}, rounded up to GiB",
            ),
        ],
    )


def size_pd_pod(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tensor_parallelism: int,
    engines: int,
    cpu_per_engine: ByteSize,
    block_tokens: int,
) -> TierSizing:
    """A P/D pod of `engines` data-parallel engines: each engine's OffloadingConnector holds `cpu_per_engine` in
    /dev/shm (prefill; none on decode), so the pod holds that times its engines, and the router's index of the pod
    counts that in its own (the engine's) blocks (llm-d pd-disaggregation README.multi-tier.md, "CPU sizing")."""
    pod_tier = cpu_per_engine * engines
    shm = (pod_tier + SHM_HEADROOM).ceil_to(GiB)
    steps = [
        Derivation(
            "CPU tier per engine (`cpu_bytes_to_use`)",
            f"{cpu_per_engine.bytes} ({cpu_per_engine.human()})",
            "stack config `cache.tier.cpu` (prefill pods; the decode pods hold none)",
        ),
        Derivation(
            "CPU tier per pod",
            pod_tier.human(),
            f"{cpu_per_engine.human()} x {engines} engines (`--data-parallel-size`): each engine has its own connector",
        ),
        Derivation(
            "`/dev/shm` sizeLimit", shm.quantity(), f"CPU tier {pod_tier.human()} + headroom, rounded up to GiB"
        ),
    ]
    pod = sized(
        model,
        accelerator,
        tensor_parallelism,
        pod_tier,
        [("/dev/shm", shm)],
        shm,
        NativeSizes(cpu_per_engine),
        steps,
        ranks_on_pod=tensor_parallelism * engines,
    )
    block = model.kv_bytes_per_token * block_tokens
    return dataclasses.replace(
        pod, lru_capacity_per_server=pod_tier.bytes // block.bytes, router_block_tokens=block_tokens
    )


def handoff_connector(spec: ServerSpec) -> dict[str, Any]:
    """The P/D handoff on both roles; a failed load recomputes rather than failing the request (the overlays')."""
    transport = spec.accelerator.kv_transport
    assert transport is not None, "a P/D pool's accelerator carries its transport (the config's checks)"
    return {"kv_connector": transport.connector_class, "kv_role": "kv_both", "kv_load_failure_policy": "recompute"}


def pd_connector(spec: ServerSpec) -> dict[str, Any]:
    """Prefill: a MultiConnector of the handoff and the CPU tier (and the filesystem tier under it, where the stack
    has one); decode: the handoff alone (llm-d pd-disaggregation multi-tier overlays)."""
    if spec.role != "prefill":
        return handoff_connector(spec)
    offload = offloading_connector(spec.sizing, tier_dir(spec) if spec.filesystem_tier else None)
    return {
        "kv_connector": "MultiConnector",
        "kv_role": "kv_both",
        "kv_load_failure_policy": "recompute",
        "kv_connector_extra_config": {"connectors": [handoff_connector(spec), offload]},
    }


def pd_args(spec: ServerSpec, model: list[str], tp: str, kv: list[str], block_tokens: int) -> list[str]:
    """A P/D engine: its port (behind the sidecar on decode), its engines, the one block size engine and router
    share, and the handoff's kv-transfer config."""
    dp = [f"--data-parallel-size={spec.data_parallelism}"] if spec.data_parallelism > 1 else []
    hybrid = ["--disable-hybrid-kv-cache-manager"] if spec.model.hybrid_attention else []
    return [
        *model,
        f"--port={engine_port(spec)}",
        tp,
        *dp,
        f"--block-size={block_tokens}",
        *kv,
        *hybrid,
        *limit_args(spec),
    ]


def offloading_connector(tier: TierSizing, root_dir: str | None, self_describing: bool = False) -> dict[str, Any]:
    """vLLM's native OffloadingConnector; with a filesystem tier (its `root_dir`: the stack's namespace on the
    shared claim), through TieringOffloadingSpec. `self_describing`: its CPU-tier events carry their token ids
    and parent hash (`self_describing_kv_events`, vLLM 0.26.0 offloading/events.py), so a router indexes them
    without the HBM event it would otherwise resolve them through (precise routing)."""
    cpu_bytes = sizes_of(NativeSizes, tier).cpu_bytes_to_use.bytes
    extra: dict[str, Any] = {"cpu_bytes_to_use": cpu_bytes}
    if root_dir is not None:
        extra = {
            "spec_name": "TieringOffloadingSpec",
            "cpu_bytes_to_use": cpu_bytes,
            "block_size": TIERING_BLOCK_TOKENS,
            "secondary_tiers": [
                {
                    "type": "fs",
                    "root_dir": root_dir,
                    "n_read_threads": FS_IO_THREADS,
                    "n_write_threads": FS_IO_THREADS,
                }
            ],
        }
    if self_describing:
        extra["self_describing_kv_events"] = True
    return {"kv_connector": Native.kv_connector_class, "kv_role": "kv_both", "kv_connector_extra_config": extra}


def offload_transfer_alerts(t: Thresholds) -> list[Alert]:
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


def offload_panels(window: str) -> list[Panel]:
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


# vllm:kv_offload_*: the OffloadingConnector's stores, loads and CPU-block allocations.
OFFLOAD_METRICS = MetricFamily(
    "vllm-offload",
    20,
    offload_transfer_alerts,
    panels=offload_panels,
    watch=(
        "vllm:kv_offload_store_bytes_total, vllm:kv_offload_load_bytes_total (store and load volume)",
        "vllm:kv_offload_load_bytes_total / vllm:kv_offload_load_time_total (load speed per device)",
        "vllm:kv_offload_allocation_failure_total (store allocation failures)",
    ),
)


# What the OffloadingConnector publishes (vLLM 0.26.0 and 0.27.1, read in both wheels): the CPU tier's stores
# and evictions; the filesystem tier's stores only.
NATIVE_CPU_EVENTS = TierEvents(
    "cpu",
    "CPU",
    stores=True,
    evictions=True,
    source="vLLM 0.26.0 and 0.27.1 v1/kv_offload/cpu/manager.py: complete_store stores, prepare_store evictions,"
    " published by OffloadingConnector.take_events (offloading/events.py), medium CPU",
)
NATIVE_FS_EVENTS = TierEvents(
    "fs",
    "FS",
    stores=True,
    evictions=False,
    source="vLLM 0.26.0 v1/kv_offload/tiering/fs/manager.py get_finished_jobs: stores only, medium FS (STORAGE in"
    " 0.27.1); the files the tier evictor deletes are never reported",
)


class Native(VllmConnector):
    key = "native"
    kv_connector_class = "OffloadingConnector"
    metric_families = (OFFLOAD_METRICS,)
    verification_check = "native"
    disaggregates = True

    def size(self, inputs: SizingInputs) -> TierSizing:
        i = inputs
        return size_cpu_tier(i.model, i.accelerator, i.tensor_parallelism, i.tier)

    def pod_cpu_tier(self, sizing: TierSizing, hosts: int) -> ByteSize:
        return sizes_of(NativeSizes, sizing).cpu_bytes_to_use

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        if choice.filesystem_tier:
            return TIERING_BLOCK_TOKENS, "TieringOffloadingSpec `block_size`"
        if choice.disaggregation is not None:
            return PD_BLOCK_TOKENS, "P/D engine `--block-size` (= the router's `blockSizeTokens`)"
        return super().transfer_block(choice)

    def roles(self, choice: Choice) -> int:
        return 2 if choice.disaggregation is not None else 1

    def router_profile(self, choice: Choice, replicas: int) -> RouterProfile:
        return "pd-tiered" if choice.disaggregation is not None else super().router_profile(choice, replicas)

    def verifies_shared_tier(self, choice: Choice) -> bool:
        return choice.filesystem_tier

    def kv_events(self, filesystem_tier: bool) -> tuple[TierEvents, ...]:
        return (VLLM_HBM_EVENTS, NATIVE_CPU_EVENTS, *((NATIVE_FS_EVENTS,) if filesystem_tier else ()))

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        if spec.disaggregated:
            return pd_connector(spec)
        return offloading_connector(
            spec.sizing, tier_dir(spec) if spec.filesystem_tier else None, self_describing=spec.publisher is not None
        )

    def vllm_args(self, spec: ServerSpec, model: list[str], tp: str, kv: list[str]) -> list[str]:
        if spec.disaggregated:
            return pd_args(spec, model, tp, kv, PD_BLOCK_TOKENS)
        extra = ["--disable-hybrid-kv-cache-manager"] if spec.model.hybrid_attention else []
        return vllm_layout(spec, model, tp, kv, extra)

    def command(self, spec: ServerSpec, args: list[str]) -> tuple[list[str], list[str]]:
        if spec.accelerator.rocm_swap_patch and not spec.filesystem_tier and spec.cpu_tier_bytes:  # loads from CPU
            old, new = ROCM_SWAP_THRESHOLD
            pattern = old.replace("*", "\\*")  # a literal `*` in the sed pattern
            patch = (
                f"sed -i 's/THRESHOLD_BYTES = {pattern}/THRESHOLD_BYTES = {new}/' {ROCM_SWAP_KERNEL}"
                ' || echo "WARNING: Triton threshold patch skipped; the fast CPU-to-GPU load path may not engage"'
            )
            return ["/bin/bash", "-c"], [f"{patch}; exec vllm serve {shlex.join(args)}"]
        return super().command(spec, args)

    def env(self, spec: ServerSpec) -> list[Manifest]:
        if spec.disaggregated:  # one hash seed on every engine of both pools (and on the shared tier)
            return [env_var("PYTHONHASHSEED", PD_HASH_SEED), *nixl_env()]
        if spec.filesystem_tier:  # every pod must hash blocks alike to share the filesystem tier
            return [env_var(labels.HASH_SEED_ENV, labels.KV_HASH_SEED)]
        return []

    def volumes(self, spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
        if not spec.filesystem_tier:
            return [], []
        volumes = [empty_dir("workspace"), empty_dir("pip-user-site")]
        mounts: list[Manifest] = [
            {"name": "workspace", "mountPath": "/workspace"},
            {"name": "pip-user-site", "mountPath": "/.local"},
        ]
        tier_volumes, tier_mounts = shared_tier_volumes(spec)
        return volumes + tier_volumes, mounts + tier_mounts


NATIVE = Native()
