"""How the shared filesystem tier's evictor keeps up: its watermarks from the claim's size, the store rate and
the scan rate, and how long the tier takes to fill.

The connectors never delete from the shared tier (the seed: "Capacity is managed by the storage system or by an
external controller"), so at the store rate a claim of C bytes is full in C / R seconds. The evictor
(`components/tier_evictor/evict_tier.py`) reads the usage every `poll` seconds; above the high watermark it
scans the tier once (N = C / F files of F bytes, at S files/s: T = N / S seconds) and deletes the oldest files
down to the low watermark. So:

- above the high watermark, the room must hold what is stored while the evictor notices and scans before its
  first deletion: (1 - high) x C >= margin x R x (poll + T);
- between the watermarks, the room must outlast a scan, so one pass's deletions are not used up before the
  next scan could start: (high - low) x C >= margin x R x T;
- below the low watermark, what is younger than a pass is never deleted: low x C >= R x T.

The store rate is a bound unless a workload measures it: without one, every replica prefills at full speed
and stores every token it prefills (`upper_bound_store_rate`). Pure arithmetic, shared by the plan (the
evictor's settings), the config checks and the summary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MARGIN = 2.0  # each room holds twice what the model says it must
HIGH_CAP = 0.95  # a derived high watermark never above this (what the model does not see: directories, other data)
LOW_FLOOR = 0.05  # nor a derived low watermark below this: below it the tier keeps too little to hit
# Where no margin makes the bounds hold (the claim too small for the store rate), the reference evictor's defaults
# (llm-d-kv-cache kv_connectors/pvc_evictor/helm/values.yaml: cleanupThreshold 85, targetThreshold 70).
FALLBACK = (0.85, 0.70)
STATVFS_POLL_SECONDS = 10.0  # how often the evictor reads the usage where the file system reports it
CANDIDATE_MARGIN = 1.25  # candidates kept per pass over the files one pass deletes


@dataclass(frozen=True)
class StoreRate:
    bytes_per_second: float
    source: str  # where the rate comes from, said in the summary
    upper_bound: bool = False  # no workload measured it: watermarks that cannot hold at it are a warning


def upper_bound_store_rate(
    replicas: int, seconds_per_token: float, kv_bytes_per_token: float, prefix_tokens: int
) -> StoreRate:
    """Every replica prefilling at full speed (1 / its recompute time per token at `prefix_tokens`) and storing
    the KV of every token it prefills: no workload stores faster."""
    tokens = 1 / seconds_per_token
    return StoreRate(
        replicas * tokens * kv_bytes_per_token,
        f"upper bound, no workload: {replicas} replicas x {tokens:,.0f} prefill tokens/s (at a {prefix_tokens:,}-token"
        f" prefix) x {kv_bytes_per_token / 1024:,.0f} KiB of KV per token, every token stored",
        upper_bound=True,
    )


@dataclass(frozen=True)
class Capacity:
    """The evictor's figures for one claim."""

    capacity_bytes: int
    store_rate: StoreRate
    scan_rate: float  # files/s the evictor stats (and unlinks)
    file_bytes: int  # one block file
    poll_seconds: float
    high: float  # fractions of the capacity
    low: float
    derived: bool  # False: the watermarks were set by hand
    margin: float | None = MARGIN  # over each bound; None: no margin holds them (FALLBACK)

    @property
    def files_when_full(self) -> int:
        return math.ceil(self.capacity_bytes / self.file_bytes)

    @property
    def scan_seconds(self) -> float:
        return self.files_when_full / self.scan_rate

    @property
    def fill_seconds(self) -> float:
        """An empty claim full at the store rate, without an evictor."""
        return self.capacity_bytes / self.store_rate.bytes_per_second

    @property
    def refill_seconds(self) -> float:
        """From the low watermark back to the high one: the time between two passes that delete."""
        return (self.high - self.low) * self.capacity_bytes / self.store_rate.bytes_per_second

    @property
    def headroom_seconds(self) -> float:
        """From the high watermark to full: what the evictor has to notice and scan."""
        return (1 - self.high) * self.capacity_bytes / self.store_rate.bytes_per_second

    @property
    def files_per_pass(self) -> int:
        """Files one pass deletes: the room between the watermarks and what is stored during its scan."""
        room = (self.high - self.low) * self.capacity_bytes
        return math.ceil((room + self.store_rate.bytes_per_second * self.scan_seconds) / self.file_bytes)

    @property
    def max_candidates(self) -> int:
        """The oldest files a scan keeps (its memory bound), with a margin over one pass's deletions."""
        return max(1000, math.ceil(CANDIDATE_MARGIN * self.files_per_pass))

    @property
    def min_age_seconds(self) -> float:
        """Never a file younger than a pass: at least a scan of a full tier, and a minute."""
        return max(60.0, math.ceil(self.scan_seconds))

    @property
    def deletes_needed_per_second(self) -> float:
        return self.store_rate.bytes_per_second / self.file_bytes

    def problems(self) -> list[str]:
        """What the watermarks cannot promise at this store rate (empty: they keep up)."""
        out = []
        rate, c = self.store_rate.bytes_per_second, self.capacity_bytes
        if (1 - self.high) * c < rate * (self.poll_seconds + self.scan_seconds):
            out.append(
                f"the high watermark {percent(self.high)} leaves {_seconds(self.headroom_seconds)} above it, less than"
                f" the {_seconds(self.poll_seconds + self.scan_seconds)} the evictor takes to notice and scan: the tier"
                " fills first"
            )
        if (self.high - self.low) * c < rate * self.scan_seconds:
            out.append(
                f"the low watermark {percent(self.low)} leaves {_seconds(self.refill_seconds)} of stores between the"
                f" watermarks, less than one {_seconds(self.scan_seconds)} scan"
            )
        if self.low * c < rate * self.min_age_seconds:
            out.append(
                f"the low watermark {percent(self.low)} is below what {_seconds(self.min_age_seconds)} of stores (files"
                " younger than a pass, never deleted) occupy"
            )
        if self.scan_rate < self.deletes_needed_per_second:
            out.append(
                f"the evictor deletes at most {self.scan_rate:,.0f} files/s, fewer than the"
                f" {self.deletes_needed_per_second:,.0f} block files/s stored"
            )
        return out


def derive(
    capacity_bytes: int, store_rate: StoreRate, scan_rate: float, file_bytes: int, poll_seconds: float | None = None
) -> Capacity:
    """The watermarks with `MARGIN` over each bound (else with none), as whole percents (both rounded down: more
    room between them); where neither holds, `FALLBACK`, whose `problems` say what it cannot promise.
    `poll_seconds` None: the usage is what each scan counts (EFS), so noticing takes a scan."""
    base = Capacity(capacity_bytes, store_rate, scan_rate, file_bytes, 0.0, 1.0, 0.0, True)
    poll = base.scan_seconds if poll_seconds is None else poll_seconds
    rate = store_rate.bytes_per_second
    for margin in (MARGIN, 1.0):
        high = min(HIGH_CAP, 1 - margin * rate * (poll + base.scan_seconds) / capacity_bytes)
        low = high - margin * rate * base.scan_seconds / capacity_bytes
        high_pct, low_pct = math.floor(high * 100), math.floor(low * 100)
        out = Capacity(
            capacity_bytes, store_rate, scan_rate, file_bytes, poll, high_pct / 100, low_pct / 100, True, margin
        )
        if out.low >= LOW_FLOOR and not out.problems():
            return out
    high, low = FALLBACK
    return Capacity(capacity_bytes, store_rate, scan_rate, file_bytes, poll, high, low, True, None)


def given(
    capacity_bytes: int,
    store_rate: StoreRate,
    scan_rate: float,
    file_bytes: int,
    high: float,
    low: float,
    poll_seconds: float | None = None,
) -> Capacity:
    """Watermarks set by hand, checked by `problems` against the same bounds."""
    base = Capacity(capacity_bytes, store_rate, scan_rate, file_bytes, 0.0, high, low, False)
    poll = base.scan_seconds if poll_seconds is None else poll_seconds
    return Capacity(capacity_bytes, store_rate, scan_rate, file_bytes, poll, high, low, False)


def derived_problem(capacity: Capacity) -> str | None:
    """Why no derived watermarks keep up: the claim is too small for the store rate and the scan."""
    if capacity.margin is not None:
        return None
    return (
        f"at {capacity.store_rate.bytes_per_second / 1e9:.2f} GB/s of stores and a {_seconds(capacity.scan_seconds)}"
        f" scan no watermarks keep up ({'; '.join(capacity.problems()) or 'the low watermark would be below 5%'})"
    )


def _seconds(value: float) -> str:
    if value >= 2 * 3600:
        return f"{value / 3600:.1f} h"
    if value >= 120:
        return f"{value / 60:.0f} min"
    return f"{value:.0f} s"


def percent(fraction: float) -> str:
    """A watermark as set, whole or not (95.4%, where :.0% would say 95% of two different watermarks)."""
    return f"{fraction * 100:.10g}%"


def duration(value: float) -> str:
    return _seconds(value)
