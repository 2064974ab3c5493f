"""A workload's work is counted before it is replayed and refused past its bound, in one line: a trace line
of 2**63 output tokens (was a MemoryError), a shared prefix of six billion requests (was a hang), a request
longer than the servers' context (was sized as if served), a workload with no span of time (was a storage
error at an absurd store rate). components/formulas/replay_work.py, stacks/planning/workload/workload_bounds.py."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from components.catalog.models import MODELS
from components.formulas import replay_work
from components.formulas.replay_work import MAX_BLOCK_REFS, Work, measure, shared_prefix_work
from components.formulas.requests import Request
from components.formulas.shared_prefix import SharedPrefixShape, shared_prefix_requests
from stacks.__main__ import main
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from tests.helpers import script_module

DEV_CONTEXT = 40_960  # Qwen/Qwen3-0.6B's max_position_embeddings (its model card), dev's model


def _error(action: Callable[[], object]) -> str:
    with pytest.raises(ConfigError) as caught:
        action()
    text = str(caught.value)
    assert text.startswith("invalid stack config: ") and text.isprintable(), text
    return text


def _size(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["size", "dev", "--trace", str(path)])
    return code, capsys.readouterr().err


def _trace(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _line(timestamp: int, input_length: int, output_length: int = 8) -> dict[str, object]:
    blocks = -(-input_length // 512)
    return {"timestamp": timestamp, "input_length": input_length, "output_length": output_length,
            "hash_ids": list(range(blocks))}  # fmt: skip


def _shared(**shape: object) -> list[str]:
    base: dict[str, object] = {
        "num_groups": 1,
        "num_prompts_per_group": 1,
        "system_prompt_len": 0,
        "question_len": 16,
        "output_len": 16,
        "request_rate": 1,
        "duration": 10,
    }
    return [f"workload.shared_prefix.{k}={v}" for k, v in {**base, **shape}.items()] + ["workload.block_tokens=16"]


def test_dev_serves_the_context_these_tests_assume() -> None:
    assert MODELS["Qwen/Qwen3-0.6B"].context_tokens == DEV_CONTEXT
    assert plan(loading.load_named("dev")).hbm.max_model_len == DEV_CONTEXT


def test_a_line_of_two_to_the_63_output_tokens_is_refused_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _trace(tmp_path / "t.jsonl", [_line(0, 10), {**_line(5, 10), "output_length": 2**63 - 1}])
    code, err = _size(path, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "line 2: output_length = 9223372036854775807: must be an integer from 0 to 10,000,000" in err


@pytest.mark.parametrize(("tokens", "refused"), [(DEV_CONTEXT, False), (DEV_CONTEXT + 1, True)])
def test_a_request_longer_than_the_servers_context_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tokens: int, refused: bool
) -> None:
    lines = [_line(0, 1000), _line(1000, tokens - 8), _line(2000, 1000)]  # 8 output tokens each
    code, err = _size(_trace(tmp_path / "t.jsonl", lines), capsys)
    if not refused:
        assert code == 0, err
        return
    assert code == 2 and err.count("\n") == 1, err
    assert f"request 2 = '{tokens:,} tokens'" in err
    assert "Qwen/Qwen3-0.6B's context_tokens: 40,960" in err and "max_position_embeddings" in err


def test_a_served_context_shorter_than_the_models_is_the_bound(tmp_path: Path) -> None:
    """cache.max_model_len 4096: a 5,000-token request fits the model but not the servers."""
    path = _trace(tmp_path / "t.jsonl", [_line(0, 1000), _line(1000, 4992)])
    from stacks.planning.workload import workload_sizing
    from stacks.planning.workload.workload_source import file_source
    from stacks.planning.workload_plan import stack_shape

    stack_plan = plan(loading.load_named("dev", ["cache.max_model_len=4096"]))
    source = file_source(str(path), 512)
    text = _error(lambda: workload_sizing.size_tiers(stack_shape(stack_plan), source))
    assert "longer than the 4,096 a server takes (stack config `cache.max_model_len`" in text


@pytest.mark.parametrize(
    ("timestamps", "refused"), [([7], True), ([7, 7, 7], True), ([7, 7, 8], False)]
)  # fmt: skip
def test_a_trace_with_no_span_of_time_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], timestamps: list[int], refused: bool
) -> None:
    code, err = _size(_trace(tmp_path / "t.jsonl", [_line(t, 1000) for t in timestamps]), capsys)
    if not refused:
        assert code == 0, err
        return
    assert code == 2 and err.count("\n") == 1, err
    assert "at one instant" in err and "two arrival times" in err
    assert "GB/s" not in err and "storage.size" not in err  # not the storage error it was


def test_a_shared_prefix_of_six_billion_requests_is_refused_at_load_at_once() -> None:
    started = time.monotonic()
    text = _error(lambda: loading.load_named("dev", _shared(request_rate=10_000, duration=604_800)))
    assert time.monotonic() - started < 5
    assert "workload.shared_prefix = '6,048,000,000 requests'" in text
    assert "12,096,000,000 block references" in text and f"at most {MAX_BLOCK_REFS:,}" in text


def test_a_shared_prefix_of_one_request_has_no_span() -> None:
    text = _error(lambda: loading.load_named("dev", _shared(request_rate=0.5, duration=1)))
    assert "workload.shared_prefix = '1 requests': its one request arrives at one instant" in text
    assert loading.load_named("dev", _shared(request_rate=1, duration=2)).workload is not None  # two: 1 s apart


@pytest.mark.parametrize(
    "shape",
    [
        SharedPrefixShape(3, 4, 32, 20, 17, 7.5, 9),
        SharedPrefixShape(1, 1, 0, 1, 1, 0.3, 10),
        SharedPrefixShape(5, 2, 64, 16, 16, 1000.0, 1),
    ],
)
def test_the_closed_form_counts_what_the_requests_reference(shape: SharedPrefixShape) -> None:
    """Counted from the generated requests themselves, block by block."""
    requests = list(shared_prefix_requests(shape, 16, seed=3))
    refs = sum(len(r.hash_ids) + -(-r.output_length // 16) for r in requests)
    tokens = max(r.input_length + r.output_length for r in requests)
    expected = Work(len(requests), refs, tokens, 1, requests[-1].timestamp_ms - requests[0].timestamp_ms)
    assert shared_prefix_work(shape, 16) == expected
    assert measure(iter(requests), 16, max_tokens=10**6) == expected


@pytest.mark.parametrize(("refs", "refused"), [(MAX_BLOCK_REFS, False), (MAX_BLOCK_REFS + 1, True)])
def test_the_bound_is_on_block_references(refs: int, refused: bool) -> None:
    problem = replay_work.problem(Work(1000, refs, 100, 1, 1))
    assert (problem is not None) == refused
    if problem is not None:
        assert f"{MAX_BLOCK_REFS + 1:,} block references" in problem


def test_measuring_stops_at_the_bound_on_an_endless_workload() -> None:
    def endless() -> Iterator[Request]:
        for i in itertools.count():
            yield Request(i, 512, 512, (i,))  # two blocks each

    work = measure(endless(), 512, max_tokens=DEV_CONTEXT, max_refs=1000)
    assert work.stopped and work.requests == 501 and work.block_refs == 1002


def test_measuring_stops_at_the_first_request_past_the_context() -> None:
    read: list[int] = []

    def requests() -> Iterator[Request]:
        for i, tokens in enumerate([100, 200, 50_000, 300]):
            read.append(i)
            yield Request(i, tokens, 0, (i,))

    work = measure(requests(), 512, max_tokens=DEV_CONTEXT)
    assert work.stopped and work.longest_request == 3 and work.longest_tokens == 50_000 and read == [0, 1, 2]


def test_check_and_render_refuse_the_same_workload_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sets = [x for s in _shared(request_rate=10_000, duration=604_800) for x in ("--set", s)]
    for command in (["check", "dev", *sets], ["render", "dev", "--out", str(tmp_path / "out"), *sets]):
        started = time.monotonic()
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "6,048,000,000 requests" in err
        assert time.monotonic() - started < 30


def test_the_fitting_conversation_trace_is_the_trace_within_qwen3s_context() -> None:
    """The sizing tests and the bench replay it on Qwen3 stacks: every request of the trace that fits, and no
    other (the replay refuses the whole trace at its 12th request, 87,571 tokens)."""
    from components.catalog.models import QWEN3_CONTEXT

    here = Path(__file__).resolve().parent / "fixtures" / "workloads" / "mooncake-conversation"
    refresh = script_module("mooncake_conversation_refresh", here / "refresh.py")
    assert refresh.CONTEXT_TOKENS == QWEN3_CONTEXT
    whole = (here / "conversation_trace.jsonl").read_bytes().splitlines(keepends=True)
    kept = [line for line in whole if sum(json.loads(line)[k] for k in ("input_length", "output_length")) <= 40_960]
    assert (here / "conversation_trace_40k.jsonl").read_bytes() == b"".join(kept)
    assert (len(whole), len(kept)) == (12_031, 11_457)


def test_measuring_stops_exactly_past_the_context() -> None:
    at, past = Request(0, DEV_CONTEXT - 8, 8, (0,)), Request(1, DEV_CONTEXT - 7, 8, (1,))
    assert not measure(iter([at, at]), 512, max_tokens=DEV_CONTEXT).stopped
    work = measure(iter([at, past, at]), 512, max_tokens=DEV_CONTEXT)
    assert work.stopped and work.requests == 2 and work.longest_tokens == DEV_CONTEXT + 1


def test_a_traces_span_runs_from_its_first_arrival(tmp_path: Path) -> None:
    """The span, not the last timestamp: a trace cut from the middle of a recording starts late."""
    from stacks.config.workload_trace import check_trace

    path = _trace(tmp_path / "t.jsonl", [_line(60_000, 512), _line(60_500, 512), _line(61_000, 512)])
    assert check_trace(path, 512).duration_ms == 1000
    assert measure(iter([Request(60_000, 1, 0, (0,)), Request(61_000, 1, 0, (0,))]), 512, 10).span_ms == 1000


def test_a_trace_going_back_by_one_millisecond_is_refused(tmp_path: Path) -> None:
    from stacks.config.workload_trace import check_trace

    path = _trace(tmp_path / "t.jsonl", [_line(5, 512), _line(4, 512)])
    assert "line 2: timestamp = 4: goes back (the line before says 5)" in _error(lambda: check_trace(path, 512))
