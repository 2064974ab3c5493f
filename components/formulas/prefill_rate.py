"""The peak prefill rate (llm-d's `peakPrefillThroughput`, `V_P`): prompt tokens one replica prefills per second.

llm-d measures it by hand (`guides/recipes/router/calibration/calibrate.sh`: `V_P = CHUNK_SIZE / median(TTFT)` for
unloaded requests of one `--max-num-batched-tokens` chunk; the `prefix-cache-affinity-filter` README: "the prefill
throughput of a single unloaded chunk of `max_num_batched_tokens` (8192) tokens", 15,928 tok/s for Qwen3-32B on
two H100s at TP=2) and asks for it in two places by hand. Here it is derived once from the time model: one engine
step of a full chunk alone (`EngineCosts.step_seconds`: its GEMMs, or the weights' read if slower, then its causal
attention over every layer and the step's fixed costs), so it follows whatever the step costs are.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.formulas.serving_time import EngineCosts

# llm-d's published figure, for the bench's comparison (guides/workload-autoscaling/keda-epp-token-aware/README.md
# and llm-d-router `prefix-cache-affinity-filter` README: Qwen3-32B, 2 x H100 80GB, TP=2, chunk 8192, vLLM 0.19).
LLMD_QWEN3_32B_H100_TP2 = 15_928


@dataclass(frozen=True)
class PrefillRate:
    chunk: int  # tokens: the engine's max_num_batched_tokens
    seconds: float  # one step of that chunk alone
    formula: str

    @property
    def tokens_per_s(self) -> float:
        return self.chunk / self.seconds

    @property
    def whole(self) -> int:
        """Tokens per second as the router's parameter and the PromQL divisor write it (one value for both)."""
        return max(1, round(self.tokens_per_s))


def peak_prefill_rate(costs: EngineCosts) -> PrefillRate:
    """One full chunk prefilled alone: `chunk` new tokens over none cached (chunk² / 2 causal attention pairs)."""
    chunk = costs.max_batched_tokens
    if chunk <= 0:
        raise ValueError(f"an engine step batches a positive number of tokens, not {chunk}")
    seconds = costs.step_seconds(chunk, chunk * chunk / 2, chunk)
    formula = f"{chunk} tokens (max_num_batched_tokens) / {seconds * 1e3:.1f} ms (one step of that chunk alone)"
    return PrefillRate(chunk, seconds, formula)
