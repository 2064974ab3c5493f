"""Arrivals as the load generators draw them (components/formulas/shared_prefix.py): inference-perf's load section,
`type: constant | poisson` and `stages` (rate x duration) one after another, Poisson draws seeded and pooled; bad
load sections refused in one line before any request is made."""

from __future__ import annotations

import itertools
import statistics

import pytest

from components.formulas import shared_prefix
from components.formulas.shared_prefix import SharedPrefixShape, Stage, shared_prefix_requests
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from stacks.planning.workload import workload_source

DATA = (2, 3, 512, 100, 20)  # groups, prompts per group, system prompt, question, output


def _arrivals(shape: SharedPrefixShape) -> list[tuple[int, int]]:
    return [(r.timestamp_ms, r.stage) for r in shared_prefix_requests(shape, 512, seed=0)]


def test_one_constant_stage_is_spaced_as_before() -> None:
    shape = SharedPrefixShape(*DATA, request_rate=3, duration=2)
    assert _arrivals(shape) == [(0, 0), (333, 0), (666, 0), (1000, 0), (1333, 0), (1666, 0)]


def test_constant_stages_follow_one_another() -> None:
    shape = SharedPrefixShape(*DATA, stages=(Stage(2, 2), Stage(4, 1)), arrivals="constant")
    assert _arrivals(shape) == [(0, 0), (500, 0), (1000, 0), (1500, 0), (2000, 1), (2250, 1), (2500, 1), (2750, 1)]
    assert shape.requests == 8 and shape.window_s == 3


def test_poisson_sends_rate_x_duration_a_stage_within_it_and_a_draw_after_another() -> None:
    shape = SharedPrefixShape(*DATA, stages=(Stage(3, 60), Stage(5.5, 10)), arrivals="poisson", draws=3)
    arrivals = _arrivals(shape)
    assert shape.requests == len(arrivals) == 3 * (180 + 55)
    for stage in range(6):  # draw d's stages are 2d and 2d + 1
        times = [t for t, s in arrivals if s == stage]
        start = 70_000 * (stage // 2) + (60_000 if stage % 2 else 0)
        assert len(times) == (55 if stage % 2 else 180)
        assert times == sorted(times) and start <= times[0] and times[-1] < start + (10_000 if stage % 2 else 60_000)
    assert [t for t, _ in arrivals] == sorted(t for t, _ in arrivals)


def test_poisson_draws_are_seeded_and_bursty() -> None:
    shape = SharedPrefixShape(*DATA, stages=(Stage(10, 600),), arrivals="poisson", arrival_seed=7)
    again = _arrivals(shape)
    assert again == _arrivals(SharedPrefixShape(*DATA, stages=(Stage(10, 600),), arrivals="poisson", arrival_seed=7))
    assert again != _arrivals(SharedPrefixShape(*DATA, stages=(Stage(10, 600),), arrivals="poisson", arrival_seed=8))
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(again)]
    # a Poisson process's gaps are exponential: mean 1 / rate (100 ms) and a coefficient of variation of 1 (even
    # spacing: 0); 6,000 gaps put both within a few percent
    assert statistics.mean(gaps) == pytest.approx(100, rel=0.03)
    assert statistics.stdev(gaps) / statistics.mean(gaps) == pytest.approx(1.0, abs=0.05)


def test_the_shape_refuses_a_stage_without_a_rate_and_mixed_forms() -> None:
    with pytest.raises(ValueError, match=r"stages\[0\].rate = 0: must be positive"):
        SharedPrefixShape(*DATA, stages=(Stage(0, 60),), arrivals="poisson")
    with pytest.raises(ValueError, match="with stages, leave them 0"):
        SharedPrefixShape(*DATA, request_rate=3, duration=60, stages=(Stage(3, 60),))
    with pytest.raises(ValueError, match="constant arrivals are one draw"):
        SharedPrefixShape(*DATA, stages=(Stage(3, 60),), draws=2)


SHARED = [
    "workload.shared_prefix.num_groups=10",
    "workload.shared_prefix.num_prompts_per_group=5",
    "workload.shared_prefix.system_prompt_len=1024",
    "workload.shared_prefix.question_len=100",
    "workload.shared_prefix.output_len=50",
]
LLMD_STAGES = ", ".join(f"{{rate: {r}, duration: 60}}" for r in (5, 10, 15, 20, 25, 30, 35, 40))


def test_llm_ds_staged_benchmark_is_one_spec_and_the_plan_names_its_draws() -> None:
    """The tiered-prefix-cache benchmark's load (tests/fixtures/llm-d-benchmark: Poisson, 8 stages of 60 s)."""
    config = loading.load_named(
        "dev", [*SHARED, f"workload.shared_prefix.load={{type: poisson, stages: [{LLMD_STAGES}]}}"]
    )
    assert config.workload is not None and config.workload.shared_prefix is not None
    shape = config.workload.shared_prefix.shape
    assert (shape.arrivals, shape.draws, len(shape.stages)) == ("poisson", 3, 8)
    assert shape.requests == 3 * 60 * (5 + 10 + 15 + 20 + 25 + 30 + 35 + 40)
    source = workload_source.config_source(config, loading.PROJECT_DIR)
    assert source is not None
    assert (
        "Poisson arrivals in stages 5/s x 60 s, 10/s x 60 s, 15/s x 60 s, 20/s x 60 s, 25/s x 60 s, 30/s x 60 s,"
        " 35/s x 60 s, 40/s x 60 s; 3 draws (arrival seeds 0, 1, 2) one after another, every percentile pooled"
        " over them" in source.description
    )


def test_a_poisson_workload_is_planned_over_its_draws_each_stage_judged() -> None:
    load = "{type: poisson, stages: [{rate: 2, duration: 20}, {rate: 4, duration: 10}], draws: 2, base_seed: 5}"
    stack = plan(loading.load_named("dev", [*SHARED, f"workload.shared_prefix.load={load}"]))
    assert stack.capacity is not None
    run = stack.capacity.configured
    assert [(b.stage, b.requests) for b in run.backlog] == [(0, 40), (1, 40), (2, 40), (3, 40)]
    assert run.keeps_up
    assert "arrival seeds 5, 6" in stack.capacity.source


@pytest.mark.parametrize(
    ("load", "line"),
    [
        ("{type: poisson, stages: [{duration: 60}]}", "workload.shared_prefix.load.stages[0].rate = (missing)"),
        ("{type: poisson}", "workload.shared_prefix.load.stages = (missing)"),
        ("{type: poisson, stages: []}", "workload.shared_prefix.load.stages = []: list should have at least 1 item"),
        ("{type: bursty, stages: [{rate: 1, duration: 5}]}", "workload.shared_prefix.load.type = 'bursty'"),
        (
            "{type: poisson, stages: [{rate: 10000, duration: 604800}, {rate: 10000, duration: 604800}]}",
            "workload.shared_prefix.load = '36,288,000,000 requests': asks 145,152,000,000 block references",
        ),
        (
            "{type: poisson, stages: [{rate: 0.5, duration: 1}]}",
            "workload.shared_prefix.load = '0 requests': int(rate x duration) is 0 in every stage",
        ),
        (
            "{stages: [{rate: 1, duration: 6}], draws: 2}",
            "workload.shared_prefix.load.draws = 2: applies to poisson arrivals",
        ),
    ],
)
def test_a_bad_load_is_one_line_before_any_request_is_made(
    load: str, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def made(*args: object) -> None:
        raise AssertionError("a request was made before the load was checked")

    monkeypatch.setattr(shared_prefix, "_uniform_order", made)
    with pytest.raises(ConfigError) as error:
        loading.load_named("dev", [*SHARED, f"workload.shared_prefix.load={load}"])
    assert str(error.value).startswith(f"invalid stack config: {line}"), str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("sets", "line"),
    [
        (
            ["workload.shared_prefix.load={stages: [{rate: 1, duration: 6}]}", "workload.shared_prefix.duration=6"],
            "workload.shared_prefix.duration = 6: set request_rate and duration (one constant stage) or load",
        ),
        (["workload.shared_prefix.request_rate=2"], "workload.shared_prefix.duration = (missing): required with no"),
    ],
)
def test_one_form_of_arrivals(sets: list[str], line: str) -> None:
    with pytest.raises(ConfigError) as error:
        loading.load_named("dev", [*SHARED, *sets])
    assert str(error.value).startswith(f"invalid stack config: {line}"), str(error.value)
