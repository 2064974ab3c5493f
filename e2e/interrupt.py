"""Run the engine and interrupt it at a line of its own progress output, as a user or a CI runner would."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from e2e.engine import Engine
from e2e.kwok import process_running


@dataclass
class Interrupted:
    code: int
    output: str
    triggered: bool
    leftover_plugins: int


def _descendants(root: int) -> list[int]:
    """Every process under `root` (the engine's plugins run in process groups of their own)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid]
        found += children
        frontier += children
    return found


def run_interrupted(
    engine: Engine, args: tuple[str, ...], trigger: Callable[[str], bool], act: Callable[[int], None]
) -> Interrupted:
    """`pulumi ARGS` with `act(pid)` called at the first progress line `trigger` matches; then the run is
    let finish. Plugins the engine left running (it cannot stop them once killed) are counted and stopped."""
    argv = ["pulumi", *args, "--non-interactive", "--color", "never", "--stack", engine.stack]
    process = subprocess.Popen(
        argv,
        cwd=engine.project,
        env=engine.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    lines, triggered, plugins = [], False, []
    for line in process.stdout:
        lines.append(line)
        if not triggered and trigger(line):
            triggered = True
            plugins = _descendants(process.pid)
            act(process.pid)
    process.wait(timeout=900)
    leftover = [pid for pid in plugins if process_running(pid)]
    for pid in leftover:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    output = "".join(lines)
    with (engine.workdir / "engine.log").open("a") as sink:
        sink.write(f"\n$ {' '.join(argv)}  (exit {process.returncode}, interrupted)\n{output}\n")
    return Interrupted(process.returncode, output, triggered, len(leftover))
