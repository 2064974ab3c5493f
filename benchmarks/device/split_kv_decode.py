"""Decode steps at long contexts and small batches, with split-KV attention, as vLLM's decode kernels run them.

`step_costs.py` times decode with PyTorch's flash kernel, which runs one block per sequence and KV head and never
splits a context: below the GPU's multiprocessor count a long context's attention reads far under the bandwidth,
so those cells were left out of the fit. vLLM's decode kernels (FlashAttention's split-KV, FlashInfer) split each
context across blocks and combine the parts by their log-sum-exp. This script does the same in PyTorch: each
sequence's cache is laid out as `splits` parts, every part attended by the flash kernel as a sequence of its own
(`aten._scaled_dot_product_flash_attention`, which returns the log-sum-exp), and the parts combined by their
softmax weights; the rest of the step is step_costs.py's (every layer, the LM head, a greedy sample, torch.compile
of the small ops, one CUDA graph a configuration, its replays timed with CUDA events, median). The cells are the
tiered benchmark's regime: Qwen3-32B's TP=2 shard (4 KV heads), 4-32 sequences of 8k-16k tokens.

Run on the accelerator machine: python3 benchmarks/device/split_kv_decode.py --out DIR (writes
DIR/<gpu>-split-kv-decode-<the UTC date of the run>.json, <gpu> from the device's name; prints a table). --smoke
runs tiny shapes on any device.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import step_costs as sc  # this script's folder, on sys.path above

RUNS = (("Qwen/Qwen3-32B", 2),)
BATCHES: tuple[int, ...] = (4, 8, 16, 24, 32)
CONTEXTS: tuple[int, ...] = (8192, 16384)
BLOCKS_WANTED = 2 * 132  # two blocks a multiprocessor of the H200's 132


def splits_for(batch: int, kv_heads: int, context: int) -> int:
    """The fewest power-of-two parts that give the kernel `BLOCKS_WANTED` blocks (a part at least 256 tokens)."""
    splits = 1
    while batch * kv_heads * splits < BLOCKS_WANTED and context // (splits * 2) >= 256:
        splits *= 2
    return splits


def split_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, splits: int) -> torch.Tensor:
    """q [batch, kv_heads, group, head_dim]; keys, values [batch x splits, kv_heads, part, head_dim]: every part
    attended on its own, then combined by the parts' log-sum-exp (flash decoding)."""
    batch, kv_heads, group, head_dim = q.shape
    query = q[:, None].expand(batch, splits, kv_heads, group, head_dim).reshape(batch * splits, kv_heads, group, -1)
    flash = (
        torch.ops.aten._scaled_dot_product_flash_attention
        if q.is_cuda
        else torch.ops.aten._scaled_dot_product_flash_attention_for_cpu  # the --smoke run's
    )
    out, lse = flash(query, keys, values)[:2]
    weights = torch.softmax(lse.view(batch, splits, kv_heads, group).float(), dim=1)
    parts = out.reshape(batch, splits, kv_heads, group, head_dim).float()
    return (parts * weights[..., None]).sum(dim=1).to(q.dtype)


def split_decode_step(
    m: sc.Decoder, kv: torch.Tensor, batch: int, context: int, splits: int
) -> Callable[[], torch.Tensor]:
    """kv [layers, 2, batch x splits, kv_heads, context / splits, head_dim]: the new token in the last part's last
    slot."""
    s = m.s
    nh, kvh, hd = s["heads"], s["kv_heads"], s["head_dim"]
    group = nh // kvh
    ids = torch.randint(0, s["vocab"], (batch,), device=kv.device)
    cos, sin = sc.rope_tables(torch.full((batch,), context - 1, device=kv.device), hd)
    part = context // splits
    last = torch.arange(batch, device=kv.device) * splits + splits - 1

    def attend(layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        kv[layer, 0, last, :, part - 1] = k
        kv[layer, 1, last, :, part - 1] = v
        out = split_attention(q.view(batch, kvh, group, hd), kv[layer, 0], kv[layer, 1], splits)
        return out.reshape(batch, nh * hd)

    def step() -> torch.Tensor:
        return sc.sample(m, sc.forward(m, ids, cos, sin, attend, "compiled"))

    return step


def check_split_attention(device: str) -> float:
    """Split attention against one-pass attention in float64: relative error (bf16: 1e-3..1e-2)."""
    g = torch.Generator(device=device).manual_seed(2)
    batch, kvh, group, hd, context, splits = 2, 4, 8, 128, 2048, 8

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, device=device, dtype=sc.DTYPE)

    q, k, v = draw(batch, kvh, group, hd), draw(batch, kvh, context, hd), draw(batch, kvh, context, hd)
    parts = context // splits

    def split_layout(t: torch.Tensor) -> torch.Tensor:
        return t.view(batch, kvh, splits, parts, hd).transpose(1, 2).reshape(batch * splits, kvh, parts, hd)

    got = split_attention(q, split_layout(k), split_layout(v), splits).double()
    want = torch.softmax(q.double() @ k.double().transpose(-1, -2) / math.sqrt(hd), -1) @ v.double()
    return float((got - want).norm() / want.norm())


def run(model: str, tp: int, device: str, smoke: bool, deadline: float) -> dict[str, Any]:
    s = sc.shard(sc.SHAPES[model], tp)
    batches, contexts = BATCHES, CONTEXTS
    if smoke:
        s.update(layers=2, hidden=256, heads=max(1, s["heads"] // 8), intermediate=512, vocab=1000)
        s["kv_heads"] = min(s["kv_heads"], s["heads"])
        batches, contexts = (1, 2), (512,)
    m = sc.Decoder(s, device)
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        pool_bytes = free - 12 * 1024**3
    else:
        pool_bytes = 64 * 1024**2
    pool = torch.empty(pool_bytes // 2, dtype=sc.DTYPE, device=device).normal_()
    result: dict[str, Any] = {"model": model, "tensor_parallel": tp, "shard": s, "decode": [], "skipped": []}
    estimate = 0.02
    for batch in batches:
        for context in contexts:
            splits = splits_for(batch, s["kv_heads"], context)
            need = s["layers"] * 2 * batch * s["kv_heads"] * context * s["head_dim"]
            if need > pool.numel() or time.monotonic() > deadline:
                result["skipped"].append(f"{batch}x{context}: {'memory' if need > pool.numel() else 'time'}")
                continue
            kv = pool[:need].view(s["layers"], 2, batch * splits, s["kv_heads"], context // splits, s["head_dim"])
            median, low, high = sc.timed(split_decode_step(m, kv, batch, context, splits), sc.reps_for(estimate))
            estimate = median
            result["decode"].append(
                {"batch": batch, "context": context, "splits": splits, "step_s": median, "min_s": low, "max_s": high}
            )
            print(f"  split decode b={batch:3d} c={context:6d} s={splits:3d}: {median * 1e3:8.3f} ms", file=sys.stderr)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=420.0, help="stop starting new cells after this long")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes: check the code, on any device")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    deadline = time.monotonic() + args.budget_s
    torch.manual_seed(0)
    date = time.strftime("%Y-%m-%d", time.gmtime())
    result: dict[str, Any] = {
        "date": date,
        "machine": sc.machine(),
        "script": "benchmarks/device/split_kv_decode.py",
        "method": __doc__.split("\n\n")[1].replace("\n", " "),
        "checks": {"split_attention_rel_error_vs_float64": check_split_attention(device)},
        "runs": [],
    }
    print(f"checks: {result['checks']}", file=sys.stderr, flush=True)
    if device == "cpu" and not args.smoke:
        print("no GPU: run with --smoke to check the code", file=sys.stderr)
        return 2
    for model, tp in RUNS:
        result["runs"].append(run(model, tp, device, args.smoke, deadline))
    name = "smoke-split" if args.smoke else f"{sc.gpu_tag()}-split-kv-decode-{date}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    for r in result["runs"]:
        cells = ", ".join(f"{d['batch']}x{d['context']}/{d['splits']}:{d['step_s'] * 1e3:.2f}" for d in r["decode"])
        print(f"| {r['model']} | TP={r['tensor_parallel']} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
