"""How fast things are: accelerator compute and host links, shared-storage read bandwidth.

These figures decide whether an offload tier pays off (a load has to finish faster than the prefill
it replaces; see `components/specs/payoff.py`). Every figure names its source; `assumed` marks the
ones no measurement or datasheet gives for this hardware, with what the assumption is.
Rates are in bytes (or FLOP) per second, decimal: 1 GB/s = 10^9 B/s.
"""

from __future__ import annotations

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
class AcceleratorRates:
    bf16_peak: Figure  # dense bf16 FLOP/s of one device (GPU, TPU chip)
    prefill_efficiency: Figure  # the share of that peak a prefill sustains
    host_link: HostLink


H200_MEASURED = "measured on an NVIDIA H200, PCIe Gen5 x16 (issue 15)"
# Host-to-device copies of many blocks on one stream (the low end where a range was measured).
_PCIE5_X16 = (
    (64 * KiB, 14.0 * GB),
    (256 * KiB, 36.0 * GB),
    (1 * MiB, 41.0 * GB),
    (4 * MiB, 53.0 * GB),
    (16 * MiB, 55.0 * GB),
)


def _scaled(factor: float) -> tuple[tuple[int, float], ...]:
    return tuple((size, rate * factor) for size, rate in _PCIE5_X16)


ACCELERATOR_RATES: dict[str, AcceleratorRates] = {
    "gpu": AcceleratorRates(
        Figure(989.4 * TFLOPS, "NVIDIA H100 SXM datasheet: 1,979 TFLOPS bf16 with sparsity, half dense"),
        Figure(
            0.7, f"bf16 GEMMs at Qwen3-32B prefill shapes (8192 tokens) ran at 680-790 of 989 TFLOP/s, {H200_MEASURED}"
        ),
        HostLink("PCIe Gen5 x16", _PCIE5_X16, f"{H200_MEASURED}; the H100 has the same link"),
    ),
    "amd": AcceleratorRates(
        Figure(1307.4 * TFLOPS, "AMD Instinct MI300X data sheet: 1,307.4 TFLOPS bf16 dense"),
        Figure(0.5, "below the NVIDIA anchor: public MI300X bf16 GEMM results sit near half of peak", assumed=True),
        HostLink(
            "PCIe Gen5 x16",
            _PCIE5_X16,
            "the NVIDIA H200 curve: the MI300X host interface is the same PCIe Gen5 x16 (data sheet)",
            assumed=True,
        ),
    ),
    "xpu": AcceleratorRates(
        Figure(98.3 * TFLOPS, "Intel Arc Pro B60: 197 INT8 TOPS (XMX), bf16 at half the INT8 rate"),
        Figure(0.5, "no published prefill measurement for the B60", assumed=True),
        HostLink(
            "PCIe Gen5 x8", _scaled(0.5), "half the H200 Gen5 x16 curve: the B60 links at PCIe 5.0 x8", assumed=True
        ),
    ),
    "tpu-v5p": AcceleratorRates(
        Figure(459 * TFLOPS, "Google Cloud TPU v5p docs: peak compute per chip (bf16) 459 TFLOPs"),
        Figure(0.6, "typical TPU prefill utilisation; no published vLLM TPU prefill figure", assumed=True),
        HostLink(
            "PCIe Gen4 x16",
            _scaled(0.5),
            "the v5p host link is not published: taken as PCIe Gen4 x16, half the H200 Gen5 x16 curve",
            assumed=True,
        ),
    ),
    "tpu-v6": AcceleratorRates(
        Figure(918 * TFLOPS, "Google Cloud TPU v6e docs: peak compute per chip (bf16) 918 TFLOPs"),
        Figure(0.6, "typical TPU prefill utilisation; no published vLLM TPU prefill figure", assumed=True),
        HostLink(
            "PCIe Gen5",
            _PCIE5_X16,
            "TPU v6e docs: each chip connects to the host through PCIe Gen5 (width not published: the H200 x16 curve)",
            assumed=True,
        ),
    ),
    "tpu-v7": AcceleratorRates(
        Figure(2307 * TFLOPS, "Google Cloud TPU7x (Ironwood) docs: peak compute per chip (BF16) 2307 TFLOPs"),
        Figure(0.6, "typical TPU prefill utilisation; no published vLLM TPU prefill figure", assumed=True),
        HostLink(
            "PCIe Gen5 x16",
            _PCIE5_X16,
            "the TPU7x host link is not published: taken as PCIe Gen5 x16, the H200 curve",
            assumed=True,
        ),
    ),
}


@dataclass(frozen=True)
class StorageRates:
    """Read bandwidth of a shared filesystem backend: in aggregate, and for one client."""

    aggregate: Figure | None  # None: depends on the configuration (see the backend's note)
    per_client: Figure | None  # None: no published per-client limit
    note: str


# Managed Lustre: aggregate throughput = the tier's MB/s per TiB x provisioned capacity.
LUSTRE_MB_PER_TIB_SOURCE = "Google Cloud Managed Lustre docs, Performance tiers: throughput per TiB of capacity"
LUSTRE_THROUGHPUT_UNIT = MB  # perUnitStorageThroughput is MB/s per TiB
LUSTRE_CAPACITY_UNIT = 1024 * GiB  # ... per TiB

STORAGE_RATES: dict[str, StorageRates] = {
    "gcp-lustre": StorageRates(
        None,
        None,
        "aggregate = storage.lustre.per_unit_storage_throughput MB/s x storage.size in TiB"
        f" ({LUSTRE_MB_PER_TIB_SOURCE}); no per-client limit published (the node's network bounds it)",
    ),
    "aws-efs": StorageRates(
        Figure(
            20 * GiB,
            "Amazon EFS performance: Regional, Elastic throughput reads 20-60 GiBps per file system,"
            " by Region (the low end)",
        ),
        Figure(1500 * MiB, "Amazon EFS performance: 1,500 MiBps per client (Elastic throughput)"),
        "Elastic throughput; the per-client limit binds first",
    ),
    "existing": StorageRates(
        None, None, "an existing StorageClass: its aggregate read bandwidth is `storage.read_bandwidth`"
    ),
}
