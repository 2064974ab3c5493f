"""Cross-field checks run at config load, after each field is valid on its own."""

from __future__ import annotations

from components.catalog.models import MODELS
from components.catalog.support import SUPPORTED, supported_for
from stacks.config import StackConfig
from stacks.errors import ConfigError


def check_stack(config: StackConfig) -> None:
    cache = config.cache
    combo = (cache.accelerator, cache.server, cache.connector, cache.tier.variant)
    if combo not in SUPPORTED:
        field, value, allowed = supported_for(combo)
        raise ConfigError(field, value, allowed)

    model = MODELS[cache.model]
    if model.attention_heads % cache.tensor_parallelism:
        raise ConfigError(
            "cache.tensor_parallelism",
            cache.tensor_parallelism,
            f"must divide the {model.attention_heads} attention heads of {model.name}",
        )

    if cache.node_pool is not None and cache.node_pool not in config.node_pools:
        allowed = ", ".join(sorted(config.node_pools)) or "none are described in node_pools"
        raise ConfigError("cache.node_pool", cache.node_pool, f"allowed: {allowed}")
