"""`./run size --trace F` sizes the stack for F as if F were the stack's own workload: `cache.replicas: auto` takes
its count from F and `workload.slo` is judged on F (round 5: both were refused as "needs a workload", the trace
ignored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stacks.__main__ import main


def _trace(path: Path) -> Path:
    """60 requests a second apart, each two blocks of 512 (the first shared): one dev replica keeps up."""
    lines = [
        {"timestamp": i * 1000, "input_length": 1024, "output_length": 16, "hash_ids": [0, 1 + i % 10]}
        for i in range(60)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _size(trace: Path, capsys: pytest.CaptureFixture[str], *sets: str) -> tuple[int, str, str]:
    args = ["size", "dev", "--trace", str(trace)]
    for value in sets:
        args += ["--set", value]
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_auto_replicas_take_their_count_from_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _size(_trace(tmp_path / "t.jsonl"), capsys, "cache.replicas=auto")
    assert (code, err) == (0, ""), err
    assert "(--trace)" in out and "as configured (`cache.replicas: auto`)" in out


def test_a_latency_target_is_judged_on_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _size(_trace(tmp_path / "t.jsonl"), capsys, "workload.slo.ttft_p90=5")
    assert (code, err) == (0, ""), err
    assert "meet TTFT p90 <= 5 s (workload.slo)" in out


def test_without_a_trace_the_same_keys_still_need_a_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size", "dev", "--set", "cache.replicas=auto"]) == 2
    assert "cache.replicas = 'auto': needs a workload" in capsys.readouterr().err
    assert main(["size", "dev", "--set", "workload.slo.ttft_p90=5"]) == 2
    assert "workload = ['slo']: set workload.trace" in capsys.readouterr().err
