"""Tier replay timings and memory, printed (not asserted), on the Mooncake conversation fixture: Qwen3-32B as
gpu-vllm-native-cpu plans it, and as gpu-vllm-native-fs (with its filesystem grid), each on the replicas its
capacity plan picks for the trace (`cache.replicas: auto`: the presets' two do not keep up with it).

For each: the one-pass curve's time (reading the trace included) and its peak memory (a fresh process:
peak RSS less the RSS before the replay, the trace once and three times back to back), then at a few grid
points `lru_replay.replay_at` with the curve's routing (it must give the curve's numbers: "equal") and with
live routing at that size (how far deciding the routing once lies), and the replays' summed time against
the curve's.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.formulas.lru_replay import replay_at  # noqa: E402
from components.formulas.requests import Request  # noqa: E402
from components.formulas.tier_replay import Curve, assigned  # noqa: E402
from stacks.config import StackConfig, loading  # noqa: E402
from stacks.config.workload_trace import read_trace  # noqa: E402
from stacks.planning.plan import plan  # noqa: E402
from stacks.planning.workload import workload_sizing  # noqa: E402
from stacks.planning.workload.tier_curve import UNBOUNDED_BLOCKS, TierCurve  # noqa: E402
from stacks.planning.workload.workload_source import WorkloadSource  # noqa: E402
from stacks.planning.workload_plan import ROUTED_BY_TIME_MODEL, stack_shape  # noqa: E402

TRACE = "tests/fixtures/workloads/mooncake-conversation/conversation_trace_40k.jsonl"
PRESETS = (("gpu-vllm-native-cpu", 5, 0), ("gpu-vllm-native-fs", 2, 3))  # CPU sizes, fs sizes replayed
FIELDS = ("hbm_tokens", "cpu_tokens", "fs_tokens", "recomputed_tokens", "cpu_stored_blocks", "fs_stored_blocks")


def _requests(copies: int = 1) -> Iterator[Request]:
    """The fixture, `copies` times back to back (later copies shifted past the first's last arrival)."""
    shift = 0
    for _ in range(copies):
        last = 0
        for request in read_trace(ROOT / TRACE, 512, source="bench"):
            last = request.timestamp_ms
            yield replace(request, timestamp_ms=request.timestamp_ms + shift)
        shift += last + 1


def _config(name: str) -> StackConfig:
    return loading.load_named(name, [f"workload.trace={TRACE}", "cache.replicas=auto"])


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def memory_child(name: str, copies: int, replicas: int) -> None:
    """In a fresh process: the plan without a workload at the bench's replica count (the shape the bench's plan
    gives, without its capacity search), then the replay alone; figures as JSON."""
    shape = stack_shape(plan(loading.load_named(name, [f"cache.replicas={replicas}"])))
    source = WorkloadSource("bench", 512, lambda: _requests(copies))
    before = _rss_kib()
    start = time.perf_counter()
    workload_sizing.size_tiers(shape, source)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"before_kib": before, "peak_kib": peak, "seconds": seconds}))


def _memory(name: str, copies: int, replicas: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--memory", name, str(copies), str(replicas)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    figures: dict[str, float] = json.loads(out.splitlines()[-1])
    return figures


def _share(result: Curve, i: int, j: int) -> float:
    return float(result.share(result.hit_tokens)[i, j])


def _spread(indexes: list[int], count: int, keep: int) -> list[int]:
    """About `count` of `indexes`, evenly spread, with `keep` (when it is one) in place of its nearest."""
    if len(indexes) <= count:
        return indexes
    step = (len(indexes) - 1) / (count - 1)
    picked = {indexes[round(k * step)] for k in range(count)}
    if keep in indexes and keep not in picked:
        picked = (picked - {min(picked, key=lambda p: abs(p - keep))}) | {keep}
    return sorted(picked)


def planned_curve(name: str) -> tuple[TierCurve, Curve, float]:
    """The preset's plan on the trace (its tier curve), and the one-pass curve replayed again as the plan routes it
    (by the time model's replay of the configured run), with that replay's seconds."""
    sized = plan(_config(name)).tier_curve
    if sized is None:
        raise ValueError(f"{name}: the plan replayed no workload")
    source = WorkloadSource("bench", 512, _requests)
    start = time.perf_counter()
    router = assigned(sized.curve.assignment)
    timed = workload_sizing.size_tiers(sized.shape, source, router, ROUTED_BY_TIME_MODEL).curve
    return sized, timed, time.perf_counter() - start


def bench(name: str, cpu_points: int, fs_points: int) -> None:
    sized, timed, curve_s = planned_curve(name)
    shape, one = sized.shape, sized.curve
    tiers, rates = one.tiers, workload_sizing.service_rates(shape)
    savings = workload_sizing._savings(shape)
    assert timed.assignment == one.assignment

    refs = sum(len(r.hash_ids) for r in _requests())
    print(
        f"## {name}: {tiers.replicas} replicas, HBM {tiers.hbm_blocks} blocks of {tiers.block_tokens} tokens,"
        f" {tiers.relation} {tiers.cpu_scope} CPU tier; grid {len(one.cpu_sizes)} CPU x {len(one.fs_sizes)} fs sizes"
    )
    print(
        f"trace: {one.requests:,} requests, {refs:,} prompt block references, working set"
        f" {one.working_set_blocks:,} blocks (output blocks included), {one.prompt_tokens:,} prompt tokens"
    )
    print(f"one-pass curve (trace read, routed, every size): {curve_s:.2f} s")
    for copies in (1, 3):
        m = _memory(name, copies, shape.replicas)
        growth = (m["peak_kib"] - m["before_kib"]) / 1024
        print(
            f"  peak memory, trace x{copies} in a fresh process: {growth:.0f} MiB over the"
            f" {m['before_kib'] / 1024:.0f} MiB before the replay ({m['seconds']:.1f} s)"
        )

    configured_cpu, configured_fs = sized.configured
    finite = [i for i, c in enumerate(one.cpu_sizes) if 0 < c < UNBOUNDED_BLOCKS]
    points = [(i, configured_fs) for i in _spread(finite, cpu_points, configured_cpu)]
    if fs_points:
        fs_finite = [j for j, f in enumerate(one.fs_sizes) if 0 < f < UNBOUNDED_BLOCKS]
        points += [(configured_cpu, j) for j in _spread(fs_finite, fs_points, configured_fs) if j != configured_fs]

    print()
    print(
        f"| {'CPU tier':>9} | {'fs tier':>9} | {'blocks (CPU, fs)':>17} | {'curve':>6} | {'same routing':>12}"
        f" | {'s':>5} | {'live routing':>12} | {'s':>5} | {'live - curve':>12} |"
    )
    print(f"|{'-' * 11}|{'-' * 11}|{'-' * 19}|{'-' * 8}|{'-' * 14}|{'-' * 7}|{'-' * 14}|{'-' * 7}|{'-' * 14}|")
    total = 0.0
    for i, j in points:
        cpu, fs = one.cpu_sizes[i], one.fs_sizes[j]
        start = time.perf_counter()
        same = replay_at(_requests(), tiers, cpu, fs, rates=rates, savings=savings, assignment=one.assignment)
        same_s = time.perf_counter() - start
        start = time.perf_counter()
        live = replay_at(_requests(), tiers, cpu, fs, rates=rates, savings=savings)
        live_s = time.perf_counter() - start
        total += same_s + live_s
        equal = all(getattr(same, f)[0, 0] == getattr(one, f)[i, j] for f in FIELDS)
        curve_share, live_share = _share(one, i, j), _share(live, 0, 0)
        fs_human = sized.fs_sizes[j].human() if sized.fs_sizes else "-"
        print(
            f"| {sized.cpu_sizes[i].human():>9} | {fs_human:>9} | {f'{cpu:,}, {fs:,}':>17} | {curve_share:6.2%}"
            f" | {'equal' if equal else 'DIFFERENT':>12} | {same_s:5.1f} | {live_share:12.2%} | {live_s:5.1f}"
            f" | {100 * (live_share - curve_share):+9.2f} pp |"
        )
    print()
    print(
        f"{2 * len(points)} brute-force replays: {total:.1f} s; the one-pass curve, {len(one.cpu_sizes)} x"
        f" {len(one.fs_sizes)} sizes: {curve_s:.1f} s ({total / curve_s:.1f}x faster than these {len(points)} points"
        " alone)"
    )
    print()


def main() -> None:
    if sys.argv[1:2] == ["--memory"]:
        memory_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    print("tier replay: hit share of prompt tokens, the one-pass curve against brute-force LRU replays\n")
    for name, cpu_points, fs_points in PRESETS:
        bench(name, cpu_points, fs_points)


if __name__ == "__main__":
    main()
