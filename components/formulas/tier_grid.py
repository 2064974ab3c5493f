"""The tier replay's grid evaluation (components/formulas/tier_replay.py `curve`): prompts of equal block
count evaluated in numpy over every (CPU size, filesystem size) from their blocks' stack distances, the
sums accumulated, the prompts dropped.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
import numpy.typing as npt

from components.formulas.payoff import Replica, prefill_seconds, reload_seconds
from components.formulas.stack_distance import COLD

if TYPE_CHECKING:
    from components.formulas.tier_shape import Savings, Tiers

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

# payoff's arithmetic is elementwise (+, *, / on its token counts), so it takes arrays of them as well;
# tests/test_tier_replay.py holds the array results equal to the scalar ones.
_prefill = cast(Callable[[Replica, Ints, Ints], Floats], prefill_seconds)
_reload = cast(Callable[[Replica, Ints, float], Floats], reload_seconds)

GRID_CELLS = 2_000_000  # (requests x blocks x CPU sizes x fs sizes) evaluated per numpy call
PENDING_REFS = 1 << 17  # prompt block references read and not yet evaluated, at most (past it: half evaluated)


class Bucket:
    """Prompts of `n` blocks read and not yet evaluated: their blocks' distances in their replica's stream
    (`d`) and in the global one (`g`), end to end; each one's input length and replica."""

    __slots__ = ("d", "g", "input_length", "n", "replica", "step")

    def __init__(self, n: int, step: int) -> None:
        self.n, self.step = n, step  # step: the prompts one numpy batch takes
        self.d, self.g, self.input_length, self.replica = array("q"), array("q"), array("q"), array("q")


class Pending:
    """The prompts read and not yet evaluated, by block count. A bucket is evaluated when it fills a numpy
    batch (GRID_CELLS); past PENDING_REFS blocks in all, the fullest are until at most half remain. The
    exclusive tier's HBM misses are counted per replica as the distances are evaluated."""

    def __init__(self, grid: Grid, glob: Literal["shared", "own", "none"]) -> None:
        self.grid, self.glob = grid, glob
        self.cells = max(1, grid.cs.size * grid.fs.size)
        self.buckets: dict[int, Bucket] = {}
        self.refs = 0
        self.misses = [0] * grid.tiers.replicas  # HBM insertions per replica (the exclusive tier's writes)

    def bucket(self, n: int) -> Bucket:
        bucket = self.buckets.get(n)
        if bucket is None:
            bucket = self.buckets[n] = Bucket(n, max(1, GRID_CELLS // (n * self.cells)))
        return bucket

    def added(self, bucket: Bucket) -> None:
        """One prompt more in `bucket`."""
        self.refs += bucket.n
        if len(bucket.input_length) >= bucket.step:
            self._evaluate(bucket)
        if self.refs > PENDING_REFS:
            for fullest in sorted(self.buckets.values(), key=lambda b: -len(b.d)):
                if self.refs <= PENDING_REFS // 2:
                    break
                self._evaluate(fullest)

    def flush(self) -> None:
        for bucket in list(self.buckets.values()):
            self._evaluate(bucket)

    def _evaluate(self, bucket: Bucket) -> None:
        n, grid = bucket.n, self.grid
        tiers = grid.tiers
        d = np.frombuffer(bucket.d, dtype=np.int64).reshape(-1, n)
        g = d if self.glob == "shared" else np.frombuffer(bucket.g, dtype=np.int64).reshape(-1, n)
        if self.glob == "none":
            g = np.full_like(d, COLD)
        if tiers.relation == "exclusive":
            replica = np.frombuffer(bucket.replica, dtype=np.int64)
            weights = (d >= tiers.hbm_blocks).sum(1)
            counts = np.bincount(replica, weights=weights, minlength=tiers.replicas)
            for r, count in enumerate(counts.tolist()):
                self.misses[r] += int(count)
        w = np.full(d.shape, tiers.block_tokens, dtype=np.int64)
        w[:, -1] = np.frombuffer(bucket.input_length, dtype=np.int64) - tiers.block_tokens * (n - 1)
        for i in range(0, d.shape[0], bucket.step):
            grid.add(d[i : i + bucket.step], g[i : i + bucket.step], w[i : i + bucket.step])
        del d, g
        self.refs -= len(bucket.d)
        del self.buckets[n]  # its arrays go with it (the views above are gone)


class Grid:
    """The per-(CPU size, fs size) sums, and a batch of requests' prompts evaluated over the grid."""

    def __init__(self, tiers: Tiers, cs: Ints, fs: Ints, savings: Savings | None) -> None:
        self.tiers, self.cs, self.fs, self.savings = tiers, cs, fs, savings
        shape = (cs.size, fs.size)
        self.hbm_tokens = np.zeros(shape, dtype=np.int64)
        self.cpu_tokens, self.fs_tokens = np.zeros_like(self.hbm_tokens), np.zeros_like(self.hbm_tokens)
        self.cpu_stored, self.fs_stored = np.zeros_like(self.hbm_tokens), np.zeros_like(self.hbm_tokens)
        self.saved = np.zeros(shape) if savings else None

    def add(self, d: Ints, g: Ints, w: Ints) -> None:
        """A batch of B prompts of n blocks: distances in their replica's stream `d` and in the global one
        `g`, tokens per block `w`, each (B, n)."""
        tiers, cs, fs = self.tiers, self.cs, self.fs
        b, n = d.shape
        in_hbm = d < tiers.hbm_blocks
        # The CPU tier at C holds a block iff c < C (exclusive: HBM + CPU is one LRU of H + C).
        exclusive, pooled = tiers.relation == "exclusive", tiers.cpu_scope == "pooled"
        c = d - tiers.hbm_blocks if exclusive else (g if pooled else d)
        c_miss = c[:, :, None] >= cs  # (B, n, cpu): the CPU tier at that size lacks the block
        g_miss = g[:, :, None] >= fs  # (B, n, fs)
        absent = c_miss[:, :, :, None] & g_miss[:, :, None, :] & ~in_hbm[:, :, None, None]
        prefix = np.where(absent.any(1), absent.argmax(1), n)  # (B, cpu, fs): the leading blocks served
        row = np.arange(b)[:, None, None]
        served = _cumulative(w)[row, prefix]
        hbm_part = _cumulative(w * in_hbm)[row, prefix]
        cpu_part = _cumulative((w * ~in_hbm)[:, :, None] * ~c_miss)[row, prefix, np.arange(cs.size)[:, None]]
        fs_part = served - hbm_part - cpu_part
        self.hbm_tokens += hbm_part.sum(0)
        self.cpu_tokens += cpu_part.sum(0)
        self.fs_tokens += fs_part.sum(0)
        self.fs_stored += _writes(g_miss, in_hbm, prefix) * (fs > 0)
        if tiers.relation == "inclusive":
            self.cpu_stored += _writes(c_miss, in_hbm, prefix.transpose(0, 2, 1)).T * (cs > 0)[:, None]
        if self.savings is not None and self.saved is not None:
            replica = self.savings.replica
            total = w.sum(1)[:, None, None]
            self.saved += (
                _prefill(replica, total, np.zeros_like(total))
                - _reload(replica, cpu_part, self.savings.cpu_bandwidth)
                - _reload(replica, fs_part, self.savings.fs_bandwidth)
                - _prefill(replica, total - served, served)
            ).sum(0)


def _cumulative(x: Ints) -> Ints:
    """Along axis 1: the sums of x's first 0..n entries."""
    cum = np.zeros((x.shape[0], x.shape[1] + 1, *x.shape[2:]), dtype=np.int64)
    np.cumsum(x, axis=1, out=cum[:, 1:])
    return cum


def _writes(miss: npt.NDArray[np.bool_], in_hbm: npt.NDArray[np.bool_], prefix: Ints) -> Ints:
    """Blocks a tier writes, summed over the batch, per (the other tier's size, this tier's size): those
    it misses (`miss`: (B, n, this tier's sizes)) but HBM hits within the served prefix (`prefix`: (B,
    other, this)): computed, or loaded from the other tier."""
    held = in_hbm[:, :, None]
    not_hbm = (miss & ~held).sum((0, 1))  # (this,)
    cum = _cumulative((miss & held).astype(np.int64))  # (B, n + 1, this)
    row = np.arange(miss.shape[0])[:, None, None]
    past_prefix = cum[:, -1][:, None, :] - cum[row, prefix, np.arange(miss.shape[2])]  # HBM's, recomputed
    return cast(Ints, not_hbm + past_prefix.sum(0))
