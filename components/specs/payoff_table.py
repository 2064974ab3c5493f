"""Does a tier pay off? The payoff table of a stack: recompute from the model's geometry, reload per
tier and hit against miss at a few prefix lengths, and the break-even load bandwidth at the length the
load alert uses.

The arithmetic is `components/formulas/payoff.py` (shared with the `tiers-beat-recompute` policy); this
module picks the stack's inputs and shows each number with its formula. Each tier's expected reload
bandwidth: the CPU tier over the host link at the connector's transfer block, the filesystem tier at
the backend's per-pod share (then the host link). Figures come from the accelerator profile's `rates`
(`components/catalog/accelerators.py`, their types in `rates.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.catalog.rates import (
    LUSTRE_MB_PER_TIB_SOURCE,
    STORAGE_RATES,
    TFLOPS,
)
from components.formulas import payoff as formulas
from components.formulas.payoff import Replica
from components.specs.sizing import Derivation
from components.units import GB, ByteSize

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
    accelerator: AcceleratorProfile  # its rates judge the tiers
    devices_per_pod: int
    pods_per_replica: int  # multi-host: the pods one replica spans
    block_tokens: int  # tokens per block the CPU tier moves to the accelerator
    block_from: str  # what sets that block size
    filesystem: Filesystem | None  # None: no shared filesystem tier
    prefix_tokens: int = formulas.ALERT_PREFIX_TOKENS  # the length the break-even is derived at


@dataclass(frozen=True)
class TierPayoff:
    tier: str
    bandwidth: float | None  # expected reload bytes/s per pod (None: not derivable from the config)
    formula: str

    def beats(self, break_even: float) -> bool | None:
        return None if self.bandwidth is None else self.bandwidth >= break_even


@dataclass(frozen=True)
class AtLength:
    """The payoff at one prefix length: recompute, and per tier reload and hit against miss."""

    prefix_tokens: int
    recompute_seconds: float  # the prefix's prefill
    break_even: float  # bytes/s per pod
    reload_seconds: tuple[float | None, ...]  # per tier, as `Payoff.tiers`
    hit_speedup: tuple[float | None, ...]  # miss / hit (reload + suffix), per tier

    @property
    def seconds_per_token(self) -> float:
        return self.recompute_seconds / self.prefix_tokens


@dataclass(frozen=True)
class Payoff:
    prefix_tokens: int  # the length the break-even (the load alert's default threshold) is derived at
    recompute_seconds: float  # per token at that length, per pod (its share of the replica's work)
    kv_bytes_per_pod: float  # per token
    break_even: float  # bytes/s per pod, at `prefix_tokens`
    tiers: tuple[TierPayoff, ...]
    rows: tuple[Derivation, ...]
    lengths: tuple[AtLength, ...]  # the table's prefix lengths, ascending
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


def seconds(value: float) -> str:
    return f"{value * 1e6:.1f} µs" if value < 1e-3 else f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


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
        tib = formulas.lustre_tib(size.bytes)
        aggregate: float | None = formulas.lustre_aggregate(lustre_throughput, size.bytes)
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


def _at_length(replica: Replica, prefix: int, tiers: list[TierPayoff]) -> AtLength:
    bandwidths = [t.bandwidth for t in tiers]
    return AtLength(
        prefix,
        formulas.prefill_seconds(replica, prefix),
        formulas.break_even(replica, prefix),
        tuple(None if b is None else formulas.reload_seconds(replica, prefix, b) for b in bandwidths),
        tuple(None if b is None else formulas.hit_speedup(replica, prefix, b) for b in bandwidths),
    )


def derive(inputs: PayoffInputs) -> Payoff:
    model, rates = inputs.model, inputs.accelerator.rates
    replica = Replica(model, rates, inputs.devices_per_pod, inputs.pods_per_replica)
    n = inputs.prefix_tokens
    per_token = formulas.recompute_seconds_per_token(replica, n)
    break_even = formulas.break_even(replica, n)
    block = ByteSize(formulas.transfer_block_bytes(replica, inputs.block_tokens))
    link = rates.host_link.bandwidth(block.bytes)
    cpu = formulas.cpu_tier_bandwidth(replica, inputs.block_tokens)
    tiers = [TierPayoff("CPU tier", cpu, f"{inputs.devices_per_pod} devices x {gbps(link)} at {block.human()}")]
    if inputs.filesystem is not None:
        tiers.append(_filesystem_tier(inputs.filesystem, cpu))
    rows = [*_compute_rows(inputs, replica, per_token, break_even), _block_row(inputs, replica, block)]
    rows += [
        Derivation(f"{t.tier} reload per pod", _value(t.bandwidth) + _ratio(t.bandwidth, break_even), t.formula)
        for t in tiers
    ]
    lengths = tuple(_at_length(replica, length, tiers) for length in formulas.table_lengths(model, n))
    fs, efficiency = inputs.filesystem, rates.prefill_efficiency
    sources = [
        f"{model.name}: geometry from {model.config_from} ({model.layers} layers{_window(model)}, hidden"
        f" {model.hidden_size}, {model.attention_heads} heads of {model.head_dim}, {model.kv_heads} KV heads, MLP"
        f" {_mlp(model)}, vocabulary {model.vocab_size:,}, context {model.context_tokens:,})",
        f"{inputs.accelerator.key} bf16 peak: {rates.bf16_peak.cited}",
        f"{inputs.accelerator.key} prefill shares of peak: {efficiency.cited}",
        f"{inputs.accelerator.key} host link {rates.host_link.name}: {rates.host_link.cited}",
        f"transfer block: {CONTIGUOUS_BLOCKS_SOURCE}",
        *([f"filesystem tier: {fs.aggregate_from}; {fs.per_client_from}"] if fs is not None else []),
    ]
    return Payoff(
        n, per_token, replica.kv_bytes_per_pod, break_even, tuple(tiers), tuple(rows), lengths, tuple(sources),
        inputs.devices_per_pod,
    )  # fmt: skip


def _mlp(model: ModelSpec) -> str:
    if not model.experts:
        return str(model.intermediate_size)
    shared = f" + a shared {model.shared_expert_intermediate_size}" if model.shared_expert_intermediate_size else ""
    dense = (
        f" in {model.moe_layers} layers, {model.intermediate_size} in {model.dense_layers}"
        if model.dense_layers
        else ""
    )
    return f"{model.experts_per_token} of {model.experts} experts of {model.expert_intermediate_size}{shared}{dense}"


def _window(model: ModelSpec) -> str:
    if not model.sliding_layers:
        return ""
    return f" ({model.sliding_layers} of them attending to a {model.sliding_window}-token window)"


def _window_kv(model: ModelSpec) -> str:
    if not model.sliding_layers:
        return ""
    return (
        f" over the {model.full_attention_layers} full-attention layers; the {model.sliding_layers} sliding ones keep"
        f" at most {ByteSize(model.window_kv_bytes).human()} a sequence ({model.sliding_window} tokens)"
    )


def _layer_formula(model: ModelSpec) -> str:
    """The non-embedding parameters a token multiplies, as layers x (attention + MLP)."""
    attention = f"{model.attention_params_per_layer / 1e6:.1f} M attention"
    if model.dense_layers and model.moe_layers:
        return (
            f"{model.layers} layers x {attention} + {model.moe_layers} x {model.mlp_params_per_layer / 1e6:.1f} M"
            f" expert MLP + {model.dense_layers} x {3 * model.hidden_size * model.intermediate_size / 1e6:.1f} M"
            " dense MLP"
        )
    return f"{model.layers} layers x ({attention} + {model.mlp_params_per_layer / 1e6:.1f} M MLP)"


def _attention_formula(model: ModelSpec, n: int) -> str:
    full = f"2 x {model.full_attention_layers} layers x {n:,} tokens x {model.attention_width} attention width (causal)"
    if not model.sliding_layers:
        return full
    window = min(n, model.sliding_window)
    return f"{full} + about 4 x {model.sliding_layers} sliding layers x {window:,} tokens x {model.attention_width}"


def _value(bandwidth: float | None) -> str:
    return "unknown" if bandwidth is None else gbps(bandwidth)


def _compute_rows(inputs: PayoffInputs, replica: Replica, per_token: float, break_even: float) -> list[Derivation]:
    model, rates, pods, n = inputs.model, replica.rates, inputs.pods_per_replica, inputs.prefix_tokens
    efficiency = rates.prefill_efficiency
    gemm = formulas.gemm_flops_per_token(model)
    attention = formulas.attention_flops(model, n) / n
    peak = replica.devices * rates.bf16_peak.value
    spread = f"{inputs.devices_per_pod} per pod x {pods} pods" if pods > 1 else "per pod"
    share = f" / {pods} pods" if pods > 1 else ""
    return [
        Derivation(
            "GEMM FLOPs per token",
            f"{gemm / 1e9:.2f} GFLOP",
            f"{formulas.FLOPS_PER_PARAMETER} x {model.active_non_embedding_params / 1e9:.2f} B non-embedding"
            f" parameters a token multiplies ({_layer_formula(model)})",
        ),
        Derivation(
            f"attention FLOPs per token at {n:,} tokens",
            f"{attention / 1e9:.2f} GFLOP",
            _attention_formula(model, n),
        ),
        Derivation(
            "bf16 peak per replica",
            f"{peak / TFLOPS:.1f} TFLOP/s",
            f"{replica.devices} devices ({spread}) x {rates.bf16_peak.value / TFLOPS:g} TFLOP/s",
        ),
        Derivation(
            "shares of peak a prefill sustains",
            f"GEMMs {replica.gemm_share:.2f}, attention {efficiency.attention:.2f}",
            f"GEMMs at hidden size {model.hidden_size} (curve {_curve(efficiency.gemm)}, log-interpolated)",
        ),
        Derivation(
            f"recompute time per token at {n:,} tokens",
            seconds(per_token),
            f"({gemm / 1e9:.2f} / {replica.gemm_share:.2f} + {attention / 1e9:.2f} / {efficiency.attention:.2f})"
            f" GFLOP / {peak / TFLOPS:.1f} TFLOP/s",
        ),
        Derivation(
            "KV bytes per token per pod",
            f"{replica.kv_bytes_per_pod:.0f} B",
            f"{model.kv_bytes_per_token.human()}{share}{_window_kv(model)}",
        ),
        Derivation(
            f"break-even load bandwidth per pod at {n:,} tokens",
            gbps(break_even),
            f"{replica.kv_bytes_per_pod:.0f} B / {seconds(per_token)}: a slower load loses to recompute"
            " (`monitoring.alerts.prefix_tokens`)",
        ),
        Derivation(
            "break-even load bandwidth per device",
            gbps(break_even / inputs.devices_per_pod),
            f"{gbps(break_even)} / {inputs.devices_per_pod} devices per pod",
        ),
    ]


def _curve(points: tuple[tuple[int, float], ...]) -> str:
    return ", ".join(f"{size}: {fraction:.2f}" for size, fraction in points)


def _block_row(inputs: PayoffInputs, replica: Replica, block: ByteSize) -> Derivation:
    return Derivation(
        "CPU tier transfer block per device",
        block.human(),
        f"{inputs.block_tokens} tokens ({inputs.block_from}) x {inputs.model.kv_bytes_per_token.human()}"
        f" / {replica.devices} devices",
    )
