"""The work a workload's replay asks for, counted before the replay starts, and the bound it may not pass.

The tier replay (`tier_replay.py`) costs one step per block reference: each request's prompt blocks and its
output blocks. A workload is measured once, as a stream (`measure`: nothing kept per request, and it stops at
the first request past the server's context or the reference that passes the bound), or in closed form for a
shared-prefix workload (`shared_prefix_work`), so a workload of billions of requests is refused at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from components.formulas.requests import Request
from components.formulas.shared_prefix import SharedPrefixShape
from components.formulas.tier_replay import output_blocks

# 50 million block references: about 6 minutes of one core at the 135,000 references a second the tier replay
# measured here on gpu-vllm-native-fs (its filesystem grid: the conversation trace's 303,006 references in 2.2 s,
# a 30,000-request shared prefix's 5.28 million in 39.6 s); as many as two million requests of the conversation
# trace's 25 references each, what workload_trace.MAX_TRACE_BYTES holds. Counting them first (`measure`) reads
# 2.2 million trace references a second: at the bound, 23 s of the replay's 6 minutes.
MAX_BLOCK_REFS = 50_000_000
REPLAY_REFS_PER_SECOND = 135_000  # the measurement above: the minutes a refused workload would have taken


@dataclass(frozen=True)
class Work:
    """What a replay of the workload reads. A measure stopped early (`stopped`) counts what came before the
    request that stopped it, that request included."""

    requests: int
    block_refs: int  # prompt and output blocks over all requests
    longest_tokens: int  # prompt and output of the longest request
    longest_request: int  # its place in the workload, from 1
    span_ms: int  # last arrival minus first
    stopped: bool = False

    @property
    def replay_minutes(self) -> float:
        return self.block_refs / REPLAY_REFS_PER_SECOND / 60


def request_refs(request: Request, block_tokens: int) -> int:
    return len(request.hash_ids) + output_blocks(request.output_length, block_tokens)


def measure(requests: Iterable[Request], block_tokens: int, max_tokens: int, max_refs: int = MAX_BLOCK_REFS) -> Work:
    """The workload's work in one pass; it stops at the first request longer than `max_tokens` (prompt and
    output) and at the first whose references take the total past `max_refs`."""
    count = refs = longest = longest_at = 0
    first = last = 0
    for request in requests:
        if count == 0:
            first = request.timestamp_ms
        count += 1
        last = request.timestamp_ms
        refs += request_refs(request, block_tokens)
        tokens = request.input_length + request.output_length
        if tokens > longest:
            longest, longest_at = tokens, count
        if tokens > max_tokens or refs > max_refs:
            return Work(count, refs, longest, longest_at, last - first, stopped=True)
    return Work(count, refs, longest, longest_at, last - first)


def shared_prefix_work(shape: SharedPrefixShape, block_tokens: int) -> Work:
    """The same figures without generating a request: every request asks S + Q tokens in whole blocks of the
    system prompt and ceil(Q / block) of its question, and O output tokens. The span: constant arrivals' last at
    i / rate seconds into the last stage; Poisson arrivals' within the stages' windows (their length: a bound)."""
    per_request = shape.system_prompt_len // block_tokens + -(-shape.question_len // block_tokens)
    per_request += output_blocks(shape.output_len, block_tokens)
    requests = shape.requests
    tokens = shape.system_prompt_len + shape.question_len + shape.output_len
    return Work(requests, requests * per_request, tokens, 1, _span_ms(shape, requests))


def _span_ms(shape: SharedPrefixShape, requests: int) -> int:
    if requests < 2:
        return 0
    if shape.arrivals == "poisson":
        return shape.window_s * 1000
    *before, last = shape.load_stages
    offset = sum(s.duration for s in before)
    return math.floor((offset + (shape.stage_requests(last) - 1) / Fraction(last.rate)) * 1000)


def problem(work: Work) -> str | None:
    """Why a replay of this work is refused: past the bound, or no span of time to turn its stores into rates."""
    if work.block_refs > MAX_BLOCK_REFS:
        asked = f"{'more than ' if work.stopped else ''}{work.block_refs:,} block references"
        return (
            f"asks {asked} (prompt and output blocks), about {work.replay_minutes:,.0f} minutes of replay; a replay"
            f" takes at most {MAX_BLOCK_REFS:,} (about {MAX_BLOCK_REFS / REPLAY_REFS_PER_SECOND / 60:.0f} minutes):"
            " fewer or shorter requests, or larger blocks (workload.block_tokens)"
        )
    if work.span_ms == 0:
        return (
            f"{'its one request arrives' if work.requests == 1 else f'its {work.requests:,} requests all arrive'} at"
            " one instant: the tiers' store rates are bytes over the workload's span of time, which needs two"
            " arrival times at least"
        )
    return None
