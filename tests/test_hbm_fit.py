"""What the accelerators hold: the HBM budget per replica, and the one-line stop when a model or its longest
sequence does not fit (stacks/planning/hbm_fit.py, components/formulas/hbm.py)."""

from __future__ import annotations

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


def _server_args(manifest: dict[str, object]) -> list[str]:
    spec = manifest.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    pod = template.get("spec") if isinstance(template, dict) else None
    containers = pod.get("containers", []) if isinstance(pod, dict) else []
    return [str(a) for c in containers for a in c.get("args", [])]
