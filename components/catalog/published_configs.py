"""The catalog models' Hugging Face `config.json` files, as data: the fields the geometry reader
(`hf_config.model_from_config`) reads and those that name the architecture, copied as published (the
repository's `main` revision: the files have not changed since their release), each with its source. The
repository never fetches them; `models.MODELS` is read out of these with the same reader as a user's file.

A model card's total parameters is kept where the catalog had one before (the weights it sized with); the
newer entries count their weights from the geometry (tests/test_model_configs.py holds both to the cards)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PublishedConfig:
    repo: str  # the Hugging Face repository: the catalog key and the served model name
    fields: dict[str, Any]  # config.json's fields, as published
    params_billion: float | None = None  # the model card's total, where the catalog sizes weights by it
    card: str = ""  # what the model card says of the parameters

    @property
    def source(self) -> str:
        return f"https://huggingface.co/{self.repo}/blob/main/config.json"


def _qwen3_dense(layers: int, hidden: int, heads: int, intermediate: int, *, tied: bool) -> dict[str, Any]:
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "head_dim": 128,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "max_position_embeddings": 40960,
        "max_window_layers": layers,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": 8,
        "sliding_window": None,
        "tie_word_embeddings": tied,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": 151936,
    }


def _llama3(layers: int, hidden: int, heads: int, intermediate: int) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "max_position_embeddings": 131072,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": 8,
        "rope_scaling": {
            "factor": 8.0,
            "high_freq_factor": 4.0,
            "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 128256,
    }


PUBLISHED_CONFIGS: tuple[PublishedConfig, ...] = (
    PublishedConfig(
        "Qwen/Qwen3-32B", _qwen3_dense(64, 5120, 64, 25600, tied=False), 32.8, "32.8B parameters (31.2B non-embedding)"
    ),
    PublishedConfig(
        "Qwen/Qwen3-8B", _qwen3_dense(36, 4096, 32, 12288, tied=False), 8.2, "8.2B parameters (6.95B non-embedding)"
    ),
    PublishedConfig(
        "Qwen/Qwen3-0.6B", _qwen3_dense(28, 1024, 16, 3072, tied=True), 0.6, "0.6B parameters (0.44B non-embedding)"
    ),
    PublishedConfig(
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        {
            "architectures": ["Qwen3MoeForCausalLM"],
            "model_type": "qwen3_moe",
            "decoder_sparse_step": 1,
            "head_dim": 128,
            "hidden_size": 6144,
            "intermediate_size": 8192,
            "max_position_embeddings": 262144,
            "max_window_layers": 62,
            "mlp_only_layers": [],
            "moe_intermediate_size": 2560,
            "num_attention_heads": 96,
            "num_experts": 160,
            "num_experts_per_tok": 8,
            "num_hidden_layers": 62,
            "num_key_value_heads": 8,
            "shared_expert_intermediate_size": 0,
            "sliding_window": None,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
            "use_sliding_window": False,
            "vocab_size": 151936,
        },
        480.0,
        "480B total, 35B activated (8 of 160 experts)",
    ),
    PublishedConfig(
        "meta-llama/Llama-3.1-8B-Instruct", _llama3(32, 4096, 32, 14336), card="8B parameters (8.03B in safetensors)"
    ),
    PublishedConfig(
        "meta-llama/Llama-3.3-70B-Instruct", _llama3(80, 8192, 64, 28672), card="70B parameters (70.6B in safetensors)"
    ),
    PublishedConfig(
        "openai/gpt-oss-120b",
        {
            "architectures": ["GptOssForCausalLM"],
            "model_type": "gpt_oss",
            "experts_per_token": 4,
            "head_dim": 64,
            "hidden_size": 2880,
            "initial_context_length": 4096,
            "intermediate_size": 2880,
            "layer_types": ["sliding_attention", "full_attention"] * 18,
            "max_position_embeddings": 131072,
            "num_attention_heads": 64,
            "num_experts_per_tok": 4,
            "num_hidden_layers": 36,
            "num_key_value_heads": 8,
            "num_local_experts": 128,
            "quantization_config": {
                "modules_to_not_convert": [
                    "model.layers.*.self_attn",
                    "model.layers.*.mlp.router",
                    "model.embed_tokens",
                    "lm_head",
                ],
                "quant_method": "mxfp4",
            },
            "sliding_window": 128,
            "tie_word_embeddings": False,
            "vocab_size": 201088,
        },
        card="117B parameters, 5.1B active per token (116.83B and 5.13B in the gpt-oss model card)",
    ),
)
