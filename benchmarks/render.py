"""Render timings and memory, printed (not asserted): one preset in a fresh process, all presets in one,
the whole-matrix `stacks diff` and `stacks check`."""

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
    from stacks.config import loading
    from stacks.planning.plan import plan
    from stacks.review.render import render

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


def _timed_cli(*args: str) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of one `python -m stacks` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "stacks", *args], cwd=ROOT, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def whole_matrix_diff_and_check() -> None:
    """`stacks diff` of every stack against HEAD (one render process per revision, the two side by side)
    and `stacks check` of every stack (one process). Wall time depends on what else the cores run; CPU
    time does not."""
    wall, cpu = _timed_cli("diff", "--base", "HEAD")
    print(f"stacks diff --base HEAD, every stack: {wall:.1f} s wall, {cpu:.1f} s CPU (target: < 10 s on 2 cores)")
    wall, cpu = _timed_cli("check")
    print(f"stacks check, every stack in one process: {wall:.1f} s wall, {cpu:.1f} s CPU")


def cold_starts() -> None:
    """The modeled cold start of a restarted model-server pod, with the model cache on and off."""
    from stacks.config import loading
    from stacks.planning.plan import plan
    from stacks.review import cold_start_table

    print("restarted model-server pod (modeled): model cache on vs off")
    for name in loading.preset_names():
        stack_plan = plan(loading.load_preset(name))
        if stack_plan.model_cache is None:
            off = cold_start_table.restart(stack_plan, False).modeled
            print(f"  {name}: cache off {off} s (no shared storage: model_cache auto is off)")
            continue
        on, off = (cold_start_table.restart(stack_plan, c).modeled for c in (True, False))
        print(f"  {name}: cache on {on} s, off {off} s: {off / on:.1f}x faster")


def prepull_rollouts() -> None:
    """Image pulls on the critical path of a rollout to a new image, without and with `images.prepull`, on
    the presets whose model servers are placed on a pool no mirror serves."""
    from components.specs import prepull
    from stacks.config import loading
    from stacks.config.errors import ConfigError
    from stacks.planning.plan import plan
    from stacks.review import cold_start_table

    print("rollout to a new image (modeled): image pulls on the critical path, images.prepull off vs on")
    for name in loading.preset_names():
        try:
            on = plan(loading.load_preset(name, ["images.prepull=true"]))
        except ConfigError:
            continue  # unplaced model servers: no pool to pre-pull onto
        if on.mirror is not None or not prepull.pulled_images(on.manifests(prepull.WORKLOAD)):
            continue
        waves, ahead = cold_start_table.rollout_pulls(on)
        replicas = on.model_server.replicas
        print(f"  {name}: {replicas} wave(s) x pull = {waves} s off, {ahead} s on (every node at once, first)")


def scaling_replays() -> None:
    """The autoscaling replay per preset with autoscaling on (max_replicas: what the pool holds, else twice the
    initial count): a 1x -> 4x load step through the HPA KEDA drives, and back."""
    from stacks.config import loading
    from stacks.config.errors import ConfigError
    from stacks.planning.plan import plan
    from stacks.review.autoscaling_summary import replay_rows

    print("autoscaling replay (modeled): 1x -> 4x the initial replicas' capacity for 30 min, then back")
    for name in loading.preset_names():
        config = loading.load_preset(name)
        sets = ["autoscaling.enabled=true"]
        if not config.cache.node_pool:
            sets.append(f"autoscaling.max_replicas={2 * (config.cache.replicas or 2)}")
        try:
            auto = plan(loading.load_preset(name, sets)).autoscaling
        except ConfigError as error:
            print(f"  {name}: not autoscaled ({str(error).removeprefix('invalid stack config: ')})")
            continue
        assert auto is not None
        figures = "; ".join(f"{k} {v}" for k, v in replay_rows(auto)[1:])
        print(
            f"  {name}: {auto.min_replicas}..{auto.max_replicas} replicas, cold start {auto.cold_start_s} s: {figures}"
        )


if __name__ == "__main__":
    one_preset_fresh_process()
    all_presets_one_process()
    whole_matrix_diff_and_check()
    cold_starts()
    prepull_rollouts()
    scaling_replays()
