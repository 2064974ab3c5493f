"""The workload inputs: the Mooncake trace reader (every bad line one line naming file, line and field; no
FIFO or device read), the stack config's `workload` section, and the shared-prefix generator."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.formulas.requests import Request
from components.formulas.shared_prefix import (
    SharedPrefixShape,
    check_block_tokens,
    shared_prefix_requests,
    working_set_tokens,
)
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.config.workload_trace import (
    MAX_LINE_BYTES,
    MAX_TRACE_BYTES,
    check_project_trace,
    check_trace,
    read_project_trace,
    read_trace,
)
from tests.helpers import script_module

ROOT = Path(__file__).resolve().parents[1]
MOONCAKE = ROOT / "tests" / "fixtures" / "workloads" / "mooncake-conversation"
TRACE = MOONCAKE / "conversation_trace.jsonl"
GOOD = {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [0, 1]}


def _line(**changes: Any) -> str:
    return json.dumps({**GOOD, **changes})


def _error(action: Callable[[], object]) -> str:
    with pytest.raises(ConfigError) as caught:
        action()
    text = str(caught.value)
    assert text.startswith("invalid stack config: ")
    assert text.isprintable(), text  # one line
    return text


def _read_all(path: Path, block_tokens: int = 512) -> list[Request]:
    return list(read_trace(path, block_tokens, source="--trace"))


# ---- the fixture ----


def test_the_mooncake_fixture_is_the_recorded_file() -> None:
    source = (MOONCAKE / "SOURCE.md").read_text()
    refresh = script_module("mooncake_refresh", MOONCAKE / "refresh.py")
    commit, path, sha = refresh.pinned(source)
    assert (commit, path) == (
        "3b5a594133958449a1feaf1c9e0fc1b553e34a28",
        "FAST25-release/traces/conversation_trace.jsonl",
    )
    assert hashlib.sha256(TRACE.read_bytes()).hexdigest() == sha
    assert "Apache License 2.0" in source and "kvcache-ai/Mooncake" in source


def test_the_mooncake_trace_figures() -> None:
    summary = check_trace(TRACE, 512)
    assert summary.requests == 12_031
    assert summary.block_refs == 288_500
    assert summary.distinct_blocks == 182_790
    assert summary.duration_ms == 3_536_999
    assert round(summary.mean_prompt_tokens) == 12_035
    assert summary.prompt_tokens == 144_793_823


def test_a_stack_config_reads_the_fixture_from_inside_the_project() -> None:
    relative = str(TRACE.relative_to(ROOT))
    config = loading.build("dev", {"workload": {"trace": relative}})
    assert config.workload is not None and config.workload.block_tokens == 512
    assert check_project_trace(relative, 512, ROOT).requests == 12_031
    first = next(read_project_trace(relative, 512, ROOT))
    assert first == Request(0, 6758, 500, tuple(range(14)))


# ---- bad lines: one line naming the file, the line and the field ----

BAD_LINES: dict[str, tuple[str, str]] = {
    "not json": ("{timestamp: 0", "line 2 = '{timestamp: 0': not JSON"),
    "not an object": ("[1, 2]", "line 2 = 'list': not a JSON object"),
    "missing field": (
        json.dumps({"timestamp": 0, "input_length": 10, "output_length": 1}),
        "line 2: hash_ids = (missing)",
    ),
    "bool length": (_line(input_length=True), "line 2: input_length = True: must be an integer from 1"),
    "float length": (_line(output_length=1.5), "line 2: output_length = 1.5: must be an integer from 0"),
    "string length": (_line(output_length="10"), "line 2: output_length = '10': must be an integer"),
    "negative length": (_line(output_length=-1), "line 2: output_length = -1: must be an integer from 0"),
    "zero input": (_line(input_length=0, hash_ids=[]), "line 2: input_length = 0: must be an integer from 1"),
    "huge number": (_line(timestamp=2**64), f"line 2: timestamp = {2**64}: must be an integer from 0 to 2**63-1"),
    "timestamp back": (_line(timestamp=5), "line 2: timestamp = 5: goes back (the line before says 7)"),
    "too few ids": (_line(hash_ids=[0]), "line 2: hash_ids = '1 ids': must hold 2: one per 512-token block"),
    "too many ids": (_line(input_length=512), "line 2: hash_ids = '2 ids': must hold 1"),
    "ids not a list": (_line(hash_ids="0,1"), "line 2: hash_ids = 'str': must be a list of block ids"),
    "negative id": (_line(hash_ids=[0, -3]), "line 2: hash_ids[1] = -3: must be an integer from 0"),
    "bool id": (_line(hash_ids=[False, 1]), "line 2: hash_ids[0] = False: must be an integer"),
    "float id": (_line(hash_ids=[0, 1.0]), "line 2: hash_ids[1] = 1.0: must be an integer"),
    "nested deep": ("[" * 100_000, "line 2 = '" + "[" * 60 + "...': not JSON"),
}


@pytest.mark.parametrize("case", BAD_LINES)
def test_a_bad_line_is_one_line_naming_file_line_and_field(case: str, tmp_path: Path) -> None:
    text, message = BAD_LINES[case]
    path = tmp_path / "t.jsonl"
    path.write_text(_line(timestamp=7) + "\n" + text + "\n")
    error = _error(lambda: _read_all(path))
    assert error.startswith(f"invalid stack config: --trace {path} {message}"), error


def test_the_lines_before_a_bad_one_are_yielded_first(tmp_path: Path) -> None:
    """A generator: the caller that must not act on a bad file validates it whole first (check_trace)."""
    path = tmp_path / "t.jsonl"
    path.write_text(_line() + "\n" + _line(hash_ids=[0]) + "\n")
    requests = read_trace(path, 512, source="--trace")
    assert next(requests).hash_ids == (0, 1)
    assert "line 2: hash_ids" in _error(lambda: next(requests))
    assert "line 2: hash_ids" in _error(lambda: check_trace(path, 512))


def test_extra_fields_and_blank_lines_are_ignored_as_sglang_does(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line(session_id="a", turn=2) + "\n\n  \n" + _line(timestamp=3) + "\n")
    assert [r.timestamp_ms for r in _read_all(path)] == [0, 3]


def test_block_tokens_decide_the_ids_a_line_holds(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line(input_length=1001, hash_ids=[4, 5, 6]) + "\n")
    assert _read_all(path, block_tokens=500)[0].hash_ids == (4, 5, 6)
    assert "hash_ids = '3 ids': must hold 2" in _error(lambda: _read_all(path, block_tokens=512))
    assert "block_tokens = 0: must be a positive integer" in _error(lambda: read_trace(path, 0, source="--trace"))


def test_an_empty_file_holds_no_requests(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    for text in ("", "\n\n"):
        path.write_text(text)
        assert f"--trace = '{path}': holds no requests" in _error(lambda: _read_all(path))


def test_a_line_over_the_bound_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line() + "\n" + "x" * (MAX_LINE_BYTES + 10) + "\n")
    error = _error(lambda: _read_all(path))
    assert f"--trace {path} line 2 = (not shown): longer than 1024 KiB" in error


def test_a_file_over_the_size_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with path.open("wb") as file:
        file.truncate(MAX_TRACE_BYTES + 1)  # sparse: no disk used
    error = _error(lambda: read_trace(path, 512, source="--trace"))
    assert f"{MAX_TRACE_BYTES + 1} bytes; a trace may hold at most 512 MiB" in error


# ---- files that are not regular files ----


def _promptly(action: Callable[[], object], seconds: float = 10.0) -> str:
    """The error `action` raises, or a failure if it does not return within `seconds` (a blocked open)."""
    outcome: list[str] = []

    def run() -> None:
        try:
            action()
            outcome.append("returned")
        except ConfigError as error:
            outcome.append(str(error))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "blocked: the reader waited on the file"
    return outcome[0]


def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    assert "= '" + str(fifo) + "': a FIFO; a trace must be a regular file" in _promptly(lambda: _read_all(fifo))
    assert "a FIFO" in _promptly(lambda: check_trace(fifo, 512))


def test_a_fifo_swapped_in_after_the_check_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line() + "\n")
    requests = read_trace(path, 512, source="--trace")  # checked here, opened on the first next()
    path.unlink()
    os.mkfifo(path)
    assert "a FIFO; a trace must be a regular file" in _promptly(lambda: next(requests))


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"), ("/", "a directory")])
def test_a_device_or_a_directory_is_refused(path: str, kind: str) -> None:
    assert f"--trace = '{path}': {kind}; a trace must be a regular file" in _promptly(lambda: _read_all(Path(path)))


def test_a_missing_file_is_one_line() -> None:
    assert "--trace = '/nonexistent/t.jsonl': cannot read the file: No such file" in _error(
        lambda: read_trace("/nonexistent/t.jsonl", 512, source="--trace")
    )


def test_the_command_line_reads_a_trace_anywhere_and_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(_line() + "\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "t.jsonl")
    assert check_trace(tmp_path / "link.jsonl", 512).requests == 1


# ---- a stack config's trace: inside the project ----


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setattr(loading, "PROJECT_DIR", root)
    return root


def _load_trace(path: str) -> str:
    return _error(lambda: loading.build("dev", {"workload": {"trace": path}}))


def test_a_symlink_inside_the_project_to_a_file_outside_is_refused(project: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.jsonl").write_text(_line() + "\n")
    (project / "t.jsonl").symlink_to(tmp_path / "outside.jsonl")
    assert "workload.trace = 't.jsonl': leads outside the project (a symlink)" in _load_trace("t.jsonl")
    assert "leads outside the project" in _error(lambda: check_project_trace("t.jsonl", 512, project))
    assert check_trace(project / "t.jsonl", 512).requests == 1  # the command line's entry follows it


def test_a_stack_config_trace_is_a_relative_jsonl_regular_file_in_the_project(project: Path) -> None:
    (project / "traces").mkdir()
    (project / "traces" / "t.jsonl").write_text(_line() + "\n")
    (project / "inner.jsonl").symlink_to(project / "traces" / "t.jsonl")
    os.mkfifo(project / "f.jsonl")
    (project / "d.jsonl").mkdir()
    assert loading.build("dev", {"workload": {"trace": "traces/t.jsonl"}}).workload is not None
    assert loading.build("dev", {"workload": {"trace": "inner.jsonl"}}).workload is not None  # stays inside
    allowed = "must be a relative path to a .jsonl file inside the project (no '..', no leading '/')"
    assert f"workload.trace = '/etc/t.jsonl': {allowed}" in _load_trace("/etc/t.jsonl")
    assert f"workload.trace = '../t.jsonl': {allowed}" in _load_trace("../t.jsonl")
    assert f"workload.trace = 'traces/t.json': {allowed}" in _load_trace("traces/t.json")
    assert "workload.trace = 'no.jsonl': no such file in the project" in _load_trace("no.jsonl")
    assert "workload.trace = 'f.jsonl': a FIFO; a trace must be a regular file" in _promptly(
        lambda: loading.build("dev", {"workload": {"trace": "f.jsonl"}})
    )
    assert "workload.trace = 'd.jsonl': a directory" in _load_trace("d.jsonl")


def test_a_stack_config_trace_is_read_line_by_line_with_its_name(project: Path) -> None:
    (project / "t.jsonl").write_text(_line() + "\n" + _line(input_length=-1) + "\n")
    error = _error(lambda: check_project_trace("t.jsonl", 512, project))
    assert error.startswith("invalid stack config: workload.trace t.jsonl line 2: input_length = -1: must be")


# ---- the section ----

SHARED = {
    "num_groups": 4,
    "num_prompts_per_group": 5,
    "system_prompt_len": 1024,
    "question_len": 300,
    "output_len": 100,
    "request_rate": 10,
    "duration": 60,
}

BAD_SECTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "neither": ({"block_tokens": 16}, "workload = ['block_tokens']: set workload.trace (a Mooncake trace file) or"),
    "both": (
        {"trace": str(TRACE.relative_to(ROOT)), "shared_prefix": SHARED},
        "workload.shared_prefix = '(set)': set workload.trace or workload.shared_prefix, not both",
    ),
    "not whole blocks": (
        {"shared_prefix": {**SHARED, "system_prompt_len": 1000}},
        "workload.shared_prefix.system_prompt_len = 1000: must be a multiple of workload.block_tokens (512): the"
        " system prompt is whole blocks its group shares; workload.block_tokens: 8 would",
    ),
    "llm-d's 16,000-token system prompt": (
        {"shared_prefix": {**SHARED, "system_prompt_len": 16000}},
        "workload.block_tokens: 128 would (the largest power of two up to it that divides the prompt)",
    ),
    "negative groups": (
        {"shared_prefix": {**SHARED, "num_groups": -1}},
        "workload.shared_prefix.num_groups = -1: input should be greater than or equal to 1",
    ),
    "zero rate": (
        {"shared_prefix": {**SHARED, "request_rate": 0}},
        "workload.shared_prefix.request_rate = 0: input should be greater than 0",
    ),
    "bool duration": (
        {"shared_prefix": {**SHARED, "duration": True}},
        "workload.shared_prefix.duration = True: must be a number, not a boolean",
    ),
    "missing field": (
        {"shared_prefix": {k: v for k, v in SHARED.items() if k != "question_len"}},
        "workload.shared_prefix.question_len = (missing): field required",
    ),
    "negative block": ({"trace": "t.jsonl", "block_tokens": -512}, "workload.block_tokens = -512: input should be"),
    "unknown key": ({"trace": "t.jsonl", "rate": 3}, "workload.rate = (not shown): unknown key; allowed keys: trace,"),
    "unknown inner key": (
        {"shared_prefix": {**SHARED, "num_unique_system_prompts": 3}},
        "workload.shared_prefix.num_unique_system_prompts = (not shown): unknown key; allowed keys: num_groups,",
    ),
}


@pytest.mark.parametrize("case", BAD_SECTIONS)
def test_a_bad_workload_section_is_one_line_naming_the_field(case: str) -> None:
    section, message = BAD_SECTIONS[case]
    error = _error(lambda: loading.build("dev", {"workload": section}))
    assert message in error, error


def test_a_cluster_stack_has_no_workload() -> None:
    error = _error(lambda: loading.build(None, {"layer": "cluster", "workload": {"shared_prefix": SHARED}}))
    assert "workload = '(set)': a cluster stack serves no model" in error


def test_no_workload_by_default_and_the_section_is_typed_and_frozen() -> None:
    assert loading.build("dev").workload is None
    config = loading.build("dev", {"workload": {"shared_prefix": SHARED}}, ["workload.shared_prefix.seed=7"])
    assert config.workload is not None and config.workload.shared_prefix is not None
    assert config.workload.shared_prefix.seed == 7 and config.workload.block_tokens == 512
    assert config.workload.shared_prefix.shape == SharedPrefixShape(4, 5, 1024, 300, 100, 10.0, 60)
    with pytest.raises(ValueError, match="frozen"):
        config.workload.block_tokens = 16  # type: ignore[misc]


# ---- the shared-prefix generator ----


def _figures(requests: list[Request], block_tokens: int) -> tuple[int, int]:
    """(tokens of the distinct prompt blocks, outputs of the distinct prompts)."""
    block_tokens_of: dict[int, int] = {}
    outputs: dict[tuple[int, ...], int] = {}
    for request in requests:
        for i, block in enumerate(request.hash_ids):
            block_tokens_of[block] = min(block_tokens, request.input_length - i * block_tokens)
        outputs[request.hash_ids] = request.output_length
    return sum(block_tokens_of.values()), sum(outputs.values())


def test_the_working_set_is_reproduced_once_every_prompt_was_asked() -> None:
    shape = SharedPrefixShape(4, 5, 1024, 300, 100, request_rate=10, duration=60)
    requests = list(shared_prefix_requests(shape, block_tokens=512, seed=1))
    assert len(requests) == shape.requests == 600
    assert len({r.hash_ids for r in requests}) == shape.prompts == 20  # every prompt drawn
    prompt_tokens, output_tokens = _figures(requests, 512)
    assert prompt_tokens + output_tokens == working_set_tokens(shape) == 4 * (1024 + 5 * (300 + 100))


def test_ids_are_shared_within_a_group_and_nowhere_else() -> None:
    shape = SharedPrefixShape(3, 4, 512 * 2, 700, 1, request_rate=50, duration=10)
    prompts = {r.hash_ids for r in shared_prefix_requests(shape, block_tokens=512, seed=3)}
    assert len(prompts) == 12 and all(len(ids) == 2 + 2 for ids in prompts)
    systems = {ids[:2] for ids in prompts}
    assert len(systems) == 3  # one system prompt per group
    questions = [ids[2:] for ids in prompts]
    every_question_id = [i for ids in questions for i in ids]
    assert len(set(every_question_id)) == len(every_question_id) == 24  # no question block shared
    assert not {i for ids in systems for i in ids} & set(every_question_id)


def test_arrivals_are_evenly_spaced_and_the_draws_reproducible() -> None:
    shape = SharedPrefixShape(2, 2, 0, 16, 4, request_rate=0.3, duration=10)
    requests = list(shared_prefix_requests(shape, 16, seed=5))
    assert [r.timestamp_ms for r in requests] == [0, 3333, 6666]
    assert requests == list(shared_prefix_requests(shape, 16, seed=5))
    long = SharedPrefixShape(10, 10, 32, 16, 4, request_rate=20, duration=30)
    draws = [r.hash_ids for r in shared_prefix_requests(long, 16, seed=5)]
    assert draws == [r.hash_ids for r in shared_prefix_requests(long, 16, seed=5)]
    assert draws != [r.hash_ids for r in shared_prefix_requests(long, 16, seed=6)]
    assert all(r.input_length == 48 and len(r.hash_ids) == 3 for r in shared_prefix_requests(long, 16, seed=5))


def test_the_generator_refuses_a_system_prompt_of_partial_blocks() -> None:
    shape = SharedPrefixShape(2, 2, 100, 16, 4, request_rate=1, duration=1)
    with pytest.raises(ValueError, match=r"system_prompt_len = 100: must be a multiple of block_tokens \(512\)"):
        check_block_tokens(shape, 512)
    with pytest.raises(ValueError, match="must be a multiple"):
        next(shared_prefix_requests(shape, 512, seed=0))
    with pytest.raises(ValueError, match="question_len = 0: must be positive"):
        SharedPrefixShape(2, 2, 0, 0, 4, request_rate=1, duration=1)
