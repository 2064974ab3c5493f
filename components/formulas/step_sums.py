"""Sums of engine step times over a decode-only stretch, in closed form: each step's time is the larger of two
lines in the step's index (its attention's FLOPs and its KV reads, each growing with the context), so a stretch
of k steps sums without stepping (components/formulas/serving_time.py `Engine._decode_stretch`)."""

from __future__ import annotations

import math


def line_sum(k: int, a: float, b: float) -> float:
    return k * a + b * k * (k - 1) / 2


def stretch_seconds(k: int, a1: float, b1: float, a2: float, b2: float) -> float:
    """sum over i < k of max(a1 + b1 i, a2 + b2 i): before the lines cross, the one higher at 0; after, the
    one higher at the end."""
    if k <= 0:
        return 0.0
    split = 0 if b1 == b2 else min(k, max(0, math.ceil((a2 - a1) / (b1 - b2))))
    before = line_sum(split, a1, b1) if a1 >= a2 else line_sum(split, a2, b2)
    rest, last = k - split, k - 1
    a1s, a2s = a1 + b1 * split, a2 + b2 * split
    after = line_sum(rest, a1s, b1) if a1 + b1 * last >= a2 + b2 * last else line_sum(rest, a2s, b2)
    return before + after


def steps_to_reach(span: float, a1: float, b1: float, a2: float, b2: float, most: int) -> int:
    """The fewest steps (at least 1, at most `most`) whose summed time reaches `span`."""
    if span <= 0 or stretch_seconds(1, a1, b1, a2, b2) >= span:
        return 1
    low, high = 1, most  # sum(low) < span; find the smallest k with sum(k) >= span
    if stretch_seconds(high, a1, b1, a2, b2) < span:
        return most
    while high - low > 1:
        mid = (low + high) // 2
        if stretch_seconds(mid, a1, b1, a2, b2) >= span:
            high = mid
        else:
            low = mid
    return high
