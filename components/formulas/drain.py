"""How long a model server drains before it stops: the longest request it can be serving, at the time model's rates.

On deletion a pod leaves its InferencePool's endpoints (the router stops picking it), its preStop hook waits for
that to reach the router, then SIGTERM: vLLM started with `--shutdown-timeout=N` (v0.26.0; vllm-project/vllm#36666)
refuses new requests with 503 (its readiness fails) and finishes those it has for up to N seconds; SGLang drains
on SIGTERM by itself (sgl-project/sglang#1838; `SGLANG_FORCE_SHUTDOWN` unset). The kubelet kills what is left at
`terminationGracePeriodSeconds`. llm-d's graceful-shutdown component lays the grace out the same way
(guides/recipes/modelserver/components/graceful-shutdown: a 15 s preStop sleep, `--shutdown-timeout=45`, 15 s of
teardown, 75 s in all); here N is derived instead of 45.

N: the longest request the engine admits (`max_model_len` tokens) at the slowest the time model runs it: its
prompt prefilled alone, then every token one decode step of a full batch over a full KV pool
(`EngineCosts.step_seconds` with every sequence decoding and the pool's every token read), an upper bound: a
request is never slower than a step that reads the whole pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from components.formulas.serving_time import EngineCosts

PRE_STOP_SECONDS = 15  # llm-d's graceful-shutdown component: the router stops picking the pod before SIGTERM
TEARDOWN_SECONDS = 15  # the same component: the engine's teardown after the drain, before SIGKILL


@dataclass(frozen=True)
class Drain:
    max_model_len: int
    max_model_len_from: str
    prefill_s: float  # a max_model_len prompt prefilled alone
    step_s: float  # one decode step of a full batch over a full KV pool
    max_seqs: int
    kv_tokens: int

    @property
    def longest_request_s(self) -> float:
        return self.prefill_s + self.max_model_len * self.step_s

    @property
    def shutdown_timeout_s(self) -> int:
        """vLLM's `--shutdown-timeout`: the longest request, whole seconds up."""
        return max(1, math.ceil(self.longest_request_s))

    @property
    def grace_s(self) -> int:
        """The pod's `terminationGracePeriodSeconds`: the preStop wait, the drain and the teardown."""
        return PRE_STOP_SECONDS + self.shutdown_timeout_s + TEARDOWN_SECONDS

    def formula(self) -> str:
        return (
            f"{PRE_STOP_SECONDS} s preStop + ceil({self.prefill_s:.1f} s prefill of {self.max_model_len:,} tokens"
            f" + {self.max_model_len:,} x {self.step_s * 1000:.2f} ms step) + {TEARDOWN_SECONDS} s teardown"
            f" = {self.grace_s} s"
        )


def drain(costs: EngineCosts, max_model_len: int, max_model_len_from: str) -> Drain:
    """The drain of a replica with these step costs serving requests of at most `max_model_len` tokens."""
    full = costs.kv_tokens
    return Drain(
        max_model_len=max_model_len,
        max_model_len_from=max_model_len_from,
        prefill_s=costs.prefill_seconds(max_model_len),
        step_s=costs.step_seconds(costs.max_seqs, full, full),
        max_seqs=costs.max_seqs,
        kv_tokens=full,
    )
