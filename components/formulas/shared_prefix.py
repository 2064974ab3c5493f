"""A synthetic shared-prefix workload as request records (the shape inference-perf's `shared_prefix` data
generator and llm-d-benchmark's `shared_prefix_synthetic` profile define).

`num_groups` system prompts of `system_prompt_len` tokens, each shared by its `num_prompts_per_group`
prompts; a prompt is its group's system prompt and then its own question of `question_len` tokens, and asks
for `output_len` tokens. Requests arrive evenly spaced at `request_rate` per second for `duration` seconds,
each asking a prompt drawn uniformly (`random.Random(seed)`) from all groups' prompts.

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

from components.formulas.requests import Request


@dataclass(frozen=True)
class SharedPrefixShape:
    num_groups: int  # G: distinct system prompts
    num_prompts_per_group: int  # P: prompts sharing one system prompt
    system_prompt_len: int  # S tokens, a multiple of block_tokens
    question_len: int  # Q tokens, at least 1 (else a group's prompts would be one prompt)
    output_len: int  # O tokens per request
    request_rate: float  # requests per second, evenly spaced
    duration: int  # seconds of arrivals

    def __post_init__(self) -> None:
        positive = {
            "num_groups": self.num_groups,
            "num_prompts_per_group": self.num_prompts_per_group,
            "question_len": self.question_len,
            "output_len": self.output_len,
            "request_rate": self.request_rate,
            "duration": self.duration,
        }
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"{name} = {value!r}: must be positive")
        if self.system_prompt_len < 0:
            raise ValueError(f"system_prompt_len = {self.system_prompt_len!r}: must be 0 or more")

    @property
    def prompts(self) -> int:
        return self.num_groups * self.num_prompts_per_group

    @property
    def requests(self) -> int:
        """Arrivals at i / request_rate seconds for every i with i / request_rate < duration."""
        return math.ceil(Fraction(self.request_rate) * self.duration)


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
    rate = Fraction(shape.request_rate)
    draw = random.Random(seed)
    for i in range(shape.requests):
        prompt = draw.randrange(shape.prompts)
        group = prompt // shape.num_prompts_per_group
        system = range(group * system_blocks, (group + 1) * system_blocks)
        start = first_question_id + prompt * question_blocks
        yield Request(
            timestamp_ms=math.floor(i * 1000 / rate),
            input_length=shape.system_prompt_len + shape.question_len,
            output_length=shape.output_len,
            hash_ids=(*system, *range(start, start + question_blocks)),
        )
