"""A synthetic shared-prefix workload as request records (the shape inference-perf's `shared_prefix` data
generator and llm-d-benchmark's `shared_prefix_synthetic` profile define).

`num_groups` system prompts of `system_prompt_len` tokens, each shared by its `num_prompts_per_group`
prompts; a prompt is its group's system prompt and then its own question of `question_len` tokens, and asks
for `output_len` tokens. Each request asks a prompt drawn uniformly (`random.Random(seed)`) from all groups'
prompts.

Arrivals, as inference-perf's load section writes them (kubernetes-sigs/inference-perf,
inference_perf/config/loadgen/config.py `LoadConfig`: `type`, `stages[].rate`, `stages[].duration`): the stages
run one after another, each `rate` requests a second for `duration` seconds.
- constant: evenly spaced, at i / rate seconds into the stage while before its end (inference-perf's constant
  timer sends int(rate x duration) and jitters them; here they are spaced exactly, the deterministic case);
- poisson: int(rate x duration) requests, as inference-perf sends, at the times of a Poisson process of that
  rate conditioned on its count within the stage (sorted uniform times, drawn from exponential gaps scaled to
  the stage: the same law; inference-perf draws a Poisson count for every second instead). A Poisson workload is
  `draws` independent draws (arrival seeds `arrival_seed`, `arrival_seed` + 1, ...) run one after another, so
  its percentiles are pooled over them; each draw's stages are stages of their own (`Request.stage`).
inference-perf waits for a stage's requests to finish before the next; here the next stage arrives at once, on
whatever queue the last one left (the harder case for a plan).

Block ids: the system prompt fills whole blocks (its length is a multiple of `block_tokens`), shared by
its group; the question's blocks belong to its prompt alone (asked again, a prompt reuses its own ids). Ids
are numbered system blocks first (group by group), then question blocks (prompt by prompt), so no two
groups or prompts share an id they should not.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from components.formulas.requests import Request

ArrivalType = Literal["constant", "poisson"]


@dataclass(frozen=True)
class Stage:
    """One load stage: `rate` requests a second for `duration` seconds (inference-perf's `load.stages[]`)."""

    rate: float
    duration: int


@dataclass(frozen=True)
class SharedPrefixShape:
    num_groups: int  # G: distinct system prompts
    num_prompts_per_group: int  # P: prompts sharing one system prompt
    system_prompt_len: int  # S tokens, a multiple of block_tokens
    question_len: int  # Q tokens, at least 1 (else a group's prompts would be one prompt)
    output_len: int  # O tokens per request
    request_rate: float = 0.0  # the one constant stage's requests per second (0 with `stages`)
    duration: int = 0  # its seconds of arrivals (0 with `stages`)
    stages: tuple[Stage, ...] = ()  # inference-perf's load.stages, one after another (empty: the one stage above)
    arrivals: ArrivalType = "constant"
    draws: int = 1  # poisson: independent draws of the arrivals, one after another
    arrival_seed: int = 0  # poisson: the first draw's seed

    def __post_init__(self) -> None:
        positive: dict[str, float] = {
            "num_groups": self.num_groups,
            "num_prompts_per_group": self.num_prompts_per_group,
            "question_len": self.question_len,
            "output_len": self.output_len,
            "draws": self.draws,
        }
        if not self.stages:
            positive |= {"request_rate": self.request_rate, "duration": self.duration}
        elif self.request_rate or self.duration:
            raise ValueError("request_rate and duration: the one stage's; with stages, leave them 0")
        for i, stage in enumerate(self.stages):
            positive |= {f"stages[{i}].rate": stage.rate, f"stages[{i}].duration": stage.duration}
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"{name} = {value!r}: must be positive")
        if self.system_prompt_len < 0:
            raise ValueError(f"system_prompt_len = {self.system_prompt_len!r}: must be 0 or more")
        if self.arrivals == "constant" and self.draws != 1:
            raise ValueError(f"draws = {self.draws}: constant arrivals are one draw")

    @property
    def prompts(self) -> int:
        return self.num_groups * self.num_prompts_per_group

    @property
    def load_stages(self) -> tuple[Stage, ...]:
        return self.stages or (Stage(self.request_rate, self.duration),)

    def stage_requests(self, stage: Stage) -> int:
        """constant: arrivals at i / rate seconds for every i with i / rate < duration; poisson: int(rate x
        duration), as inference-perf sends."""
        if self.arrivals == "poisson":
            return math.floor(Fraction(stage.rate) * stage.duration)
        return math.ceil(Fraction(stage.rate) * stage.duration)

    @property
    def requests(self) -> int:
        return self.draws * sum(self.stage_requests(s) for s in self.load_stages)

    @property
    def window_s(self) -> int:
        """Seconds from the first stage's start to the last's end, over every draw."""
        return self.draws * sum(s.duration for s in self.load_stages)

    def arrival_ms(self) -> Iterator[tuple[int, int]]:
        """(arrival time in ms, stage number) of every request, in order (lazy)."""
        offset = 0
        stage_number = 0
        for draw in range(self.draws):
            for stage in self.load_stages:
                count = self.stage_requests(stage)
                if self.arrivals == "poisson":
                    key = f"arrivals/{self.arrival_seed + draw}/{stage_number}"
                    times = _uniform_order(count, stage.duration, key)
                    yield from ((math.floor((offset + t) * 1000), stage_number) for t in times)
                else:
                    rate = Fraction(stage.rate)
                    yield from ((math.floor((offset + i / rate) * 1000), stage_number) for i in range(count))
                offset += stage.duration
                stage_number += 1


def _uniform_order(count: int, duration: int, key: str) -> Iterator[float]:
    """`count` sorted uniform times in [0, duration), lazily: exponential gaps scaled by their total (two passes
    over one seeded stream: its total, then the times)."""
    first = random.Random(key)
    total = sum(first.expovariate(1.0) for _ in range(count + 1))
    draw, t = random.Random(key), 0.0
    for _ in range(count):
        t += draw.expovariate(1.0)
        yield duration * t / total


def check_block_tokens(shape: SharedPrefixShape, block_tokens: int) -> None:
    """The system prompt must fill whole blocks: a partial block would be shared by no prompt (each prompt's
    question continues it differently), and the working set would no longer be G x (S + P x (Q + O))."""
    if block_tokens < 1:
        raise ValueError(f"block_tokens = {block_tokens!r}: must be positive")
    if shape.system_prompt_len % block_tokens:
        raise ValueError(
            f"system_prompt_len = {shape.system_prompt_len}: must be a multiple of block_tokens ({block_tokens}),"
            " so the system prompt is whole blocks its group shares"
        )


def working_set_tokens(shape: SharedPrefixShape) -> int:
    """Tokens of KV every prompt leaves once each was asked: G system prompts, and per prompt its question
    and its output, G x (S + P x (Q + O))."""
    return shape.num_groups * (
        shape.system_prompt_len + shape.num_prompts_per_group * (shape.question_len + shape.output_len)
    )


def shared_prefix_requests(shape: SharedPrefixShape, block_tokens: int, seed: int) -> Iterator[Request]:
    """The workload's requests in arrival order (lazy: memory does not grow with the duration)."""
    check_block_tokens(shape, block_tokens)
    system_blocks = shape.system_prompt_len // block_tokens
    question_blocks = -(-shape.question_len // block_tokens)
    first_question_id = shape.num_groups * system_blocks
    draw = random.Random(seed)
    for timestamp_ms, stage in shape.arrival_ms():
        prompt = draw.randrange(shape.prompts)
        group = prompt // shape.num_prompts_per_group
        system = range(group * system_blocks, (group + 1) * system_blocks)
        start = first_question_id + prompt * question_blocks
        yield Request(
            timestamp_ms=timestamp_ms,
            input_length=shape.system_prompt_len + shape.question_len,
            output_length=shape.output_len,
            hash_ids=(*system, *range(start, start + question_blocks)),
            stage=stage,
        )
