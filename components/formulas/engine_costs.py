"""What one replica's engine step costs, from the figures the payoff model and the HBM budget already hold.

One source per figure: the GEMM and attention rates are `payoff.prefill_seconds`'s (the accelerator's dense
bf16 peak at its fitted prefill efficiency, measured on an H200), so a long prompt prefilled alone takes the
payoff's recompute time (plus the step's fixed costs); the weights and the KV pool are the HBM budget's; a decode
step reads them at the shares of the accelerator's memory bandwidth its profile gives (`DecodeEfficiency`,
measured on an H200 and an H100; a mixture of experts' step reads its dense weights and the experts its tokens
route to, `EngineCosts.weights_seconds`), and pays its layers' small kernels; at tensor parallelism n, every layer's two
all-reduces (after attention and after the MLP: one hidden vector per token, bf16) cross the profile's
interconnect; a tier's load runs at the payoff's bandwidth for that tier (per pod: each pod of a multi-host
replica loads its share at once); the server tokenises each prompt first (`SERVER_TOKENIZE`, measured).
"""

from __future__ import annotations

from components.catalog.rates import SERVER_TOKENIZE
from components.formulas.hbm import HbmBudget
from components.formulas.load_costs import LoadCosts
from components.formulas.payoff import (
    ATTENTION_FLOPS_PER_PAIR,
    Replica,
    gemm_flops_per_token,
    window_attention_flops_per_token,
)
from components.formulas.serving_time import EngineCosts

ALL_REDUCES_PER_LAYER = 2  # Megatron-style tensor parallelism: after attention's output and the MLP's down projection
ACTIVATION_BYTES = 2  # bf16 hidden states


def engine_costs(
    replica: Replica, hbm: HbmBudget, cpu_bandwidth: float | None, fs_bandwidth: float | None
) -> EngineCosts:
    """The replica's step costs. A tier bandwidth of None (no such tier, or not derivable): its loads are free,
    which only matters if a tier with no bandwidth serves hits (the caller gives it none)."""
    model = replica.model
    peak = replica.devices * replica.rates.bf16_peak.value
    # pairs grow with the context in the full-attention layers; a sliding-window layer's are at most a window a
    # token, counted with the token's own cost (the full window: an upper bound while it fills)
    pair_flops = ATTENTION_FLOPS_PER_PAIR * model.full_attention_layers * model.attention_width
    window_s = window_attention_flops_per_token(model) / replica.rates.prefill_efficiency.attention / peak
    bandwidth = hbm.accelerator.memory_bandwidth
    decode, link = replica.rates.decode, replica.rates.interconnect
    tp = hbm.tensor_parallelism
    all_reduces = ALL_REDUCES_PER_LAYER * model.layers if tp > 1 else 0
    tokens, seqs = hbm.batch
    per_pod = replica.kv_bytes_per_pod
    experts_per_device = -(-model.routed_expert_bytes // hbm.devices)  # a step reads those its tokens route to
    return EngineCosts(
        gemm_s_per_token=gemm_flops_per_token(model) / replica.gemm_share / peak + window_s,
        attention_s_per_pair=pair_flops / replica.rates.prefill_efficiency.attention / peak,
        weights_read_s=(hbm.weights_per_device - experts_per_device) / (bandwidth * decode.weights),
        kv_read_s_per_token=hbm.kv_bytes_per_token / hbm.devices / (bandwidth * decode.kv),
        load=LoadCosts(
            per_pod / cpu_bandwidth if cpu_bandwidth else 0.0,
            per_pod / fs_bandwidth if fs_bandwidth else 0.0,
        ),
        max_batched_tokens=tokens,
        max_seqs=seqs,
        kv_tokens=hbm.kv_tokens,
        step_s=model.layers * decode.layer_s + all_reduces * link.all_reduce_seconds(0, tp),
        allreduce_s_per_token=all_reduces
        * (link.all_reduce_seconds(model.hidden_size * ACTIVATION_BYTES, tp) - link.all_reduce_seconds(0, tp)),
        expert_read_s=experts_per_device / (bandwidth * decode.weights),
        routing=(model.experts_per_token, model.experts) if model.experts else (0, 0),
        tokenize_s_per_token=SERVER_TOKENIZE.value,
    )
