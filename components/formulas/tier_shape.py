"""What the tier replay is run on: the stack's tiers and what a hit saves. Records only, so the grid
(`tier_grid.py`) and the replay (`tier_replay.py`) both take them without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from components.formulas.payoff import Replica

Relation = Literal["inclusive", "exclusive"]
Scope = Literal["replica", "pooled"]


@dataclass(frozen=True)
class Tiers:
    """The stack replayed: its replicas and HBM, and how its CPU tier relates to HBM and to the replicas."""

    block_tokens: int
    replicas: int
    hbm_blocks: int
    relation: Relation = "inclusive"
    cpu_scope: Scope = "replica"

    def __post_init__(self) -> None:
        if self.block_tokens < 1 or self.replicas < 1 or self.hbm_blocks < 0:
            raise ValueError(f"block_tokens and replicas >= 1, hbm_blocks >= 0: {self}")
        if self.relation == "exclusive" and self.cpu_scope == "pooled":
            raise ValueError("an exclusive CPU pool fed by several HBMs' evictions is no LRU of one stream")


@dataclass(frozen=True)
class Savings:
    """What a hit saves: the replica's prefill (payoff's model) and each tier's reload bandwidth per pod."""

    replica: Replica
    cpu_bandwidth: float  # bytes/s per pod
    fs_bandwidth: float  # bytes/s per pod
