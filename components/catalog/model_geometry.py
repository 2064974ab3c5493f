"""A served model's geometry, as the sizing, the payoff and the time model read it: what its config.json says
(`hf_config.model_from_config` reads one into this record) and what follows from it: the KV bytes a token
occupies, the weights a pod holds (every expert) and the parameters a token multiplies (the experts it
activates)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from components.units import ByteSize

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "fp8": 1}
# Bytes a quantized weight occupies, by the checkpoint's `quantization_config.quant_method`:
# - fp8: one byte per weight (FP8 E4M3); its scales (one float per 128 x 128 block, or per tensor) are under
#   0.03% and left out.
# - mxfp4: the OCP Microscaling format (OCP MX specification v1.0): blocks of 32 FP4 (E2M1) values sharing one
#   8-bit E8M0 scale, 4 + 8/32 = 4.25 bits; gpt-oss stores its routed experts so (`*_blocks`, `*_scales`).
QUANTIZED_BYTES = {"fp8": Fraction(1), "mxfp4": Fraction(17, 32)}
# Which weights a format quantizes: fp8 every decoder layer's linear weights (not the embeddings or the LM
# head), mxfp4 the routed experts only (gpt-oss's `modules_to_not_convert`: attention, router, embeddings,
# LM head).
QUANTIZES = {"fp8": "every layer's linear weights", "mxfp4": "the routed experts"}


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
    # Mixture of experts (num_experts, num_experts_per_tok, moe_intermediate_size): `moe_layers` layers' MLP is
    # `experts` experts of width `expert_intermediate_size`, of which a token activates `experts_per_token`,
    # beside a shared expert of width `shared_expert_intermediate_size` every token runs (0: none); the other
    # layers' MLP is dense (intermediate_size).
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    moe_layers: int = 0
    # Sliding-window attention (layer_types, sliding_window): `sliding_layers` of the layers attend to the last
    # `sliding_window` tokens only and keep no more of them; the rest attend to (and keep) every token.
    sliding_window: int = 0
    sliding_layers: int = 0
    kv_dtype: str = "bfloat16"
    params_billion: float = 0.0  # total parameters (model card, else the geometry's): the weight bytes a pod fetches
    params_from: str = "model card"
    weight_dtype: str = "bfloat16"  # of the published checkpoint's unquantized weights (torch_dtype)
    quantization: str = ""  # quantization_config.quant_method, a key of QUANTIZED_BYTES ("": none)
    # Attention layers of different shapes (e.g. Gemma's sliding-window and global layers with
    # different head dimensions) make vLLM build several KV-cache groups; the native
    # OffloadingConnector needs them unified with `--disable-hybrid-kv-cache-manager`.
    hybrid_attention: bool = False
    config_from: str = "its config.json"  # where the geometry was read (the summary's sources)

    @property
    def short_name(self) -> str:
        """The `llm-d.ai/model` label value upstream uses: the id without the organisation."""
        return self.name.split("/", 1)[-1]

    @property
    def params(self) -> int:
        return round(self.params_billion * 1e9)

    @property
    def quantized_params(self) -> int:
        """The weights the checkpoint stores quantized (0 without quantization)."""
        if self.quantization == "mxfp4":
            return self.routed_expert_params
        if self.quantization == "fp8":
            return self.params - self.embedding_params
        return 0

    @property
    def weight_bytes(self) -> ByteSize:
        """The checkpoint a pod downloads and loads: parameters x bytes per parameter (quantized ones at their
        format's bytes)."""
        if not self.quantization:
            return ByteSize(self.params * DTYPE_BYTES[self.weight_dtype])
        quantized = self.quantized_params
        packed = quantized * QUANTIZED_BYTES[self.quantization]
        return ByteSize(
            (self.params - quantized) * DTYPE_BYTES[self.weight_dtype] + -(-packed.numerator // packed.denominator)
        )

    def weight_formula(self, devices: int) -> str:
        """How `weight_bytes` over `devices` was counted (the summary's sizing row)."""
        whole = DTYPE_BYTES[self.weight_dtype]
        if not self.quantization:
            return f"{self.params_billion:g}B parameters x {whole} B / {devices} devices"
        quantized = self.quantized_params
        return (
            f"({(self.params - quantized) / 1e9:.2f}B parameters x {whole} B + {quantized / 1e9:.2f}B of"
            f" {QUANTIZES[self.quantization]} x {float(QUANTIZED_BYTES[self.quantization]):g} B"
            f" ({self.quantization})) / {devices} devices"
        )

    @property
    def full_attention_layers(self) -> int:
        return self.layers - self.sliding_layers

    def _kv_bytes_per_layer_token(self) -> int:
        """K and V of one layer, per KV head, per head dimension, in the KV dtype."""
        return 2 * self.kv_heads * self.head_dim * DTYPE_BYTES[self.kv_dtype]

    @property
    def kv_bytes_per_token(self) -> ByteSize:
        """K and V, per full-attention layer, per KV head, per head dimension, in the KV dtype: what every token of
        a sequence keeps (a sliding-window layer keeps only its window: `window_kv_bytes`)."""
        return ByteSize(2 * self.full_attention_layers * self.kv_heads * self.head_dim * DTYPE_BYTES[self.kv_dtype])

    @property
    def window_kv_bytes(self) -> int:
        """The most a sequence keeps in its sliding-window layers: the window's tokens in each (0: none)."""
        return self.sliding_layers * self.sliding_window * self._kv_bytes_per_layer_token()

    def kv_bytes_of(self, tokens: int) -> int:
        """The KV `tokens` of one sequence keep: every token in the full-attention layers, at most the window in
        the sliding-window ones."""
        return tokens * self.kv_bytes_per_token.bytes + min(tokens, self.sliding_window) * (
            self.sliding_layers * self._kv_bytes_per_layer_token()
        )

    @property
    def attention_width(self) -> int:
        """num_attention_heads x head_dim: the width of a token's queries (and of the attention output)."""
        return self.attention_heads * self.head_dim

    @property
    def attention_params_per_layer(self) -> int:
        """Q and O (hidden x attention width each), K and V (hidden x KV heads x head dim each)."""
        return 2 * self.hidden_size * self.attention_width + 2 * self.hidden_size * self.kv_heads * self.head_dim

    @property
    def dense_layers(self) -> int:
        """Layers whose MLP is dense (every layer of a dense model)."""
        return self.layers - self.moe_layers

    @property
    def moe_mlp_width(self) -> int:
        """The MLP width a token runs through in an expert layer: its experts' and the shared expert's."""
        return self.expert_intermediate_size * self.experts_per_token + self.shared_expert_intermediate_size

    @property
    def mlp_params_per_layer(self) -> int:
        """The MLP weights one token multiplies in an expert layer (every layer, where all are): gate, up and down
        (3 x hidden x width) of the activated and shared experts, and the router's (hidden x experts); in a dense
        layer, 3 x hidden x intermediate size."""
        if self.moe_layers:
            return 3 * self.hidden_size * self.moe_mlp_width + self.hidden_size * self.experts
        return 3 * self.hidden_size * self.intermediate_size

    @property
    def active_mlp_params(self) -> int:
        """The MLP weights one token multiplies over all layers."""
        dense = self.dense_layers * 3 * self.hidden_size * self.intermediate_size
        return dense + (self.moe_layers * self.mlp_params_per_layer if self.moe_layers else 0)

    @property
    def active_non_embedding_params(self) -> int:
        """The weights of every layer one token multiplies (norms and biases are negligible and left out); the
        embedding lookup multiplies nothing, and a prefill applies the LM head to the last token only."""
        if self.dense_layers and self.moe_layers:
            return self.layers * self.attention_params_per_layer + self.active_mlp_params
        return self.layers * (self.attention_params_per_layer + self.mlp_params_per_layer)

    @property
    def embedding_params(self) -> int:
        """The embedding matrix, and the LM head beside it unless tied."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)

    @property
    def routed_expert_params(self) -> int:
        """Every routed expert's weights, over the expert layers (what a pod holds but a token mostly skips)."""
        return self.moe_layers * self.experts * 3 * self.hidden_size * self.expert_intermediate_size

    @property
    def geometry_params(self) -> int:
        """Every weight the geometry counts: embeddings, attention, every expert, the routers and the shared
        experts (norms and biases left out): what a model card's total counts."""
        moe = self.moe_layers * (
            self.hidden_size * self.experts + 3 * self.hidden_size * self.shared_expert_intermediate_size
        )
        dense = self.dense_layers * 3 * self.hidden_size * self.intermediate_size
        attention = self.layers * self.attention_params_per_layer
        return attention + dense + moe + self.routed_expert_params + self.embedding_params
