"""Render timings and memory, printed (not asserted): one preset in a fresh process, and all presets in one."""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ONE = "gpu-vllm-native-cpu"


def one_preset_fresh_process(runs: int = 3) -> None:
    times = []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "stacks", "render", ONE, "--out", out], cwd=ROOT, check=True, capture_output=True
            )
            times.append(time.perf_counter() - start)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"one preset ({ONE}), fresh process: best {min(times):.2f} s, worst {max(times):.2f} s over {runs} runs")
    print(f"  peak RSS of the render process: {peak_mib:.0f} MiB")


def all_presets_one_process() -> None:
    start = time.perf_counter()
    from stacks import loading
    from stacks.plan import plan
    from stacks.render import render

    imported = time.perf_counter()
    names = loading.preset_names()
    for name in names:
        render(plan(loading.load_preset(name)), name)
    done = time.perf_counter()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per = (done - imported) / len(names)
    print(
        f"all {len(names)} presets, one process: {done - start:.2f} s in all"
        f" (imports {imported - start:.2f} s, {per:.3f} s per preset)"
    )
    print(f"  peak RSS: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    one_preset_fresh_process()
    all_presets_one_process()
