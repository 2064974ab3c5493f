"""Sizing against the seed's tables (Tiered Prefix Cache guide, "Deploy the llm-d Router")."""

import pytest

from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS
from components.specs.connectors.lmcache_connector import size_tiers as size_lmcache
from components.specs.connectors.native import NativeSizes
from components.specs.connectors.native import size_cpu_tier as size_native_cpu_tier
from components.specs.sizing import SHM_HEADROOM, router_lru_capacity, sizes_of
from components.units import GB, ByteSize, GiB, KiB

QWEN3_32B = MODELS["Qwen/Qwen3-32B"]
QWEN3_8B = MODELS["Qwen/Qwen3-8B"]


def test_kv_bytes_per_token_as_the_seed_states() -> None:
    assert QWEN3_32B.kv_bytes_per_token == ByteSize(256 * KiB)
    assert QWEN3_8B.kv_bytes_per_token == ByteSize(144 * KiB)


@pytest.mark.parametrize(
    ("overlay", "tier_per_pod", "model", "expected"),
    [
        ("NVIDIA vLLM native (default)", ByteSize(300 * GiB), QWEN3_32B, 19200),
        ("NVIDIA vLLM native, VARIANT=fs", ByteSize(100 * GiB), QWEN3_32B, 6400),
        ("AMD or Intel XPU vLLM native", ByteSize(100 * GiB), QWEN3_32B, 6400),
        ("NVIDIA or AMD vLLM lmcache-connector (100 GiB x 2 ranks)", ByteSize(100 * GiB) * 2, QWEN3_32B, 12800),
        # The seed's table rounds this row to 23800; the formula gives 23841.
        ("NVIDIA SGLang native (200 GB x 2 ranks)", ByteSize(200 * GB) * 2, QWEN3_32B, 23841),
        ("Intel XPU vLLM lmcache-connector (Qwen3-8B)", ByteSize(20 * GiB), QWEN3_8B, 2275),
    ],
)
def test_router_capacity_reproduces_the_seed_table(
    overlay: str, tier_per_pod: ByteSize, model: object, expected: int
) -> None:
    assert router_lru_capacity(tier_per_pod, model.kv_bytes_per_token) == expected  # type: ignore[attr-defined]


def test_capacity_rounds_down_so_the_router_never_overestimates() -> None:
    block = QWEN3_32B.kv_bytes_per_token.bytes * 64
    assert router_lru_capacity(ByteSize(block * 10 - 1), QWEN3_32B.kv_bytes_per_token) == 9
    assert router_lru_capacity(ByteSize(block * 10), QWEN3_32B.kv_bytes_per_token) == 10


def test_native_sizing_of_the_default_deployment() -> None:
    sizing = size_native_cpu_tier(QWEN3_32B, ACCELERATORS["gpu"], 2, ByteSize(300 * GiB))
    assert sizes_of(NativeSizes, sizing).cpu_bytes_to_use == ByteSize(322122547200)
    assert sizing.lru_capacity_per_server == 19200
    # The tier lives in /dev/shm, so /dev/shm holds it and the pod's memory holds /dev/shm.
    assert sizing.shm_size_limit is not None
    assert sizing.shm_size_limit.bytes >= sizing.cpu_tier_per_pod.bytes
    assert sizing.pod_memory.bytes >= sizing.shm_size_limit.bytes + sizing.host_runtime_memory.bytes
    assert sizing.pod_memory.bytes % GiB == 0


def test_memory_grows_with_tier_and_ranks() -> None:
    gpu = ACCELERATORS["gpu"]
    small = size_native_cpu_tier(QWEN3_32B, gpu, 2, ByteSize(100 * GiB))
    big = size_native_cpu_tier(QWEN3_32B, gpu, 2, ByteSize(300 * GiB))
    wide = size_native_cpu_tier(QWEN3_32B, gpu, 4, ByteSize(100 * GiB))
    assert big.pod_memory.bytes - small.pod_memory.bytes == 200 * GiB
    assert wide.pod_memory > small.pod_memory


def test_every_derivation_is_shown_with_its_inputs() -> None:
    sizing = size_native_cpu_tier(QWEN3_32B, ACCELERATORS["gpu"], 2, ByteSize(300 * GiB))
    rows = {d.name: d for d in sizing.derivations}
    assert rows["router `lruCapacityPerServer`"].value == "19200"
    assert rows["router `lruCapacityPerServer`"].formula == "floor(322122547200 / 16777216)"
    assert "64 layers" in rows["KV bytes per token"].formula


def test_dev_shm_headroom_is_in_the_shm_limit_and_the_pod_memory() -> None:
    """/dev/shm holds NCCL and torch buffers beside any tier in it, and every byte of it is pod memory."""
    gpu = ACCELERATORS["gpu"]
    native = size_native_cpu_tier(QWEN3_32B, gpu, 2, ByteSize(300 * GiB))
    assert native.shm_size_limit == ByteSize(308 * GiB)  # the 300 GiB tier + 8 GiB headroom
    assert native.pod_memory == native.host_runtime_memory + ByteSize(308 * GiB)
    assert native.pod_memory == ByteSize(340 * GiB)  # the seed default's 32 GiB runtime + 308 GiB
    lmcache = size_lmcache(QWEN3_32B, gpu, 2, ByteSize(100 * GiB), None)
    assert lmcache.shm_size_limit == SHM_HEADROOM == ByteSize(8 * GiB)
    assert lmcache.pod_memory == (lmcache.host_runtime_memory + ByteSize(100 * GiB) + SHM_HEADROOM).ceil_to(GiB)
