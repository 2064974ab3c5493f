"""The combinations this program deploys (the seed's two tables), with each one's defaults.

A combination is accelerator x model server x connector x tier variant x host type. Defaults are
the seed's: the model each accelerator serves, replicas x tensor parallelism, and the tier size
(per pod; the seed states some per tensor-parallel rank, multiplied out here).
"""

from __future__ import annotations

from dataclasses import dataclass

from components.units import GB, ByteSize, GiB, TiB

Combo = tuple[str, str, str, str, str]  # accelerator, server, connector, variant, host type
FIELDS = ("cache.accelerator", "cache.server", "cache.connector", "cache.tier.variant", "cache.host_type")

QWEN3_32B = "Qwen/Qwen3-32B"
QWEN3_NATIVE_CONTEXT = 32_768  # Qwen3 model cards: "32,768 natively"


@dataclass(frozen=True)
class ComboDefaults:
    model: str
    replicas: int
    tensor_parallelism: int
    # The CPU tier per pod, in bytes or (TPU) in KV blocks of the offload connector.
    cpu_tier: ByteSize | None = None
    cpu_tier_blocks: int | None = None
    # LMCache local disk (per pod, split over ranks) / Mooncake Client SSD (per node): the filesystem
    # tier's capacity budget, where the connector takes one.
    disk_tier: ByteSize | None = None
    platforms: tuple[str, ...] = ("base",)
    # TPU: devices (chips) per pod; otherwise one device per tensor-parallel rank.
    devices: int | None = None
    group_size: int = 1  # multi-host: pods per replica (LeaderWorkerSet size)
    # `--max-model-len` where the model's whole context does not fit the KV the devices leave (None: the model's).
    max_model_len: int | None = None


_GPU = ("base", "gke")
_NATIVE_GPU = ComboDefaults(QWEN3_32B, 2, 2, cpu_tier=ByteSize(300 * GiB), platforms=_GPU)
_TPU = ("gke",)  # TPUs: GKE only
# H200 and A100 80GB: existing clusters (no created pool's machine type is in the catalog for them).
_NATIVE_EXISTING = ComboDefaults(QWEN3_32B, 2, 2, cpu_tier=ByteSize(300 * GiB))

SUPPORTED: dict[Combo, ComboDefaults] = {
    # NVIDIA GPU: vLLM with every connector, SGLang HiCache.
    ("gpu", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,
    ("h200", "vllm", "native", "cpu", "single-host"): _NATIVE_EXISTING,
    ("a100", "vllm", "native", "cpu", "single-host"): _NATIVE_EXISTING,
    ("gpu", "vllm", "native", "fs", "single-host"): ComboDefaults(QWEN3_32B, 2, 2, ByteSize(100 * GiB), platforms=_GPU),
    ("gpu", "vllm", "lmcache-connector", "cpu", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(2 * 100 * GiB), platforms=_GPU
    ),
    ("gpu", "vllm", "lmcache-connector", "fs", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(2 * 100 * GiB), disk_tier=ByteSize(2 * 1120 * GiB), platforms=_GPU
    ),
    # Mooncake reads "80GB" as 80 GiB (the guide requests 82Gi for an 80GB client segment).
    ("gpu", "vllm", "mooncake-store", "cpu", "single-host"): ComboDefaults(QWEN3_32B, 2, 2, ByteSize(2 * 80 * GiB)),
    ("gpu", "vllm", "mooncake-store", "fs", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(80 * GiB), disk_tier=ByteSize(1 * TiB)
    ),
    # The LMCache integration guide: vLLM pods on the node's LMCache server (prefix reuse or P/D).
    ("gpu", "vllm", "lmcache-server", "cpu", "single-host"): ComboDefaults("Qwen/Qwen3-0.6B", 1, 1, ByteSize(20 * GiB)),
    ("gpu", "sglang", "native", "cpu", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(2 * 200 * GB), platforms=_GPU
    ),
    ("gpu", "sglang", "native", "fs", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(2 * 200 * GB), platforms=_GPU
    ),
    # AMD GPU: vLLM native and LMCache (amd-ci renders as base: the stack always ships its PVC).
    ("amd", "vllm", "native", "cpu", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(100 * GiB), platforms=("base", "amd-ci")
    ),
    ("amd", "vllm", "native", "fs", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(100 * GiB), platforms=("base", "amd-ci")
    ),
    ("amd", "vllm", "lmcache-connector", "cpu", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(2 * 100 * GiB), platforms=("base", "amd-ci")
    ),
    ("amd", "vllm", "lmcache-connector", "fs", "single-host"): ComboDefaults(
        QWEN3_32B, 2, 2, ByteSize(2 * 100 * GiB), disk_tier=ByteSize(2 * 1120 * GiB), platforms=("base", "amd-ci")
    ),
    # Intel XPU (B60, DRA): native on Qwen3-32B over 4 XPUs; LMCache serves Qwen3-8B on one. Four 24 GB B60s
    # at the overlays' 0.85 leave Qwen3-32B about 40,000 tokens of KV (stacks/planning/hbm_fit.py), short of
    # its 40,960-token context: the native combinations serve Qwen3's native 32,768 (its model card).
    ("xpu", "vllm", "native", "cpu", "single-host"): ComboDefaults(
        QWEN3_32B, 1, 4, ByteSize(100 * GiB), max_model_len=QWEN3_NATIVE_CONTEXT
    ),
    ("xpu", "vllm", "native", "fs", "single-host"): ComboDefaults(
        QWEN3_32B, 1, 4, ByteSize(100 * GiB), max_model_len=QWEN3_NATIVE_CONTEXT
    ),
    ("xpu", "vllm", "lmcache-connector", "cpu", "single-host"): ComboDefaults(
        "Qwen/Qwen3-8B", 1, 1, ByteSize(20 * GiB)
    ),
    ("xpu", "vllm", "lmcache-connector", "fs", "single-host"): ComboDefaults(
        "Qwen/Qwen3-8B", 1, 1, ByteSize(20 * GiB), disk_tier=ByteSize(100 * GiB)
    ),
    # Google TPU (GKE only), vLLM TPU offload connector, CPU tier counted in 128-token KV blocks.
    ("tpu-v5p", "vllm", "native", "cpu", "single-host"): ComboDefaults(
        QWEN3_32B,
        3,
        4,
        cpu_tier_blocks=10000,
        devices=4,
        platforms=_TPU,
    ),
    ("tpu-v6", "vllm", "native", "cpu", "single-host"): ComboDefaults(
        QWEN3_32B,
        3,
        8,
        cpu_tier_blocks=25000,
        devices=8,
        platforms=_TPU,
    ),
    ("tpu-v7", "vllm", "native", "cpu", "single-host"): ComboDefaults(
        QWEN3_32B,
        3,
        8,
        cpu_tier_blocks=25000,
        devices=4,
        platforms=_TPU,
    ),
    ("tpu-v7", "vllm", "native", "cpu", "multi-host"): ComboDefaults(
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        3,
        16,
        cpu_tier_blocks=10000,
        devices=4,
        group_size=2,
        platforms=_TPU,
    ),
}


def supported_for(combo: Combo) -> tuple[str, str, str]:
    """For an unsupported combination: the first field that breaks it, its value, and what is allowed there."""
    for i, field in enumerate(FIELDS):
        prefix = combo[: i + 1]
        if not any(s[: i + 1] == prefix for s in SUPPORTED):
            context = ", ".join(f"{FIELDS[j].rsplit('.', 1)[-1]} {combo[j]}" for j in range(i))
            allowed = sorted({s[i] for s in SUPPORTED if s[:i] == combo[:i]})
            where = f" with {context}" if context else ""
            return field, combo[i], f"not supported{where}; allowed: {', '.join(allowed)}"
    raise ValueError(f"{combo} is supported")
