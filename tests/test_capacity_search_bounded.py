"""Work on a large workload says what it will replay, about how long, and each replay as it ends (stderr); the
capacity search replays no count it already has (round 5: a valid 300,000-request trace ran past 600 s with no word;
each scenario's search started with a replay at the stack's count, which, not keeping up, is the slowest replay, and
a plan whose CPU tier `auto` moved searched its HBM-only scenario again)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from components.formulas import capacity_replay
from components.formulas.requests import Request
from stacks.__main__ import main
from stacks.config import loading
from stacks.config.cache_section import MAX_REPLICAS
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from stacks.planning.workload import capacity_plan, replay_progress


def _trace(path: Path, requests: int = 60, gap_ms: int = 1000) -> Path:
    lines = [
        {"timestamp": i * gap_ms, "input_length": 1024, "output_length": 16, "hash_ids": [0, 1 + i % 10]}
        for i in range(requests)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """Each time-model replay as (replicas, CPU-tier blocks), in order."""
    seen: list[tuple[int, int]] = []
    real = capacity_replay.replay

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append((args[1].replicas, args[2]))
        return real(*args, **kwargs)

    monkeypatch.setattr(capacity_plan, "replay", counted)
    yield seen


def test_a_long_replay_says_its_estimate_and_each_replay_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], replays: list[Any]
) -> None:
    """The threshold lowered so this small trace counts as long: an estimate first, then a line per replay."""
    monkeypatch.setattr(replay_progress, "PROGRESS_AFTER_S", 0.0)
    assert main(["size", "dev", "--trace", str(_trace(tmp_path / "t.jsonl"))]) == 0
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert (
        err[0].startswith("size: the time model replays 60 requests (")
        and "s a replay (at the rates capacity_plan.py measured)" in err[0]
    )
    assert err[1] == "size: the capacity plan: at least 4 replays for its 2 tier scenarios"
    progress = [line for line in err if line.startswith("size: replay ")]
    assert len(progress) == len(replays) > 0
    assert all(line.startswith(f"size: replay {i} (") for i, line in enumerate(progress, start=1)), progress
    assert progress[0].startswith("size: replay 1 (CPU tier on 1 replicas):")
    assert "keeps up, asks 0%;" in progress[0] and "s so far" in progress[-1]
    assert any(line.startswith("size: the tier curve replays ") for line in err)
    assert "replay" not in captured.out.split("## Replicas")[0]  # stdout is the command's own output


def test_a_short_replay_is_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size", "dev", "--trace", str(_trace(tmp_path / "t.jsonl"))]) == 0
    assert capsys.readouterr().err == ""


def test_the_estimate_is_the_measured_rates_of_requests_and_steps() -> None:
    """33 us a request and 0.07 us a step (capacity_plan.py's measurement): the 30,000 requests measured (544,688
    steps, 1.02 s) read about 1.03 s; the conversation trace (11,457 requests, 4.11 million steps, 0.67 s) 0.67 s;
    the round's 300,000-request trace ten times the first."""
    assert capacity_plan.replay_seconds(30_000, 544_688) == pytest.approx(1.028, abs=0.001)
    assert capacity_plan.replay_seconds(11_457, 4_110_000) == pytest.approx(0.666, abs=0.001)
    assert capacity_plan.replay_seconds(300_000, 5_446_880) == pytest.approx(10.28, abs=0.01)


def test_each_replay_corrects_the_estimate_and_a_long_one_is_said_however_short_its_estimate() -> None:
    said: list[str] = []
    progress = replay_progress.Progress(said.append)
    progress.estimated("w", 1_000, 10_000, 0.1)  # short: quiet
    progress.ran("a", True, 0.5, 1.0)
    assert said == [] and progress.seconds_each == 1.0  # the mean of those measured
    progress.ran("b", False, 1.5, 9.0)  # 9 s, past 2.5 s: said though 1 s was expected
    assert said == [
        "replay 2 (b): does not keep up, asks 150%; 9 s (estimated 1 s), 10 s so far; about 5 s a replay from here"
    ]
    progress.ran("c", True, 0.5, 2.0)  # short, but the estimate (5 s) is long now: said
    assert said[-1].startswith("replay 3 (c): keeps up, asks 50%; 2 s (estimated 5 s), 12 s so far; about 4 s")


def _small(**more: object) -> list[str]:
    shape = {
        "num_groups": 10,
        "num_prompts_per_group": 10,
        "system_prompt_len": 1024,
        "question_len": 512,
        "output_len": 32,
        "request_rate": 20,
        "duration": 30,
    }
    sets = [f"workload.shared_prefix.{k}={v}" for k, v in shape.items()]
    return [*sets, "workload.block_tokens=512", *(f"{k}={v}" for k, v in more.items())]


def test_the_other_scenarios_start_at_the_count_the_configured_tiers_need(replays: list[tuple[int, int]]) -> None:
    """gpu-vllm-native-cpu at 1 replica where the workload needs more: HBM only is first replayed at the count the
    configured tiers need, never at the stack's 1 (which does not keep up)."""
    heavier = [o for o in _small() if "question_len" not in o and "request_rate" not in o and "duration" not in o]
    heavier += ["workload.shared_prefix.question_len=2048", "workload.shared_prefix.request_rate=30"]
    heavier += ["workload.shared_prefix.duration=10", "cache.replicas=1"]
    stack_plan = plan(loading.load_preset("gpu-vllm-native-cpu", heavier), keep_up=False)
    assert stack_plan.workload is not None
    capacity = stack_plan.workload.capacity
    assert not capacity.configured.fits
    hbm, cpu = capacity.needed
    hbm_run, cpu_run = hbm.run, cpu.run
    assert hbm.scenario.name == "HBM only" and hbm_run is not None and cpu_run is not None
    hbm_counts = [count for count, cpu in replays if cpu == 0]
    assert hbm_counts[0] == cpu_run.replicas > 1, replays


def test_a_plan_whose_cpu_tier_auto_moved_does_not_search_hbm_only_again(replays: list[tuple[int, int]]) -> None:
    stack_plan = plan(loading.load_preset("existing-mi300", _small()), keep_up=False)
    assert stack_plan.workload is not None
    hbm_counts = [count for count, cpu in replays if cpu == 0]
    assert len(hbm_counts) == len(set(hbm_counts)), replays  # no count of HBM only replayed twice


def _fewest(monkeypatch: pytest.MonkeyPatch, fits_from: int | None, asks: float, replicas: int) -> int | None:
    """capacity_plan.fewest on replays whose verdict is a rule written here: a count fits from `fits_from` up (None:
    none does); the hint is a run at `replicas` that asks `asks` of them (the estimate: ceil(asks x replicas))."""
    searched: list[int] = []

    def verdict(inputs: object, scenario: object, count: int) -> tuple[object, None]:
        searched.append(count)
        return SimpleNamespace(replicas=count, fits=fits_from is not None and count >= fits_from, asks=0.0), None

    monkeypatch.setattr(capacity_plan, "_run", verdict)
    hint = SimpleNamespace(replicas=replicas, asks=asks, fits=fits_from is not None and replicas >= fits_from)
    run = capacity_plan.fewest(cast(Any, None), cast(Any, None), cast(Any, hint))
    assert len(searched) == len(set(searched)), searched  # no count replayed twice
    return None if run is None else run.replicas


@pytest.mark.parametrize(
    ("fits_from", "expected"),
    [
        (5, 5),  # the estimate itself: 1.1 x 4 = 4.4, up to 5
        (7, 7),  # above it: galloping 5, 6, 8, then halving back to 7
        (3, 3),  # below it: fewer replicas each see more of a prefix, so a count under the estimate may fit
        (1, 1),  # down to one
        (None, None),  # none up to MAX_REPLICAS
    ],
)
def test_the_search_finds_the_fewest_that_fit_above_and_below_the_estimate(
    monkeypatch: pytest.MonkeyPatch, fits_from: int | None, expected: int | None
) -> None:
    assert _fewest(monkeypatch, fits_from, asks=1.1, replicas=4) == expected


def test_an_estimate_past_the_largest_count_searches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """256 replicas at most: a workload asking 1.01 x 256 of them has no count, without a replay."""
    assert MAX_REPLICAS == 256
    assert _fewest(monkeypatch, 1, asks=1.01, replicas=256) is None


def test_a_workload_of_exactly_the_bound_is_replayed_and_one_step_more_is_not() -> None:
    """50 million steps and block updates at most: 25 million output tokens in blocks of one token count one block
    and one decode step each (no prompt), exactly the bound; one token more is two past it."""
    assert capacity_plan.MAX_EVENTS == 50_000_000
    costs = cast(Any, SimpleNamespace(max_batched_tokens=8192))
    capacity_plan.check_bounded([Request(0, 0, 25_000_000, ())], costs, 1, "trace t")
    with pytest.raises(ConfigError, match="would take 50,000,002 steps and block updates; at most 50,000,000"):
        capacity_plan.check_bounded([Request(0, 0, 25_000_001, ())], costs, 1, "trace t")
