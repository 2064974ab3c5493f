"""`./run bench`'s tier replay on its own configurations: the bench is not run in CI, and a planning change left it
stopping at a refusal (the conversation trace outgrew the presets' two replicas) and then at its own check (the
plan's curve routed by the time model, the bench's one-pass replay by the in-flight estimate). Here each preset it
replays plans on the trace, and the one-pass replay the bench times gives the plan's curve."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers import script_module

ROOT = Path(__file__).resolve().parents[1]


BENCH = script_module("tier_replay_bench", ROOT / "benchmarks" / "tier_replay.py")


@pytest.mark.parametrize("name", [name for name, _, _ in BENCH.PRESETS])
def test_the_bench_plans_each_preset_on_the_trace_and_replays_the_plans_curve(name: str) -> None:
    sized, timed, seconds = BENCH.planned_curve(name)
    assert sized.shape.replicas >= 1 and seconds > 0
    assert timed.assignment == sized.curve.assignment
    assert np.array_equal(timed.hit_tokens, sized.curve.hit_tokens)
