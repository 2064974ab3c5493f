"""Served models: their geometry (from each model's Hugging Face config.json) and their total parameters
(from each model card). The KV bytes a token occupies and the parameters its forward pass multiplies
follow from the geometry; the model card's totals check it (tests/test_payoff.py)."""

from __future__ import annotations

from dataclasses import dataclass

from components.units import ByteSize

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "fp8": 1}
# Qwen3's dense config.json files say max_position_embeddings 40960 (32,768 of prompt natively, the model
# cards); Qwen3-Coder-480B-A35B-Instruct's says 262144.
QWEN3_CONTEXT = 40_960


@dataclass(frozen=True)
class ModelSpec:
    """A model as the sizing and the payoff need it (config.json field names in the comments)."""

    name: str  # Hugging Face id, also vLLM's served model name
    layers: int  # num_hidden_layers
    kv_heads: int  # num_key_value_heads
    head_dim: int
    attention_heads: int  # num_attention_heads: tensor parallelism must divide it
    hidden_size: int  # hidden_size
    intermediate_size: int  # intermediate_size: the dense MLP's width (gate, up and down projections)
    vocab_size: int  # vocab_size
    context_tokens: int  # max_position_embeddings: the longest prompt + output the model takes
    tied_embeddings: bool = False  # tie_word_embeddings: the LM head is the embedding matrix
    # Mixture of experts (num_experts, num_experts_per_tok, moe_intermediate_size): every layer's MLP is
    # `experts` experts of width `expert_intermediate_size`, of which a token activates `experts_per_token`.
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate_size: int = 0
    kv_dtype: str = "bfloat16"
    params_billion: float = 0.0  # total parameters (model card): the summary, and the weight bytes a pod fetches
    weight_dtype: str = "bfloat16"  # of the published checkpoint
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

    @property
    def attention_width(self) -> int:
        """num_attention_heads x head_dim: the width of a token's queries (and of the attention output)."""
        return self.attention_heads * self.head_dim

    @property
    def attention_params_per_layer(self) -> int:
        """Q and O (hidden x attention width each), K and V (hidden x KV heads x head dim each)."""
        return 2 * self.hidden_size * self.attention_width + 2 * self.hidden_size * self.kv_heads * self.head_dim

    @property
    def mlp_params_per_layer(self) -> int:
        """The MLP weights one token multiplies: gate, up and down (3 x hidden x width); with experts, the
        activated experts' and the router's (hidden x experts)."""
        if self.experts:
            return 3 * self.hidden_size * self.expert_intermediate_size * self.experts_per_token + (
                self.hidden_size * self.experts
            )
        return 3 * self.hidden_size * self.intermediate_size

    @property
    def active_non_embedding_params(self) -> int:
        """The weights of every layer one token multiplies (norms are negligible and left out); the embedding
        lookup multiplies nothing, and a prefill applies the LM head to the last token only."""
        return self.layers * (self.attention_params_per_layer + self.mlp_params_per_layer)

    @property
    def embedding_params(self) -> int:
        """The embedding matrix, and the LM head beside it unless tied."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)


MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        ModelSpec(
            "Qwen/Qwen3-32B",
            layers=64,
            kv_heads=8,
            head_dim=128,
            attention_heads=64,
            hidden_size=5120,
            intermediate_size=25600,
            vocab_size=151_936,
            context_tokens=QWEN3_CONTEXT,
            params_billion=32.8,
        ),
        ModelSpec(
            "Qwen/Qwen3-8B",
            layers=36,
            kv_heads=8,
            head_dim=128,
            attention_heads=32,
            hidden_size=4096,
            intermediate_size=12288,
            vocab_size=151_936,
            context_tokens=QWEN3_CONTEXT,
            params_billion=8.2,
        ),
        ModelSpec(
            "Qwen/Qwen3-0.6B",
            layers=28,
            kv_heads=8,
            head_dim=128,
            attention_heads=16,
            hidden_size=1024,
            intermediate_size=3072,
            vocab_size=151_936,
            context_tokens=QWEN3_CONTEXT,
            tied_embeddings=True,
            params_billion=0.6,
        ),
        ModelSpec(
            "Qwen/Qwen3-Coder-480B-A35B-Instruct",
            layers=62,
            kv_heads=8,
            head_dim=128,
            attention_heads=96,
            hidden_size=6144,
            intermediate_size=8192,  # unused: every layer's MLP is experts (decoder_sparse_step 1)
            vocab_size=151_936,
            context_tokens=262_144,
            experts=160,
            experts_per_token=8,
            expert_intermediate_size=2560,
            params_billion=480.0,  # "480B total, 35B activated" (8 of 160 experts)
        ),
    )
}
