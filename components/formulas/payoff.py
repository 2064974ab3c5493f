"""Does a tier pay off? The arithmetic of recompute against reload, once.

`components/specs/payoff.py` (the summary's payoff table and the load alert's threshold) and
`policies/rules.py` (`tiers-beat-recompute`) both call it. Recomputing one token costs about 2 FLOPs
per active parameter over the replica's devices at their dense bf16 peak times a prefill efficiency;
a load of that token's KV bytes beats the recompute above KV bytes / recompute time.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.models import ModelSpec
from components.catalog.rates import AcceleratorRates

FLOPS_PER_ACTIVE_PARAMETER = 2
# LMCache moves KV in chunks of `chunk_size` tokens: 256 by default (lmcache 0.5.6), which the
# in-process connector's presets keep (the CPU tier's transfer block when nothing sets it).
LMCACHE_CHUNK_TOKENS = 256


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


def prefill_flops_per_token(model: ModelSpec) -> float:
    return FLOPS_PER_ACTIVE_PARAMETER * model.active_params_billion * 1e9


def prefill_rate(replica: Replica) -> float:
    """FLOP/s the replica's devices sustain in a prefill."""
    return replica.devices * replica.rates.bf16_peak.value * replica.rates.prefill_efficiency.value


def recompute_seconds_per_token(replica: Replica) -> float:
    """Prefill FLOPs of one token over the devices that share its work."""
    return prefill_flops_per_token(replica.model) / prefill_rate(replica)


def break_even(replica: Replica) -> float:
    """Bytes/s per pod above which loading a token's KV beats recomputing it."""
    return replica.kv_bytes_per_pod / recompute_seconds_per_token(replica)


def transfer_block_bytes(replica: Replica, block_tokens: int) -> int:
    """One device's share of a block the CPU tier moves (each device holds its heads' share of every layer)."""
    return block_tokens * replica.model.kv_bytes_per_token.bytes // replica.devices


def cpu_tier_bandwidth(replica: Replica, block_tokens: int) -> float:
    """Bytes/s per pod: each device copies its share over its own host link, at that block size."""
    return replica.devices_per_pod * replica.rates.host_link.bandwidth(transfer_block_bytes(replica, block_tokens))


def filesystem_share(aggregate: float, pods: int, per_client: float | None, cpu_path: float | None = None) -> float:
    """What one pod reads: its share of the aggregate, capped by the per-client limit and the path onward."""
    return min([aggregate / pods, *(c for c in (per_client, cpu_path) if c is not None)])
