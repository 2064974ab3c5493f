"""Any model by its Hugging Face config.json: the one reader (components/catalog/hf_config.py) gives the catalog's
models and a user's file (`cache.model_file`) their geometry; the figures are checked against arithmetic written
out here, and every bad file is refused in one line naming its field, before any work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from components.catalog.accelerators import ACCELERATORS
from components.catalog.hf_config import ConfigFieldError, model_from_config
from components.catalog.models import MODELS
from components.catalog.published_configs import PUBLISHED_CONFIGS
from components.formulas import payoff
from stacks.__main__ import size_lines
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from stacks.review.render import render

FIXTURES = "tests/fixtures/model-configs"
DENSE = ("cache.model=acme/dense-7b", f"cache.model_file={FIXTURES}/dense.json")
MOE = ("cache.model=acme/moe-2b", f"cache.model_file={FIXTURES}/moe.json")


def _fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).parents[1] / FIXTURES / name).read_text())
    return data


def test_a_dense_config_gives_the_hand_counted_geometry() -> None:
    model = model_from_config("acme/dense-7b", _fixture("dense.json"))
    assert model.head_dim == 128  # 4096 hidden / 32 heads: no head_dim in the file
    # K and V x 32 layers x 8 KV heads x 128 x 2 bytes (bfloat16)
    assert model.kv_bytes_per_token.bytes == 2 * 32 * 8 * 128 * 2 == 131_072
    # per layer: Q and O 2 x 4096 x 4096, K and V 2 x 4096 x 1024, MLP 3 x 4096 x 14336
    per_layer = 33_554_432 + 8_388_608 + 176_160_768
    assert model.active_non_embedding_params == 32 * per_layer == 6_979_321_856
    assert payoff.gemm_flops_per_token(model) == 13_958_643_712  # 2 FLOPs a weight
    # weights: the layers and 32,768 x 4096 embeddings plus the untied LM head, 2 bytes each
    assert model.weight_bytes.bytes == 2 * (6_979_321_856 + 2 * 32_768 * 4096) == 14_495_514_624
    assert model.params_from == "the geometry's count"
    assert (model.context_tokens, model.experts, model.sliding_layers) == (32_768, 0, 0)


def test_a_mixture_of_experts_config_counts_every_expert_for_memory_and_the_active_ones_for_compute() -> None:
    model = model_from_config("acme/moe-2b", _fixture("moe.json"))
    assert (model.experts, model.experts_per_token, model.expert_intermediate_size) == (32, 4, 1024)
    assert (model.moe_layers, model.dense_layers, model.shared_expert_intermediate_size) == (7, 1, 1024)
    # KV: the 4 full-attention layers keep every token (2 x 4 KV heads x 128 x 2 bytes each); the 4 sliding
    # ones at most their 1,024-token window
    assert model.kv_bytes_per_token.bytes == 4 * 2 * 4 * 128 * 2 == 8192
    assert model.window_kv_bytes == 4 * 1024 * 2 * 4 * 128 * 2 == 8_388_608
    assert model.kv_bytes_of(100) == 100 * 8192 + 100 * 8192
    assert model.kv_bytes_of(5000) == 5000 * 8192 + 8_388_608
    # per token: attention 8 x (2 x 2048 x 2048 + 2 x 2048 x 512); the dense layer's MLP 3 x 2048 x 8192; each
    # expert layer's 4 routed experts and the shared one (3 x 2048 x 5 x 1024) and its router (2048 x 32)
    attention, dense, expert = 8 * 10_485_760, 50_331_648, 7 * (31_457_280 + 65_536)
    assert model.active_non_embedding_params == attention + dense + expert == 354_877_440
    assert payoff.gemm_flops_per_token(model) == 709_754_880
    # memory: every routed expert (7 layers x 32 x 3 x 2048 x 1024), the shared ones and routers, the tied
    # embeddings (50,000 x 2048), 2 bytes each
    every = attention + dense + 7 * (3 * 2048 * 1024 + 2048 * 32) + 7 * 32 * 6_291_456 + 50_000 * 2048
    assert every == 1_690_402_816
    assert model.weight_bytes.bytes == 2 * every


def test_gpt_oss_counts_its_mxfp4_experts_at_four_and_a_quarter_bits() -> None:
    gpt_oss = MODELS["openai/gpt-oss-120b"]
    experts = 36 * 128 * 3 * 2880 * 2880  # routed experts, MXFP4: 17 bytes per 32 weights
    assert gpt_oss.routed_expert_params == experts == 114_661_785_600
    rest = 116_788_838_400 - experts  # attention, routers, embeddings and LM head in bf16
    assert gpt_oss.params == 116_788_838_400
    assert gpt_oss.weight_bytes.bytes == rest * 2 + experts * 17 // 32 == 65_168_179_200
    # 18 full-attention layers of 8 KV heads x 64; 18 sliding ones of a 128-token window
    assert gpt_oss.kv_bytes_per_token.bytes == 2 * 18 * 8 * 64 * 2 == 36_864
    assert gpt_oss.window_kv_bytes == 18 * 128 * 2 * 8 * 64 * 2
    # the model card's 5.1B active: 4 of 128 experts, attention, routers and the LM head
    active = gpt_oss.active_non_embedding_params + gpt_oss.vocab_size * gpt_oss.hidden_size
    assert active == 36 * (26_542_080 + 99_532_800 + 368_640) + 579_133_440
    assert active / 1e9 == pytest.approx(5.13, rel=0.01)


@pytest.mark.parametrize(
    ("repo", "card_billion"),
    [
        ("Qwen/Qwen3-32B", 32.8),
        ("Qwen/Qwen3-8B", 8.2),
        ("Qwen/Qwen3-0.6B", 0.6),
        ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 480.0),
        ("meta-llama/Llama-3.1-8B-Instruct", 8.03),
        ("meta-llama/Llama-3.3-70B-Instruct", 70.6),
        ("openai/gpt-oss-120b", 116.83),
    ],
)
def test_every_catalog_model_comes_out_of_the_reader_and_matches_its_card(repo: str, card_billion: float) -> None:
    (published,) = [c for c in PUBLISHED_CONFIGS if c.repo == repo]
    assert MODELS[repo] == model_from_config(repo, published.fields, params_billion=published.params_billion)
    assert MODELS[repo].geometry_params / 1e9 == pytest.approx(card_billion, rel=0.01)
    assert published.source == f"https://huggingface.co/{repo}/blob/main/config.json"


def test_the_qwen3_32b_geometry_is_the_one_the_catalog_sized_with() -> None:
    """The figures the goldens hold: 64 layers, 8 KV heads of 128 (256 KiB a token), 32.8 B parameters."""
    qwen = MODELS["Qwen/Qwen3-32B"]
    assert qwen.kv_bytes_per_token.bytes == 262_144
    assert qwen.weight_bytes.bytes == 65_600_000_000
    assert qwen.active_non_embedding_params == 64 * (2 * 5120 * 8192 + 2 * 5120 * 1024 + 3 * 5120 * 25600)


def _bad(**changes: Any) -> dict[str, Any]:
    config = _fixture("dense.json")
    for key, value in changes.items():
        if value is ...:
            config.pop(key)
        else:
            config[key] = value
    return config


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        ({"architectures": ["BertModel"]}, "architectures = ['BertModel']: not a decoder: no *ForCausalLM class"),
        ({"is_encoder_decoder": True}, "is_encoder_decoder = True: an encoder-decoder"),
        ({"architectures": ...}, "architectures = (missing): must list the model's classes"),
        ({"num_hidden_layers": ...}, "num_hidden_layers = (missing): must be a whole number from 1 to 4,096"),
        ({"num_attention_heads": 0}, "num_attention_heads = 0: must be a whole number from 1"),
        ({"num_hidden_layers": -2}, "num_hidden_layers = -2: must be a whole number from 1"),
        ({"hidden_size": 4096.5}, "hidden_size = 4096.5: must be a whole number"),
        ({"vocab_size": True}, "vocab_size = True: must be a whole number"),
        ({"num_hidden_layers": 10**9}, "num_hidden_layers = 1000000000: must be a whole number from 1 to 4,096"),
        ({"num_key_value_heads": 5}, "num_key_value_heads = 5: must divide num_attention_heads (32)"),
        ({"torch_dtype": "float32"}, "torch_dtype = 'float32': allowed: bfloat16, float16"),
        ({"torch_dtype": ...}, "torch_dtype = (missing): the checkpoint's dtype"),
        ({"tie_word_embeddings": ...}, "tie_word_embeddings = (missing): must be true or false"),
        ({"kv_lora_rank": 512}, "kv_lora_rank = 512: multi-head latent attention is not modelled"),
        (
            {"quantization_config": {"quant_method": "gptq"}},
            "quantization_config.quant_method = 'gptq': allowed: fp8, mxfp4",
        ),
        ({"layer_types": ["full_attention"] * 31}, "layer_types = ['full_attention', "),
        ({"layer_types": ["linear_attention"] * 32}, "layer_types[0] = 'linear_attention': allowed: full_attention"),
        ({"num_local_experts": 8}, "num_experts_per_tok = (missing): required with num_local_experts"),
        ({"num_local_experts": 8, "num_experts_per_tok": 9}, "num_experts_per_tok = 9: must be at most"),
        ({"sliding_window": 4096}, "sliding_window = 4096: every layer slides"),
    ],
)
def test_a_bad_config_is_refused_in_one_line_naming_its_field(changes: dict[str, Any], line: str) -> None:
    with pytest.raises(ConfigFieldError) as error:
        model_from_config("acme/dense-7b", _bad(**changes))
    assert str(error.value).startswith(line), str(error.value)
    assert "\n" not in str(error.value)


def test_a_sliding_window_as_long_as_the_context_is_no_window() -> None:
    whole = model_from_config("acme/dense-7b", _bad(sliding_window=32_768))
    assert (whole.sliding_layers, whole.kv_bytes_per_token.bytes) == (0, 131_072)
    qwen_style = model_from_config("acme/dense-7b", _bad(sliding_window=4096, use_sliding_window=False))
    assert qwen_style.sliding_layers == 0
    # Qwen2's rule: with use_sliding_window, the layers from max_window_layers on slide
    qwen2 = model_from_config("acme/dense-7b", _bad(sliding_window=4096, use_sliding_window=True, max_window_layers=28))
    assert (qwen2.sliding_layers, qwen2.kv_bytes_per_token.bytes) == (4, 2 * 28 * 8 * 128 * 2)
    # Gemma 3's: every 6th layer global
    gemma = model_from_config("acme/dense-7b", _bad(sliding_window=1024, sliding_window_pattern=6))
    assert gemma.sliding_layers == 32 - 5


def _load(*overrides: str) -> Any:
    return loading.load_preset("dev", list(overrides))


def test_a_users_dense_and_moe_models_render_and_size() -> None:
    for overrides, name, weights in ((DENSE, "acme/dense-7b", 14_495_514_624), (MOE, "acme/moe-2b", 3_380_805_632)):
        stack_plan = plan(_load(*overrides))
        server = stack_plan.model_server
        assert server.model.name == name and server.model.weight_bytes.bytes == weights
        rendered = render(stack_plan, "dev")
        assert f"{name}: geometry from `{overrides[1].split('=')[1]}` (cache.model_file)" in rendered.summary
        assert f"\n        - {name}\n" in rendered.manifests  # the model the server fetches and serves
        assert f"llm-d.ai/model: {name.split('/')[1]}\n" in rendered.manifests


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (
            ("cache.model=acme/dense-7b",),
            "cache.model = 'acme/dense-7b': not in the catalog (Qwen/Qwen3-0.6B, ",
        ),
        ((f"cache.model_file={FIXTURES}/dense.json", "cache.model=null"), "cache.model = (missing): required with"),
        (
            (f"cache.model_file={FIXTURES}/dense.json",),
            "cache.model_file = 'tests/fixtures/model-configs/dense.json': Qwen/Qwen3-0.6B is in the catalog",
        ),
        (("cache.model=acme/x", "cache.model_file=../config.json"), "cache.model_file = '../config.json': must be a"),
        (("cache.model=acme/x", "cache.model_file=nowhere.json"), "cache.model_file = 'nowhere.json': cannot read"),
        (
            ("cache.model=acme/x", "cache.model_file=tests/fixtures/prices/prices.csv"),
            "cache.model_file = 'tests/fixtures/prices/prices.csv': must be a relative path to a .json file",
        ),
        (("cache.model=not an id",), "cache.model = 'not an id': allowed: "),
    ],
)
def test_the_model_keys_are_refused_in_one_line(overrides: tuple[str, ...], line: str) -> None:
    with pytest.raises(ConfigError) as error:
        _load(*overrides)
    assert str(error.value).startswith(f"invalid stack config: {line}"), str(error.value)


def test_a_bad_or_huge_file_is_refused_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    (tmp_path / "huge.json").write_text(" " * (1024 * 1024 + 1))
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "t5.json").write_text(json.dumps({"architectures": ["T5ForConditionalGeneration"]}))
    (tmp_path / "zero.json").write_text(json.dumps(_bad(num_hidden_layers=0)))
    for name, line in (
        ("huge.json", "cannot read the file: larger than 1024 KiB"),
        ("list.json", "its (the file) = 'list': must hold a JSON object"),
        ("t5.json", "its architectures = ['T5ForConditionalGeneration']: not a decoder"),
        ("zero.json", "its num_hidden_layers = 0: must be a whole number from 1 to 4,096"),
    ):
        with pytest.raises(ConfigError) as error:
            _load("cache.model=acme/x", f"cache.model_file={name}")
        assert str(error.value).startswith(f"invalid stack config: cache.model_file = '{name}': {line}"), str(
            error.value
        )


def test_a_users_dense_and_moe_models_size() -> None:
    """`./run size` with a workload: the capacity plan and the tier curve run on the file's geometry."""
    workload = [
        f"workload.shared_prefix.{k}={v}"
        for k, v in {
            "num_groups": 10,
            "num_prompts_per_group": 5,
            "system_prompt_len": 2048,
            "question_len": 256,
            "output_len": 64,
            "request_rate": 2,
            "duration": 30,
        }.items()
    ]
    for overrides in (DENSE, MOE):
        text = "\n".join(size_lines("dev", [*overrides, *workload], None, None))
        assert "Fewest per tiers: " in text and "none up to" not in text, text
        assert "## Tier sizes for the workload" in text


def test_sliding_window_layers_attend_to_and_reload_their_window_only() -> None:
    assert payoff.window_pairs(10, 0, 128) == 10 * 10 / 2  # inside the window: the causal count
    assert payoff.window_pairs(1000, 0, 128) == 128 * 128 / 2 + 872 * 128 == 119_808
    assert payoff.window_pairs(10, 500, 128) == 10 * 128  # past the window: 128 keys a token
    on_arrays = cast(Any, payoff.window_pairs)  # the tier grid passes arrays (tier_grid.py casts it the same way)
    assert list(on_arrays(np.array([10, 1000]), np.array([0, 0]), 128)) == [50, 119_808]
    gpt_oss = MODELS["openai/gpt-oss-120b"]
    per_pair = 4 * 18 * 64 * 64  # 4 FLOPs x 18 layers of each kind x 64 heads of 64
    assert payoff.attention_flops(gpt_oss, 1000) == per_pair * (1000 * 1000 / 2 + 119_808)
    replica = payoff.Replica(gpt_oss, ACCELERATORS["gpu"].rates, 2)
    # 1,000 tokens in the 18 full layers (36,864 B each), 128 in the 18 sliding ones, at 1 GB/s
    assert payoff.reload_seconds(replica, 1000, 1e9) == pytest.approx((1000 * 36_864 + 128 * 36_864) / 1e9)
    dense = MODELS["Qwen/Qwen3-32B"]
    assert payoff.attention_flops(dense, 1000) == 4 * 64 * 8192 * (1000 * 1000 / 2)
