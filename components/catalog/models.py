"""Served models: their KV-cache geometry (from each model's Hugging Face config.json) and the
parameters a token's forward pass multiplies (from each model card; MoE models count active experts)."""

from __future__ import annotations

from dataclasses import dataclass

from components.units import ByteSize

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "fp8": 1}


@dataclass(frozen=True)
class ModelSpec:
    """A model as the sizing needs it: the KV bytes one token occupies across all layers."""

    name: str  # Hugging Face id, also vLLM's served model name
    layers: int  # num_hidden_layers
    kv_heads: int  # num_key_value_heads
    head_dim: int
    attention_heads: int  # num_attention_heads: tensor parallelism must divide it
    kv_dtype: str = "bfloat16"
    params_billion: float = 0.0  # total parameters: the summary, and the weight bytes a pod fetches
    weight_dtype: str = "bfloat16"  # of the published checkpoint
    # Parameters one token's forward pass multiplies (MoE: the activated experts only); a prefill
    # costs about 2 FLOPs per active parameter per token.
    active_params_billion: float = 0.0
    # Attention layers of different shapes (e.g. Gemma's sliding-window and global layers with
    # different head dimensions) make vLLM build several KV-cache groups; the native
    # OffloadingConnector needs them unified with `--disable-hybrid-kv-cache-manager`.
    hybrid_attention: bool = False

    @property
    def short_name(self) -> str:
        """The `llm-d.ai/model` label value upstream uses: the id without the organisation."""
        return self.name.split("/", 1)[-1]

    @property
    def weight_bytes(self) -> ByteSize:
        """The checkpoint a pod downloads and loads: parameters x bytes per parameter."""
        return ByteSize(round(self.params_billion * 1e9) * DTYPE_BYTES[self.weight_dtype])

    @property
    def kv_bytes_per_token(self) -> ByteSize:
        """K and V, per layer, per KV head, per head dimension, in the KV dtype."""
        return ByteSize(2 * self.layers * self.kv_heads * self.head_dim * DTYPE_BYTES[self.kv_dtype])


MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        ModelSpec(
            "Qwen/Qwen3-32B",
            layers=64,
            kv_heads=8,
            head_dim=128,
            attention_heads=64,
            params_billion=32.8,
            active_params_billion=32.8,
        ),
        ModelSpec(
            "Qwen/Qwen3-8B",
            layers=36,
            kv_heads=8,
            head_dim=128,
            attention_heads=32,
            params_billion=8.2,
            active_params_billion=8.2,
        ),
        ModelSpec(
            "Qwen/Qwen3-0.6B",
            layers=28,
            kv_heads=8,
            head_dim=128,
            attention_heads=16,
            params_billion=0.6,
            active_params_billion=0.6,
        ),
        ModelSpec(
            "Qwen/Qwen3-Coder-480B-A35B-Instruct",
            layers=62,
            kv_heads=8,
            head_dim=128,
            attention_heads=96,
            params_billion=480.0,
            active_params_billion=35.0,  # "480B total, 35B activated" (8 of 160 experts)
        ),
    )
}
