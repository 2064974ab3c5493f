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


class Cited:
    """A catalog figure's source as the summaries print it: `assumed: ...` where no measurement, data sheet or
    published figure gives it for this case (each subclass is a dataclass with `source` and `assumed` fields)."""

    source: str
    assumed: bool

    @property
    def cited(self) -> str:
        return f"assumed: {self.source}" if self.assumed else self.source


@dataclass(frozen=True)
class Figure(Cited):
    value: float
    source: str
    assumed: bool = False


@dataclass(frozen=True)
class HostLink(Cited):
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


@dataclass(frozen=True)
class PrefillEfficiency(Cited):
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


@dataclass(frozen=True)
class DecodeEfficiency(Cited):
    """What an engine step reaches of the device's memory bandwidth, and what it pays per layer regardless.

    `weights`: the share of the data sheet's bandwidth the layers' GEMMs read their weights at (a decode step's
    GEMMs are weight reads); `kv`: the share attention reads the KV cache at; `layer_s`: per decoder layer and
    step, the small kernels around them (norms, rotary embedding, KV writes, activation, residual adds) under
    CUDA graphs, whatever the batch.
    """

    weights: float
    kv: float
    layer_s: float
    source: str
    assumed: bool = False

    def assumed_for(self, source: str) -> DecodeEfficiency:
        """These figures, taken for another accelerator that has none measured."""
        return DecodeEfficiency(self.weights, self.kv, self.layer_s, source, assumed=True)


@dataclass(frozen=True)
class Interconnect(Cited):
    """The links between one replica's devices, as a tensor-parallel all-reduce uses them: a fixed latency per
    all-reduce and each device's bandwidth in one direction (a ring all-reduce of S bytes over n devices moves
    2 (n - 1) / n x S per device)."""

    name: str
    bandwidth: float  # bytes/s, one device, one direction
    latency_s: float  # one all-reduce of a small message
    source: str
    assumed: bool = False

    def all_reduce_seconds(self, message_bytes: float, devices: int) -> float:
        if devices <= 1:
            return 0.0
        return self.latency_s + 2 * (devices - 1) / devices * message_bytes / self.bandwidth


H200_STEP_COSTS = "tests/fixtures/device/h200-step-costs-2026-12-04-b.json"
# Fitted to one H200's decode steps (benchmarks/device/step_costs.py, the `compiled` variant: torch.compile's fused
# norms, rotary embedding and activation around cuBLAS GEMMs and flash attention, each step a CUDA graph) of
# Qwen3-0.6B, Qwen3-8B, Llama-3.1-8B and Qwen3-32B at TP=1 over batch 1-256 x context 1k-16k: step = layers x
# layer_s + max(GEMM FLOPs, weights / (4.8 TB/s x weights)) + KV bytes / (4.8 TB/s x kv), the three figures that
# minimise the largest |log(model / measured)| (9.4%) over the cells whose attention fills the GPU (batch x KV
# heads >= its 132 SMs, or context <= 1k: PyTorch's flash kernel runs one block per sequence and KV head and
# splits no context, where vLLM's splits it). tests/test_step_costs_measurement.py holds the model to them.
H200_DECODE = DecodeEfficiency(
    weights=0.76,
    kv=0.86,
    layer_s=54e-6,
    source=f"fitted to decode steps measured on one NVIDIA H200 ({H200_STEP_COSTS})",
)
H100_STEP_COSTS = "tests/fixtures/device/h100-step-costs-2026-12-05.json and its -b call"
# Fitted the same way to an H100 SXM's decode steps (the same script, the same `compiled` variant) of Qwen3-0.6B,
# Qwen3-8B and Llama-3.1-8B at TP=1 (Qwen3-32B whole leaves an 80 GB GPU no KV pool), each cell the mean of two
# calls on lent machines the same day (the second's steps 0.93-1.02 of the first's): largest |log(model /
# measured)| 4.5% over the cells whose attention fills the GPU; Qwen3-32B's TP=2 shard, which the fit did not read,
# is within 0.92-1.01 of them. The H100 reaches more of its lower peak than the H200 of its higher one.
# benchmarks/device/fit_decode.py reproduces the three figures from the two files.
H100_DECODE = DecodeEfficiency(
    weights=0.85,
    kv=0.91,
    layer_s=49e-6,
    source=f"fitted to decode steps measured on NVIDIA H100 80GB HBM3 ({H100_STEP_COSTS})",
)
# The server tokenising a prompt before its engine sees it (one tokenizer thread a server): Qwen3's byte-level BPE
# (Hugging Face tokenizers 0.23.3) on inference-perf's 17,097-token shared-prefix prompts, 51.2 ms median a prompt
# on one idle AMD EPYC core (benchmarks/retokenized.py, 2026-12-04). The other catalog models' byte-level BPEs
# (Llama 3's, gpt-oss's) are taken at the same rate.
SERVER_TOKENIZE = Figure(
    3.0e-6,
    "Qwen3's tokenizer on inference-perf's 17,097-token prompts: 3.00 us a token on one idle AMD EPYC core"
    " (benchmarks/retokenized.py, 2026-12-04)",
)
# An accelerator with no decode measurement of its own (a profile may say which it takes instead).
ASSUMED_DECODE = H200_DECODE.assumed_for("the H200's measured decode figures")
# vLLM's custom all-reduce (the one it runs for decode-sized messages over NVLink) on H100 at TP=2, without CUDA
# graphs: 8.7 us for 32 KiB (sgl-project/sglang#2904, the "vllm" table). NVLink 4: 900 GB/s per GPU, both
# directions together (H100 and H200 SXM data sheets).
NVLINK4 = Interconnect(
    "NVLink 4",
    450e9,
    8.7e-6,
    "NVIDIA H100/H200 SXM data sheets: NVLink 900 GB/s (both directions); all-reduce latency: vLLM's custom"
    " all-reduce of 32 KiB at TP=2 on H100, 8.7 us (sgl-project/sglang#2904)",
)
# A replica on a PCIe-only accelerator, or one whose links no data sheet gives: PCIe Gen5 x16 peer to peer, the
# NVLink figure's latency.
PCIE5_PEER = Interconnect(
    "PCIe Gen5 x16",
    64e9,
    8.7e-6,
    "PCIe Gen5 x16: 64 GB/s each direction (PCI-SIG); latency as vLLM's custom all-reduce over NVLink"
    " (sgl-project/sglang#2904)",
    assumed=True,
)


@dataclass(frozen=True)
class AcceleratorRates:
    bf16_peak: Figure  # dense bf16 FLOP/s of one device (GPU, TPU chip)
    prefill_efficiency: PrefillEfficiency  # the share of that peak a prefill sustains
    host_link: HostLink
    # What a decode step reaches of the memory bandwidth and pays per layer; the links its all-reduces cross.
    decode: DecodeEfficiency = ASSUMED_DECODE
    interconnect: Interconnect = PCIE5_PEER


H200_MEASURED = "measured on an NVIDIA H200, PCIe Gen5 x16"
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
# (8192 tokens) ran at 680-790 of 989 TFLOP/s (measured on one NVIDIA H200).
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
    f" {H200_GEMM_SHARE:g}; no published vLLM TPU prefill figure",
)


# Managed Lustre's throughput tiers: MB/s per TiB of provisioned capacity (components/catalog/storage_backends.py).
LUSTRE_THROUGHPUT_UNIT = MB  # perUnitStorageThroughput is MB/s per TiB
LUSTRE_CAPACITY_UNIT = 1024 * GiB  # ... per TiB
