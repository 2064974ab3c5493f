"""A workload as the tier replay reads it: one record per request, in arrival order.

The Mooncake trace format (SGLang's `bench_serving --dataset-name mooncake`, Dynamo's data generator and
aiperf read it too): the arrival time in ms, the prompt and output lengths in tokens, and one id per block
of `block_tokens` prompt tokens (equal ids are the same prefix block; the last block may be partial).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Request:
    timestamp_ms: int
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]  # ceil(input_length / block_tokens) ids, one per prompt block
    stage: int = 0  # the load stage it arrives in (a shared prefix's `load.stages`, each draw's its own); a trace: 0
