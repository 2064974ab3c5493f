"""How fast things are: accelerator compute and host links.

An accelerator's own rates are a field of its profile (`AcceleratorProfile.rates`, components/catalog/
accelerators.py); this module holds their types, the measured curves they share (the H200's PCIe Gen5 x16
host link and prefill fit). The storage backends' limits are their records'
(`components/catalog/storage_backends.py`).

These figures decide whether an offload tier pays off (a load has to finish faster than the prefill
it replaces; see `components/specs/payoff_table.py`). Every figure names its source; `assumed` marks the
ones no measurement or datasheet gives for this hardware, with what the assumption is.
Rates are in bytes (or FLOP) per second, decimal: 1 GB/s = 10^9 B/s.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from components.units import GB, MB, GiB, KiB, MiB

TFLOPS = 10**12


@dataclass(frozen=True)
class Figure:
    value: float
    source: str
    assumed: bool = False

    @property
    def cited(self) -> str:
        return f"assumed: {self.source}" if self.assumed else self.source


@dataclass(frozen=True)
class HostLink:
    """Host memory -> one device: pinned copies of many blocks on one stream, by block size.

    `curve` holds (block bytes, bytes per second) measured points, ascending; a block between two
    points gets the smaller one's rate (never more than was measured at or below its size).
    """

    name: str
    curve: tuple[tuple[int, float], ...]
    source: str
    assumed: bool = False

    def bandwidth(self, block_bytes: int) -> float:
        below = [rate for size, rate in self.curve if size <= block_bytes]
        return below[-1] if below else self.curve[0][1]

    @property
    def cited(self) -> str:
        return f"assumed: {self.source}" if self.assumed else self.source


@dataclass(frozen=True)
class PrefillEfficiency:
    """The share of the dense bf16 peak a prefill's forward pass sustains, in its two parts.

    `gemm`: the layers' matrix multiplications (2 FLOPs per non-embedding parameter per token), as
    (hidden size, fraction) points, ascending: small models' small GEMMs run far below peak. Between
    two points the fraction is interpolated in log(hidden size); outside them it is the nearest
    point's (never more than was measured above the largest). `attention`: attention over the prefix
    (the FLOPs that grow with its length).
    """

    gemm: tuple[tuple[int, float], ...]
    attention: float
    source: str
    assumed: bool = False

    def gemm_at(self, hidden_size: int) -> float:
        points = self.gemm
        if hidden_size <= points[0][0]:
            return points[0][1]
        for (low, at_low), (high, at_high) in itertools.pairwise(points):
            if hidden_size <= high:
                return at_low + (at_high - at_low) * math.log(hidden_size / low) / math.log(high / low)
        return points[-1][1]

    def scaled(self, factor: float, source: str) -> PrefillEfficiency:
        """This curve times `factor`: another accelerator's, assumed from this one."""
        gemm = tuple((size, fraction * factor) for size, fraction in self.gemm)
        return PrefillEfficiency(gemm, self.attention * factor, source, assumed=True)

    @property
    def cited(self) -> str:
        return f"assumed: {self.source}" if self.assumed else self.source


@dataclass(frozen=True)
class AcceleratorRates:
    bf16_peak: Figure  # dense bf16 FLOP/s of one device (GPU, TPU chip)
    prefill_efficiency: PrefillEfficiency  # the share of that peak a prefill sustains
    host_link: HostLink


H200_MEASURED = "measured on an NVIDIA H200, PCIe Gen5 x16 (issue 15)"
H200_FORWARD_PASS = "tests/fixtures/upstream/measurements/h200-prefill-vs-reload-2026-12-01.json"
# Fitted to one H200's forward passes (bf16, HF transformers sdpa, batch 1) at Qwen3-32B's and Qwen3-0.6B's
# shapes, per-token prefill time = GEMM FLOPs / (peak x gemm) + attention FLOPs / (peak x attention):
# attention from the slope of Qwen3-32B's time per token over its six prefix lengths (1k-16k, least
# squares), Qwen3-32B's GEMM share (hidden 5120) from the intercept, Qwen3-0.6B's (hidden 1024) from its
# 8k and 16k rows (its 2k row, 33.7 ms for a pass, is a fixed per-pass cost, not compute).
# tests/test_payoff_measurement.py repeats the fit from the fixture.
H200_PREFILL = PrefillEfficiency(
    gemm=((1024, 0.18), (5120, 0.52)),
    attention=0.67,
    source=f"fitted to forward passes measured on one NVIDIA H200 ({H200_FORWARD_PASS}); the H100 has the"
    " same bf16 peak and tensor cores",
)
# The anchor other accelerators' assumed shares scale from: bf16 GEMMs at Qwen3-32B prefill shapes
# (8192 tokens) ran at 680-790 of 989 TFLOP/s (issue 15's measurement).
H200_GEMM_SHARE = 0.7
# Host-to-device copies of many blocks on one stream (the low end where a range was measured).
PCIE5_X16 = (
    (64 * KiB, 14.0 * GB),
    (256 * KiB, 36.0 * GB),
    (1 * MiB, 41.0 * GB),
    (4 * MiB, 53.0 * GB),
    (16 * MiB, 55.0 * GB),
)


def pcie5_scaled(factor: float) -> tuple[tuple[int, float], ...]:
    return tuple((size, rate * factor) for size, rate in PCIE5_X16)


TPU_PREFILL = H200_PREFILL.scaled(
    0.6 / H200_GEMM_SHARE,
    f"the H200 fit x 0.6/{H200_GEMM_SHARE:g}: typical TPU prefill utilisation 0.6, where the H200's GEMMs ran at"
    f" {H200_GEMM_SHARE:g} (issue 15); no published vLLM TPU prefill figure",
)


# Managed Lustre's throughput tiers: MB/s per TiB of provisioned capacity (components/catalog/storage_backends.py).
LUSTRE_THROUGHPUT_UNIT = MB  # perUnitStorageThroughput is MB/s per TiB
LUSTRE_CAPACITY_UNIT = 1024 * GiB  # ... per TiB
