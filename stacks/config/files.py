"""Files read from the project as a careful tool reads them: a regular file (no FIFO, device or directory),
inside the project once every link is followed, read once and bounded in size; the data in it bounded in
nesting. A FIFO would block the read for ever, /dev/zero fill the memory, a link lead out of the repo, and
JSON or YAML nested 100,000 deep exhaust the parsers' recursion."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 1024 * 1024  # a stack file or a cluster stack's outputs is a few KiB
MAX_DEPTH = 32  # the deepest config path is 5 levels; an outputs file's 4


class UnreadableError(Exception):
    """Why a file is not read: one phrase, no path or content (the caller names the field)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def read_bytes(path: Path, within: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of `path`, a regular file inside `within` once its links are followed, at most `limit`."""
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as error:  # RuntimeError: a link loop (Python < 3.13)
        raise UnreadableError(getattr(error, "strerror", None) or "a link loop") from None
    if not resolved.is_relative_to(within.resolve()):
        raise UnreadableError("it leads outside the project (through a link)")
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer; the file's kind is read from what was opened
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise UnreadableError(error.strerror or "cannot open it") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnreadableError(f"{_kind(mode)}, not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnreadableError(f"larger than {limit // 1024} KiB")
    return data


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep mappings and lists nest in `value` (counted without recursion, up to `limit` + 1)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest
