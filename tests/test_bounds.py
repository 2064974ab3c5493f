"""Every cap, floor, ceiling and min/max of the sizing and payoff arithmetic, on both of its sides.

Each test sits a value exactly on a rounding or capping boundary, then one unit (a byte, a token, a
pod) beside it, so a floor that becomes a ceiling, a `<` that becomes `<=` or a dropped cap fails.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from components.catalog.accelerators import ACCELERATORS, AcceleratorProfile
from components.catalog.models import MODELS
from components.catalog.rates import HostLink, PrefillEfficiency
from components.formulas import payoff as formulas
from components.specs import lmcache, mooncake, sizing
from components.specs.connectors import lmcache_connector, mooncake_store, native, sglang_hicache, tpu_offload
from components.specs.connectors.sglang_hicache import HiCacheSizes
from components.specs.connectors.tpu_offload import TPUOffloadSizes
from components.specs.payoff_table import TierPayoff, seconds
from components.units import GB, ByteSize, GiB

MODEL = MODELS["Qwen/Qwen3-32B"]
GPU, TPU = ACCELERATORS["gpu"], ACCELERATORS["tpu-v6"]


def _runtime(ranks: int, accelerator: AcceleratorProfile = GPU) -> int:
    return (accelerator.host_memory_base_gib + accelerator.host_memory_per_rank_gib * ranks) * GiB


# ---- sizing: ceilings to GiB


def test_dev_shm_is_the_tier_and_headroom_rounded_up_to_a_gib() -> None:
    exact = native.size_cpu_tier(MODEL, GPU, 2, ByteSize(100 * GiB))
    assert exact.shm_size_limit == ByteSize(108 * GiB)
    over = native.size_cpu_tier(MODEL, GPU, 2, ByteSize(100 * GiB + 1))
    assert over.shm_size_limit == ByteSize(109 * GiB)
    assert over.pod_memory == ByteSize(_runtime(2) + 109 * GiB)


def test_pod_memory_rounds_up_to_a_gib_and_no_further() -> None:
    exact = lmcache_connector.size_tiers(MODEL, GPU, 2, ByteSize(100 * GiB), None)
    assert exact.pod_memory == ByteSize(_runtime(2) + 100 * GiB + sizing.SHM_HEADROOM.bytes)
    over = lmcache_connector.size_tiers(MODEL, GPU, 2, ByteSize(100 * GiB + 1), None)
    assert over.pod_memory == exact.pod_memory + ByteSize(GiB)


# ---- sizing: per-rank floors


def test_lmcache_splits_the_tier_over_ranks_rounding_down() -> None:
    sized = lmcache_connector.size_tiers(MODEL, GPU, 2, ByteSize(3), ByteSize(5))
    assert sized.sizes == lmcache_connector.LMCacheSizes(cpu_per_rank=ByteSize(1), disk_per_rank=ByteSize(2))
    alone = lmcache_connector.size_tiers(MODEL, GPU, 2, ByteSize(4), None)
    assert alone.sizes == lmcache_connector.LMCacheSizes(ByteSize(2), None)


@pytest.mark.parametrize(("tier", "per_rank_gb"), [(400 * GB - 2, 199), (400 * GB, 200), (400 * GB + 2, 200)])
def test_hicache_holds_whole_gb_per_rank_rounding_down(tier: int, per_rank_gb: int) -> None:
    sized = sglang_hicache.size_host_pool(MODEL, GPU, 2, ByteSize(tier))
    assert sized.sizes == HiCacheSizes(per_rank_gb)
    assert sized.cpu_tier_per_pod == ByteSize(per_rank_gb * GB * 2)


@pytest.mark.parametrize(("extra", "chunks"), [(-1, 9), (0, 10), (1, 10)])
def test_tpu_chunks_are_whole_blocks_rounding_down(extra: int, chunks: int) -> None:
    block = MODEL.kv_bytes_per_token.bytes * TPU.kv_block_tokens
    sized = tpu_offload.size_chunks(MODEL, TPU, 8, ByteSize(block * 10 + extra))
    assert sized.sizes == TPUOffloadSizes(chunks)
    assert sized.cpu_tier_per_pod == ByteSize(block * chunks)


def test_a_multi_host_tpu_replica_splits_its_tier_and_ranks_and_adds_dev_shm() -> None:
    block = MODEL.kv_bytes_per_token.bytes * TPU.kv_block_tokens
    one = tpu_offload.size_chunks(MODEL, TPU, 8, ByteSize(block * 10), hosts=1)
    assert one.shm_size_limit is None
    assert one.pod_memory == ByteSize(_runtime(8, TPU) + block * 10).ceil_to(GiB)
    two = tpu_offload.size_chunks(MODEL, TPU, 8, ByteSize(block * 10), hosts=2)
    assert two.shm_size_limit == sizing.SHM_HEADROOM
    assert two.pod_memory == ByteSize(_runtime(4, TPU) + block * 5 + sizing.SHM_HEADROOM.bytes).ceil_to(GiB)


def test_mooncake_segments_are_the_pods_tier_over_its_ranks() -> None:
    sized = mooncake_store.size_embedded(MODEL, GPU, 2, 3, ByteSize(80 * GiB))
    assert sizing.sizes_of(mooncake_store.MooncakeSizes, sized).segment == ByteSize(40 * GiB)
    assert sized.cpu_tier_per_pod == ByteSize(240 * GiB)


def test_mooncake_sizes_are_whole_gib() -> None:
    assert mooncake.mooncake_text(ByteSize(40 * GiB)) == "40GB"
    with pytest.raises(ValueError, match="not a whole number of GiB"):
        mooncake.mooncake_text(ByteSize(40 * GiB + 1))


# ---- sizing: the Mooncake Client, one per node


@pytest.mark.parametrize(("replicas", "nodes"), [(2, 1), (3, 2), (4, 2), (5, 3)])
def test_mooncake_clients_are_the_nodes_the_pods_need_rounding_up(replicas: int, nodes: int) -> None:
    client = mooncake_store.client_of(
        mooncake_store.size_standalone(MODEL, GPU, 4, replicas, ByteSize(80 * GiB), ByteSize(GiB))
    )
    assert client is not None
    assert client.nodes == nodes == math.ceil(replicas * 4 / GPU.devices_per_node)


def test_the_mooncake_clients_request_rounds_up_and_its_limit_adds_the_shm() -> None:
    exact = mooncake.mooncake_client(ByteSize(80 * GiB), ByteSize(GiB), 1)
    assert (exact.memory_request, exact.memory_limit) == (ByteSize(82 * GiB), ByteSize(84 * GiB))
    over = mooncake.mooncake_client(ByteSize(80 * GiB + 1), ByteSize(GiB), 1)
    assert (over.memory_request, over.memory_limit) == (ByteSize(83 * GiB), ByteSize(85 * GiB))


def test_the_lmcache_servers_request_and_limit_round_up() -> None:
    assert lmcache.server_memory(ByteSize(100 * GiB)) == (ByteSize(105 * GiB), ByteSize(158 * GiB))  # 157.5 up
    assert lmcache.server_memory(ByteSize(100 * GiB + 1)) == (ByteSize(106 * GiB), ByteSize(159 * GiB))


# ---- payoff: the filesystem share is the smallest of its caps


def test_the_filesystem_share_is_the_smallest_of_share_client_and_path() -> None:
    share = formulas.filesystem_share
    assert share(12.0, 3, None) == 4.0
    assert share(12.0, 3, 5.0, 6.0) == 4.0  # the pods' share
    assert share(12.0, 3, 3.0, 6.0) == 3.0  # the per-client limit
    assert share(12.0, 3, 5.0, 2.0) == 2.0  # the path onward (the CPU tier)
    assert share(12.0, 3, None, 2.0) == 2.0


def test_a_tier_exactly_at_break_even_beats_recompute() -> None:
    assert TierPayoff("t", 5.0, "").beats(5.0) is True
    assert TierPayoff("t", 5.0, "").beats(5.000001) is False
    assert TierPayoff("t", None, "").beats(5.0) is None


def test_the_longest_prefix_leaves_room_for_the_suffix() -> None:
    assert formulas.longest_prefix(MODEL) == MODEL.context_tokens - formulas.SUFFIX_TOKENS
    assert formulas.table_lengths(MODEL, MODEL.context_tokens) == (1_024, 10_000, 32_768, 40_832)
    assert formulas.table_lengths(MODEL, 40_831) == (1_024, 10_000, 32_768, 40_831)


# ---- payoff: the terms of the arithmetic


def _replica(devices_per_pod: int = 2, pods: int = 1) -> formulas.Replica:
    return formulas.Replica(MODEL, ACCELERATORS["gpu"].rates, devices_per_pod, pods)


def test_causal_attention_counts_half_the_new_tokens_square() -> None:
    per_pair = formulas.ATTENTION_FLOPS_PER_PAIR * MODEL.layers * MODEL.attention_width
    assert formulas.attention_flops(MODEL, 2) == per_pair * 2
    assert formulas.attention_flops(MODEL, 1, cached=10) == per_pair * 10.5


def test_a_multi_host_replica_splits_its_kv_and_its_blocks_over_every_device() -> None:
    kv = MODEL.kv_bytes_per_token.bytes
    assert _replica(4, pods=2).kv_bytes_per_pod == kv / 2
    assert formulas.transfer_block_bytes(_replica(4, pods=2), 256) == 256 * kv // 8
    assert formulas.transfer_block_bytes(_replica(4, pods=1), 256) == 256 * kv // 4


def test_a_miss_prefills_the_prefix_and_the_suffix() -> None:
    replica = _replica()
    assert formulas.miss_seconds(replica, 10_000) == formulas.prefill_seconds(replica, 10_000 + formulas.SUFFIX_TOKENS)
    assert formulas.hit_seconds(replica, 10_000, 1e9) == pytest.approx(
        10_000 * replica.kv_bytes_per_pod / 1e9 + formulas.prefill_seconds(replica, formulas.SUFFIX_TOKENS, 10_000)
    )


# ---- rates: the curves' edges


def test_a_host_link_block_takes_the_rate_measured_at_or_below_it() -> None:
    link = HostLink("l", ((100, 1.0), (200, 2.0), (400, 4.0)), "s")
    assert link.bandwidth(99) == 1.0  # below the first point: the first point's
    assert link.bandwidth(100) == 1.0
    assert link.bandwidth(199) == 1.0
    assert link.bandwidth(200) == 2.0
    assert link.bandwidth(10_000) == 4.0


def test_the_gemm_share_is_interpolated_in_log_size_and_held_at_the_ends() -> None:
    curve = PrefillEfficiency(((1024, 0.2), (4096, 0.6)), 0.5, "s")
    assert curve.gemm_at(512) == 0.2
    assert curve.gemm_at(1024) == 0.2
    assert curve.gemm_at(2048) == pytest.approx(0.4)  # halfway in log(size)
    assert curve.gemm_at(4096) == pytest.approx(0.6)
    assert curve.gemm_at(8192) == 0.6


# ---- the summary's time units switch exactly at a millisecond and a second


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.000999, "999.0 µs"), (0.001, "1.0 ms"), (0.999, "999.0 ms"), (1.0, "1.00 s")],
)
def test_seconds_change_unit_at_the_boundary(value: float, text: str) -> None:
    assert seconds(value) == text


def test_sizing_the_model_of_another_context_caps_its_lengths() -> None:
    short = dataclasses.replace(MODEL, context_tokens=8_192)
    assert formulas.table_lengths(short, 10_000) == (1_024, 8_064)
