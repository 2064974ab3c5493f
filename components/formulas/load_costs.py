"""What loading a prefix's KV from an offload tier costs a replica, per token (the engine costs' `load`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoadCosts:
    """Seconds one token's KV takes to load from each offload tier into HBM (the pod's link to the tier)."""

    cpu_s_per_token: float
    fs_s_per_token: float

    def seconds(self, cpu_tokens: int, fs_tokens: int) -> float:
        return cpu_tokens * self.cpu_s_per_token + fs_tokens * self.fs_s_per_token
