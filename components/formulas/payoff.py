"""Does a tier pay off? Recompute from a model's geometry against reload per tier, at a prefix length.

The one place this arithmetic lives: `components/specs/payoff_table.py` (the summary's payoff table and the
load alert's threshold) and `policies/checks/tier_payoff.py` (`tiers-beat-recompute`) both call it. So
is a fact both sides read from their own inputs: Managed Lustre's read bandwidth (`lustre_aggregate`: the
spec from the stack config, the rule from the Lustre instance's inputs). The CPU tier's transfer block is the
connector's (`Connector.transfer_block`): the plan reads it there, the rule from the stamp it leaves on the
model-server workload (`labels.KV_TRANSFER_BLOCK_ANNOTATION`).

Recompute. A prefill multiplies every non-embedding weight a token activates (2 FLOPs per parameter,
`ModelSpec.active_non_embedding_params`), and attends to every earlier token: per layer, QK^T and AV
cost 4 x attention width FLOPs per (query, key) pair, so a causal pass over `new` tokens on top of
`cached` ones costs 4 x layers x width x (new x cached + new^2 / 2): about 2 x layers x prefix length x
width per token of a prefix. Each part runs at its own share of the devices' dense bf16 peak
(`PrefillEfficiency`: GEMMs by hidden size, attention), fitted to one H200's measured forward passes.

Reload. A hit reloads the prefix's KV bytes at the tier's bandwidth and prefills the suffix on top of
it; a miss prefills prefix and suffix. A load beats recompute above KV bytes / recompute time per
token, which falls as the prefix grows (each token costs more to recompute).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from components.catalog.models import ModelSpec
from components.catalog.rates import LUSTRE_CAPACITY_UNIT, LUSTRE_THROUGHPUT_UNIT, AcceleratorRates

FLOPS_PER_PARAMETER = 2  # a multiply and an add per weight per token
ATTENTION_FLOPS_PER_PAIR = 4  # per layer, per attention-width element: QK^T and AV, 2 FLOPs each
# The prefix length the break-even load bandwidth is derived at (the load alert's threshold, the
# `tiers-beat-recompute` advisory, the summary's verdict): stack config `monitoring.alerts.prefix_tokens`.
ALERT_PREFIX_TOKENS = 10_000
# The prefix lengths the payoff table shows (each capped by the model's context).
TABLE_PREFIX_TOKENS = (1_024, 10_000, 32_768)
# LMCache moves KV in chunks of `chunk_size` tokens: 256 by default (lmcache 0.5.6), which the
# in-process connector's presets keep (the CPU tier's transfer block when nothing sets it).
LMCACHE_CHUNK_TOKENS = 256
# The new tokens a request brings after its cached prefix (the H200 measurement's suffix).
SUFFIX_TOKENS = 128


@dataclass(frozen=True)
class Replica:
    """One model replica: its model, its accelerator's figures, its devices and the pods they span."""

    model: ModelSpec
    rates: AcceleratorRates
    devices_per_pod: int
    pods: int = 1  # multi-host: the pods one replica spans, each holding its share of the KV

    @property
    def devices(self) -> int:
        return self.devices_per_pod * self.pods

    @property
    def kv_bytes_per_pod(self) -> float:
        """Per token: each pod of a multi-host replica holds (and reloads) its share of the KV."""
        return self.model.kv_bytes_per_token.bytes / self.pods

    @property
    def gemm_share(self) -> float:
        return self.rates.prefill_efficiency.gemm_at(self.model.hidden_size)


def gemm_flops_per_token(model: ModelSpec) -> float:
    return FLOPS_PER_PARAMETER * model.active_non_embedding_params


def attention_flops(model: ModelSpec, new: int, cached: int = 0) -> float:
    """QK^T and AV of `new` tokens over `cached` earlier ones and, causally, over each other; in a sliding-window
    layer over the window's tokens at most."""
    pairs = new * cached + new * new / 2
    full = ATTENTION_FLOPS_PER_PAIR * model.full_attention_layers * model.attention_width * pairs
    if not model.sliding_layers:
        return full
    windowed = window_pairs(new, cached, model.sliding_window)
    return full + ATTENTION_FLOPS_PER_PAIR * model.sliding_layers * model.attention_width * windowed


def window_pairs(new: int, cached: int, window: int) -> float:
    """(query, key) pairs of `new` tokens after `cached` ones when each attends to the last `window` positions:
    the causal count (new x cached + new^2 / 2) until the window fills, then `window` per token (numbers or
    arrays of them, as the tier grid passes)."""
    filling = np.maximum(0, np.minimum(new, window - cached))
    return filling * cached + filling * filling / 2 + (new - filling) * window  # type: ignore[no-any-return]


def window_attention_flops_per_token(model: ModelSpec) -> float:
    """The most one token's attention costs in the sliding-window layers (a full window; 0 without them)."""
    return ATTENTION_FLOPS_PER_PAIR * model.sliding_layers * model.attention_width * model.sliding_window


def prefill_seconds(replica: Replica, new: int, cached: int = 0) -> float:
    """A forward pass over `new` tokens on top of `cached` ones, over the replica's devices."""
    peak = replica.devices * replica.rates.bf16_peak.value
    gemm = new * gemm_flops_per_token(replica.model) / replica.gemm_share
    attention = attention_flops(replica.model, new, cached) / replica.rates.prefill_efficiency.attention
    return (gemm + attention) / peak


def recompute_seconds_per_token(replica: Replica, prefix: int) -> float:
    """A prefix's prefill time over its tokens: what recomputing one token of it costs, on average."""
    return prefill_seconds(replica, prefix) / prefix


def break_even(replica: Replica, prefix: int) -> float:
    """Bytes/s per pod above which loading a token's KV beats recomputing it, at this prefix length."""
    return replica.kv_bytes_per_pod / recompute_seconds_per_token(replica, prefix)


def transfer_block_bytes(replica: Replica, block_tokens: int) -> int:
    """One device's share of a block the CPU tier moves (each device holds its heads' share of every layer)."""
    return block_tokens * replica.model.kv_bytes_per_token.bytes // replica.devices


def cpu_tier_bandwidth(replica: Replica, block_tokens: int) -> float:
    """Bytes/s per pod: each device copies its share over its own host link, at that block size."""
    return replica.devices_per_pod * replica.rates.host_link.bandwidth(transfer_block_bytes(replica, block_tokens))


def lustre_tib(capacity_bytes: float) -> float:
    """Managed Lustre's provisioned capacity in the unit its throughput is sold per."""
    return capacity_bytes / LUSTRE_CAPACITY_UNIT


def lustre_aggregate(mb_per_tib: float, capacity_bytes: float) -> float:
    """Managed Lustre's aggregate read bandwidth, bytes/s: its tier's MB/s per TiB x the provisioned TiB."""
    return mb_per_tib * LUSTRE_THROUGHPUT_UNIT * lustre_tib(capacity_bytes)


def filesystem_share(aggregate: float, pods: int, per_client: float | None, cpu_path: float | None = None) -> float:
    """What one pod reads: its share of the aggregate, capped by the per-client limit and the path onward."""
    return min([aggregate / pods, *(c for c in (per_client, cpu_path) if c is not None)])


def reload_seconds(replica: Replica, prefix: int, bandwidth: float) -> float:
    """The prefix's KV at the tier's bandwidth (a sliding-window layer's only within its window)."""
    seconds = prefix * replica.kv_bytes_per_pod / bandwidth
    model = replica.model
    if model.sliding_layers:  # the window's tokens in each sliding layer
        window = np.minimum(prefix, model.sliding_window) * (model.window_kv_bytes // model.sliding_window)
        seconds += window / replica.pods / bandwidth
    return seconds


def hit_seconds(replica: Replica, prefix: int, bandwidth: float, suffix: int = SUFFIX_TOKENS) -> float:
    """A hit: reload the prefix's KV, then prefill the suffix on top of it."""
    return reload_seconds(replica, prefix, bandwidth) + prefill_seconds(replica, suffix, cached=prefix)


def miss_seconds(replica: Replica, prefix: int, suffix: int = SUFFIX_TOKENS) -> float:
    """A miss: prefill the prefix and the suffix."""
    return prefill_seconds(replica, prefix + suffix)


def hit_speedup(replica: Replica, prefix: int, bandwidth: float, suffix: int = SUFFIX_TOKENS) -> float:
    """How many times faster a hit is than a miss (below 1: the hit is slower)."""
    return miss_seconds(replica, prefix, suffix) / hit_seconds(replica, prefix, bandwidth, suffix)


def longest_prefix(model: ModelSpec) -> int:
    """The longest prefix the model's context leaves room for a suffix after."""
    return model.context_tokens - SUFFIX_TOKENS


def table_lengths(model: ModelSpec, alert_prefix: int) -> tuple[int, ...]:
    """The table's prefix lengths and the alert's, ascending, each capped by the model's context."""
    return tuple(sorted({min(n, longest_prefix(model)) for n in (*TABLE_PREFIX_TOKENS, alert_prefix)}))
