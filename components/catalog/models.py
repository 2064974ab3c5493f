"""Served models: each read out of its Hugging Face config.json (`published_configs.py`, the fields as
published) by the one reader of model geometry (`hf_config.model_from_config`), the reader a user's own
`cache.model_file` goes through. The KV bytes a token occupies and the parameters its forward pass multiplies
follow from the geometry (`model_geometry.ModelSpec`); the model cards' totals check it (tests/test_payoff.py,
tests/test_model_configs.py)."""

from __future__ import annotations

from components.catalog.hf_config import model_from_config
from components.catalog.model_geometry import DTYPE_BYTES, ModelSpec
from components.catalog.published_configs import PUBLISHED_CONFIGS

__all__ = ["DTYPE_BYTES", "MODELS", "QWEN3_CONTEXT", "ModelSpec"]

MODELS: dict[str, ModelSpec] = {
    c.repo: model_from_config(c.repo, c.fields, params_billion=c.params_billion) for c in PUBLISHED_CONFIGS
}
# Qwen3's dense config.json files say max_position_embeddings 40960 (32,768 of prompt natively, the model
# cards); Qwen3-Coder-480B-A35B-Instruct's says 262144.
QWEN3_CONTEXT = MODELS["Qwen/Qwen3-32B"].context_tokens
