"""Values as rendered are values as checked: the evictor's watermarks as its own parser reads them from the
rendered environment, hand-set watermarks judged at the workload's measured rate, evictor settings that would do
nothing refused, `cache.memory_fraction` named when it is what does not fit, and `cache.tier.cpu: auto`'s size
named once, as rendered."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from components.tier_evictor.evict_tier import Settings
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import StackPlan, plan
from stacks.review.render import render

FS = "gpu-vllm-native-fs"
# A light workload on gpu-vllm-native-fs: 600 requests over 5 minutes, far below the upper bound's 7.65 GB/s.
LIGHT = {
    "num_groups": 10,
    "num_prompts_per_group": 10,
    "system_prompt_len": 2048,
    "question_len": 512,
    "output_len": 128,
    "request_rate": 2,
    "duration": 300,
}


def _shared(shape: dict[str, Any]) -> list[str]:
    return [f"workload.shared_prefix.{k}={v}" for k, v in shape.items()] + ["workload.block_tokens=512"]


def _error(name: str, sets: list[str]) -> str:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_named(name, sets))
    text = str(caught.value)
    assert text.isprintable(), text
    return text


def _evictor_env(stack_plan: StackPlan) -> dict[str, str]:
    deployment = next(m for m in stack_plan.workloads["tier-evictor"].manifests if m["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container["env"]}


@functools.cache
def _fs_presets() -> list[str]:
    return [n for n in loading.preset_names() if plan(loading.load_preset(n)).shared_tier is not None]


def test_every_presets_evictor_reads_the_watermarks_the_plan_checked() -> None:
    assert len(_fs_presets()) >= 5
    for name in _fs_presets():
        stack_plan = plan(loading.load_preset(name))
        tier = stack_plan.shared_tier
        assert tier is not None
        if not tier.managed:
            continue
        read = Settings.from_env(_evictor_env(stack_plan))  # the evictor's own parser
        assert (read.high, read.low) == (tier.capacity.high, tier.capacity.low), name


def test_hand_set_watermarks_of_a_fraction_reach_the_evictor_as_set() -> None:
    """Before: rendered as round(75.5) = 76 and round(52.25) = 52, while the plan checked 75.5 and 52.25."""
    stack_plan = plan(
        loading.load_preset(FS, ["storage.evictor.high_watermark=75.5", "storage.evictor.low_watermark=52.25"])
    )
    env = _evictor_env(stack_plan)
    assert (env["HIGH_WATERMARK_PERCENT"], env["LOW_WATERMARK_PERCENT"]) == ("75.5", "52.25")
    read = Settings.from_env(env)
    assert stack_plan.shared_tier is not None
    assert (read.high, read.low) == (stack_plan.shared_tier.capacity.high, stack_plan.shared_tier.capacity.low)
    assert "| high watermark h | 75.5% |" in render(stack_plan, FS).summary


def test_watermarks_the_evictor_would_read_as_equal_are_refused() -> None:
    """Apart in the config, equal once rendered: the evictor exits at start (low < high fails)."""
    text = _error(FS, ["storage.evictor.high_watermark=95.00000000001", "storage.evictor.low_watermark=95"])
    assert "storage.evictor.low_watermark = 95.0: renders as LOW_WATERMARK_PERCENT=95 beside" in text
    assert "HIGH_WATERMARK_PERCENT=95, which the evictor refuses" in text
    with pytest.raises(ValueError, match="watermarks must satisfy"):
        Settings.from_env({"TIER_DIR": "/t", "HIGH_WATERMARK_PERCENT": "95", "LOW_WATERMARK_PERCENT": "95"})


def test_hand_set_watermarks_are_judged_at_the_workloads_measured_rate() -> None:
    """90/85 cannot keep up with the upper bound (7.65 GB/s) but can with a light workload; before, the plan
    judged them at the upper bound before the workload was replayed and refused them."""
    marks = ["storage.evictor.high_watermark=90", "storage.evictor.low_watermark=85"]
    assert "at 7.65 GB/s, upper bound, no workload" in _error(FS, marks)
    stack_plan = plan(loading.load_preset(FS, [*marks, *_shared(LIGHT)]))
    tier = stack_plan.shared_tier
    assert tier is not None and not tier.capacity.derived and (tier.capacity.high, tier.capacity.low) == (0.9, 0.85)
    assert not tier.capacity.store_rate.upper_bound and tier.capacity.problems() == []


def test_hand_set_watermarks_failing_at_the_measured_rate_name_it() -> None:
    heavy = {**LIGHT, "num_groups": 400, "question_len": 4096, "request_rate": 50, "duration": 120}
    # 50 requests/s of 6,144-token prompts: twelve replicas keep up with it (the capacity plan, 11 with both tiers,
    # with the engine's step costs of issue 47), two do not
    keeping_up = ["cache.replicas=12", *_shared(heavy)]
    text = _error(FS, ["storage.evictor.high_watermark=99", "storage.evictor.low_watermark=98.9", *keeping_up])
    assert "storage.evictor.low_watermark = 98.9" in text and "measured by replaying the workload" in text


@pytest.mark.parametrize(
    ("name", "sets", "message"),
    [
        ("gpu-vllm-native-cpu", ["storage.evictor.scan_rate=100"], "storage.evictor.scan_rate = 100: applies only"
         " with a shared filesystem tier"),
        ("gpu-vllm-native-cpu", ["storage.evictor.mode=off"], "storage.evictor.mode = 'off': applies only with a"
         " shared filesystem tier"),
        (FS, ["storage.evictor.mode=off", "storage.evictor.high_watermark=80", "storage.evictor.low_watermark=60"],
         "storage.evictor.high_watermark = 80.0: applies only with storage.evictor.mode auto; the evictor is off"),
        (FS, ["storage.evictor.mode=off", "storage.evictor.image=python:3.12"], "storage.evictor.image ="),
        (FS, ["storage.evictor.budget=100GiB"], "storage.evictor.budget = '100 GiB': applies only with"
         " storage.backend aws-efs (elastic); on existing the budget is storage.size"),
        ("gke-h100-lustre", ["storage.evictor.budget=100GiB"], "on gcp-lustre the budget is storage.size"),
    ],
)  # fmt: skip
def test_evictor_settings_that_would_do_nothing_are_refused(name: str, sets: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        loading.load_named(name, sets)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("name", "sets"),
    [
        (FS, ["storage.evictor.mode=off"]),
        (FS, ["storage.evictor.mode=off", "storage.evictor.scan_rate=100"]),  # the time to fill still reads it
        (FS, ["storage.evictor.scan_rate=5000"]),
        ("eks-h100-efs", ["storage.evictor.budget=2000GiB"]),
    ],
)
def test_evictor_settings_that_do_something_are_taken(name: str, sets: list[str]) -> None:
    assert plan(loading.load_named(name, sets)).shared_tier is not None


def test_a_memory_fraction_too_small_names_itself_with_the_least_that_fits() -> None:
    """Before: 'cache.tensor_parallelism = 2: ... does not fit ...', a field the stack never set."""
    text = _error(FS, ["cache.memory_fraction=0.1"])
    assert text.startswith("invalid stack config: cache.memory_fraction = 0.1: Qwen/Qwen3-32B")
    assert text.endswith("what fits: 0.49 or more")
    assert "cache.memory_fraction = 0.48" in _error(FS, ["cache.memory_fraction=0.48"])
    assert plan(loading.load_preset(FS, ["cache.memory_fraction=0.49"])).hbm.weights_fit


def test_a_model_too_large_at_any_share_names_the_parallelism() -> None:
    text = _error("dev", ["cache.memory_fraction=0.5", "cache.model=Qwen/Qwen3-Coder-480B-A35B-Instruct"])
    assert text.startswith("invalid stack config: cache.tensor_parallelism = 1:")


def test_autos_size_is_named_once_as_rendered() -> None:
    """Before: the fit row said auto chose the node's 960 GiB and the rollout line that auto filled the nodes,
    while the workload's curve chose 312 GiB, the size rendered."""
    shape = {**LIGHT, "num_groups": 40, "question_len": 4096, "request_rate": 10, "duration": 600}
    stack_plan = plan(loading.load_preset("existing-mi300", ["cache.tier.cpu=auto", *_shared(shape)]))
    sized = stack_plan.tier_curve
    assert sized is not None and sized.choice is not None and stack_plan.fit is not None
    largest = stack_plan.fit.largest_tier
    assert largest is not None and sized.choice.size < largest and stack_plan.tier == sized.choice.size
    summary = render(stack_plan, "t").summary
    assert summary.count("`cache.tier.cpu: auto`") == 1
    assert f"`cache.tier.cpu: auto` took {stack_plan.tier.human()}" in summary
    assert f"the nodes hold a CPU tier of up to {largest.human()}" in summary
    filled = render(plan(loading.load_preset("existing-mi300", ["cache.tier.cpu=auto"])), "t").summary
    assert f"`cache.tier.cpu: auto` chose {largest.human()}" in filled and "sized the tier to fill the nodes" in filled


@pytest.mark.parametrize(("high", "refused"), [(0.98, False), (0.981, True)])
def test_the_room_above_the_high_watermark_holds_the_poll_and_the_scan(high: float, refused: bool) -> None:
    """1,000 one-byte files at 100 files/s: a 10 s scan, after a 10 s poll, at 1 B/s of stores: the room above
    the high watermark must hold 20 B, (1 - h) x 1,000 >= 1 x (10 + 10), so h <= 98%."""
    from components.formulas.shared_tier_capacity import StoreRate, given

    capacity = given(1000, StoreRate(1.0, "test"), 100, 1, high, 0.5, poll_seconds=10)
    assert capacity.scan_seconds == 10
    above = [p for p in capacity.problems() if p.startswith("the high watermark")]
    assert bool(above) == refused, capacity.problems()
