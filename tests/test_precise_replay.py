"""The plan's precise routing: the router scores what each replica's tiers hold in the replay, held here to a replay
written out by hand (what each replica holds, request by request), beside the approximate router on the same trace;
and `./run size` printing both routings side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.formulas.capacity_replay import replay
from components.formulas.load_costs import LoadCosts
from components.formulas.replica_routing import HeldTiers, Router, ServiceRates, Weights
from components.formulas.requests import Request
from components.formulas.serving_time import EngineCosts
from components.formulas.stack_distance import LRU
from components.formulas.tier_caches import TierCaches
from components.formulas.tier_shape import Tiers
from stacks.__main__ import size_lines
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.planning.workload.routing_weights import routing_of

# Two replicas, 4-token blocks, 3 blocks of HBM and 4 of CPU tier each (inclusive); every request has one output
# block (4 output tokens) but R6, which has three. Arrivals 10 s apart: every request is done before the next.
TIERS = Tiers(block_tokens=4, replicas=2, hbm_blocks=3)
CPU_BLOCKS = 4
PROMPTS = [(1, 2), (3, 4), (1, 2, 5), (1, 2, 6), (3, 4, 7), (8, 9, 10), (8, 9, 11), (8, 9, 12)]
OUTPUTS = [4, 4, 4, 4, 4, 12, 4, 4]
TRACE = [Request(10_000 * i, 4 * len(ids), out, ids) for i, (ids, out) in enumerate(zip(PROMPTS, OUTPUTS, strict=True))]
# Only the prefix scorer (the precise one at weight 1, or approximate's two) and the no-hit LRU scorer, so each pick
# follows from what is held; ties go to the lowest replica.
PRECISE = Weights(queue=0, kv_utilization=0, hbm_prefix=1, cpu_prefix=0, no_hit_lru=1)
APPROXIMATE = Weights(queue=0, kv_utilization=0, hbm_prefix=1, cpu_prefix=1, no_hit_lru=1)
CPU_WEIGHT = 0.5

# By hand. Output blocks are -1, -2, ... in order; each tier is an LRU listed oldest first; a request's blocks are
# looked up and touched one by one (prompt, then output), so a block one touch evicts from HBM is found on the CPU
# tier. Per request: the replica, (HBM, CPU) prompt tokens found, and after it (HBM 0, CPU 0, HBM 1, CPU 1).
# R1, R2: nothing held anywhere (cold): the no-hit LRU scorer takes r0, then r1.
# R3 (1 2 5): r0 holds 1 2 in HBM, 2/3; served 1 2 from HBM.
# R4 (1 2 6): r0 holds 1 on CPU (0.5) and 2 in HBM (1): 1.5/3; touching 1 evicts 2 from HBM: both from CPU.
# R5 (3 4 7): r1 holds 3 4 in HBM.
# R6 (8 9 10): cold: r0 (the no-hit LRU's turn); its three output blocks flush r0's HBM and all but 10 of its CPU.
# R7 (8 9 11): r0's tiers hold neither 8 nor 9 (the approximate router's index still says they do): cold, r1.
# R8 (8 9 12): r1 holds 8 on CPU (0.5), 9 in HBM (1); touching 8 evicts 9 from HBM: both from CPU.
BY_HAND = [
    (0, (0, 0), ([1, 2, -1], [1, 2, -1], [], [])),
    (1, (0, 0), ([1, 2, -1], [1, 2, -1], [3, 4, -2], [3, 4, -2])),
    (0, (8, 0), ([2, 5, -3], [1, 2, 5, -3], [3, 4, -2], [3, 4, -2])),
    (0, (0, 8), ([2, 6, -4], [1, 2, 6, -4], [3, 4, -2], [3, 4, -2])),
    (1, (8, 0), ([2, 6, -4], [1, 2, 6, -4], [4, 7, -5], [3, 4, 7, -5])),
    (0, (0, 0), ([-6, -7, -8], [10, -6, -7, -8], [4, 7, -5], [3, 4, 7, -5])),
    (1, (0, 0), ([-6, -7, -8], [10, -6, -7, -8], [9, 11, -9], [8, 9, 11, -9])),
    (1, (0, 8), ([-6, -7, -8], [10, -6, -7, -8], [9, 12, -10], [8, 9, 12, -10])),
]
# The approximate router on the same trace: the same picks up to R6; at R7 its index for r0 (the prompts it sent
# there: 8 9 10, never the output blocks) still says r0 holds 8 9, and it sends R7 and R8 there.
APPROXIMATE_PICKS = [0, 1, 0, 0, 1, 0, 0, 0]


def _costs() -> EngineCosts:
    return EngineCosts(
        gemm_s_per_token=1e-4,
        attention_s_per_pair=0.0,
        weights_read_s=1e-3,
        kv_read_s_per_token=0.0,
        load=LoadCosts(1e-6, 1e-6),
        max_batched_tokens=64,
        max_seqs=8,
        kv_tokens=1_000,
    )


def _replay(requests: list[Request], weights: Weights, precise: bool) -> tuple[list[int], int, int]:
    out = replay(
        requests,
        TIERS,
        CPU_BLOCKS,
        0,
        _costs(),
        weights=weights,
        routing_cpu_blocks=CPU_BLOCKS,
        rates=ServiceRates(1_000.0, 0.01),
        precise=(1.0, CPU_WEIGHT) if precise else None,
    )
    return list(out.assignment), out.hbm_tokens, out.cpu_tokens


def test_the_precise_replay_routes_and_finds_as_by_hand_request_by_request() -> None:
    """The replay of the first k requests, for every k: its last pick and what that request found are the hand's."""
    found_before = (0, 0)
    for k, (replica, found, _) in enumerate(BY_HAND, start=1):
        picks, hbm, cpu = _replay(TRACE[:k], PRECISE, precise=True)
        assert picks[-1] == replica, f"R{k}"
        assert (hbm - found_before[0], cpu - found_before[1]) == found, f"R{k}"
        found_before = (hbm, cpu)
    assert picks == [replica for replica, _, _ in BY_HAND]


def test_the_tiers_hold_what_the_hand_says_after_every_request() -> None:
    """What the precise router reads (`HeldTiers` over the replay's `TierCaches`), request by request."""
    caches = TierCaches(TIERS, CPU_BLOCKS, 0)
    held = HeldTiers(caches.hbm, caches.cpus, 1.0, CPU_WEIGHT)
    for k, (request, (replica, found, after)) in enumerate(zip(TRACE, BY_HAND, strict=True), start=1):
        assert tuple(caches.serve(request, replica, 3 if k == 6 else 1)[:2]) == found, f"R{k}"
        now = (caches.hbm[0], caches.cpus[0], caches.hbm[1], caches.cpus[1])
        assert [list(lru.blocks) for lru in now] == list(after), f"R{k}"
    # What R8's pick read, before it was served: r1 held 8 on the CPU tier and 9 in HBM, r0 nothing.
    before_r8 = TierCaches(TIERS, CPU_BLOCKS, 0)
    for k, (request, (replica, _, _)) in enumerate(zip(TRACE[:7], BY_HAND, strict=False), start=1):
        before_r8.serve(request, replica, 3 if k == 6 else 1)
    reading = HeldTiers(before_r8.hbm, before_r8.cpus, 1.0, CPU_WEIGHT)
    assert [reading.prefix(PROMPTS[7], r) for r in (0, 1)] == [(0, 0.0), (2, 1.5)]
    assert held.prefix((), 0) == (0, 0.0)


def test_the_approximate_router_follows_its_own_index_past_what_the_server_evicted() -> None:
    picks, _, _ = _replay(TRACE, APPROXIMATE, precise=False)
    assert picks == APPROXIMATE_PICKS
    precise, _, _ = _replay(TRACE, PRECISE, precise=True)
    assert [k + 1 for k, (a, p) in enumerate(zip(picks, precise, strict=True)) if a != p] == [7, 8]


def test_a_medium_counts_its_highest_weight_and_a_tier_without_events_is_not_held() -> None:
    hbm, cpu = LRU(4), LRU(4)
    for block in (1, 2):
        hbm.touch(block)
    for block in (1, 2, 3):
        cpu.touch(block)
    assert HeldTiers([hbm], [cpu], 1.0, 0.25).prefix((1, 2, 3, 4), 0) == (3, 2.25)  # 1 and 2 at HBM's 1
    assert HeldTiers([hbm], [cpu], 1.0, None).prefix((1, 2, 3, 4), 0) == (2, 2.0)  # the CPU tier unreported
    assert HeldTiers([hbm], [cpu], 1.0, 0.25).prefix((3, 4, 1), 0) == (1, 0.25)  # 3 on the CPU tier alone, 4 nowhere
    assert HeldTiers([hbm], [cpu], 0.5, 0.75).prefix((1,), 0) == (1, 0.75)  # on both: the higher weight
    with pytest.raises(ValueError, match="each of the 2 replicas' own HBM and CPU tier"):
        Router(2, 3, 4, ServiceRates(1_000.0, 0.01), PRECISE, HeldTiers([hbm], [cpu], 1.0, 0.5))
    with pytest.raises(ValueError, match="own CPU tier, not a pool"):
        replay(
            TRACE,
            Tiers(4, 2, 3, "inclusive", "pooled"),
            CPU_BLOCKS,
            0,
            _costs(),
            weights=PRECISE,
            routing_cpu_blocks=CPU_BLOCKS,
            rates=ServiceRates(1_000.0, 0.01),
            precise=(1.0, CPU_WEIGHT),
        )


def test_the_replay_reads_the_precise_weights_the_router_renders() -> None:
    """The precise preset's producer weighs gpu 1 and cpu 0.953 (its derived CPU-tier weight): the replay reads both
    from the rendered values; an unlisted medium counts 1, as llm-d-kv-cache's scorer counts it."""
    routing = routing_of(plan(loading.load_named("gpu-vllm-native-cpu-precise", [])).router_values)
    assert routing.media == (("gpu", 1.0), ("cpu", 0.953))
    assert routing.medium_weight("cpu") == 0.953 and routing.medium_weight("disk") == 1.0
    assert routing.medium_weight(None) is None
    approximate = routing_of(plan(loading.load_named("gpu-vllm-native-cpu", [])).router_values)
    assert approximate.media is None and not approximate.precise


def _small_trace(tmp_path: Path) -> str:
    """40 requests over 4 conversations of growing prompts (512-token blocks), 2 s apart."""
    lines = []
    for i in range(40):
        conversation, turn = i % 4, i // 4
        ids = [1000 * conversation + b for b in range(2 + turn)]
        lines.append(
            f'{{"timestamp": {2000 * i}, "input_length": {512 * len(ids)}, "output_length": 64, "hash_ids": {ids}}}'
        )
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_size_prints_approximate_and_precise_side_by_side(tmp_path: Path) -> None:
    trace = _small_trace(tmp_path)
    for name, rendered in (("gpu-vllm-native-cpu", "approximate"), ("gpu-vllm-native-cpu-precise", "precise")):
        lines = size_lines(name, [], trace, None)
        at = lines.index("## Prefix routing: approximate vs precise")
        rows = [line for line in lines[at:] if line.startswith(("| approximate", "| precise"))]
        assert [row.split(" |")[0] for row in rows] == [
            "| approximate" + (" (rendered)" if rendered == "approximate" else ""),
            "| precise" + (" (rendered)" if rendered == "precise" else ""),
        ]
        assert any(line.startswith("Precise against approximate: prompt hits ") for line in lines[at:])


def test_size_names_why_a_connector_is_not_compared_under_precise(tmp_path: Path) -> None:
    """MooncakeStore's pool reports its stores, not what its master evicts: the precise row is that one line."""
    lines = size_lines("gpu-vllm-mooncake-store-cpu", [], _small_trace(tmp_path), None)
    (row,) = [line for line in lines if line.startswith("| precise")]
    assert row.startswith("| precise | refused: router.prefix_routing: cache.connector mooncake-store: its CPU tier")
    assert not any(line.startswith("Precise against approximate") for line in lines)
