"""What the accelerators hold: the HBM budget per replica, and the one-line stop when a model or its longest
sequence does not fit (stacks/planning/hbm_fit.py, components/formulas/hbm.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS
from components.formulas.hbm import HbmBudget
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from tests.helpers import manifests, rendered

QWEN3_32B = MODELS["Qwen/Qwen3-32B"]


def _budget(accelerator: str, devices: int, fraction: float = 0.9, max_len: int = 40_960) -> HbmBudget:
    return HbmBudget(QWEN3_32B, ACCELERATORS[accelerator], devices, devices, fraction, "", max_len, "")


def test_qwen3_32b_over_two_h100s_by_hand() -> None:
    budget = _budget("gpu", 2)
    # 81,559 MiB = 85,520,809,984 B, x 0.9, truncated to bytes; 32.8e9 parameters x 2 bytes over 2 devices.
    assert budget.usable_per_device == 76_968_728_985
    assert budget.weights_per_device == 32_800_000_000
    # 2 GiB + 8192 tokens x (4 x 5120 + 3 x 25600 / 2) x 2 B + 1024 x 151936 x 4 B of logits.
    assert budget.reserve_per_device == 2 * 2**30 + 8192 * 117_760 + 1024 * 151_936 * 4
    kv_per_device = 76_968_728_985 - 32_800_000_000 - 3_734_503_424
    assert budget.kv_bytes.bytes == 2 * kv_per_device
    assert budget.kv_tokens == 2 * kv_per_device // 262_144 == 308_488
    assert budget.weights_fit and budget.context_fits


# Each profile's device memory in bytes as its device reports it (the sources are the profiles' fields), and
# what vLLM keeps beside the weights on each runtime, written out here rather than read from the catalog.
H100 = 81_559 * 2**20  # nvidia-smi: 81,559 MiB
H200 = 143_771 * 2**20  # nvidia-smi: 143,771 MiB
A100 = 81_920 * 2**20  # nvidia-smi: 81,920 MiB
MI300X = 206_141_652_992  # rocm-smi --showmeminfo vram: VRAM Total Memory (B)
B60 = 24_480 * 2**20  # torch.xpu: total_memory=24480MB (MiB)
V5P = 98_038 * 2**20  # XLA: 95.74G (GiB) of HBM, to the MiB
V6E = 33_550_237_696  # the TPU runtime's bytes_limit: 31.25 GiB
V7 = 2 * 96 * 2**30  # tpu_inference: 96 GiB per TensorCore, 2 per chip
QWEN3_32B_WEIGHTS = 32_800_000_000 * 2
LOGITS_LARGE = 1024 * 151_936 * 4  # vLLM's 1024 sequences x the vocabulary x fp32
LOGITS_SMALL = 256 * 151_936 * 4
# A Qwen3-32B 128-token TPU block (64 layers x 2 x 8 KV heads x 128 x 2 B a token), single-host pods stage 1000.
TPU_STAGING_QWEN3_32B = 1000 * 128 * 262_144

KV_BY_HAND = {
    # CUDA: 2 GiB runtime + 8192 tokens x (4 x 5120 + 3 x 25600 / 2) x 2 B + logits; TP=2.
    "gpu-vllm-native-cpu": 2 * (int(H100 * 0.9) - QWEN3_32B_WEIGHTS // 2 - (2 * 2**30 + 8192 * 117_760 + LOGITS_LARGE)),
    # CUDA on an H200 and an A100 80GB (both over 70 GiB: vLLM's large-device batch), the same preset otherwise.
    "gpu-vllm-native-cpu+h200": 2
    * (int(H200 * 0.9) - QWEN3_32B_WEIGHTS // 2 - (2 * 2**30 + 8192 * 117_760 + LOGITS_LARGE)),
    "gpu-vllm-native-cpu+a100": 2
    * (int(A100 * 0.9) - QWEN3_32B_WEIGHTS // 2 - (2 * 2**30 + 8192 * 117_760 + LOGITS_LARGE)),
    # ROCm: as CUDA; 2 x MI300X.
    "amd-vllm-native-cpu": 2
    * (int(MI300X * 0.9) - QWEN3_32B_WEIGHTS // 2 - (2 * 2**30 + 8192 * 117_760 + LOGITS_LARGE)),
    # XPU: 1 GiB runtime + 2048 tokens x (4 x 5120 + 3 x 25600 / 4) x 2 B + logits (a device under 70 GiB); the
    # overlays' share 0.85; TP=4.
    "xpu-vllm-native-cpu": 4 * (int(B60 * 0.85) - QWEN3_32B_WEIGHTS // 4 - (2**30 + 2048 * 79_360 + LOGITS_SMALL)),
    # XLA: nothing beside the share; the staging buffer comes off the replica's pool.
    "tpu-v5p-vllm-native-cpu": 4 * (int(V5P * 0.9) - QWEN3_32B_WEIGHTS // 4) - TPU_STAGING_QWEN3_32B,
    "tpu-v6-vllm-native-cpu": 8 * (int(V6E * 0.9) - QWEN3_32B_WEIGHTS // 8) - TPU_STAGING_QWEN3_32B,
    "tpu-v7-vllm-native-cpu": 4 * (int(V7 * 0.9) - QWEN3_32B_WEIGHTS // 4) - TPU_STAGING_QWEN3_32B,
    # Qwen3-Coder-480B over 2 hosts x 4 chips, TP=16 over 8 KV heads (replicated x2: 2 x 62 layers x 8 x 128 x 2 B
    # x 2 a token), the recipe's share 0.8; multi-host pods stage 1024 blocks.
    "tpu-v7-vllm-native-cpu-multi-host": 8 * (int(V7 * 0.8) - 480_000_000_000 * 2 // 8) - 1024 * 128 * 2 * 253_952,
}


def _preset(name: str) -> tuple[str, tuple[str, ...]]:
    """'PRESET+ACCELERATOR': the preset on another accelerator profile."""
    preset, _, accelerator = name.partition("+")
    return preset, (f"cache.accelerator={accelerator}",) if accelerator else ()


@pytest.mark.parametrize("name", sorted(KV_BY_HAND))
def test_each_profiles_hbm_kv_by_hand(name: str) -> None:
    preset, overrides = _preset(name)
    budget = plan(loading.load_named(preset, list(overrides))).hbm
    assert budget.kv_bytes.bytes == KV_BY_HAND[name]
    assert f"= {budget.kv_bytes.bytes / 2**30:.1f} GiB" in rendered(preset, overrides).summary


def test_every_profile_has_a_by_hand_figure() -> None:
    by_accelerator = {
        plan(loading.load_named(preset, list(overrides))).hbm.accelerator.key
        for preset, overrides in map(_preset, KV_BY_HAND)
    }
    assert by_accelerator == set(ACCELERATORS)


@pytest.mark.parametrize("name", ["tpu-v6-vllm-native-cpu", "tpu-v7-vllm-native-cpu-multi-host"])
def test_the_tpu_staging_deducted_is_the_block_count_rendered(name: str) -> None:
    budget = plan(loading.load_named(name)).hbm
    values = {v for m in manifests(rendered(name)) for v in _env_values(m, "TPU_OFFLOAD_NUM_STAGING_BLOCKS")}
    assert len(values) == 1 and int(values.pop()) == budget.staging_blocks > 0
    assert budget.staging_bytes == budget.staging_blocks * 128 * budget.kv_bytes_per_token
    assert "| HBM staging buffer per replica |" in rendered(name).summary


def test_gpus_keep_the_profiled_batch_out_and_tpus_do_not() -> None:
    v6e = _budget("tpu-v6", 8)
    assert v6e.reserve_per_device == 0  # XLA: no profile run, no reserve beside the share
    h100 = _budget("gpu", 2)
    assert h100.reserve_per_device == 2 * 2**30 + 8192 * 117_760 + LOGITS_LARGE


def test_smaller_devices_take_vllms_smaller_batch_limits() -> None:
    xpu = _budget("xpu", 4, fraction=0.85)
    # 2048 tokens x (4 x 5120 + 3 x 25600 / 4) x 2 B + 256 x 151936 x 4 B, beside the XPU's 1 GiB runtime.
    assert xpu.reserve_per_device == 2**30 + 2048 * 79_360 + 256 * 151_936 * 4


def test_kv_heads_replicate_when_ranks_outnumber_them() -> None:
    coder = MODELS["Qwen/Qwen3-Coder-480B-A35B-Instruct"]
    wide = HbmBudget(coder, ACCELERATORS["tpu-v7"], 8, 16, 0.8, "", 71_200, "")
    assert wide.kv_bytes_per_token == 2 * coder.kv_bytes_per_token.bytes


def test_one_h100_stops_qwen3_32b_with_what_would_fit() -> None:
    with pytest.raises(ConfigError) as error:
        plan(loading.load_named("gpu-vllm-native-cpu", ["cache.tensor_parallelism=1"]))
    line = str(error.value)
    assert "\n" not in line
    assert line.startswith("invalid stack config: cache.tensor_parallelism = 1: Qwen/Qwen3-32B on 1 x NVIDIA H100")
    assert "26,722 tokens, fewer than one 40,960-token sequence" in line
    assert line.endswith("what fits: cache.tensor_parallelism 2 (308,488 tokens of KV) or cache.max_model_len 26624")


def test_the_suggested_context_then_fits_and_is_rendered() -> None:
    overrides = ("cache.tensor_parallelism=1", "cache.max_model_len=26624")
    stack_plan = plan(loading.load_named("gpu-vllm-native-cpu", list(overrides)))
    assert stack_plan.hbm.kv_tokens >= 26_624
    args = [a for m in manifests(rendered("gpu-vllm-native-cpu", overrides)) for a in _server_args(m)]
    assert "--max-model-len=26624" in args


def test_weights_that_do_not_fit_name_the_model_and_devices() -> None:
    with pytest.raises(ConfigError) as error:
        plan(loading.load_named("gpu-vllm-native-cpu", ["cache.model=Qwen/Qwen3-Coder-480B-A35B-Instruct"]))
    assert "(894.1 GiB of weights) does not fit 2 x NVIDIA H100" in str(error.value)
    assert str(error.value).endswith("what fits: a larger accelerator or a smaller model")


def test_a_context_beyond_the_models_is_refused() -> None:
    with pytest.raises(ConfigError) as error:
        plan(loading.load_named("dev", ["cache.max_model_len=50000"]))
    assert "cache.max_model_len = 50000: must be at most Qwen/Qwen3-0.6B's context of 40960" in str(error.value)


def test_the_xpu_overlays_fraction_is_the_one_sized_and_a_stack_value_replaces_it() -> None:
    default = plan(loading.load_named("xpu-vllm-native-cpu"))
    assert (default.hbm.memory_fraction, default.hbm.max_model_len) == (0.85, 32_768)
    args = [
        a for m in manifests(rendered("xpu-vllm-native-cpu", ("cache.memory_fraction=0.9",))) for a in _server_args(m)
    ]
    at = args.index("--gpu-memory-utilization")
    assert args[at + 1] == "0.9" and args.count("--gpu-memory-utilization") == 1
    assert not any(a.startswith("--gpu-memory-utilization=") for a in args)


def test_sglang_takes_its_own_flags() -> None:
    overrides = ("cache.memory_fraction=0.85", "cache.max_model_len=32768")
    args = [a for m in manifests(rendered("gpu-sglang-native-cpu", overrides)) for a in _server_args(m)]
    assert "--mem-fraction-static=0.85" in args and "--context-length=32768" in args
    assert not any(a.startswith(("--gpu-memory-utilization", "--max-model-len")) for a in args)


@pytest.mark.parametrize("name", loading.preset_names())
def test_every_preset_fits_and_shows_its_hbm_kv(name: str) -> None:
    stack_plan = plan(loading.load_named(name))
    if stack_plan.hbm.devices:
        assert stack_plan.hbm.kv_tokens >= stack_plan.hbm.max_model_len
    summary = rendered(name).summary
    assert "| HBM KV per replica |" in summary and f"({stack_plan.hbm.kv_tokens:,} tokens)" in summary


def _env_values(node: object, name: str) -> list[str]:
    """Every value of the env var `name` anywhere in a manifest (pod templates of Deployments and LWS alike)."""
    if isinstance(node, list):
        return [v for item in node for v in _env_values(item, name)]
    if not isinstance(node, dict):
        return []
    own = [str(node["value"])] if node.get("name") == name and "value" in node else []
    return own + [v for child in node.values() for v in _env_values(child, name)]


def _containers(manifest: dict[str, object]) -> list[dict[str, Any]]:
    spec = manifest.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    pod = template.get("spec") if isinstance(template, dict) else None
    return list(pod.get("containers", [])) if isinstance(pod, dict) else []


def _server_args(manifest: dict[str, object]) -> list[str]:
    return [str(a) for c in _containers(manifest) for a in c.get("args", [])]
