"""The tiers replayed on a stack's workload, through planning, the summary, the plot and `./run size`
(stacks/planning/workload/workload_sizing.py; the replay itself is held to a brute-force one in test_tier_replay.py)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from components.formulas.shared_prefix import SharedPrefixShape, working_set_tokens
from stacks.__main__ import main
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import StackPlan, plan
from stacks.planning.workload.tier_curve import UNBOUNDED
from stacks.planning.workload.workload_sizing import AUTO_MARGIN
from stacks.review.render import render

TRACE = "tests/fixtures/workloads/mooncake-conversation/conversation_trace_40k.jsonl"
ROOT = Path(__file__).resolve().parents[1]

# Qwen3-0.6B on one H100 (dev) holds 634,598 tokens of KV: 1,239 blocks of 512. This workload's prompts are
# 40 system prompts of 4 blocks and 400 questions of 4 blocks (1,760 blocks), asked about every 400 requests,
# with an output block each: more than HBM holds, less than HBM and a 200 GiB tier (3,656 blocks).
SHAPE: dict[str, Any] = {  # the keys of SharedPrefixShape (its `stages` and `arrivals` left out)
    "num_groups": 40,
    "num_prompts_per_group": 10,
    "system_prompt_len": 2048,
    "question_len": 2048,
    "output_len": 128,
    "request_rate": 10,
    "duration": 600,
}


def _shared(shape: dict[str, int], **more: object) -> list[str]:
    sets = [f"workload.shared_prefix.{k}={v}" for k, v in shape.items()]
    return [*sets, "workload.block_tokens=512", *(f"{k}={v}" for k, v in more.items())]


@functools.cache
def _plan(name: str, overrides: tuple[str, ...]) -> StackPlan:
    """The curve as planned; the conversation trace asks more than the presets' two replicas give, which the
    capacity plan's tests (test_capacity_plan.py) hold: not checked here."""
    return plan(loading.load_named(name, list(overrides)), keep_up=False)


def test_the_cpu_tier_catches_what_hbm_cannot_hold() -> None:
    sized = _plan("dev", tuple(_shared(SHAPE, **{"cache.tier.cpu": "200GiB"}))).tier_curve
    assert sized is not None
    c, (cfg, _) = sized.curve, sized.configured
    hits = c.share(c.hit_tokens)[:, 0]
    assert sized.cpu_sizes[0].bytes == 0 and hits[0] < 0.75  # HBM alone: the system prompts, some questions
    assert hits[cfg] > 0.9  # HBM + the tier hold every prompt: all but first asks hit
    assert c.share(c.cpu_tokens)[cfg, 0] > 0.15 and hits[cfg] - hits[0] > 0.15
    assert list(hits) == sorted(hits)


def test_the_replay_counts_the_descriptions_working_set() -> None:
    sized = _plan("dev", tuple(_shared(SHAPE, **{"cache.tier.cpu": "200GiB"}))).tier_curve
    assert sized is not None
    shape = SharedPrefixShape(**SHAPE)
    # Every prompt is asked in 6,000 draws of 400; each request's output is new KV, not only each prompt's.
    assert sized.curve.requests == 6000
    extra_outputs = (6000 - 400) * SHAPE["output_len"]
    assert sized.curve.working_set_tokens == working_set_tokens(shape) + extra_outputs


def test_auto_takes_the_smallest_size_within_the_margin_of_the_best_the_node_holds() -> None:
    shape = {**SHAPE, "question_len": 4096}  # 3,360 prompt blocks on two replicas of 2,030 blocks of HBM each
    stack_plan = _plan("existing-mi300", tuple(_shared(shape, **{"cache.tier.cpu": "auto"})))
    sized = stack_plan.tier_curve
    assert sized is not None and sized.choice is not None and stack_plan.fit is not None
    hits = sized.curve.share(sized.curve.hit_tokens)[:, 0]
    largest = stack_plan.fit.largest_tier
    assert largest is not None and sized.shape.node_largest == largest
    candidates = [i for i, s in enumerate(sized.cpu_sizes) if 0 < s.bytes <= largest.bytes]
    best = max(hits[i] for i in candidates)
    chosen = sized.cpu_sizes.index(sized.choice.size)
    assert hits[chosen] >= best - AUTO_MARGIN
    assert all(hits[i] < best - AUTO_MARGIN for i in candidates if sized.cpu_sizes[i] < sized.choice.size)
    assert sized.choice.size < largest  # the curve flattens before the node is full: less memory pinned
    assert stack_plan.tier == sized.choice.size
    assert f"`cache.tier.cpu: auto` took {sized.choice.size.human()}" in render(stack_plan, "t").summary


@functools.cache
def _conversation_fs() -> StackPlan:
    return _plan("gpu-vllm-native-fs", (f"workload.trace={TRACE}",))


def test_an_unbounded_shared_tier_serves_exactly_the_traces_reuse() -> None:
    """Counted here without the replay: a prompt's leading blocks that any earlier request touched."""
    seen: set[int] = set()
    hit = total = 0
    for line in (ROOT / TRACE).read_text().splitlines():
        request = json.loads(line)
        ids, length = request["hash_ids"], request["input_length"]
        tokens = [512] * (len(ids) - 1) + [length - 512 * (len(ids) - 1)]
        lead = 0
        while lead < len(ids) and ids[lead] in seen:
            lead += 1
        hit += sum(tokens[:lead])
        total += length
        seen.update(ids)
    sized = _conversation_fs().tier_curve
    assert sized is not None and sized.fs_sizes[-1] == UNBOUNDED
    c = sized.curve
    assert c.prompt_tokens == total
    assert int(c.hit_tokens[sized.configured[0], -1]) == hit
    assert 0.36 < hit / total < 0.38  # the trace's SOURCE.md: about 36.6% of block references


def test_the_conversation_trace_on_the_seeds_stack() -> None:
    """The issue's finding: a 9,000 GiB Lustre tier catches about 30% of the trace's prompt tokens, and a
    smaller CPU tier in front of it adds little; it fills in minutes."""
    sized = _conversation_fs().tier_curve
    assert sized is not None
    c, (cpu, fs) = sized.curve, sized.configured
    assert sized.fs_sizes[fs].bytes == 9000 * 2**30
    assert 0.25 < c.share(c.fs_tokens)[cpu, fs] < 0.35
    assert c.share(c.cpu_tokens)[cpu, fs] < 0.02
    minutes = sized.fs_sizes[fs].bytes / sized.store_rate(int(c.fs_stored_blocks[cpu, fs])) / 60
    assert 10 < minutes < 40


def test_render_writes_the_plot_and_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overrides = _shared(SHAPE, **{"cache.tier.cpu": "200GiB"})
    args = ["render", "dev", "--out", str(tmp_path)]
    for o in overrides:
        args += ["--set", o]
    assert main(args) == 0
    png = (tmp_path / "tier-curve.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    summary = (tmp_path / "summary.md").read_text()
    assert "## Tier sizes for the workload" in summary and "| 200 GiB (configured) |" in summary
    again = tmp_path / "again"
    assert main([*args[:3], str(again), *args[4:]]) == 0
    assert (again / "tier-curve.png").read_bytes() == png  # no timestamp in it
    assert not list(tmp_path.glob(".*.partial"))


def test_a_preset_without_a_workload_has_no_plot(tmp_path: Path) -> None:
    assert main(["render", "dev", "--out", str(tmp_path)]) == 0
    assert not (tmp_path / "tier-curve.png").exists()
    assert "Tier sizes" not in (tmp_path / "summary.md").read_text()


def test_size_prints_the_curve_without_rendering(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["size", "dev"]
    for o in _shared(SHAPE, **{"cache.tier.cpu": "200GiB"}):
        args += ["--set", o]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("# dev: replicas, tier sizes and cost\n")
        and "## Replicas for the workload" in out
        and "| 200 GiB (configured) |" in out
        and "tier-curve" not in out
    )
    assert "## Cost" in out and "Nothing this stack creates is priced" in out  # dev: an existing cluster, no pools


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["size", "dev"], "--trace = (missing): size needs a workload"),
        (["size", "gke-cluster", "--trace", TRACE], "NAME = 'gke-cluster': is a cluster stack"),
        (["size", "dev", "--trace", "/etc/hostname"], "line 1"),
        (["size", "dev", "--trace", "/dev/zero"], "/dev/zero"),
        (["size", "dev", "--trace", TRACE, "--block-tokens", "0"], "--block-tokens = 0: must be from 1"),
        (["size", "dev", "--block-tokens", "16", "--set", "workload.trace=" + TRACE], "applies with --trace"),
    ],
)
def test_size_refuses_bad_arguments_in_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_a_workload_in_a_cluster_stack_is_refused() -> None:
    with pytest.raises(ConfigError, match="workload"):
        loading.load_named("gke-cluster", ["workload.trace=" + TRACE])
