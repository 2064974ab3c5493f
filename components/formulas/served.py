"""What a replay of the replicas' engines writes: per request (`Record`), per replica (`ReplicaTotals`), and the
whole outcome (`Served`) the capacity plan and the bench read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Record:
    """Per request, in arrival order: what the engines write as they serve."""

    arrival: np.ndarray
    ttft: np.ndarray
    tpot: np.ndarray  # NaN for one-token outputs
    finish: np.ndarray

    @classmethod
    def of(cls, arrivals: Sequence[float]) -> Record:
        n = len(arrivals)
        return cls(np.asarray(arrivals, dtype=np.float64), np.zeros(n), np.full(n, np.nan), np.zeros(n))


@dataclass
class ReplicaTotals:
    compute_s: float = 0.0  # time running steps
    load_s: float = 0.0  # time the link spent loading


@dataclass(frozen=True)
class Served:
    """The replay's outcome: per request and per replica."""

    replicas: int
    record: Record
    output_tokens: np.ndarray
    totals: tuple[ReplicaTotals, ...]

    @property
    def span_s(self) -> float:
        """First arrival to last finish."""
        return float(self.record.finish.max() - self.record.arrival.min()) if len(self.record.arrival) else 0.0

    @property
    def arrival_span_s(self) -> float:
        return float(self.record.arrival.max() - self.record.arrival.min()) if len(self.record.arrival) else 0.0

    @property
    def drain_s(self) -> float:
        """How long the replicas run after the last arrival."""
        return float(self.record.finish.max() - self.record.arrival.max()) if len(self.record.arrival) else 0.0

    def ttft(self, q: float) -> float:
        return float(np.quantile(self.record.ttft, q))

    def tpot(self, q: float) -> float:
        decoded = self.record.tpot[~np.isnan(self.record.tpot)]
        return float(np.quantile(decoded, q)) if len(decoded) else 0.0

    @property
    def output_tokens_per_s(self) -> float:
        return float(self.output_tokens.sum()) / max(self.span_s, 1e-9)

    @property
    def requests_per_s(self) -> float:
        return len(self.record.arrival) / max(self.span_s, 1e-9)

    def load_share(self) -> list[float]:
        span = max(self.span_s, 1e-9)
        return [t.load_s / span for t in self.totals]
