"""Engine step times of the catalog's decoder shapes on one GPU: decode by batch x context, prefill by chunk.

What a vLLM replica's GPU does per step, rebuilt in plain PyTorch (no vLLM on the device machine): every decoder
layer of the model (RMSNorm, fused QKV projection, Qwen3's per-head q/k norms, rotary embedding, attention over a
static KV cache, output projection, RMSNorm, fused gate/up projection, SiLU x up, down projection), then the final
norm, the LM head and a greedy sample (argmax). Weights are random bf16 (a step's time does not depend on their
values; never zeros: METHOD.md), every layer its own tensors (a layer's weights are far over the 60 MB L2, as in
the real model). Each configuration is captured once as a CUDA graph and timed over its replays with CUDA events
(median), as vLLM replays captured graphs for decode (eager mode is launch-bound and not what vLLM runs).

- decode: `batch` sequences of `context` tokens each (the new one included) take one step: their new K/V are
  written into the cache and every sequence's queries attend over its whole context (grouped-query attention as
  flash decoding runs it: a KV head's query group as the query length, flash attention with split KV).
- prefill: one sequence's chunk of `chunk` new tokens on top of `cached` ones (causal, lower-right aligned),
  the LM head on its last token only (vLLM computes logits for each sequence's last token).
- shards: a model at tensor parallelism TP is run as one rank's shard (heads, KV heads, MLP width and vocabulary
  divided by TP), with no all-reduce (one GPU): what one rank computes and reads between its all-reduces.

Also the machine's ceilings (METHOD.md): a device-to-device copy (bytes read + written) and an 8192^3 bf16 GEMM.

Run on the accelerator machine: python3 benchmarks/device/step_costs.py --out DIR [--budget-s 470] [--runs
MODEL:TP,...] (writes DIR/<gpu>-step-costs-<the UTC date>.json after each model, <gpu> from the device's name,
e.g. h200, h100; prints a table). --smoke runs tiny shapes on
whatever device there is (CPU included) to check the code. Shapes are the models' Hugging Face config.json
values (tests/test_step_costs_measurement.py holds them to components/catalog/models.py where the catalog has
the model).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as nnf

# config.json fields: num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim,
# intermediate_size, vocab_size; qk_norm: Qwen3's q_norm/k_norm.
SHAPES: dict[str, dict[str, int | bool]] = {
    "Qwen/Qwen3-0.6B": dict(
        layers=28, hidden=1024, heads=16, kv_heads=8, head_dim=128, intermediate=3072, vocab=151936, qk_norm=True
    ),
    "Qwen/Qwen3-8B": dict(
        layers=36, hidden=4096, heads=32, kv_heads=8, head_dim=128, intermediate=12288, vocab=151936, qk_norm=True
    ),
    "Qwen/Qwen3-32B": dict(
        layers=64, hidden=5120, heads=64, kv_heads=8, head_dim=128, intermediate=25600, vocab=151936, qk_norm=True
    ),
    "meta-llama/Llama-3.1-8B-Instruct": dict(
        layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, intermediate=14336, vocab=128256, qk_norm=False
    ),
    "meta-llama/Llama-3.3-70B-Instruct": dict(
        layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128, intermediate=28672, vocab=128256, qk_norm=False
    ),
}
# (model, tensor parallelism): TP=1 where one H200 holds the model; one rank's shard where the published runs
# shard it (Qwen3-32B at TP=2 is llm-d's tiered benchmark; Llama-3.3-70B does not fit one GPU whole).
RUNS = (
    ("Qwen/Qwen3-32B", 1),
    ("Qwen/Qwen3-8B", 1),
    ("meta-llama/Llama-3.1-8B-Instruct", 1),
    ("Qwen/Qwen3-0.6B", 1),
    ("Qwen/Qwen3-32B", 2),
    ("meta-llama/Llama-3.3-70B-Instruct", 2),
)
BATCHES: tuple[int, ...] = (1, 8, 32, 128, 256)
CONTEXTS: tuple[int, ...] = (1024, 4096, 16384)
MAX_DECODE_TOKENS = 256 * 4096  # batch x context cap (a step past vLLM's usual pool is not asked)
CHUNKS: tuple[int, ...] = (128, 512, 2048, 8192)  # prefill chunk sizes on an empty cache
CACHED_CHUNKS: tuple[tuple[int, int], ...] = ((2048, 14336),)  # (chunk, cached): a chunk late in a 16k prompt
# Each variant's grid (batches, contexts, prefill chunks): the compiled variant, the engine's, on the whole grid.
GRIDS: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    "compiled": (BATCHES, CONTEXTS, CHUNKS),
    "bare": ((1, 32, 256), (1024, 4096), (2048, 8192)),
    "eager": ((1, 32), (1024,), (2048,)),
}
EPS = 1e-6
DTYPE = torch.bfloat16


def shard(shape: dict[str, int | bool], tp: int) -> dict[str, int]:
    """One rank's shard at tensor parallelism `tp` (vLLM: heads, KV heads (replicated below one a rank), MLP
    width and vocabulary divided)."""
    s = {k: int(v) for k, v in shape.items()}
    s["heads"] //= tp
    s["kv_heads"] = max(1, s["kv_heads"] // tp)
    s["intermediate"] //= tp
    s["vocab"] = -(-s["vocab"] // tp)
    return s


class Decoder:
    """One rank's decoder weights, random bf16, each layer its own tensors."""

    def __init__(self, s: dict[str, int], device: str, seed: int = 0) -> None:
        g = torch.Generator(device=device).manual_seed(seed)
        self.s, self.device = s, device
        h, hd, nh, kvh, i = s["hidden"], s["head_dim"], s["heads"], s["kv_heads"], s["intermediate"]

        def w(*shape: int) -> torch.Tensor:
            t = torch.empty(shape, dtype=DTYPE, device=device)
            return t.normal_(0.0, 0.02, generator=g)

        def ones(n: int) -> torch.Tensor:
            return torch.ones(n, dtype=DTYPE, device=device)

        self.layers = [
            dict(
                ln1=ones(h),
                qkv=w((nh + 2 * kvh) * hd, h),
                q_norm=ones(hd),
                k_norm=ones(hd),
                o=w(h, nh * hd),
                ln2=ones(h),
                gate_up=w(2 * i, h),
                down=w(h, i),
            )
            for _ in range(s["layers"])
        ]
        self.embed = w(s["vocab"], h)
        self.norm = ones(h)
        self.lm_head = w(s["vocab"], h)

    def layer_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for layer in self.layers for t in layer.values())

    def head_bytes(self) -> int:
        return int(self.lm_head.numel() * self.lm_head.element_size())


def rms(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return nnf.rms_norm(x, (x.shape[-1],), weight, EPS)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [tokens, heads, head_dim]; cos, sin [tokens, 1, head_dim] (rotate-half, as Qwen3's and Llama's)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def rope_tables(positions: torch.Tensor, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (1_000_000.0 ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim))
    angles = positions.float()[:, None] * inv[None, :]
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos().to(DTYPE)[:, None, :], emb.sin().to(DTYPE)[:, None, :]


AttentionFn = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def before_attention(
    x: torch.Tensor,
    ln1: torch.Tensor,
    qkv: torch.Tensor,
    q_norm: torch.Tensor,
    k_norm: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    shape: tuple[int, int, int, bool],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    nh, kvh, hd, qk_norm = shape
    tokens = x.shape[0]
    q, k, v = nnf.linear(rms(x, ln1), qkv).split((nh * hd, kvh * hd, kvh * hd), dim=-1)
    q, k, v = q.view(tokens, nh, hd), k.view(tokens, kvh, hd), v.view(tokens, kvh, hd)
    if qk_norm:
        q, k = rms(q, q_norm), rms(k, k_norm)
    return rope(q, cos, sin), rope(k, cos, sin), v


def after_attention(
    x: torch.Tensor,
    attended: torch.Tensor,
    o: torch.Tensor,
    ln2: torch.Tensor,
    gate_up: torch.Tensor,
    down: torch.Tensor,
) -> torch.Tensor:
    x = x + nnf.linear(attended, o)
    gate, up = nnf.linear(rms(x, ln2), gate_up).chunk(2, dim=-1)
    return x + nnf.linear(nnf.silu(gate) * up, down)


def bare_before(
    x: torch.Tensor,
    ln1: torch.Tensor,
    qkv: torch.Tensor,
    q_norm: torch.Tensor,
    k_norm: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    shape: tuple[int, int, int, bool],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The GEMM alone: no norms, no rotary embedding (the `bare` variant's bytes and FLOPs, few kernels)."""
    nh, kvh, hd, _ = shape
    tokens = x.shape[0]
    q, k, v = nnf.linear(x, qkv).split((nh * hd, kvh * hd, kvh * hd), dim=-1)
    return q.reshape(tokens, nh, hd), k.reshape(tokens, kvh, hd), v.reshape(tokens, kvh, hd)


def bare_after(
    x: torch.Tensor,
    attended: torch.Tensor,
    o: torch.Tensor,
    ln2: torch.Tensor,
    gate_up: torch.Tensor,
    down: torch.Tensor,
) -> torch.Tensor:
    """The three GEMMs alone: no residual adds, no norm, the gate's half straight into the down projection."""
    width = down.shape[1]
    return nnf.linear(nnf.linear(nnf.linear(attended, o), gate_up)[:, :width], down)


# The layer's two halves as each variant runs them: `eager` (every op its own kernels), `compiled` (torch.compile's
# inductor fuses the norms, rotary embedding, residual adds and SiLU x up around the GEMMs, as vLLM's compiled
# model does), `bare` (GEMMs and attention only: what the bytes and FLOPs cost without the small kernels).
VARIANTS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "eager": (before_attention, after_attention),
    "bare": (bare_before, bare_after),
}


def compiled_variant() -> tuple[Callable[..., Any], Callable[..., Any]]:
    if "compiled" not in VARIANTS:
        # Every model and batch its own guards: past the default recompile limit dynamo would run eager silently.
        for name in (
            "cache_size_limit",
            "recompile_limit",
            "accumulated_cache_size_limit",
            "accumulated_recompile_limit",
        ):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 512)
        VARIANTS["compiled"] = (
            torch.compile(before_attention, dynamic=True),
            torch.compile(after_attention, dynamic=True),
        )
    return VARIANTS["compiled"]


def forward(
    m: Decoder,
    ids: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    attend: AttentionFn,
    variant: str = "eager",
) -> torch.Tensor:
    """ids [tokens] -> the hidden states after the last layer; `attend(layer, q, k, v)` writes the new K/V
    into its cache and returns the attention output [tokens, heads x head_dim]."""
    s = m.s
    shape = (s["heads"], s["kv_heads"], s["head_dim"], bool(s["qk_norm"]))
    before, after = compiled_variant() if variant == "compiled" else VARIANTS[variant]
    x = nnf.embedding(ids, m.embed)
    for index, p in enumerate(m.layers):
        q, k, v = before(x, p["ln1"], p["qkv"], p["q_norm"], p["k_norm"], cos, sin, shape)
        x = after(x, attend(index, q, k, v), p["o"], p["ln2"], p["gate_up"], p["down"])
    return x


def sample(m: Decoder, last: torch.Tensor) -> torch.Tensor:
    """The last tokens' logits and a greedy pick (one rank's share of the vocabulary)."""
    return nnf.linear(rms(last, m.norm), m.lm_head).argmax(dim=-1)


def decode_step(
    m: Decoder, kv: torch.Tensor, batch: int, context: int, variant: str = "eager"
) -> Callable[[], torch.Tensor]:
    """kv [layers, 2, batch, kv_heads, context, head_dim]: each sequence's new token goes in its last slot."""
    s = m.s
    nh, kvh, hd = s["heads"], s["kv_heads"], s["head_dim"]
    group = nh // kvh
    ids = torch.randint(0, s["vocab"], (batch,), device=kv.device)
    cos, sin = rope_tables(torch.full((batch,), context - 1, device=kv.device), hd)

    def attend(layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        kv[layer, 0, :, :, context - 1].copy_(k)
        kv[layer, 1, :, :, context - 1].copy_(v)
        grouped = q.view(batch, kvh, group, hd)  # head h reads KV head h // group
        out = nnf.scaled_dot_product_attention(grouped, kv[layer, 0], kv[layer, 1])
        return out.reshape(batch, nh * hd)

    def step() -> torch.Tensor:
        return sample(m, forward(m, ids, cos, sin, attend, variant))

    return step


def prefill_step(
    m: Decoder, kv: torch.Tensor, chunk: int, cached: int, variant: str = "eager"
) -> Callable[[], torch.Tensor]:
    """kv [layers, 2, 1, heads, cached + chunk, head_dim]: the cache held per query head (K/V heads repeated
    as the chunk's are written), so the lower-right causal mask runs on plain multi-head flash attention."""
    from torch.nn.attention.bias import causal_lower_right

    s = m.s
    nh, kvh, hd = s["heads"], s["kv_heads"], s["head_dim"]
    group = nh // kvh
    total = cached + chunk
    ids = torch.randint(0, s["vocab"], (chunk,), device=kv.device)
    cos, sin = rope_tables(torch.arange(cached, total, device=kv.device), hd)
    mask = causal_lower_right(chunk, total) if cached else None

    def attend(layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        keys, values = kv[layer, 0, 0], kv[layer, 1, 0]  # [heads, total, head_dim]
        keys[:, cached:].copy_(k.repeat_interleave(group, dim=1).transpose(0, 1))
        values[:, cached:].copy_(v.repeat_interleave(group, dim=1).transpose(0, 1))
        query = q.transpose(0, 1)[None]
        if mask is None:
            out = nnf.scaled_dot_product_attention(query, keys[None], values[None], is_causal=True)
        else:
            out = nnf.scaled_dot_product_attention(query, keys[None], values[None], attn_mask=mask)
        return out[0].transpose(0, 1).reshape(chunk, nh * hd)

    def step() -> torch.Tensor:
        return sample(m, forward(m, ids, cos, sin, attend, variant)[-1:])

    return step


def timed(fn: Callable[[], torch.Tensor], reps: int) -> tuple[float, float, float]:
    """(median, min, max) seconds of one call: on CUDA a captured graph's replays, timed with events."""
    if not torch.cuda.is_available():
        fn()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times), min(times), max(times)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        start.record()
        graph.replay()
        end.record()
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) / 1000 for start, end in events]
    del graph
    return statistics.median(times), min(times), max(times)


def reps_for(estimate_s: float) -> int:
    return max(5, min(30, int(0.6 / max(estimate_s, 1e-4))))


def check_decode_attention(device: str) -> float:
    """The grouped decode attention against repeat-KV attention in float64: relative error (bf16: 1e-3..1e-2)."""
    g = torch.Generator(device=device).manual_seed(1)
    batch, kvh, group, hd, context = 3, 2, 4, 128, 77
    q = torch.randn(batch, kvh * group, hd, device=device, generator=g).to(DTYPE)
    k = torch.randn(batch, kvh, context, hd, device=device, generator=g).to(DTYPE)
    v = torch.randn(batch, kvh, context, hd, device=device, generator=g).to(DTYPE)
    out = nnf.scaled_dot_product_attention(q.view(batch, kvh, group, hd), k, v).reshape(batch, -1)
    qd, kd, vd = q.double(), k.double().repeat_interleave(group, 1), v.double().repeat_interleave(group, 1)
    weights = torch.softmax(torch.einsum("bhd,bhcd->bhc", qd, kd) / math.sqrt(hd), dim=-1)
    ref = torch.einsum("bhc,bhcd->bhd", weights, vd).reshape(batch, -1)
    return float((out.double() - ref).norm() / ref.norm())


def check_graph(device: str) -> bool:
    """A captured decode step gives the eager step's tokens (a tiny model)."""
    s = dict(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=512, vocab=1000, qk_norm=1)
    m = Decoder(s, device)
    kv = torch.randn(2, 2, 4, 2, 33, 64, device=device).to(DTYPE)
    step = decode_step(m, kv, 4, 33)
    eager = step().clone()
    if not torch.cuda.is_available():
        return True
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        out = step()
    out.fill_(-1)
    graph.replay()
    torch.cuda.synchronize()
    return bool(torch.equal(out, eager))


def _copy_seconds(size: int) -> float:
    src = torch.empty(size // 2, dtype=DTYPE, device="cuda").normal_()
    dst = torch.empty_like(src)
    return timed(lambda: dst.copy_(src), 20)[0]


def _gemm_seconds(n: int) -> float:
    a = torch.randn(n, n, device="cuda", dtype=DTYPE)
    b = torch.randn(n, n, device="cuda", dtype=DTYPE)
    return timed(lambda: a @ b, 20)[0]


def ceilings() -> dict[str, float]:
    """An 8192^3 bf16 GEMM on random data and a 2 GiB device-to-device copy (bytes read + written), after a
    warm-up GEMM (the first call read the copy at idle clocks)."""
    _gemm_seconds(8192)  # the clocks up from idle first
    gemm = _gemm_seconds(8192)
    copy = _copy_seconds(2 * 1024**3)
    torch.cuda.empty_cache()
    return {
        "copy_GBps_read_plus_write": round(2 * 2 * 1024**3 / copy / 1e9, 1),
        "bf16_gemm_TFLOPs": round(2 * 8192**3 / gemm / 1e12, 1),
    }


def one_variant(
    m: Decoder,
    pool: torch.Tensor,
    s: dict[str, int],
    variant: str,
    result: dict[str, Any],
    deadline: float,
    smoke: bool,
) -> None:
    """One variant's decode grid and prefill chunks into `result`."""
    batches, contexts, chunks, cached_chunks = BATCHES, CONTEXTS, CHUNKS, CACHED_CHUNKS
    if smoke:
        batches, contexts, chunks, cached_chunks = (1, 4), (64, 256), (32, 128), ((32, 96),)
    v_batches, v_contexts, v_chunks = GRIDS[variant] if not smoke else (batches, contexts, chunks)
    estimate = 0.01
    for batch in v_batches:
        for context in v_contexts:
            need = s["layers"] * 2 * batch * s["kv_heads"] * context * s["head_dim"]
            if batch * context > MAX_DECODE_TOKENS or need > pool.numel():
                continue
            if time.monotonic() > deadline:
                result["skipped"].append(f"{variant} decode {batch}x{context}: out of time")
                continue
            kv = pool[:need].view(s["layers"], 2, batch, s["kv_heads"], context, s["head_dim"])
            median, low, high = timed(decode_step(m, kv, batch, context, variant), reps_for(estimate))
            estimate = median
            result["decode"].append(
                {
                    "variant": variant,
                    "batch": batch,
                    "context": context,
                    "step_s": median,
                    "min_s": low,
                    "max_s": high,
                }
            )
            print(f"  {variant} decode b={batch:4d} c={context:6d}: {median * 1e3:8.3f} ms", file=sys.stderr)
    for chunk, cached in [(c, 0) for c in v_chunks] + (list(cached_chunks) if variant == "compiled" else []):
        total = cached + chunk
        need = s["layers"] * 2 * s["heads"] * total * s["head_dim"]
        if need > pool.numel() or time.monotonic() > deadline:
            why = "memory" if need > pool.numel() else "time"
            result["skipped"].append(f"{variant} prefill {chunk}+{cached}: {why}")
            continue
        kv = pool[:need].view(s["layers"], 2, 1, s["heads"], total, s["head_dim"])
        try:
            median, low, high = timed(prefill_step(m, kv, chunk, cached, variant), 5)
        except Exception as error:  # keep what ran
            result["skipped"].append(f"{variant} prefill {chunk}+{cached}: {error!r}"[:300])
            continue
        result["prefill"].append(
            {"variant": variant, "chunk": chunk, "cached": cached, "step_s": median, "min_s": low, "max_s": high}
        )
        print(f"  {variant} prefill {chunk:6d} on {cached:6d}: {median * 1e3:8.3f} ms", file=sys.stderr)


def run(model: str, tp: int, device: str, deadline: float, smoke: bool, variants: list[str]) -> dict[str, Any]:
    s = shard(SHAPES[model], tp)
    if smoke:
        s.update(layers=2, hidden=256, heads=max(1, s["heads"] // 8), intermediate=512, vocab=1000)
        s["kv_heads"] = min(s["kv_heads"], s["heads"])
    m = Decoder(s, device)
    kv_bytes_per_token = 2 * s["layers"] * s["kv_heads"] * s["head_dim"] * 2
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        pool_bytes = free - 12 * 1024**3  # headroom for activations, graphs and the flash workspace
    else:
        pool_bytes = 256 * 1024**2
    pool = torch.empty(pool_bytes // 2, dtype=DTYPE, device=device).normal_()
    result: dict[str, Any] = {
        "model": model,
        "tensor_parallel": tp,
        "shard": s,
        "layer_weight_bytes": m.layer_bytes(),
        "lm_head_bytes": m.head_bytes(),
        "kv_bytes_per_token": kv_bytes_per_token,
        "decode": [],
        "prefill": [],
        "skipped": [],
    }
    for variant in variants:
        try:
            one_variant(m, pool, s, variant, result, deadline, smoke)
        except Exception as error:  # keep the other variants
            result["skipped"].append(f"{variant}: {error!r}"[:300])
    return result


def parse_runs(text: str, parser: argparse.ArgumentParser) -> list[tuple[str, int]]:
    """`--runs`: MODEL:TP pairs of `SHAPES`' models, each at most once, checked before anything runs."""
    runs: list[tuple[str, int]] = []
    for item in text.split(","):
        model, _, tp = item.strip().rpartition(":")
        if model not in SHAPES or tp not in ("1", "2", "4", "8") or (model, int(tp)) in runs:
            parser.error(
                f"--runs: {item!r} is not MODEL:TP with MODEL one of {sorted(SHAPES)} and TP one of 1, 2, 4, 8,"
                " each pair once"
            )
        runs.append((model, int(tp)))
    return runs


def gpu_tag() -> str:
    """The output's prefix: the GPU's model as its name gives it (NVIDIA H100 80GB HBM3 -> h100), else cpu."""
    if not torch.cuda.is_available():
        return "cpu"
    words = [w for w in torch.cuda.get_device_name(0).split() if w.upper() not in ("NVIDIA", "AMD", "INTEL")]
    return words[0].lower() if words else "gpu"


def machine() -> dict[str, str]:
    out = {"torch": torch.__version__}
    if torch.cuda.is_available():
        out["device"] = torch.cuda.get_device_name(0)
        try:
            out["nvidia_smi"] = subprocess.run(
                [
                    "nvidia-smi",
                    "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem",
                    "--format=csv,noheader",
                ],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError) as error:
            out["nvidia_smi"] = repr(error)
    out["kernel"] = os.uname().release
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=470.0, help="stop starting new cells after this long")
    parser.add_argument("--variants", default="compiled,bare,eager", help=f"of {sorted(GRIDS)}")
    parser.add_argument("--suffix", default="", help="appended to the output's name")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes: check the code, on any device")
    parser.add_argument(
        "--runs",
        default=",".join(f"{model}:{tp}" for model, tp in RUNS),
        help="MODEL:TP,... of the shapes above (a GPU with less memory than the H200 skips the shards it cannot hold)",
    )
    args = parser.parse_args()
    runs = parse_runs(args.runs, parser)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    date = time.strftime("%Y-%m-%d", time.gmtime())
    deadline = time.monotonic() + args.budget_s
    torch.manual_seed(0)
    if device == "cuda":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        sdpa_kernel([SDPBackend.FLASH_ATTENTION]).__enter__()  # fail loudly rather than fall back
    name = "smoke" if args.smoke else f"{gpu_tag()}-step-costs-{date}{args.suffix}"
    path = args.out / f"{name}.json"
    result: dict[str, Any] = {
        "date": date,
        "machine": machine(),
        "script": "benchmarks/device/step_costs.py",
        "method": __doc__.split("\n\n")[1].replace("\n", " ") + " " + __doc__.split("\n\n")[2].replace("\n", " "),
        "checks": {
            "decode_attention_rel_error_vs_float64": check_decode_attention(device),
            "graph_replay_equals_eager": check_graph(device),
        },
        "runs": [],
    }
    print(f"checks: {result['checks']}", file=sys.stderr, flush=True)
    if device == "cuda" and not args.smoke:
        result["ceilings"] = ceilings()
        print(f"ceilings: {result['ceilings']}", file=sys.stderr, flush=True)
    for model, tp in runs:
        print(f"{model} TP={tp}", file=sys.stderr, flush=True)
        try:
            result["runs"].append(run(model, tp, device, deadline, args.smoke, args.variants.split(",")))
            gc.collect()  # the run's weights, KV pool and graphs, before the next model's
            if device == "cuda":
                torch.cuda.empty_cache()
        except Exception as error:  # keep what ran
            import traceback

            traceback.print_exc()
            result["runs"].append({"model": model, "tensor_parallel": tp, "error": repr(error)[:500]})
            if device == "cuda":
                torch.cuda.empty_cache()
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")
    print("| model | TP | decode b x c: ms | prefill chunk: ms |")
    for r in result["runs"]:
        if "error" in r:
            print(f"| {r['model']} | {r['tensor_parallel']} | error | {r['error'][:80]} |")
            continue
        dec = ", ".join(f"{d['batch']}x{d['context']}:{d['step_s'] * 1e3:.2f}" for d in r["decode"][:6])
        pre = ", ".join(f"{p['chunk']}+{p['cached']}:{p['step_s'] * 1e3:.1f}" for p in r["prefill"])
        print(f"| {r['model']} | {r['tensor_parallel']} | {dec} | {pre} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
