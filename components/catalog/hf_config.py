"""A Hugging Face `config.json` read into a `ModelSpec`: the one reader of model geometry, for the catalog's
models (their published files' fields, `published_configs.py`) and for a user's file (`cache.model_file`).

What it reads, by the field names transformers writes (each family's spelling where they differ):
- a decoder: `architectures` names a `*ForCausalLM` class and `is_encoder_decoder` is not true;
- layers, hidden size, heads: `num_hidden_layers`, `hidden_size`, `num_attention_heads`; grouped- or multi-query
  KV heads `num_key_value_heads` (unset: one per attention head, transformers' default); `head_dim` (unset:
  hidden size / heads); `vocab_size`, `max_position_embeddings`, `tie_word_embeddings`;
- the dtype: `torch_dtype` (`dtype` in newer files): bfloat16 or float16; a file that names none is read as
  bfloat16 only where its quantization format says so (gpt-oss's MXFP4 keeps every other weight in bf16);
- experts: `num_experts` / `num_local_experts` / `n_routed_experts`, `num_experts_per_tok` /
  `experts_per_token`, their width `moe_intermediate_size` (unset: `intermediate_size`, as Mixtral and
  gpt-oss), a shared expert (`shared_expert_intermediate_size`, or `n_shared_experts` x the expert width), and
  the dense layers among them (`first_k_dense_replace`, `mlp_only_layers`, `decoder_sparse_step`);
- sliding windows: `layer_types` (`sliding_attention` / `full_attention`, Gemma's and gpt-oss's), else
  `use_sliding_window` false (Qwen's: none), else `sliding_window_pattern` (Gemma 3's: every n-th layer is
  global), else `sliding_window` with `max_window_layers` (Qwen2's: the layers from it on slide); a window at
  least the context is no window;
- `quantization_config.quant_method`: fp8 or mxfp4 (`model_geometry.QUANTIZED_BYTES`).

Anything else is refused in one line naming the field: multi-head latent attention (`kv_lora_rank`), layer
types other than those two, another quantization method, a count that is not a positive whole number or past
the bound above any published model's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

from components.catalog.model_geometry import QUANTIZED_BYTES, ModelSpec

# The bounds a count may take: above every published model's (the largest: 126 layers, 128 heads, hidden
# 18,432, 256 experts, a 10M-token context), far below what would overflow the sizing's int64 arithmetic.
BOUNDS = {
    "num_hidden_layers": 4096,
    "hidden_size": 1 << 20,
    "num_attention_heads": 4096,
    "num_key_value_heads": 4096,
    "head_dim": 1 << 16,
    "intermediate_size": 1 << 22,
    "moe_intermediate_size": 1 << 22,
    "shared_expert_intermediate_size": 1 << 22,
    "vocab_size": 1 << 24,
    "max_position_embeddings": 1 << 30,
    "experts": 1 << 16,
    "experts_per_token": 1 << 16,
    "n_shared_experts": 1 << 10,
    "sliding_window": 1 << 30,
    "sliding_window_pattern": 4096,
    "decoder_sparse_step": 4096,
}
DTYPES = ("bfloat16", "float16")  # keys of model_geometry.DTYPE_BYTES a checkpoint is published in
LAYER_TYPES = ("full_attention", "sliding_attention")
# Each family's spelling of an expert count (first present wins).
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
PER_TOKEN_KEYS = ("num_experts_per_tok", "experts_per_token")
_MISSING = object()


class ConfigFieldError(ValueError):
    """One field of a config.json and why it cannot be read: `field = value: allowed` (one line)."""

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field, self.value, self.allowed = field, value, allowed
        shown = "(missing)" if value is _MISSING else _shown(value)
        super().__init__(f"{field} = {shown}: {allowed}")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _count(config: Mapping[str, Any], key: str, *, bound_key: str | None = None, low: int = 1) -> int:
    value = config.get(key, _MISSING)
    high = BOUNDS[bound_key or key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigFieldError(key, value, f"must be a whole number from {low} to {high:,}")
    return value


def _optional_count(config: Mapping[str, Any], key: str, *, bound_key: str | None = None, low: int = 1) -> int | None:
    return None if config.get(key) is None else _count(config, key, bound_key=bound_key, low=low)


def _first(config: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if config.get(k) is not None), None)


def _check_decoder(config: Mapping[str, Any]) -> None:
    if config.get("is_encoder_decoder") is True:
        raise ConfigFieldError("is_encoder_decoder", True, "an encoder-decoder; the plan serves decoder-only models")
    architectures = config.get("architectures", _MISSING)
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise ConfigFieldError("architectures", architectures, "must list the model's classes (a *ForCausalLM)")
    if not any(a.endswith("ForCausalLM") for a in architectures):
        raise ConfigFieldError("architectures", architectures, "not a decoder: no *ForCausalLM class")
    if config.get("kv_lora_rank") is not None:
        raise ConfigFieldError(
            "kv_lora_rank", config["kv_lora_rank"], "multi-head latent attention is not modelled (its KV is one latent)"
        )


def _dtypes(config: Mapping[str, Any]) -> tuple[str, str]:
    """(dtype of the unquantized weights, quantization method or "")."""
    quantization = config.get("quantization_config")
    method = ""
    if quantization is not None:
        raw = quantization.get("quant_method", _MISSING) if isinstance(quantization, dict) else _MISSING
        if raw not in QUANTIZED_BYTES:
            raise ConfigFieldError(
                "quantization_config.quant_method", raw, f"allowed: {', '.join(QUANTIZED_BYTES)} (or no quantization)"
            )
        method = str(raw)
    key = _first(config, ("torch_dtype", "dtype"))
    if key is None:
        if method == "mxfp4":  # gpt-oss: the format keeps every weight it does not convert in bf16
            return "bfloat16", method
        raise ConfigFieldError("torch_dtype", _MISSING, f"the checkpoint's dtype: {' or '.join(DTYPES)}")
    if config[key] not in DTYPES:
        raise ConfigFieldError(key, config[key], f"allowed: {', '.join(DTYPES)}")
    return str(config[key]), method


def _heads(config: Mapping[str, Any]) -> tuple[int, int, int]:
    """(attention heads, KV heads, head dimension)."""
    heads = _count(config, "num_attention_heads")
    kv_heads = _optional_count(config, "num_key_value_heads") or heads
    if heads % kv_heads:
        raise ConfigFieldError(
            "num_key_value_heads", kv_heads, f"must divide num_attention_heads ({heads}): each KV head serves a group"
        )
    head_dim = _optional_count(config, "head_dim")
    if head_dim is None:
        hidden = _count(config, "hidden_size")
        if hidden % heads:
            raise ConfigFieldError(
                "head_dim", _MISSING, f"required: hidden_size {hidden} is not a multiple of {heads} heads"
            )
        head_dim = hidden // heads
    return heads, kv_heads, head_dim


class Experts(NamedTuple):
    """The ModelSpec's expert fields (all 0 for a dense model)."""

    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    moe_layers: int = 0


def _experts(config: Mapping[str, Any], layers: int, intermediate: int) -> Experts:
    key = _first(config, EXPERT_KEYS)
    if key is None:
        return Experts()
    experts = _count(config, key, bound_key="experts")
    per_token_key = _first(config, PER_TOKEN_KEYS)
    if per_token_key is None:
        raise ConfigFieldError("num_experts_per_tok", _MISSING, f"required with {key}: the experts a token activates")
    per_token = _count(config, per_token_key, bound_key="experts_per_token")
    if per_token > experts:
        raise ConfigFieldError(per_token_key, per_token, f"must be at most {key} ({experts})")
    width = _optional_count(config, "moe_intermediate_size") or intermediate
    shared = _optional_count(config, "shared_expert_intermediate_size", low=0)
    if shared is None:
        shared = (_optional_count(config, "n_shared_experts", low=0) or 0) * width
    return Experts(experts, per_token, width, shared, sum(_moe_layer_flags(config, layers)))


def _moe_layer_flags(config: Mapping[str, Any], layers: int) -> list[bool]:
    """Which layers' MLP is experts: past `first_k_dense_replace`, outside `mlp_only_layers`, every
    `decoder_sparse_step`-th (transformers' Qwen2-MoE/Qwen3-MoE and DeepSeek rules)."""
    first_dense = _optional_count(config, "first_k_dense_replace", bound_key="num_hidden_layers", low=0) or 0
    step = _optional_count(config, "decoder_sparse_step") or 1
    only = config.get("mlp_only_layers") or []
    if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
        raise ConfigFieldError("mlp_only_layers", only, "must list layer indexes")
    flags = [i >= first_dense and i not in only and (i + 1) % step == 0 for i in range(layers)]
    if not any(flags):
        raise ConfigFieldError("decoder_sparse_step", step, f"leaves none of the {layers} layers with experts")
    return flags


def _sliding(config: Mapping[str, Any], layers: int, context: int) -> tuple[int, int]:
    """(sliding window, layers that slide); (0, 0) where none do."""
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise ConfigFieldError("layer_types", types, f"must list one type per layer ({layers})")
        for i, kind in enumerate(types):
            if kind not in LAYER_TYPES:
                raise ConfigFieldError(f"layer_types[{i}]", kind, f"allowed: {', '.join(LAYER_TYPES)}")
        sliding = sum(kind == "sliding_attention" for kind in types)
    elif config.get("use_sliding_window") is False or config.get("sliding_window") is None:
        sliding = 0
    elif config.get("sliding_window_pattern") is not None:
        pattern = _count(config, "sliding_window_pattern")
        sliding = layers - layers // pattern
    elif config.get("use_sliding_window") is True and config.get("max_window_layers") is not None:
        sliding = layers - _count(config, "max_window_layers", bound_key="num_hidden_layers", low=0)
    else:
        sliding = layers
    if not sliding:
        return 0, 0
    window = _count(config, "sliding_window")
    if window >= context:  # the window covers every position: the layer keeps and attends to every token
        return 0, 0
    if sliding >= layers:
        raise ConfigFieldError(
            "sliding_window",
            window,
            "every layer slides: the plan sizes KV by the full-attention layers, and there are none",
        )
    return window, sliding


def model_from_config(
    name: str,
    config: object,
    *,
    params_billion: float | None = None,
    config_from: str = "its config.json",
) -> ModelSpec:
    """The geometry of the model `name` from its config.json (`config`, as parsed); `params_billion`, a model
    card's total where the catalog has one (else the geometry's). Raises ConfigFieldError on the first field
    that cannot be read."""
    if not isinstance(config, dict):
        raise ConfigFieldError("(the file)", type(config).__name__, "must hold a JSON object (config.json)")
    _check_decoder(config)
    weight_dtype, quantization = _dtypes(config)
    layers = _count(config, "num_hidden_layers")
    hidden = _count(config, "hidden_size")
    heads, kv_heads, head_dim = _heads(config)
    intermediate = _count(config, "intermediate_size")
    context = _count(config, "max_position_embeddings")
    tied = config.get("tie_word_embeddings", _MISSING)
    if not isinstance(tied, bool):
        raise ConfigFieldError(
            "tie_word_embeddings", tied, "must be true or false (is the LM head the embedding matrix)"
        )
    experts = _experts(config, layers, intermediate)
    if quantization == "mxfp4" and not experts.experts:
        raise ConfigFieldError(
            "quantization_config.quant_method", "mxfp4", "quantizes routed experts; this model has none"
        )
    window, sliding = _sliding(config, layers, context)
    spec = ModelSpec(
        name,
        layers=layers,
        kv_heads=kv_heads,
        head_dim=head_dim,
        attention_heads=heads,
        hidden_size=hidden,
        intermediate_size=intermediate,
        vocab_size=_count(config, "vocab_size"),
        context_tokens=context,
        tied_embeddings=tied,
        sliding_window=window,
        sliding_layers=sliding,
        kv_dtype=weight_dtype,
        weight_dtype=weight_dtype,
        quantization=quantization,
        config_from=config_from,
        **experts._asdict(),
    )
    if params_billion is not None:
        return dataclasses.replace(spec, params_billion=params_billion, params_from="model card")
    return dataclasses.replace(spec, params_billion=spec.geometry_params / 1e9, params_from="the geometry's count")
