"""The shared tier's evictor sizing (components/formulas/shared_tier_capacity.py) at its boundaries, the plan's
use of it, and the config's hostile values."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.formulas import shared_tier_capacity as f
from components.units import GiB, MiB
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.config.storage_section import EvictorSettings
from stacks.planning.plan import plan

C = 9000 * GiB
F = 32 * MiB
RATE = f.StoreRate(1e9, "test")  # 1 GB/s


def test_upper_bound_store_rate_is_replicas_times_prefill_times_kv() -> None:
    rate = f.upper_bound_store_rate(2, 1 / 10_000, 262_144, 10_000)
    assert rate.bytes_per_second == 2 * 10_000 * 262_144
    assert rate.upper_bound and "upper bound, no workload: 2 replicas x 10,000 prefill tokens/s" in rate.source


def test_derived_watermarks_hold_each_bound_with_the_margin() -> None:
    c = f.derive(C, RATE, 2000, F, 10.0)
    assert (c.files_when_full, c.scan_seconds) == (288_000, 144.0)
    # high = 1 - 2 x 1e9 x 154 / C = 96.8% -> capped at 95%; low = 95% - 2 x 1e9 x 144 / C = 92.0% -> 92%
    assert (c.high, c.low, c.margin) == (0.95, 0.92, 2.0)
    assert c.headroom_seconds >= 2 * (10 + 144) and c.refill_seconds >= 2 * 144
    assert c.problems() == []
    assert c.fill_seconds == pytest.approx(C / 1e9)


def test_a_faster_store_rate_lowers_both_watermarks() -> None:
    c = f.derive(C, f.StoreRate(7.65e9, "t"), 2000, F, 10.0)
    assert (c.high, c.low) == (0.75, 0.52)  # gpu-vllm-native-fs's figures (summary golden)


def test_without_room_for_the_margin_it_derives_with_none_then_falls_back() -> None:
    no_margin = f.derive(C, f.StoreRate(20e9, "t"), 2000, F, 10.0)
    assert no_margin.margin == 1.0 and no_margin.problems() == []
    fallback = f.derive(C, f.StoreRate(40e9, "t", upper_bound=True), 2000, F, 10.0)
    assert (fallback.high, fallback.low, fallback.margin) == (0.85, 0.70, None)
    assert fallback.problems() and f.derived_problem(fallback)


def test_given_watermarks_are_held_to_the_same_bounds_on_both_sides() -> None:
    # one scan at 1 GB/s is 144 GB: 1.5% of C. 93% -> 91% leaves 2% (enough), 93% -> 92% leaves 1% (not).
    assert f.given(C, RATE, 2000, F, 0.93, 0.91, 10.0).problems() == []
    short = f.given(C, RATE, 2000, F, 0.93, 0.92, 10.0).problems()
    assert len(short) == 1 and "less than one 2 min scan" in short[0]
    # above high: P + T = 154 s of stores is 154 GB = 1.6% of C: 98% leaves 2% (enough), 99% leaves 1% (not)
    assert f.given(C, RATE, 2000, F, 0.98, 0.90, 10.0).problems() == []
    assert "the tier fills first" in f.given(C, RATE, 2000, F, 0.99, 0.90, 10.0).problems()[0]


def test_a_scan_that_cannot_delete_as_fast_as_blocks_arrive_is_a_problem() -> None:
    slow = f.given(C, f.StoreRate(1e9, "t"), 20, F, 0.9, 0.5, 10.0)  # 30 block files/s stored, 20 deleted
    assert any("fewer than the 30 block files/s stored" in p for p in slow.problems())


def test_the_candidates_kept_bound_memory_by_one_pass() -> None:
    c = f.derive(C, RATE, 2000, F, 10.0)
    room = (c.high - c.low) * C + 1e9 * c.scan_seconds
    assert c.files_per_pass == -(-int(room) // F)
    assert c.max_candidates == -(-int(1.25 * c.files_per_pass * 1) // 1)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"high_watermark": 60, "low_watermark": 80}, "must be below high_watermark"),
        ({"high_watermark": 80, "low_watermark": 80}, "must be below high_watermark"),
        ({"high_watermark": 101, "low_watermark": 60}, "less than or equal to 100"),
        ({"high_watermark": 0, "low_watermark": 0}, "greater than 0"),
        ({"high_watermark": 80, "low_watermark": -5}, "greater than 0"),
        ({"high_watermark": 80}, "set both watermarks, or neither"),
        ({"low_watermark": 60}, "set both watermarks, or neither"),
        ({"scan_rate": 0}, "greater than or equal to 10"),
    ],
)
def test_hostile_watermarks_are_refused(kw: dict[str, float], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        EvictorSettings(**kw)


def test_a_low_watermark_leaving_less_room_than_a_scan_is_refused_by_the_plan() -> None:
    ok = ["storage.evictor.high_watermark=75", "storage.evictor.low_watermark=52"]
    assert plan(loading.load_preset("gpu-vllm-native-fs", ok)).shared_tier is not None
    with pytest.raises(ConfigError, match="less than one 2 min scan"):
        plan(loading.load_preset("gpu-vllm-native-fs", [ok[0], "storage.evictor.low_watermark=70"]))


def test_the_plan_derives_the_evictor_for_a_filesystem_tier_only() -> None:
    fs = plan(loading.load_preset("gpu-vllm-native-fs"))
    assert fs.shared_tier is not None and fs.shared_tier.managed
    assert "tier-evictor" in fs.workloads and "TieredCacheSharedTierAboveHighWatermark" in [a.name for a in fs.alerts]
    cpu = plan(loading.load_preset("gpu-vllm-native-cpu"))
    assert cpu.shared_tier is None and "tier-evictor" not in cpu.workloads
    off = plan(loading.load_preset("gpu-vllm-native-fs", ["storage.evictor.mode=off"]))
    assert off.shared_tier is not None and not off.shared_tier.managed and "tier-evictor" not in off.workloads
