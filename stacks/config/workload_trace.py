"""Reading a workload trace in the Mooncake format, streamed line by line, each problem one line naming the
file, the line and the field.

The format (components/formulas/requests.py): one JSON object per line with `timestamp` (ms, never going
back), `input_length` (tokens, at least 1), `output_length` (tokens) and `hash_ids` (one id per block of
`block_tokens` prompt tokens). Other keys are allowed and ignored, and blank lines skipped, as SGLang's
reader (`sglang.benchmark.datasets.mooncake`) does. Two entry points: a path given on the command line
(`--trace`: any regular file) and a stack config's `workload.trace` (a regular file inside the project,
symlinks resolved). Both refuse a directory, a FIFO or a device before opening it, open with O_NONBLOCK (a
FIFO swapped in cannot block) and check the opened file again.

`read_trace` is a generator: a bad line surfaces while iterating. `check_trace` streams the whole file once
and returns its figures, so a caller validates the file before acting on any of it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from components.formulas.requests import Request
from components.units import MiB
from stacks.config.errors import MISSING, ConfigError
from stacks.config.workload_section import MAX_TOKENS

# 512 MiB: ~170 times the Mooncake conversation trace (3 MB for an hour of 12,031 requests), i.e. weeks of
# such traffic or about two million requests; streaming it takes about a minute here, and its distinct
# block ids (held by check_trace and by any replay) stay within a few GiB of memory.
MAX_TRACE_BYTES = 512 * MiB
# 1 MiB: a line of the Mooncake trace is at most ~2 KB; 1 MiB holds ~100,000 block ids, a 50M-token prompt
# at 512 tokens a block (or 1.6M tokens at 16).
MAX_LINE_BYTES = MiB
MAX_INT = 2**63 - 1  # every figure fits an int64 (what an array-based replay stores)
# A request's input_length and output_length are at most workload_section.MAX_TOKENS: a line of 2**63 output
# tokens asked the replay for 2**54 output blocks (a MemoryError); the server's context is checked against
# each request before a replay (stacks/planning/workload/workload_bounds.py).
FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
_SHOWN_CHARS = 60  # of a line that is not JSON


@dataclass(frozen=True)
class TraceSummary:
    requests: int
    prompt_tokens: int
    output_tokens: int
    block_refs: int  # hash ids over all requests
    distinct_blocks: int
    duration_ms: int  # last arrival minus first

    @property
    def mean_prompt_tokens(self) -> float:
        return self.prompt_tokens / self.requests


def read_trace(path: str | os.PathLike[str], block_tokens: int, *, source: str) -> Iterator[Request]:
    """The requests of a trace anywhere (`source`: where the path came from, e.g. "--trace"). A path that is
    not a regular file is refused here; a bad line while iterating."""
    shown = os.fspath(path)
    _check_block_tokens(block_tokens)
    _check_stat(_stat(Path(shown), source, shown), source, shown)
    return _requests(Path(shown), block_tokens, source, shown, nofollow=False)


def read_project_trace(
    relative: str, block_tokens: int, project_dir: Path, *, source: str = "workload.trace"
) -> Iterator[Request]:
    """The requests of a stack config's trace: `relative` to the project root, and inside it."""
    _check_block_tokens(block_tokens)
    target = project_trace_path(relative, project_dir, source=source)
    return _requests(target, block_tokens, source, relative, nofollow=True)


def project_trace_path(relative: str, project_dir: Path, *, source: str = "workload.trace") -> Path:
    """The trace file a stack config names, checked without opening it: inside the project once symlinks are
    resolved, a regular file, within the size bound. Returns the resolved path."""
    root = project_dir.resolve()
    try:
        target = (root / relative).resolve(strict=True)
    except (OSError, RuntimeError):
        raise ConfigError(
            source, relative, "no such file in the project (a path relative to the project root)"
        ) from None
    if not target.is_relative_to(root):
        raise ConfigError(
            source, relative, "leads outside the project (a symlink): a stack's trace is a file inside the project"
        )
    _check_stat(_stat(target, source, relative), source, relative)
    return target


def check_trace(path: str | os.PathLike[str], block_tokens: int, *, source: str = "--trace") -> TraceSummary:
    """Every line of a trace checked, in one pass; its figures."""
    return summarize(read_trace(path, block_tokens, source=source))


def check_project_trace(
    relative: str, block_tokens: int, project_dir: Path, *, source: str = "workload.trace"
) -> TraceSummary:
    return summarize(read_project_trace(relative, block_tokens, project_dir, source=source))


def summarize(requests: Iterator[Request]) -> TraceSummary:
    """The figures of a stream of requests (its distinct block ids are held in a set)."""
    count = prompt = output = refs = 0
    first = last = 0
    blocks: set[int] = set()
    for request in requests:
        if count == 0:
            first = request.timestamp_ms
        last = request.timestamp_ms
        count += 1
        prompt += request.input_length
        output += request.output_length
        refs += len(request.hash_ids)
        blocks.update(request.hash_ids)
    return TraceSummary(count, prompt, output, refs, len(blocks), last - first)


def _check_block_tokens(block_tokens: int) -> None:
    if isinstance(block_tokens, bool) or not isinstance(block_tokens, int) or block_tokens < 1:
        raise ConfigError("block_tokens", block_tokens, "must be a positive integer (tokens per hash block)")


def _stat(path: Path, source: str, shown: str) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as error:
        raise ConfigError(source, shown, f"cannot read the file: {error.strerror}") from None


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_stat(info: os.stat_result, source: str, shown: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
        raise ConfigError(source, shown, f"{kind}; a trace must be a regular file (JSON lines)")
    if info.st_size > MAX_TRACE_BYTES:
        raise ConfigError(source, shown, f"{info.st_size} bytes; a trace may hold at most {MAX_TRACE_BYTES // MiB} MiB")


def _open(path: Path, source: str, shown: str, *, nofollow: bool) -> IO[bytes]:
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise ConfigError(source, shown, f"cannot open the file: {error.strerror}") from None
    try:
        _check_stat(os.fstat(fd), source, shown)  # the file opened may not be the one checked
    except ConfigError:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _requests(path: Path, block_tokens: int, source: str, shown: str, *, nofollow: bool) -> Iterator[Request]:
    count = read = 0
    previous = 0
    with _open(path, source, shown, nofollow=nofollow) as file:
        for number, raw in enumerate(iter(lambda: file.readline(MAX_LINE_BYTES + 1), b""), start=1):
            read += len(raw)
            if read > MAX_TRACE_BYTES:
                raise ConfigError(source, shown, f"grew past {MAX_TRACE_BYTES // MiB} MiB while read")
            where = f"{source} {shown} line {number}"
            if len(raw) > MAX_LINE_BYTES:
                raise ConfigError(
                    where, None, f"longer than {MAX_LINE_BYTES // 1024} KiB; one request a line", hidden=True
                )
            if not raw.strip():
                continue
            request = _request(_object(raw, where), block_tokens, where)
            if request.timestamp_ms < previous:
                raise ConfigError(
                    f"{where}: timestamp", request.timestamp_ms, f"goes back (the line before says {previous})"
                )
            previous = request.timestamp_ms
            count += 1
            yield request
    if count == 0:
        raise ConfigError(source, shown, "holds no requests: a trace has one JSON object a line")


def _object(raw: bytes, where: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        shown = text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
        raise ConfigError(where, shown, "not JSON; a trace has one JSON object a line") from None
    if not isinstance(data, dict):
        raise ConfigError(where, type(data).__name__, f"not a JSON object; each line holds {', '.join(FIELDS)}")
    return data


def _count(data: dict[str, Any], key: str, where: str, low: int, high: int = MAX_INT) -> int:
    value = data.get(key, MISSING)
    if value is MISSING:
        raise ConfigError(f"{where}: {key}", MISSING, f"required ({', '.join(FIELDS)} on every line)")
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        shown = "2**63-1" if high == MAX_INT else f"{high:,} (far above any model's context)"
        raise ConfigError(f"{where}: {key}", value, f"must be an integer from {low} to {shown}")
    return value


def _request(data: dict[str, Any], block_tokens: int, where: str) -> Request:
    timestamp = _count(data, "timestamp", where, 0)
    input_length = _count(data, "input_length", where, 1, MAX_TOKENS)
    output_length = _count(data, "output_length", where, 0, MAX_TOKENS)
    ids = data.get("hash_ids", MISSING)
    if ids is MISSING:
        raise ConfigError(f"{where}: hash_ids", MISSING, f"required ({', '.join(FIELDS)} on every line)")
    if not isinstance(ids, list):
        raise ConfigError(f"{where}: hash_ids", type(ids).__name__, "must be a list of block ids")
    blocks = -(-input_length // block_tokens)
    if len(ids) != blocks:
        raise ConfigError(
            f"{where}: hash_ids",
            f"{len(ids)} ids",
            f"must hold {blocks}: one per {block_tokens}-token block of input_length {input_length}",
        )
    for i, block in enumerate(ids):
        if isinstance(block, bool) or not isinstance(block, int) or not 0 <= block <= MAX_INT:
            raise ConfigError(f"{where}: hash_ids[{i}]", block, "must be an integer from 0 to 2**63-1")
    return Request(timestamp, input_length, output_length, tuple(ids))
