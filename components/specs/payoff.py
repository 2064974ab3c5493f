"""Does a tier pay off? Break-even load bandwidth against recompute, per model-server pod.

The arithmetic is `components/formulas/payoff.py` (shared with the `tiers-beat-recompute` policy); this
module picks the stack's inputs and shows each number with its formula. The seed's rule: a load has
to finish faster than the prefill it replaces. Recomputing one token costs about 2 FLOPs per active
parameter (attention over the prefix adds more, so the recompute time here is a lower bound and the
break-even bandwidth an upper bound); a pod's devices deliver their dense bf16 peak times a prefill
efficiency. A load of that token's KV bytes beats the recompute above KV bytes / recompute time. Each
tier's expected reload bandwidth is compared to it: the CPU tier over the host link at the
connector's transfer block, the filesystem tier at the backend's per-pod share (then the host link).
Figures come from `components/catalog/rates.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.models import ModelSpec
from components.catalog.rates import (
    ACCELERATOR_RATES,
    LUSTRE_CAPACITY_UNIT,
    LUSTRE_MB_PER_TIB_SOURCE,
    LUSTRE_THROUGHPUT_UNIT,
    STORAGE_RATES,
    TFLOPS,
)
from components.formulas import payoff as formulas
from components.formulas.payoff import LMCACHE_CHUNK_TOKENS as LMCACHE_CHUNK_TOKENS
from components.formulas.payoff import Replica
from components.specs.sizing import Derivation
from components.units import GB, ByteSize

REFERENCE_PREFIX_TOKENS = 10_000
CONTIGUOUS_BLOCKS_SOURCE = (
    "one copy per block of all layers on a device: vLLM's offloading layout since 0.12 (contiguous 0.5-2 MB"
    " blocks, blog.vllm.ai 2026-01-08); assumed for the other connectors"
)


@dataclass(frozen=True)
class Filesystem:
    """The shared filesystem tier's backend, as configured: read bandwidth and who shares it."""

    backend: str  # gcp-lustre | aws-efs | existing
    aggregate: float | None  # bytes/s of the whole file system (None: not known)
    aggregate_from: str
    per_client: float | None  # bytes/s one pod's mount can read (None: no published limit)
    per_client_from: str
    pods: int  # pods reading it


@dataclass(frozen=True)
class PayoffInputs:
    model: ModelSpec
    accelerator: str  # key of ACCELERATOR_RATES
    devices_per_pod: int
    pods_per_replica: int  # multi-host: the pods one replica spans
    block_tokens: int  # tokens per block the CPU tier moves to the accelerator
    block_from: str  # what sets that block size
    filesystem: Filesystem | None  # None: no shared filesystem tier


@dataclass(frozen=True)
class TierPayoff:
    tier: str
    bandwidth: float | None  # expected reload bytes/s per pod (None: not derivable from the config)
    formula: str

    def beats(self, break_even: float) -> bool | None:
        return None if self.bandwidth is None else self.bandwidth >= break_even


@dataclass(frozen=True)
class Payoff:
    recompute_seconds: float  # per token, per pod (its share of the replica's work)
    kv_bytes_per_pod: float  # per token
    break_even: float  # bytes/s per pod
    tiers: tuple[TierPayoff, ...]
    rows: tuple[Derivation, ...]
    sources: tuple[str, ...]
    devices_per_pod: int = 1

    @property
    def break_even_per_device(self) -> float:
        """What vLLM's load counters measure: each rank reports the bytes of its own shard and the CUDA-event
        time of its own copy, and the engine sums both over the pod's ranks (vLLM 0.26.0,
        offloading/common.py `DirectionalTransferStats.aggregate`, cpu/gpu_worker.py `get_finished`), so
        `kv_offload_load_bytes / kv_offload_load_time` is one device's bandwidth, not the pod's."""
        return self.break_even / self.devices_per_pod

    def short_of_break_even(self) -> list[TierPayoff]:
        return [t for t in self.tiers if t.beats(self.break_even) is False]


def gbps(rate: float) -> str:
    return f"{rate / GB:.2f} GB/s"


def _time(seconds: float) -> str:
    return (
        f"{seconds * 1e6:.1f} µs"
        if seconds < 1e-3
        else f"{seconds * 1e3:.1f} ms"
        if seconds < 1
        else f"{seconds:.2f} s"
    )


def filesystem_share(fs: Filesystem) -> float | None:
    """What one pod reads: its share of the aggregate, capped by the per-client limit."""
    return None if fs.aggregate is None else formulas.filesystem_share(fs.aggregate, fs.pods, fs.per_client)


def filesystem(
    backend: str, size: ByteSize, lustre_throughput: int, read_bandwidth: ByteSize | None, pods: int
) -> Filesystem:
    """The backend's read bandwidth as configured (Lustre scales with capacity; EFS is elastic)."""
    rates = STORAGE_RATES[backend]
    per_client = rates.per_client.value if rates.per_client else None
    per_client_from = f"per client: {rates.per_client.cited}" if rates.per_client else "no per-client limit published"
    if backend == "gcp-lustre":
        tib = size.bytes / LUSTRE_CAPACITY_UNIT
        aggregate: float | None = lustre_throughput * LUSTRE_THROUGHPUT_UNIT * tib
        aggregate_from = f"{lustre_throughput} MB/s per TiB x {tib:.2f} TiB ({LUSTRE_MB_PER_TIB_SOURCE})"
    elif backend == "existing":
        aggregate = float(read_bandwidth.bytes) if read_bandwidth is not None else None
        aggregate_from = (
            "stack config `storage.read_bandwidth`"
            if read_bandwidth is not None
            else "an existing StorageClass; set `storage.read_bandwidth` to derive it"
        )
    else:
        assert rates.aggregate is not None, f"{backend} publishes its aggregate read bandwidth"
        aggregate, aggregate_from = rates.aggregate.value, rates.aggregate.cited
    return Filesystem(backend, aggregate, aggregate_from, per_client, per_client_from, pods)


def _ratio(bandwidth: float | None, break_even: float) -> str:
    return "" if bandwidth is None else f" ({bandwidth / break_even:.1f}x break-even)"


def _filesystem_tier(fs: Filesystem, cpu_path: float) -> TierPayoff:
    tier = f"filesystem tier ({fs.backend})"
    if fs.aggregate is None:
        return TierPayoff(tier, None, f"read bandwidth not known: {fs.aggregate_from}")
    limit = f", {gbps(fs.per_client)} per client" if fs.per_client is not None else ""
    formula = f"min({gbps(fs.aggregate)} aggregate / {fs.pods} pods{limit}, CPU path {gbps(cpu_path)})"
    return TierPayoff(tier, formulas.filesystem_share(fs.aggregate, fs.pods, fs.per_client, cpu_path), formula)


def derive(inputs: PayoffInputs) -> Payoff:
    model, rates = inputs.model, ACCELERATOR_RATES[inputs.accelerator]
    replica = Replica(model, rates, inputs.devices_per_pod, inputs.pods_per_replica)
    devices = replica.devices
    seconds = formulas.recompute_seconds_per_token(replica)
    kv_per_pod = replica.kv_bytes_per_pod
    break_even = formulas.break_even(replica)
    block = ByteSize(formulas.transfer_block_bytes(replica, inputs.block_tokens))
    link = rates.host_link.bandwidth(block.bytes)
    cpu = formulas.cpu_tier_bandwidth(replica, inputs.block_tokens)
    tiers = [TierPayoff("CPU tier", cpu, f"{inputs.devices_per_pod} devices x {gbps(link)} at {block.human()}")]
    if inputs.filesystem is not None:
        tiers.append(_filesystem_tier(inputs.filesystem, cpu))
    rows = [*_compute_rows(inputs, replica, seconds, break_even), _block_row(inputs, block, devices)]
    rows += [
        Derivation(f"{t.tier} reload per pod", _value(t.bandwidth) + _ratio(t.bandwidth, break_even), t.formula)
        for t in tiers
    ]
    rows += _reference_rows(seconds, kv_per_pod, tiers)
    fs = inputs.filesystem
    sources = [
        f"{model.name}: {model.active_params_billion:g} B active parameters per token (model card)",
        f"{inputs.accelerator} bf16 peak: {rates.bf16_peak.cited}",
        f"{inputs.accelerator} prefill efficiency {rates.prefill_efficiency.value:g}: {rates.prefill_efficiency.cited}",
        f"{inputs.accelerator} host link {rates.host_link.name}: {rates.host_link.cited}",
        f"transfer block: {CONTIGUOUS_BLOCKS_SOURCE}",
        *([f"filesystem tier: {fs.aggregate_from}; {fs.per_client_from}"] if fs is not None else []),
    ]
    return Payoff(seconds, kv_per_pod, break_even, tuple(tiers), tuple(rows), tuple(sources), inputs.devices_per_pod)


def _value(bandwidth: float | None) -> str:
    return "unknown" if bandwidth is None else gbps(bandwidth)


def _compute_rows(inputs: PayoffInputs, replica: Replica, seconds: float, break_even: float) -> list[Derivation]:
    model, pods, rates, devices = inputs.model, inputs.pods_per_replica, replica.rates, replica.devices
    kv_per_pod = replica.kv_bytes_per_pod
    flops = formulas.prefill_flops_per_token(model)
    rate = formulas.prefill_rate(replica)
    spread = f"{inputs.devices_per_pod} per pod x {pods} pods" if pods > 1 else "per pod"
    share = f" / {pods} pods" if pods > 1 else ""
    return [
        Derivation(
            "prefill FLOPs per token",
            f"{flops / 1e9:.1f} GFLOP",
            f"{formulas.FLOPS_PER_ACTIVE_PARAMETER} x {model.active_params_billion:g} B active parameters",
        ),
        Derivation(
            "prefill rate per replica",
            f"{rate / TFLOPS:.1f} TFLOP/s",
            f"{devices} devices ({spread}) x {rates.bf16_peak.value / TFLOPS:g} TFLOP/s bf16 x"
            f" {rates.prefill_efficiency.value:g} prefill efficiency",
        ),
        Derivation(
            "recompute time per token", _time(seconds), f"{flops / 1e9:.1f} GFLOP / {rate / TFLOPS:.1f} TFLOP/s"
        ),
        Derivation("KV bytes per token per pod", f"{kv_per_pod:.0f} B", f"{model.kv_bytes_per_token.human()}{share}"),
        Derivation(
            "break-even load bandwidth per pod",
            gbps(break_even),
            f"{kv_per_pod:.0f} B / {_time(seconds)}: a slower load loses to recompute",
        ),
        Derivation(
            "break-even load bandwidth per device",
            gbps(break_even / inputs.devices_per_pod),
            f"{gbps(break_even)} / {inputs.devices_per_pod} devices per pod",
        ),
    ]


def _block_row(inputs: PayoffInputs, block: ByteSize, devices: int) -> Derivation:
    return Derivation(
        "CPU tier transfer block per device",
        block.human(),
        f"{inputs.block_tokens} tokens ({inputs.block_from}) x {inputs.model.kv_bytes_per_token.human()}"
        f" / {devices} devices",
    )


def _reference_rows(seconds: float, kv_per_pod: float, tiers: list[TierPayoff]) -> list[Derivation]:
    n = REFERENCE_PREFIX_TOKENS
    rows = [Derivation(f"{n:,}-token prefix: recompute", _time(n * seconds), f"{n} x {_time(seconds)}")]
    for t in tiers:
        if t.bandwidth is not None:
            rows.append(
                Derivation(
                    f"{n:,}-token prefix: reload from the {t.tier}",
                    _time(n * kv_per_pod / t.bandwidth),
                    f"{n} x {kv_per_pod:.0f} B / {gbps(t.bandwidth)}",
                )
            )
    return rows
